//! MultiKueue: N ExternalJobs against N batch/v1 Jobs submitted to the manager and run on two
//! workers, timed on the manager's Workloads (admitted once a worker admitted the copy; finished
//! once the worker's outcome came back).

use crate::jobs::Kind;
use crate::report::{Row, count};
use crate::sandbox::Sandbox;
use crate::throughput::versus;

/// Two workers with room for every pod; the manager's quota is their sum.
const SANDBOX: [&str; 6] = ["--workers", "2", "--nodes", "8", "--node-cpu", "64"];

pub async fn bench(runs: usize, jobs: usize) -> Vec<Row> {
    let go = format!("{} batch/v1 Jobs through MultiKueue", count(jobs));
    let what = |step: &str| format!("MultiKueue, {} ExternalJobs: {step}", count(jobs));
    let mut created = Row::new(what("all Workloads created (manager)"), "s", &go);
    let mut admitted = Row::new(what("all admitted"), "s", &go);
    let mut finished = Row::new(what("all finished"), "s", &go);
    let mut cpu = Row::new(what("CPU seconds of the three clusters until all admitted"), "s", &go);
    for run in 0..runs {
        let sandbox = Sandbox::up(&SANDBOX);
        let (ours, peer) = versus(&sandbox, Kind::External, Kind::Batch, jobs, run).await;
        created.push(ours.created, peer.created);
        admitted.push(ours.admitted, peer.admitted);
        finished.push(ours.finished, peer.finished);
        cpu.push(ours.total_cpu(), peer.total_cpu());
    }
    vec![created, admitted, finished, cpu]
}
