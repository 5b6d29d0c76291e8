//! The I/O of `simulate`: a throwaway process sandbox that replays the capture with its jobs
//! (the `up --from` code path), a wait for the replayed jobs to settle, the submission, a watch
//! of the submitted jobs' Workloads, and `explain`'s reasons for those that wait. The sandbox
//! is always torn down, on error and on ctrl-c too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use super::{Outcome, Report, decided, outcome, preempted_by, preemptor, settled};
use crate::api::kueue::QUEUE_NAME_LABEL;
use crate::capture;
use crate::explain::explanation;
use crate::integrations::registry::KindRegistry;
use crate::jobframework::naming::workload_name;
use crate::model::join;
use crate::model::source::{Source, Target, Targets};
use crate::sandbox::from_capture::{self, Replay, ReplayOptions};
use crate::sandbox::progress::Progress;
use crate::sandbox::record::{RuntimeKind, SandboxState};
use crate::sandbox::{self, NodePool, UpOptions, UpOutcome};
use crate::submit::{self, Defaults, Document, Problem};

/// How long the joined model may take to list the throwaway clusters for `explain`'s reasons.
const EXPLAIN_SETTLE: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error(transparent)]
    Replay(#[from] from_capture::ReplayError),
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Documents(Vec<Problem>),
    #[error("the replayed jobs did not settle within {0:?}: {1}")]
    Unsettled(Duration, String),
    #[error("{0}")]
    Cluster(String),
    #[error("interrupted; the throwaway sandbox was stopped")]
    Interrupted,
}

/// Simulates `docs` against the capture `archive`: the report, once the throwaway sandbox is down.
pub async fn simulate(archive: &Path, docs: Vec<Document>, timeout: Duration) -> Result<Report, SimulateError> {
    let opened = capture::open(archive).map_err(from_capture::ReplayError::from)?;
    let replay = from_capture::plan(&opened, ReplayOptions { scale: 1.0, with_jobs: true }, &[])?;
    let tmp = tempfile::tempdir().map_err(|e| SimulateError::Cluster(format!("a temporary state dir: {e}")))?;
    let state_dir = tmp.path().join("state");
    // Its own name, so that its contexts and processes never meet the user's sandbox.
    let name = format!("kueue-ext-sim-{}", std::process::id());
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| SimulateError::Cluster(e.to_string()))?;
    let result = tokio::select! {
        result = in_sandbox(&name, &state_dir, Arc::new(replay), docs, timeout) => result,
        _ = interrupt.recv() => Err(SimulateError::Interrupted),
    };
    let step = Progress::stderr().step("stopping the throwaway sandbox");
    let down = sandbox::down(&state_dir).await;
    step.done();
    let mut report = result?;
    down?;
    report.capture = archive.display().to_string();
    Ok(report)
}

