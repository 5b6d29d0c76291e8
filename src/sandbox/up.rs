//! `up`, the same for every runtime: pick the runtime, start every cluster with it side by
//! side, wire MultiKueue between them, create the default queues, write the kubeconfig.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::try_join_all;
use serde_json::Value;
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::chosen_runtime::ChosenRuntime;
use super::cluster_setup::addons::Addon;
use super::cluster_setup::{multikueue, queues};
use super::error::SandboxError;
use super::from_capture::{self, Replay};
use super::kind_runtime::{self, BollardDocker, KindCli, KindError, KindOptions, KindRuntime};
use super::kubeconfig::{self, Credentials, Entry};
use super::process_runtime::{ProcessRuntime, revive};
use super::progress::Progress;
use super::record::{Role, RuntimeKind, SandboxPhase, SandboxRecord, SandboxState};
use super::runtime::{ClusterPlan, ClusterRuntime, NodePool, StartedCluster};
use super::toolchain;
use super::{KUBECONFIG_FILE, context_name, down, status};
use crate::integrations::declarative::config::Integration;
use crate::kube_util;

#[derive(Clone, Debug)]
pub struct UpOptions {
    /// The sandbox's name: its contexts' and kind clusters' prefix.
    pub name: String,
    pub state_dir: PathBuf,
    pub workers: u32,
    /// Fixed port for the manager's kube-apiserver; a free one when `None`.
    pub api_server_port: Option<u16>,
    /// Fake nodes of each cluster that runs pods.
    pub nodes: NodePool,
    /// On kind, the default queues hold what the real nodes can still give job pods instead of
    /// `nodes`' capacity (no node flag was given).
    pub queues_from_kind_nodes: bool,
    /// Extra flags per component name, appended to its command line.
    pub component_args: Vec<(String, String)>,
    /// Also merge the sandbox contexts into this kubeconfig (kind's behaviour).
    pub merge_kubeconfig: Option<PathBuf>,
    /// The runtime asked for; `None` picks kind where Docker and kind are available.
    pub runtime: Option<RuntimeKind>,
    /// Settings of the kind runtime.
    pub kind_runtime: KindOptions,
    /// Kinds integrated by configuration (`--integrations`), on every cluster.
    pub integrations: Vec<Integration>,
    /// CustomResourceDefinitions (`--crds`) applied on every cluster before Kueue starts.
    pub crds: Vec<Value>,
    /// Third-party controllers run on every cluster (`--addons`).
    pub addons: Vec<Addon>,
    /// MultiKueue's workerLostTimeout on the manager.
    pub worker_lost_timeout: Duration,
    /// A capture to reproduce (`up --from`): its clusters, Kueue settings, objects and nodes
    /// instead of the default queues and nodes; `workers` and `integrations` follow from it.
    pub replay: Option<Arc<Replay>>,
}

#[derive(Debug)]
pub enum UpOutcome {
    Started {
        state: SandboxState,
        elapsed: Duration,
        /// What of a replayed capture is not as captured, found as it was applied.
        not_as_captured: Vec<String>,
    },
    AlreadyUp(SandboxState),
    /// It was up, but these components (`component of cluster`) had stopped and were restarted.
    Revived {
        state: SandboxState,
        restarted: Vec<String>,
    },
}

const READY_TIMEOUT: Duration = Duration::from_secs(120);

pub async fn up(options: &UpOptions, progress: &Progress) -> Result<UpOutcome, SandboxError> {
    let dir = &options.state_dir;
    if let Some(existing) = SandboxState::load(dir).map_err(SandboxError::io(dir))? {
        if !is_leftover_of_failed_start(&existing) {
            return already_there(dir, existing, options, progress).await;
        }
        progress.line(format!("removing the leftovers of an earlier failed start at {}", dir.display()));
        super::down(dir).await?;
    }
    let started = Instant::now();
    // Listened to from here on: a ctrl-c while the runtime is prepared is answered as one later.
    let mut interrupt = signal(SignalKind::interrupt()).map_err(SandboxError::io(dir))?;
    let docker = BollardDocker::connect();
    let selection = kind_runtime::select(options.runtime, &docker).await?;
    let runtime = match selection.runtime {
        RuntimeKind::Kind if options.replay.is_some() => {
            return Err(SandboxError::Usage(
                "`up --from` runs on the process runtime only (it replays the captured nodes as kwok nodes): pass \
                 --runtime process"
                    .into(),
            ));
        }
        RuntimeKind::Kind => {
            if !options.component_args.is_empty() {
                return Err(SandboxError::Usage("--component-arg applies to the process runtime only".into()));
            }
            let (images, source) = kind_runtime::images_for(options.kind_runtime.images, &docker, progress).await?;
            let program = kind_runtime::ensure_kind_cli(progress).await.map_err(KindError::from)?;
            let plans = plans(options, Arc::from([]));
            let cache = toolchain::cache_root().join("kind");
            ChosenRuntime::Kind(
                KindRuntime::prepare(
                    KindCli::new(program),
                    docker,
                    &options.kind_runtime,
                    images,
                    &plans,
                    &options.addons,
                    &cache,
                    &format!("{}; {source}", selection.reason),
                    progress,
                )
                .await?,
            )
        }
        _ => ChosenRuntime::Process(
            ProcessRuntime::prepare(
                options.api_server_port,
                options.component_args.clone(),
                &options.addons,
                &selection.reason,
                progress,
            )
            .await?,
        ),
    };
    up_with(&runtime, options, started, &mut interrupt, progress).await
}

