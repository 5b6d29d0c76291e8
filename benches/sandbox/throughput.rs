//! Submits N jobs of one kind and times them until all their Workloads are admitted and all are
//! finished, then deletes them so the next kind starts from an empty namespace.
//!
//! Progress comes from a watch on Workloads: listing thousands of Workloads on every tick would
//! load the very API server being measured.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use crate::apiserver;
use crate::audit::{Audit, Requests};
use crate::jobs::Kind;
use crate::order;
use crate::sandbox::{Sandbox, cpu_seconds};

/// Jobs in flight while submitting, as a busy client would send them.
const SUBMIT_CONCURRENCY: usize = 20;
const RUN_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const CLEAR_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Seconds from the first submission until the API server had taken all (through the
/// webhooks), all had a Workload, all were admitted, and all finished. Creation is the
/// integration's own work; admission adds Kueue's scheduling.
pub struct Times {
    pub submitted: f64,
    pub created: f64,
    pub admitted: f64,
    pub finished: f64,
    /// CPU seconds each of the sandbox's processes spent from the first submission until all
    /// were admitted, most first: on two busy cores, where the time went.
    pub cpu: Vec<(String, f64)>,
    /// Per cluster, what its API server served most often meanwhile: requests and webhooks,
    /// clients, their queueing, and its calls to etcd, a line each.
    pub api_servers: Vec<(String, Vec<String>)>,
    /// What each controller asked from the first submission until all finished, where the
    /// run was audited.
    pub requests: Option<Requests>,
}

impl Times {
    pub fn total_cpu(&self) -> f64 {
        self.cpu.iter().map(|(_, s)| s).sum()
    }
}

/// CPU seconds of each process so far.
fn cpu_of(processes: &[(String, i32)]) -> Vec<f64> {
    processes.iter().map(|(_, pid)| cpu_seconds(*pid)).collect()
}

/// What a run reads besides the jobs: the sandbox's processes, each cluster's API server, and
/// the audit log of the one that runs the jobs, if any.
pub struct Observed {
    processes: Vec<(String, i32)>,
    api_servers: Vec<(String, kube::Client)>,
    audit: Option<Audit>,
}

impl Observed {
    pub fn audited(self, audit: Audit) -> Observed {
        Observed { audit: Some(audit), ..self }
    }

    pub async fn of(sandbox: &Sandbox) -> Observed {
        let mut api_servers = Vec::new();
        for cluster in sandbox.state().clusters {
            let client = sandbox.client(&cluster.name).await;
            apiserver::tell_clients_apart(&client).await;
            api_servers.push((cluster.name.clone(), client));
        }
        Observed { processes: sandbox.processes(), api_servers, audit: None }
    }

    async fn api_server_metrics(&self) -> Vec<apiserver::Spent> {
        let mut spent = Vec::new();
        for (_, client) in &self.api_servers {
            spent.push(apiserver::scrape(client).await);
        }
        spent
    }
}

#[derive(Clone, Default)]
struct Progress {
    created: usize,
    admitted: usize,
    finished: usize,
    all_created: Option<Instant>,
    all_admitted: Option<Instant>,
    all_finished: Option<Instant>,
}

fn workload_resource() -> ApiResource {
    ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "kueue.x-k8s.io/v1beta2".into(),
        kind: "Workload".into(),
        plural: "workloads".into(),
    }
}

fn holds(workload: &DynamicObject, condition: &str) -> bool {
    workload.data["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == condition && c["status"] == "True"))
}

/// Calls `seen` with each Workload the watch of `api` delivers, until the watch ends or
/// nobody reads `progress` any more.
pub async fn follow_workloads<T>(
    api: Api<DynamicObject>,
    progress: &watch::Sender<T>,
    mut seen: impl FnMut(DynamicObject),
) {
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff().applied_objects());
    loop {
        let event = tokio::select! {
            () = progress.closed() => return,
            event = events.next() => event,
        };
        match event {
            Some(Ok(workload)) => seen(workload),
            Some(Err(_)) => continue,
            None => return,
        }
    }
}

