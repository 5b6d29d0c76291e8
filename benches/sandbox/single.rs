//! One cluster: N ExternalJobs (our Rust integration) against N batch/v1 Jobs of the same shape
//! (Kueue's Go integration), the peak RSS of our controller against Kueue's manager meanwhile,
//! then WrappedJobs of a Job and a Deployment against as many batch/v1 Jobs.

use crate::jobs::Kind;
use crate::report::Row;
use crate::sandbox::{Sandbox, peak_rss_mib};
use crate::throughput::versus;

/// Enough room that quota and pods-per-node never bound the run: 1,000 pods of 100m.
const CLUSTER: [&str; 6] = ["--workers", "0", "--nodes", "16", "--node-cpu", "64"];

pub async fn bench(runs: usize, jobs: usize, wrapped: usize) -> Vec<Row> {
    let go = format!("{jobs} batch/v1 Jobs (Kueue's Go integration)");
    let mut submitted = Row::new(format!("{jobs} ExternalJobs: all submitted"), "s", &go);
    let mut created = Row::new(format!("{jobs} ExternalJobs: all Workloads created"), "s", &go);
    let mut admitted = Row::new(format!("{jobs} ExternalJobs: all admitted"), "s", &go);
    let mut finished = Row::new(format!("{jobs} ExternalJobs: all finished"), "s", &go);
    let mut cpu = Row::new(format!("{jobs} ExternalJobs: CPU seconds of the cluster until all admitted"), "s", &go);
    let mut rss = Row::new(format!("peak RSS during the {jobs}-job runs"), "MiB", "Kueue's manager process");
    let mut wrapped_done = Row::new(
        format!("{wrapped} WrappedJobs (Job + Deployment): all succeeded"),
        "s",
        format!("{wrapped} batch/v1 Jobs"),
    );
    let mut rss_wrapped = Row::new("peak RSS, WrappedJobs included", "MiB", "Kueue's manager process");
    for run in 0..runs {
        let sandbox = Sandbox::up(&CLUSTER);
        let controller = sandbox.pid("manager", "kueue-ext-controller");
        let kueue = sandbox.pid("manager", "kueue");
        let (ours, peer) = versus(&sandbox, Kind::External, Kind::Batch, jobs, run).await;
        submitted.push(ours.submitted, peer.submitted);
        created.push(ours.created, peer.created);
        admitted.push(ours.admitted, peer.admitted);
        finished.push(ours.finished, peer.finished);
        cpu.push(ours.total_cpu(), peer.total_cpu());
        rss.push(peak_rss_mib(controller), peak_rss_mib(kueue));
        if wrapped > 0 {
            let (ours, peer) = versus(&sandbox, Kind::Wrapped, Kind::Batch, wrapped, run).await;
            wrapped_done.push(ours.finished, peer.finished);
            rss_wrapped.push(peak_rss_mib(controller), peak_rss_mib(kueue));
        }
    }
    let mut rows = vec![submitted, created, admitted, finished, cpu, rss];
    if wrapped > 0 {
        rows.extend([wrapped_done, rss_wrapped]);
    }
    rows
}