/// The clusters `options` ask for, each with these integrations.
fn plans(options: &UpOptions, integrations: Arc<[Integration]>) -> Vec<ClusterPlan> {
    let mut plans = ClusterPlan::all(&options.name, options.workers, &options.nodes, options.api_server_port);
    let crds: Arc<[Value]> = options.crds.clone().into();
    let addons: Arc<[Addon]> = options.addons.clone().into();
    for plan in &mut plans {
        plan.integrations = integrations.clone();
        plan.crds = crds.clone();
        plan.addons = addons.clone();
        if let Some(manager) = plan.multikueue_manager.as_mut() {
            manager.worker_lost_timeout = options.worker_lost_timeout;
        }
        if let Some(replay) = &options.replay {
            // The captured nodes are created with the rest of the capture, once Kueue runs.
            plan.nodes = None;
            plan.kueue_settings = replay.cluster(&plan.name).map(|c| c.kueue_settings.clone());
        }
    }
    plans
}

/// Brings every cluster up with `runtime`, then wires them together; on failure undoes it all.
async fn up_with(
    runtime: &impl ClusterRuntime,
    options: &UpOptions,
    started: Instant,
    interrupt: &mut Signal,
    progress: &Progress,
) -> Result<UpOutcome, SandboxError> {
    let dir = &options.state_dir;
    std::fs::create_dir_all(dir).map_err(SandboxError::io(dir))?;
    let record = SandboxRecord::new(
        &options.name,
        dir,
        options.workers,
        runtime.runtime_kind(),
        &options.integrations,
        &crd_names(&options.crds),
        &options.addons,
    );
    record.save()?;
    // ctrl-c stops what was started, as a failure does; `down` removes the logs left.
    let result = tokio::select! {
        result = start_all(runtime, options, &record, progress) => result,
        _ = interrupt.recv() => Err(SandboxError::Interrupted),
    };
    match result {
        Ok(not_as_captured) => {
            let state = record.finish()?;
            Ok(UpOutcome::Started { state, elapsed: started.elapsed(), not_as_captured })
        }
        Err(err) => {
            progress.line(match err {
                SandboxError::Interrupted => "interrupted; stopping what was started",
                _ => "start-up failed; stopping what was started",
            });
            down::abandon(&record, runtime).await;
            Err(err)
        }
    }
}

/// What an `up` asks for that must match a running sandbox.
struct Settings<'a> {
    workers: u32,
    runtime: Option<RuntimeKind>,
    integrations: &'a [Integration],
    crds: &'a [String],
    addons: &'a [Addon],
}

/// The names of CustomResourceDefinitions, as the sandbox records them.
fn crd_names(crds: &[Value]) -> Vec<String> {
    crds.iter().filter_map(|crd| crd["metadata"]["name"].as_str().map(String::from)).collect()
}

/// What `up` asks for that the running sandbox `existing` was not started with: `up` never
/// reports "nothing changed" while ignoring a flag.
fn settings_mismatch(existing: &SandboxState, asked: &Settings) -> Option<String> {
    let kinds = |integrations: &[Integration]| match integrations {
        [] => "no --integrations".to_string(),
        some => format!("--integrations for {}", some.iter().map(|i| i.kind.as_str()).collect::<Vec<_>>().join(", ")),
    };
    if existing.workers != asked.workers {
        return Some(format!("runs {} worker(s), not {}", existing.workers, asked.workers));
    }
    if let Some(runtime) = asked.runtime.filter(|runtime| *runtime != existing.runtime) {
        return Some(format!("runs on the {} runtime, not {runtime}", existing.runtime));
    }
    if existing.integrations != asked.integrations {
        let (running, other) = (kinds(&existing.integrations), kinds(asked.integrations));
        let how = if running == other { " with other descriptions" } else { "" };
        return Some(format!("was started with {running}; this `up` asks for {other}{how}"));
    }
    if existing.crds != asked.crds {
        let list = |crds: &[String]| if crds.is_empty() { "none".to_string() } else { crds.join(", ") };
        return Some(format!(
            "was started with --crds {}; this `up` asks for {}",
            list(&existing.crds),
            list(asked.crds)
        ));
    }
    if existing.addons != asked.addons {
        let list = |addons: &[Addon]| match addons {
            [] => "none".to_string(),
            some => some.iter().map(|a| a.name()).collect::<Vec<_>>().join(","),
        };
        return Some(format!(
            "was started with --addons {}; this `up` asks for {}",
            list(&existing.addons),
            list(asked.addons)
        ));
    }
    None
}

