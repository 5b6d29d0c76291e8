//! One cluster: N ExternalJobs (our Rust integration) against N batch/v1 Jobs of the same shape
//! (Kueue's Go integration), the peak RSS of our controller against Kueue's manager meanwhile,
//! then WrappedJobs of a Job and a Deployment against as many batch/v1 Jobs.
//!
//! The batch Jobs' pods are created by kube-controller-manager's Job controller, ours by our
//! controller, whose client (kube-rs) has no rate limit: kube-controller-manager runs without
//! one too (client-go sets no rate limiter on a client whose QPS is not positive), or the peer's
//! "finished" would measure its default 20 QPS.

use crate::jobs::Kind;
use crate::report::{Row, count};
use crate::sandbox::{Sandbox, peak_rss_mib};
use crate::throughput::versus;

/// Enough room that quota and pods-per-node never bound the run: 1,000 pods of 100m; the Job
/// controller's client as unlimited as ours.
const CLUSTER: [&str; 8] = [
    "--workers",
    "0",
    "--nodes",
    "16",
    "--node-cpu",
    "64",
    "--component-arg",
    "kube-controller-manager=--kube-api-qps=-1",
];

pub async fn bench(runs: usize, jobs: usize, wrapped: usize) -> Vec<Row> {
    let go = format!("{} batch/v1 Jobs (Kueue's Go integration), same cluster", count(jobs));
    let what = |step: &str| format!("{} ExternalJobs: {step}", count(jobs));
    let mut submitted = Row::new(what("all submitted (taken by the API server)"), "s", &go);
    let mut created = Row::new(what("all Workloads created"), "s", &go);
    let mut admitted = Row::new(what("all admitted"), "s", &go);
    let mut finished = Row::new(what("all finished"), "s", &go);
    let mut cpu = Row::new(what("CPU seconds of the cluster until all admitted"), "s", &go);
    let rss_name = format!("peak RSS during the {}-job runs", count(jobs));
    let mut rss = Row::new(rss_name, "MiB", "Kueue's manager process");
    let mut wrapped_done = Row::new(
        format!("{} WrappedJobs (Job + Deployment): all succeeded", count(wrapped)),
        "s",
        format!("{} batch/v1 Jobs", count(wrapped)),
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
