//! WrappedJob beside its model on the same kind cluster (needs Docker): N WrappedJobs of one batch
//! Job against N AppWrappers of the same Job, run by AppWrapper's own controller under Kueue's
//! built-in AppWrapper integration (`up --runtime kind --addons appwrapper`). Pods run for real.

use kueue_ext::sandbox::toolchain::versions::APPWRAPPER;

use crate::jobs::Kind;
use crate::report::{Row, count};
use crate::sandbox::Sandbox;
use crate::throughput::versus;

const SANDBOX: [&str; 6] = ["--runtime", "kind", "--workers", "0", "--addons", "appwrapper"];

pub async fn bench(runs: usize, wrappers: usize) -> Vec<Row> {
    let peer = format!(
        "{} AppWrappers of the same Job (AppWrapper {APPWRAPPER}'s controller, Kueue's integration), same cluster",
        count(wrappers)
    );
    let what = |step: &str| format!("{} WrappedJobs of a one-pod Job on a kind cluster: all {step}", count(wrappers));
    let mut created = Row::new(what("Workloads created"), "s", &peer);
    let mut admitted = Row::new(what("admitted"), "s", &peer);
    let mut finished = Row::new(what("finished (pods really run 1 s)"), "s", &peer);
    for run in 0..runs {
        let sandbox = Sandbox::up(&SANDBOX);
        let (ours, theirs) = versus(&sandbox, Kind::WrappedJobOfJob, Kind::AppWrapper, wrappers, run).await;
        created.push(ours.created, theirs.created);
        admitted.push(ours.admitted, theirs.admitted);
        finished.push(ours.finished, theirs.finished);
    }
    vec![created, admitted, finished]
}