/// Follows the Workloads named `prefix…` and notes when `n` were admitted and `n` finished
/// (a Workload counts once it was seen admitted, even if it has moved on since).
fn track(client: &kube::Client, prefix: &'static str, n: usize) -> watch::Receiver<Progress> {
    let (tx, rx) = watch::channel(Progress::default());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &workload_resource());
    tokio::spawn(async move {
        let (mut created, mut admitted, mut finished) = (HashSet::new(), HashSet::new(), HashSet::new());
        follow_workloads(api, &tx, |workload| {
            let name = workload.metadata.name.clone().unwrap_or_default();
            if !name.starts_with(prefix) {
                return;
            }
            created.insert(name.clone());
            if holds(&workload, "Admitted") || holds(&workload, "Finished") {
                admitted.insert(name.clone());
            }
            if holds(&workload, "Finished") {
                finished.insert(name);
            }
            tx.send_modify(|p| {
                p.created = created.len();
                p.admitted = admitted.len();
                p.finished = finished.len();
                if p.created >= n && p.all_created.is_none() {
                    p.all_created = Some(Instant::now());
                }
                if p.admitted >= n && p.all_admitted.is_none() {
                    p.all_admitted = Some(Instant::now());
                }
                if p.finished >= n && p.all_finished.is_none() {
                    p.all_finished = Some(Instant::now());
                }
            });
        })
        .await;
    });
    rx
}

async fn submit(client: &kube::Client, kind: Kind, n: usize) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &kind.resource());
    stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let object: DynamicObject = serde_json::from_value(kind.manifest(i)).expect("job manifest");
                api.create(&PostParams::default(), &object).await
            }
        })
        .buffer_unordered(SUBMIT_CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await
        .unwrap_or_else(|e| panic!("submitting {kind:?}: {e}"));
}

/// Submits `n` jobs of `kind` into `default` and waits until all have finished.
async fn measure(client: &kube::Client, kind: Kind, n: usize, observed: &Observed) -> Times {
    let processes = &observed.processes;
    let mut progress = track(client, kind.workload_prefix(), n);
    let cpu_before = cpu_of(processes);
    let api_before = observed.api_server_metrics().await;
    let audit_mark = observed.audit.as_ref().map(Audit::mark);
    let started = Instant::now();
    submit(client, kind, n).await;
    let submitted = started.elapsed().as_secs_f64();
    let admitted =
        matches!(tokio::time::timeout(RUN_TIMEOUT, progress.wait_for(|p| p.all_admitted.is_some())).await, Ok(Ok(_)));
    let cpu_after = cpu_of(processes);
    let api_after = observed.api_server_metrics().await;
    let api_servers = observed
        .api_servers
        .iter()
        .zip(api_after.iter().zip(&api_before))
        .map(|((cluster, _), (after, before))| (cluster.clone(), after.lines_since(before)))
        .collect();
    let done = admitted
        && matches!(
            tokio::time::timeout(RUN_TIMEOUT, progress.wait_for(|p| p.all_finished.is_some())).await,
            Ok(Ok(_))
        );
    let requests = observed.audit.as_ref().zip(audit_mark).map(|(audit, mark)| audit.since(mark));
    let seen = progress.borrow().clone();
    assert!(done, "{kind:?}: {} of {n} admitted, {} finished after {RUN_TIMEOUT:?}", seen.admitted, seen.finished);
    let since = |t: Option<Instant>| t.map(|t| t.duration_since(started).as_secs_f64()).unwrap_or_default();
    Times {
        submitted,
        created: since(seen.all_created),
        admitted: since(seen.all_admitted),
        finished: since(seen.all_finished),
        cpu: {
            let spent = processes.iter().zip(cpu_after.iter().zip(cpu_before));
            let mut cpu: Vec<(String, f64)> =
                spent.map(|((name, _), (after, before))| (name.clone(), after - before)).collect();
            cpu.sort_by(|a, b| b.1.total_cmp(&a.1));
            cpu
        },
        api_servers,
        requests,
    }
}