/// A record that a failed `up` left behind: nothing runs, only logs remain.
fn is_leftover_of_failed_start(state: &SandboxState) -> bool {
    state.phase == SandboxPhase::Starting
        && state.clusters.iter().all(|c| c.components.is_empty() && c.kind_cluster.is_none())
}

/// `up` on an existing sandbox: fine as it is, or with its dead components started again
/// (process runtime), or we say what is wrong.
async fn already_there(
    dir: &Path,
    mut existing: SandboxState,
    options: &UpOptions,
    progress: &Progress,
) -> Result<UpOutcome, SandboxError> {
    let asked = Settings {
        workers: options.workers,
        runtime: options.runtime,
        integrations: &options.integrations,
        crds: &crd_names(&options.crds),
        addons: &options.addons,
    };
    if let Some(replay) = &options.replay {
        let mismatch = format!("is already up; `up --from {}` starts a sandbox of its own", replay.source.display());
        return Err(SandboxError::SettingsMismatch { dir: dir.to_path_buf(), mismatch });
    }
    if let Some(mismatch) = settings_mismatch(&existing, &asked) {
        return Err(SandboxError::SettingsMismatch { dir: dir.to_path_buf(), mismatch });
    }
    let mut report = status(dir).await?;
    let mut restarted = Vec::new();
    if !report.ready && existing.runtime == RuntimeKind::Process && existing.phase == SandboxPhase::Up {
        restarted = revive::revive(dir, &mut existing, progress).await?;
        if !restarted.is_empty() {
            report = ready_again(dir).await?;
        }
    }
    if !report.ready {
        return Err(SandboxError::Broken { dir: dir.to_path_buf(), problems: report.problems().join("; ") });
    }
    Ok(if restarted.is_empty() {
        UpOutcome::AlreadyUp(existing)
    } else {
        UpOutcome::Revived { state: existing, restarted }
    })
}