async fn in_sandbox(
    name: &str,
    state_dir: &Path,
    replay: Arc<Replay>,
    docs: Vec<Document>,
    timeout: Duration,
) -> Result<Report, SimulateError> {
    let options = UpOptions {
        name: name.to_string(),
        state_dir: state_dir.to_path_buf(),
        workers: replay.workers(),
        api_server_port: None,
        nodes: NodePool { count: 0, cpu: "1".into(), memory: "1Gi".into() },
        queues_from_kind_nodes: false,
        component_args: Vec::new(),
        merge_kubeconfig: None,
        runtime: Some(RuntimeKind::Process),
        kind_runtime: Default::default(),
        integrations: replay.integrations.clone(),
        crds: Vec::new(),
        addons: Vec::new(),
        worker_lost_timeout: Duration::from_secs(300),
        replay: Some(replay.clone()),
    };
    let progress = Progress::stderr();
    let (state, mut not_as_captured) = match sandbox::up(&options, &progress).await? {
        UpOutcome::Started { state, not_as_captured, .. } => (state, not_as_captured),
        // A fresh temporary dir holds no sandbox: never reached.
        UpOutcome::AlreadyUp(state) | UpOutcome::Revived { state, .. } => (state, Vec::new()),
    };
    let targets = targets_of(state_dir, &state)?;
    let mut clients = BTreeMap::new();
    for target in &targets.clusters {
        let client = crate::kube_util::client_from(targets.kubeconfig.clone(), &target.context)
            .await
            .map_err(|e| SimulateError::Cluster(e.to_string()))?;
        clients.insert(target.name.clone(), client);
    }
    let manager = clients.get("manager").cloned().ok_or_else(|| SimulateError::Cluster("no manager".into()))?;

    let step = progress.step("the replayed jobs to settle");
    for cluster in &replay.clusters {
        let Some(client) = clients.get(&cluster.name) else { continue };
        let expected = cluster.jobs.iter().filter(|j| !j["metadata"]["labels"][QUEUE_NAME_LABEL].is_null()).count();
        let deadline = Instant::now() + timeout;
        watch_workloads(client, deadline, |all| settled(expected, all)).await.map_err(|seen| {
            SimulateError::Unsettled(timeout, format!("{}: {seen} Workload(s) of {expected} decided", cluster.name))
        })?;
    }
    step.done();
    let before: Vec<String> = all_workloads(&clients)
        .await?
        .iter()
        .filter(|(_, w)| preemptor(w).is_some())
        .filter_map(|(_, w)| w["metadata"]["uid"].as_str().map(String::from))
        .collect();

    let step = progress.step("submitting");
    let submitted = submit_all(&manager, docs).await?;
    step.done();
    let step = progress.step("Kueue's decisions");
    let names: Vec<String> = submitted.iter().map(|s| s.workload.clone()).collect();
    let deadline = Instant::now() + timeout;
    let _ = watch_workloads(&manager, deadline, |all| {
        names.iter().all(|n| all.iter().any(|w| w["metadata"]["name"] == n.as_str() && decided(w)))
    })
    .await;
    step.done();

    let workloads = all_workloads(&clients).await?;
    let mut jobs: Vec<Outcome> = Vec::new();
    for s in &submitted {
        let own = workloads
            .iter()
            .find(|(c, w)| {
                c == "manager"
                    && w["metadata"]["name"] == s.workload.as_str()
                    && w["metadata"]["namespace"] == s.namespace.as_str()
            })
            .map(|(_, w)| w);
        let workload_uid = own.and_then(|w| w["metadata"]["uid"].as_str()).unwrap_or_default();
        let preempts = preempted_by(&s.uid, workload_uid, &workloads, &before);
        jobs.push(outcome(&s.display, &s.namespace, &s.origin, own, preempts));
    }
    if jobs.iter().any(|j| !j.admitted) {
        explain_waiting(targets, &submitted, &mut jobs).await;
    }
    let mut said: Vec<String> = super::CAVEATS.iter().map(|c| c.to_string()).collect();
    said.extend(replay.not_as_captured.iter().cloned());
    said.append(&mut not_as_captured);
    Ok(Report { capture: String::new(), jobs, not_as_captured: said })
}

/// A submitted job, and the Workload Kueue makes for it.
struct Submitted {
    display: String,
    origin: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    workload: String,
}

/// Checks every document against the throwaway manager (all problems at once, nothing written
/// if any), then applies them in order.
async fn submit_all(manager: &Client, docs: Vec<Document>) -> Result<Vec<Submitted>, SimulateError> {
    let kinds = KindRegistry::discover(manager, crate::manifests::NAMESPACE)
        .await
        .map_err(|e| SimulateError::Cluster(e.to_string()))?;
    let no_addon = |_: &str| None;
    let defaults = Defaults { namespace: "default", queue: None, kinds: &kinds, serves_group: &no_addon };
    let planned = submit::plan(manager, docs, &defaults).await.map_err(SimulateError::Documents)?;
    let mut out = Vec::new();
    for p in &planned {
        let applied = submit::apply_one(manager, p, false)
            .await
            .map_err(|e| SimulateError::Documents(vec![Problem::new(&p.doc.origin, None, submit::rejection(&e))]))?;
        if p.job_kind.is_none() {
            continue;
        }
        let uid = applied.metadata.uid.clone().unwrap_or_default();
        let name = applied.metadata.name.clone().unwrap_or_default();
        out.push(Submitted {
            display: p.display_name(),
            origin: p.doc.origin.to_string(),
            kind: p.resource.kind.clone(),
            namespace: applied.metadata.namespace.clone().unwrap_or_default(),
            workload: workload_name(&p.resource.kind, &p.resource.group, &name, &uid),
            name,
            uid,
        });
    }
    Ok(out)
}