/// Deletes every job of `kind` in the manager's `default` and waits until they, their Workloads
/// and all pods are gone from every cluster: MultiKueue removes the workers' copies after the
/// manager's, and a run started before that would share MultiKueue's clients with the clean-up.
async fn clear(client: &kube::Client, kind: Kind, observed: &Observed) {
    let jobs: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &kind.resource());
    let params = DeleteParams::background();
    jobs.delete_collection(&params, &ListParams::default()).await.expect("jobs deleted");
    let pods = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Pod".into(),
        plural: "pods".into(),
    };
    let left = [kind.resource(), workload_resource(), pods];
    let deadline = Instant::now() + CLEAR_TIMEOUT;
    loop {
        let mut remaining = 0;
        for ((_, cluster), resource) in observed.api_servers.iter().flat_map(|c| left.iter().map(move |r| (c, r))) {
            let api: Api<DynamicObject> = Api::namespaced_with(cluster.clone(), "default", resource);
            remaining += match api.list_metadata(&ListParams::default()).await {
                Ok(list) => list.items.len(),
                // A cluster without the kind (a worker without WrappedJob's CRD) holds none.
                Err(kube::Error::Api(status)) if status.is_not_found() => 0,
                Err(_) => 1,
            };
        }
        if remaining == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{kind:?}: {remaining} objects left after {CLEAR_TIMEOUT:?}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Our kind against the peer's on the same cluster, one after the other, in ABBA order over the
/// runs (`order.rs`): the second meets a cluster that has been busy.
pub async fn versus(sandbox: &Sandbox, ours: Kind, peer: Kind, n: usize, run: usize) -> (Times, Times) {
    versus_observed(sandbox, &Observed::of(sandbox).await, ours, peer, n, run).await
}

/// [`versus`], reading what `observed` says.
pub async fn versus_observed(
    sandbox: &Sandbox,
    observed: &Observed,
    ours: Kind,
    peer: Kind,
    n: usize,
    run: usize,
) -> (Times, Times) {
    let client = sandbox.client("manager").await;
    let side = |kind| timed(&client, kind, n, run, observed);
    if order::ours_first(run) {
        let ours = side(ours).await;
        (ours, side(peer).await)
    } else {
        let peer = side(peer).await;
        (side(ours).await, peer)
    }
}

/// Measures one kind, says how it went, and clears the namespace for the next.
async fn timed(client: &kube::Client, kind: Kind, n: usize, run: usize, observed: &Observed) -> Times {
    let times = measure(client, kind, n, observed).await;
    let busiest: Vec<String> = times.cpu.iter().take(5).map(|(name, s)| format!("{name} {s:.1}")).collect();
    // The kind runtime's processes are in its nodes, not counted here.
    let cpu = if busiest.is_empty() {
        String::new()
    } else {
        format!("; CPU until all admitted {:.1} s ({})", times.total_cpu(), busiest.join(", "))
    };
    eprintln!(
        "run {}: {n} {kind:?}: all submitted {:.1} s, all Workloads created {:.1} s, all admitted {:.1} s, all finished {:.1} s{cpu}",
        run + 1,
        times.submitted,
        times.created,
        times.admitted,
        times.finished,
    );
    for (cluster, lines) in &times.api_servers {
        for line in lines {
            eprintln!("run {}: {n} {kind:?}: {cluster}'s API server meanwhile, {line}", run + 1);
        }
    }
    for line in times.requests.iter().flat_map(Requests::lines) {
        eprintln!("run {}: {n} {kind:?}: requests until all finished (audit log), {line}", run + 1);
    }
    clear(client, kind, observed).await;
    times
}