/// The status once it is ready again after restarts (MultiKueue reconnects on its own
/// schedule), or the last one seen when it does not get there.
async fn ready_again(dir: &Path) -> Result<status::StatusReport, SandboxError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let report = status(dir).await?;
        if report.ready || Instant::now() >= deadline {
            return Ok(report);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Starts every cluster and wires them; returns what of a replayed capture is not as captured.
async fn start_all(
    runtime: &impl ClusterRuntime,
    options: &UpOptions,
    record: &SandboxRecord,
    progress: &Progress,
) -> Result<Vec<String>, SandboxError> {
    let plans = plans(options, options.integrations.clone().into());
    // Clusters do not depend on each other: start them side by side.
    let started = try_join_all(plans.iter().map(|plan| runtime.start_cluster(plan, record, progress))).await?;
    let queues = if options.replay.is_some() { "the captured queues and nodes" } else { "default queues" };
    let step = progress.step(if options.workers > 0 { format!("MultiKueue and {queues}") } else { queues.to_string() });
    let from_nodes = options.queues_from_kind_nodes && runtime.runtime_kind() == RuntimeKind::Kind;
    let mut not_as_captured = connect_clusters(options, &started, from_nodes).await?;
    step.done();
    if let Some(replay) = options.replay.as_deref().filter(|r| r.clusters.iter().any(|c| !c.jobs.is_empty())) {
        let step = progress.step("the captured jobs");
        not_as_captured.extend(replay_jobs(replay, &started).await?);
        step.done();
    }
    let ours = write_user_kubeconfig(&record.dir, &options.name, &started)?;
    if let Some(path) = &options.merge_kubeconfig {
        // Recorded first: if the merge fails half-way, `down` still cleans the file.
        record.update(|s| s.merged_kubeconfig = Some(path.clone()))?;
        kubeconfig::merge_into(path, &ours).map_err(SandboxError::io(path))?;
        progress.line(format!("merged contexts into {}", path.display()));
    }
    Ok(not_as_captured)
}

/// Each started cluster's default queue quota (CPU, memory): the node pool's capacity times the
/// nodes that run its pods or, with `from_nodes`, what its real nodes can still give job pods.
/// The manager with workers holds the sum of theirs.
async fn queue_quotas(
    options: &UpOptions,
    started: &[StartedCluster],
    from_nodes: bool,
) -> Result<Vec<(String, String)>, SandboxError> {
    let workers = started.iter().filter(|c| c.role == Role::Worker).count() as u32;
    let runs_pods = |cluster: &StartedCluster| cluster.role == Role::Worker || workers == 0;
    if from_nodes {
        let mut rooms = Vec::new();
        for cluster in started {
            let room = if runs_pods(cluster) {
                queues::Room::on_nodes(&cluster.client)
                    .await
                    .map_err(|e| SandboxError::step(&cluster.name, "reading what the nodes can still run", e))?
            } else {
                queues::Room::default()
            };
            rooms.push(room);
        }
        let everywhere = rooms.iter().fold(queues::Room::default(), |sum, room| sum.plus(*room));
        return Ok(started
            .iter()
            .zip(rooms)
            .map(|(cluster, room)| if runs_pods(cluster) { room.quota() } else { everywhere.quota() })
            .collect());
    }
    let pool = &options.nodes;
    started
        .iter()
        .map(|cluster| {
            let nodes = if runs_pods(cluster) { pool.count } else { pool.count * workers };
            let quota =
                |q: &str| queues::scale_quantity(q, nodes).map_err(|e| SandboxError::step(&cluster.name, "quota", e));
            Ok((quota(&pool.cpu)?, quota(&pool.memory)?))
        })
        .collect()
}

/// Wires MultiKueue (with workers), creates the default queues or a capture's objects and
/// nodes, and waits until the manager's Kueue reports every worker connection Active. Returns
/// what of a replayed capture is not as captured.
async fn connect_clusters(
    options: &UpOptions,
    started: &[StartedCluster],
    queues_from_nodes: bool,
) -> Result<Vec<String>, SandboxError> {
    let manager = started.iter().find(|c| c.role == Role::Manager).expect("the manager is always planned");
    let workers: Vec<&StartedCluster> = started.iter().filter(|c| c.role == Role::Worker).collect();
    let replay = options.replay.as_deref();
    // A replayed worker's MultiKueueCluster keeps its captured name.
    let captured_names = replay.and_then(|r| r.cluster("manager")).map(|m| m.multikueue_clusters.clone());
    let names: Vec<&str> = match &captured_names {
        Some(names) => names.iter().map(String::as_str).collect(),
        None => workers.iter().map(|w| w.name.as_str()).collect(),
    };
    if !workers.is_empty() {
        let remote: Vec<multikueue::Worker<'_>> = workers
            .iter()
            .zip(&names)
            .map(|(w, name)| multikueue::Worker {
                name,
                client: &w.client,
                server: w.internal_server.clone(),
                ca_pem: &w.admin.ca_pem,
            })
            .collect();
        multikueue::wire(&manager.client, &remote, &options.integrations, &options.addons)
            .await
            .map_err(|e| SandboxError::step("manager", "wiring MultiKueue", e))?;
        let mut problems = Vec::new();
        for worker in &workers {
            problems.extend(
                multikueue::preflight(&worker.name, &worker.client, &options.integrations, &options.addons).await,
            );
        }
        if !problems.is_empty() {
            return Err(SandboxError::step("manager", "MultiKueue preflight", problems.join("; ")));
        }
    }
    let quotas = queue_quotas(options, started, queues_from_nodes).await?;
    let mut not_as_captured = Vec::new();
    for (cluster, (cpu, memory)) in started.iter().zip(quotas) {
        if let Some(replayed) = replay.and_then(|r| r.cluster(&cluster.name)) {
            let applied = from_capture::apply_setup(&cluster.client, replayed).await;
            not_as_captured.extend(applied.map_err(|e| SandboxError::step(&cluster.name, "replaying the capture", e))?);
            continue;
        }
        let check = (cluster.role == Role::Manager && !workers.is_empty()).then_some(multikueue::ADMISSION_CHECK);
        for obj in queues::default_queues(&cpu, &memory, check) {
            kube_util::apply(&cluster.client, &obj)
                .await
                .map_err(|e| SandboxError::step(&cluster.name, "creating the default queues", e))?;
        }
    }
    if workers.is_empty() {
        return Ok(not_as_captured);
    }
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let seen = multikueue::connections(&manager.client).await;
        match &seen {
            Ok(connections) if connections.all_active(workers.len()) => return Ok(not_as_captured),
            _ if Instant::now() >= deadline => {
                let detail = match seen {
                    Ok(c) => c.in_words(workers.len()),
                    Err(e) => e.to_string(),
                };
                return Err(SandboxError::step("manager", "waiting for MultiKueue to connect the workers", detail));
            }
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Creates a capture's jobs again, the manager's first, once MultiKueue is connected: a job
/// queued before that would wait for a worker and say so.
async fn replay_jobs(replay: &Replay, started: &[StartedCluster]) -> Result<Vec<String>, SandboxError> {
    let mut said = Vec::new();
    for cluster in started {
        let Some(replayed) = replay.cluster(&cluster.name) else { continue };
        let applied = from_capture::apply_jobs(&cluster.client, replayed).await;
        said.extend(applied.map_err(|e| SandboxError::step(&cluster.name, "creating the captured jobs", e))?);
    }
    Ok(said)
}

/// The user's kubeconfig: one admin context per cluster, the manager current.
fn write_user_kubeconfig(
    dir: &Path,
    sandbox: &str,
    started: &[StartedCluster],
) -> Result<serde_json::Value, SandboxError> {
    let contexts: Vec<String> = started.iter().map(|c| context_name(sandbox, &c.name)).collect();
    let entries: Vec<Entry<'_>> = started
        .iter()
        .zip(&contexts)
        .map(|(cluster, context)| Entry {
            context,
            server: cluster.admin.server.clone(),
            ca_pem: &cluster.admin.ca_pem,
            credentials: Credentials::ClientCert { cert_pem: &cluster.admin.cert_pem, key_pem: &cluster.admin.key_pem },
        })
        .collect();
    let path = dir.join(KUBECONFIG_FILE);
    let rendered = kubeconfig::render(&entries);
    kubeconfig::write(&path, &rendered).map_err(SandboxError::io(&path))?;
    Ok(rendered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::declarative::config::IntegrationConfig;

    fn sample(file: &str) -> Vec<Integration> {
        let text = std::fs::read_to_string(format!("samples/{file}")).unwrap();
        IntegrationConfig::parse(file, &text).unwrap().integrations
    }

    #[test]
    fn up_on_a_running_sandbox_refuses_every_setting_it_would_ignore() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = sample("integrations/job-integration.yaml");
        let crds = vec!["pipelineruns.tekton.dev".to_string()];
        let addons = [Addon::Jobset];
        let running =
            SandboxRecord::new("kueue-ext", dir.path(), 2, RuntimeKind::Process, &jobs, &crds, &addons).snapshot();
        let mismatch = |workers, runtime, integrations: &[Integration]| {
            settings_mismatch(&running, &Settings { workers, runtime, integrations, crds: &crds, addons: &addons })
        };
        assert_eq!(mismatch(2, None, &jobs), None);
        assert_eq!(mismatch(2, Some(RuntimeKind::Process), &jobs), None);
        assert_eq!(mismatch(3, None, &jobs).as_deref(), Some("runs 2 worker(s), not 3"));
        assert_eq!(
            mismatch(2, Some(RuntimeKind::Kind), &jobs).as_deref(),
            Some("runs on the process runtime, not kind")
        );
        assert_eq!(
            mismatch(2, None, &sample("addons/jobset/jobset-integration.yaml")).as_deref(),
            Some(
                "was started with --integrations for Job.v1.batch; this `up` asks for --integrations for \
                 JobSet.v1alpha2.jobset.x-k8s.io"
            )
        );
        assert_eq!(
            mismatch(2, None, &[]).as_deref(),
            Some("was started with --integrations for Job.v1.batch; this `up` asks for no --integrations")
        );
        let mut edited = jobs.clone();
        edited[0].managed_by = None;
        assert_eq!(
            mismatch(2, None, &edited).as_deref(),
            Some(
                "was started with --integrations for Job.v1.batch; this `up` asks for --integrations for \
                 Job.v1.batch with other descriptions"
            )
        );
        let other = Settings { workers: 2, runtime: None, integrations: &jobs, crds: &[], addons: &addons };
        assert_eq!(
            settings_mismatch(&running, &other).as_deref(),
            Some("was started with --crds pipelineruns.tekton.dev; this `up` asks for none")
        );
        let other = Settings { workers: 2, runtime: None, integrations: &jobs, crds: &crds, addons: &[] };
        assert_eq!(
            settings_mismatch(&running, &other).as_deref(),
            Some("was started with --addons jobset; this `up` asks for none")
        );
    }
}
