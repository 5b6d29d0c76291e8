//! WrappedJob beside its model on the same kind cluster (needs Docker): N WrappedJobs of one batch
//! Job against N AppWrappers of the same Job, run by AppWrapper's own controller under Kueue's
//! built-in AppWrapper integration (`up --runtime kind --addons appwrapper`). Pods run for real.
//! The API server is audited, so each controller's requests are counted per verb and resource,
//! and each controller's largest replica is weighed (peak RSS) at the end.

use std::time::Duration;

use kueue_ext::kube_util::wait::until;
use kueue_ext::kube_util::webhooks_answer;
use kueue_ext::sandbox::toolchain::versions::APPWRAPPER;
use kueue_ext::sandbox::{DEFAULT_NAME, context_name};

use crate::audit::Audit;
use crate::jobs::Kind;
use crate::pod_processes::peak_rss_mib_of;
use crate::report::{Row, count};
use crate::sandbox::Sandbox;
use crate::throughput::{Observed, versus_observed};

const WEBHOOKS_TIMEOUT: Duration = Duration::from_secs(180);
const SANDBOX: [&str; 6] = ["--runtime", "kind", "--workers", "0", "--addons", "appwrapper"];

/// Where each controller's pods are, and how they are labelled.
const OURS: (&str, &str) = (kueue_ext::manifests::NAMESPACE, "app.kubernetes.io/name=kueue-ext-controller");
const APPWRAPPERS: (&str, &str) = ("appwrapper-system", "control-plane=controller-manager");

pub async fn bench(runs: usize, wrappers: usize) -> Vec<Row> {
    let peer = format!(
        "{} AppWrappers of the same Job (AppWrapper {APPWRAPPER}'s controller, Kueue's integration), same cluster",
        count(wrappers)
    );
    let what = |step: &str| format!("{} WrappedJobs of a one-pod Job on a kind cluster: {step}", count(wrappers));
    let mut created = Row::new(what("all Workloads created"), "s", &peer);
    let mut admitted = Row::new(what("all admitted"), "s", &peer);
    let mut finished = Row::new(what("all finished (pods really run 1 s)"), "s", &peer);
    let same = "the same, AppWrapper's controller";
    let mut requests =
        Row::new(what("API requests of the controller until all finished (audit log)"), "requests", same);
    // Kueue's jobframework runs AppWrappers' Workloads in Kueue's manager, ours in our controller.
    let mut with_kueue = Row::new(
        what("API requests of the controller and Kueue until all finished (audit log)"),
        "requests",
        "the same, AppWrapper's controller and Kueue",
    );
    let mut rss = Row::new(what("peak RSS of the controller's largest replica"), "MiB", same);
    for run in 0..runs {
        let sandbox = Sandbox::up(&SANDBOX);
        let client = sandbox.client("manager").await;
        let node = format!("{}-control-plane", context_name(DEFAULT_NAME, "manager"));
        let observed = Observed::of(&sandbox).await.audited(Audit::enable(&node).await);
        // A controller back on its Lease may not serve its webhook yet: neither kind is submitted
        // before a dry run of it gets through.
        for kind in [Kind::WrappedJobOfJob, Kind::AppWrapper] {
            let (probe, what) = (kind.manifest(0), format!("{kind:?}'s webhooks to answer"));
            let answered = until(&what, WEBHOOKS_TIMEOUT, || webhooks_answer(&client, &probe)).await;
            answered.unwrap_or_else(|e| panic!("{e}"));
        }
        let (ours, theirs) =
            versus_observed(&sandbox, &observed, Kind::WrappedJobOfJob, Kind::AppWrapper, wrappers, run).await;
        created.push(ours.created, theirs.created);
        admitted.push(ours.admitted, theirs.admitted);
        finished.push(ours.finished, theirs.finished);
        let asked = |times: &crate::throughput::Times, controller| {
            times.requests.as_ref().map_or(0, |r| r.total(controller)) as f64
        };
        requests.push(asked(&ours, "kueue-ext"), asked(&theirs, "appwrapper"));
        with_kueue.push(
            asked(&ours, "kueue-ext") + asked(&ours, "kueue"),
            asked(&theirs, "appwrapper") + asked(&theirs, "kueue"),
        );
        rss.push(
            peak_rss_mib_of(&client, OURS.0, OURS.1).await,
            peak_rss_mib_of(&client, APPWRAPPERS.0, APPWRAPPERS.1).await,
        );
    }
    vec![created, admitted, finished, requests, with_kueue, rss]
}