/// Watches every Workload of `client` until `done` holds for them, or `deadline`; the number
/// seen when it did not.
async fn watch_workloads(
    client: &Client,
    deadline: Instant,
    mut done: impl FnMut(&[Value]) -> bool,
) -> Result<Vec<Value>, usize> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &workload_resource());
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    let mut seen: BTreeMap<String, Value> = BTreeMap::new();
    let mut listing: BTreeMap<String, Value> = BTreeMap::new();
    let key = |o: &DynamicObject| {
        format!("{}/{}", o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone().unwrap_or_default())
    };
    loop {
        let event = match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(event))) => event,
            // The watcher retries on its own; an error is only a missed beat.
            Ok(Some(Err(_))) => continue,
            Ok(None) | Err(_) => return Err(seen.len()),
        };
        let listed = match event {
            watcher::Event::Apply(o) => {
                seen.insert(key(&o), serde_json::to_value(&o).unwrap_or_default());
                true
            }
            watcher::Event::Delete(o) => {
                seen.remove(&key(&o));
                true
            }
            watcher::Event::Init => {
                listing.clear();
                false
            }
            watcher::Event::InitApply(o) => {
                listing.insert(key(&o), serde_json::to_value(&o).unwrap_or_default());
                false
            }
            watcher::Event::InitDone => {
                seen = std::mem::take(&mut listing);
                true
            }
        };
        let all: Vec<Value> = seen.values().cloned().collect();
        if listed && done(&all) {
            return Ok(all);
        }
    }
}

fn workload_resource() -> ApiResource {
    ApiResource::erase::<crate::api::kueue::Workload>(&())
}

/// `(cluster, Workload)` of every cluster.
async fn all_workloads(clients: &BTreeMap<String, Client>) -> Result<Vec<(String, Value)>, SimulateError> {
    let mut out = Vec::new();
    for (cluster, client) in clients {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &workload_resource());
        let list =
            api.list(&Default::default()).await.map_err(|e| SimulateError::Cluster(format!("{cluster}: {e}")))?;
        out.extend(list.items.iter().map(|w| (cluster.clone(), serde_json::to_value(w).unwrap_or_default())));
    }
    Ok(out)
}

/// `explain`'s reasons for the jobs that wait, from the joined model of the throwaway clusters.
async fn explain_waiting(targets: Targets, submitted: &[Submitted], jobs: &mut [Outcome]) {
    let mut source = Source::start(targets, None).await;
    source.settle(EXPLAIN_SETTLE).await;
    let model = join(&source.snapshot());
    for (s, job) in submitted.iter().zip(jobs.iter_mut()).filter(|(_, j)| !j.admitted) {
        let row = model.jobs.iter().find(|row| {
            row.key.cluster == "manager"
                && row.key.kind.name().split('.').next() == Some(s.kind.as_str())
                && row.key.namespace == s.namespace
                && row.key.name == s.name
        });
        if let Some(row) = row {
            job.why = explanation(row, &model).reasons();
        }
    }
}

/// The throwaway sandbox's clusters, as `watch` and `explain` read a sandbox.
fn targets_of(dir: &Path, state: &SandboxState) -> Result<Targets, SimulateError> {
    let path: PathBuf = if state.kubeconfig.as_os_str().is_empty() {
        dir.join(sandbox::KUBECONFIG_FILE)
    } else {
        state.kubeconfig.clone()
    };
    let kubeconfig =
        crate::kube_util::read_kubeconfig(Some(&path)).map_err(|e| SimulateError::Cluster(e.to_string()))?;
    let clusters = state
        .clusters
        .iter()
        .map(|c| Target { name: c.name.clone(), context: c.context.clone(), role: c.role })
        .collect();
    Ok(Targets { origin: format!("simulation {}", state.name), kubeconfig, file: Some(path), clusters })
}
