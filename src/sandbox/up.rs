//! `up` for the process runtime: toolchain, PKI, control planes, kwok nodes and Kueue.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::future::try_join_all;

use super::error::SandboxError;
use super::health::Prober;
use super::kubeconfig::{self, Credentials, Entry};
use super::kwok::{self, NodePool};
use super::layout::{ComponentSpec, Layout, Ports};
use super::pki::Pki;
use super::process::{self, Launch};
use super::progress::Progress;
use super::recorder::Recorder;
use super::state::{Cluster, Component, Phase, Role, SandboxState};
use super::toolchain::{self, Toolchain};
use super::{KUBECONFIG_FILE, context_name, integration, kueue, multikueue, ports, queues, status};
use crate::kube_util;

#[derive(Clone, Debug)]
pub struct UpOptions {
    pub state_dir: PathBuf,
    pub workers: u32,
    /// Fixed port for the manager's kube-apiserver; a free one when `None`.
    pub api_server_port: Option<u16>,
    /// Fake nodes of each cluster that runs pods.
    pub nodes: NodePool,
    /// Extra flags per component name, appended to its command line.
    pub component_args: Vec<(String, String)>,
    /// Also merge the sandbox contexts into this kubeconfig (kind's behaviour).
    pub merge_kubeconfig: Option<PathBuf>,
}

#[derive(Debug)]
pub enum UpOutcome {
    Started { state: SandboxState, elapsed: Duration },
    AlreadyUp(SandboxState),
}

const READY_TIMEOUT: Duration = Duration::from_secs(120);

pub async fn up(options: &UpOptions, progress: &Progress) -> Result<UpOutcome, SandboxError> {
    let dir = &options.state_dir;
    if let Some(existing) = SandboxState::load(dir).map_err(SandboxError::io(dir))? {
        if !is_leftover_of_failed_start(&existing) {
            return already_there(dir, existing, options.workers).await;
        }
        progress.line(format!("removing the leftovers of an earlier failed start at {}", dir.display()));
        super::down(dir).await?;
    }
    if let Some(port) = options.api_server_port.filter(|p| !ports::is_free(*p)) {
        return Err(SandboxError::PortInUse { port, what: "kube-apiserver of cluster manager".into() });
    }
    let started = Instant::now();
    let toolchain = toolchain::ensure(progress).await?;
    progress.line(format!("Runtime: process ({}; binaries from {})", runtime_reason(), toolchain.bin_dir().display()));

    std::fs::create_dir_all(dir).map_err(SandboxError::io(dir))?;
    let recorder = Recorder::new(dir, options.workers);
    recorder.save()?;
    let result = start_all(options, &toolchain, &recorder, progress).await;
    match result {
        Ok(()) => {
            let state = recorder.finish()?;
            Ok(UpOutcome::Started { state, elapsed: started.elapsed() })
        }
        Err(err) => {
            progress.line("start-up failed; stopping what was started");
            recorder.abandon().await;
            Err(err)
        }
    }
}

/// Why the process runtime: the kind runtime needs a Docker daemon and the kind CLI.
fn runtime_reason() -> &'static str {
    let docker = std::os::unix::net::UnixStream::connect("/var/run/docker.sock").is_ok();
    if docker {
        "the kind runtime is not available in this version"
    } else {
        "no Docker daemon answers at /var/run/docker.sock"
    }
}

/// A record that a failed `up` left behind: nothing runs, only logs remain.
fn is_leftover_of_failed_start(state: &SandboxState) -> bool {
    state.phase == Phase::Starting && state.clusters.iter().all(|c| c.components.is_empty())
}

/// `up` on an existing sandbox changes nothing: it is either fine, or we say what is wrong.
async fn already_there(dir: &Path, existing: SandboxState, workers: u32) -> Result<UpOutcome, SandboxError> {
    let report = status(dir).await?;
    if !report.ready {
        return Err(SandboxError::Broken { dir: dir.to_path_buf(), problems: report.problems().join("; ") });
    }
    if existing.workers != workers {
        return Err(SandboxError::WorkersMismatch {
            dir: dir.to_path_buf(),
            running: existing.workers,
            asked: workers,
        });
    }
    Ok(UpOutcome::AlreadyUp(existing))
}

async fn start_all(
    options: &UpOptions,
    toolchain: &Toolchain,
    recorder: &Recorder,
    progress: &Progress,
) -> Result<(), SandboxError> {
    let mut plans = vec![ClusterPlan {
        name: "manager".into(),
        role: Role::Manager,
        fixed_api_port: options.api_server_port,
        // With workers the manager admits by quota only; alone it runs the pods itself.
        nodes: (options.workers == 0).then(|| options.nodes.clone()),
        multikueue_manager: options.workers > 0,
    }];
    for i in 1..=options.workers {
        plans.push(ClusterPlan {
            name: format!("worker{i}"),
            role: Role::Worker,
            fixed_api_port: None,
            nodes: Some(options.nodes.clone()),
            multikueue_manager: false,
        });
    }
    let self_exe = std::env::current_exe().map_err(SandboxError::io("the plugin's own executable"))?;
    let mut layouts = Vec::new();
    for plan in &plans {
        let mut free = ports::allocate(Ports::COUNT).map_err(SandboxError::io("127.0.0.1"))?;
        if let Some(port) = plan.fixed_api_port {
            free[2] = port;
        }
        let ports = Ports::from_slice(free.as_slice().try_into().expect("allocated Ports::COUNT ports"));
        layouts.push(Layout::new(&plan.name, &recorder.dir.join(&plan.name), toolchain, ports, &self_exe));
    }
    // Clusters do not depend on each other: start them side by side.
    let started = try_join_all(
        plans
            .iter()
            .zip(&layouts)
            .map(|(plan, layout)| start_cluster(plan, layout, toolchain, recorder, &options.component_args, progress)),
    )
    .await?;
    let step = progress.step(if options.workers > 0 { "MultiKueue and default queues" } else { "default queues" });
    connect_clusters(options, &started).await?;
    step.done();
    let ours = write_user_kubeconfig(&recorder.dir, &layouts)?;
    if let Some(path) = &options.merge_kubeconfig {
        // Recorded first: if the merge fails half-way, `down` still cleans the file.
        recorder.update(|s| s.merged_kubeconfig = Some(path.clone()))?;
        kubeconfig::merge_into(path, &ours).map_err(SandboxError::io(path))?;
        progress.line(format!("merged contexts into {}", path.display()));
    }
    Ok(())
}

/// A cluster whose control plane and Kueue are up.
struct Started {
    name: String,
    role: Role,
    client: kube::Client,
    server: String,
    ca_pem: String,
}

/// Wires MultiKueue (with workers), creates the default queues, and waits until the manager's
/// Kueue reports every worker connection Active.
async fn connect_clusters(options: &UpOptions, started: &[Started]) -> Result<(), SandboxError> {
    let manager = started.iter().find(|c| c.role == Role::Manager).expect("the manager is always planned");
    let workers: Vec<&Started> = started.iter().filter(|c| c.role == Role::Worker).collect();
    if !workers.is_empty() {
        let remote: Vec<multikueue::Worker<'_>> = workers
            .iter()
            .map(|w| multikueue::Worker {
                name: &w.name,
                client: &w.client,
                server: w.server.clone(),
                ca_pem: &w.ca_pem,
            })
            .collect();
        multikueue::wire(&manager.client, &remote)
            .await
            .map_err(|e| SandboxError::step("manager", "wiring MultiKueue", e))?;
        let mut problems = Vec::new();
        for worker in &workers {
            problems.extend(multikueue::preflight(&worker.name, &worker.client).await);
        }
        if !problems.is_empty() {
            return Err(SandboxError::step("manager", "MultiKueue preflight", problems.join("; ")));
        }
    }
    let pool = &options.nodes;
    let per_cluster_nodes = |role| match role {
        Role::Worker => pool.count,
        Role::Manager if workers.is_empty() => pool.count,
        Role::Manager => pool.count * workers.len() as u32,
    };
    for cluster in started {
        let nodes = per_cluster_nodes(cluster.role);
        let quota =
            |q: &str| queues::scale_quantity(q, nodes).map_err(|e| SandboxError::step(&cluster.name, "quota", e));
        let check = (cluster.role == Role::Manager && !workers.is_empty()).then_some(multikueue::ADMISSION_CHECK);
        for obj in queues::default_queues(&quota(&pool.cpu)?, &quota(&pool.memory)?, check) {
            kube_util::apply(&cluster.client, &obj)
                .await
                .map_err(|e| SandboxError::step(&cluster.name, "creating the default queues", e))?;
        }
    }
    if workers.is_empty() {
        return Ok(());
    }
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let seen = multikueue::connections(&manager.client).await;
        match &seen {
            Ok(connections) if connections.all_active(workers.len()) => return Ok(()),
            _ if Instant::now() >= deadline => {
                let detail = match seen {
                    Ok(c) => format!("{c:?}"),
                    Err(e) => e.to_string(),
                };
                return Err(SandboxError::step("manager", "waiting for MultiKueue to connect the workers", detail));
            }
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

struct ClusterPlan {
    name: String,
    role: Role,
    fixed_api_port: Option<u16>,
    nodes: Option<NodePool>,
    multikueue_manager: bool,
}

async fn start_cluster(
    plan: &ClusterPlan,
    layout: &Layout,
    toolchain: &Toolchain,
    recorder: &Recorder,
    component_args: &[(String, String)],
    progress: &Progress,
) -> Result<Started, SandboxError> {
    let name = plan.name.as_str();
    let step = progress.step(format!("cluster {name}: control plane"));
    let pki = Pki::generate(name).map_err(|e| SandboxError::step(name, "generating its PKI", e))?;
    pki.write(&layout.dir.join("pki")).map_err(SandboxError::io(layout.dir.join("pki")))?;
    let admin = Entry {
        context: "admin",
        server: layout.api_server_url(),
        ca_pem: &pki.ca_cert,
        credentials: Credentials::ClientCert { cert_pem: &pki.admin_cert, key_pem: &pki.admin_key },
    };
    let admin_kubeconfig = layout.admin_kubeconfig();
    kubeconfig::write(&admin_kubeconfig, &kubeconfig::render(&[admin])).map_err(SandboxError::io(&admin_kubeconfig))?;
    let kwok_config = kwok::config(&toolchain.kwok_stages()).map_err(SandboxError::io(toolchain.kwok_stages()))?;
    std::fs::write(layout.kwok_config(), kwok_config).map_err(SandboxError::io(layout.kwok_config()))?;
    recorder.add_cluster(Cluster {
        name: name.to_string(),
        role: plan.role,
        context: context_name(name),
        dir: layout.dir.clone(),
        api_server_port: layout.ports.api_server,
        components: Vec::new(),
    })?;

    let mut prober = Prober::new(pki.ca_cert.clone(), pki.admin_cert.clone(), pki.admin_key.clone());
    let launcher = Launcher { cluster: name, layout, recorder, extra_args: component_args };
    launcher.start_and_wait(&layout.etcd(), &mut prober).await?;
    launcher.start_and_wait(&layout.api_server(), &mut prober).await?;
    // The control loops are not needed to install Kueue: start them now, check them at the end.
    let loops = [layout.controller_manager(), layout.scheduler(), layout.kwok()];
    let mut started: Vec<Component> = loops.iter().map(|spec| launcher.start(spec)).collect::<Result<_, _>>()?;
    step.done();

    let step = progress.step(format!("cluster {name}: Kueue {}", toolchain::versions::KUEUE));
    let client = kube_util::client_for(&admin_kubeconfig, "admin")
        .await
        .map_err(|e| SandboxError::step(name, "connecting to its kube-apiserver", e))?;
    if let Some(pool) = &plan.nodes {
        for node in kwok::nodes(pool) {
            kube_util::apply(&client, &node).await.map_err(|e| SandboxError::step(name, "creating kwok nodes", e))?;
        }
    }
    let created = kueue::install(&client, layout, &toolchain.kueue_components(), plan.multikueue_manager)
        .await
        .map_err(|e| SandboxError::step(name, "installing Kueue", e))?;
    recorder.add_external_files(created)?;
    integration::install(&client, layout).await.map_err(|e| SandboxError::step(name, "installing kueue-ext", e))?;
    // Kueue and our controller need only the API server; they start side by side.
    started.push(launcher.start(&layout.kueue())?);
    started.push(launcher.start(&layout.controller())?);
    for component in &started {
        launcher.wait_ready(component, &mut prober).await?;
    }
    step.done();
    Ok(Started {
        name: name.to_string(),
        role: plan.role,
        client,
        server: layout.api_server_url(),
        ca_pem: pki.ca_cert,
    })
}

struct Launcher<'a> {
    cluster: &'a str,
    layout: &'a Layout,
    recorder: &'a Recorder,
    extra_args: &'a [(String, String)],
}

impl Launcher<'_> {
    fn start(&self, spec: &ComponentSpec) -> Result<Component, SandboxError> {
        let log = self.layout.log(spec.name);
        let mut args = spec.args.clone();
        args.extend(self.extra_args.iter().filter(|(c, _)| c == spec.name).map(|(_, flag)| flag.clone()));
        let command = std::iter::once(spec.program.display().to_string()).chain(args.iter().cloned()).collect();
        let record =
            process::spawn(Launch { program: &spec.program, args, env: vec![], log: log.clone() }).map_err(|e| {
                SandboxError::step(self.cluster, format!("starting {} ({})", spec.name, spec.program.display()), e)
            })?;
        let component = Component { name: spec.name.to_string(), process: record, probe: spec.probe.clone(), command };
        self.recorder.add_component(self.cluster, component.clone())?;
        Ok(component)
    }

    async fn start_and_wait(&self, spec: &ComponentSpec, prober: &mut Prober) -> Result<(), SandboxError> {
        let component = self.start(spec)?;
        self.wait_ready(&component, prober).await
    }

    /// Polls the probe until it answers, failing fast if the process exits.
    async fn wait_ready(&self, component: &Component, prober: &mut Prober) -> Result<(), SandboxError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if !component.process.is_running() {
                // Give the process a moment to flush its last words to the log.
                tokio::time::sleep(Duration::from_millis(200)).await;
                return Err(SandboxError::Died {
                    cluster: self.cluster.to_string(),
                    component: component.name.clone(),
                    log: component.process.log.clone(),
                    tail: toolchain::log_tail(&component.process.log, 15),
                });
            }
            let last_error = match prober.check(&component.probe).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(SandboxError::NotReady {
                    cluster: self.cluster.to_string(),
                    component: component.name.clone(),
                    seconds: READY_TIMEOUT.as_secs(),
                    last_error,
                    log: component.process.log.clone(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The user's kubeconfig: one admin context per cluster, the manager current.
fn write_user_kubeconfig(dir: &Path, layouts: &[Layout]) -> Result<serde_json::Value, SandboxError> {
    let mut pems = Vec::new();
    for layout in layouts {
        let read = |p: &Path| std::fs::read_to_string(p).map_err(SandboxError::io(p));
        pems.push((read(&layout.pki.ca_cert)?, read(&layout.pki.admin_cert)?, read(&layout.pki.admin_key)?));
    }
    let contexts: Vec<String> = layouts.iter().map(|l| context_name(&l.name)).collect();
    let entries: Vec<Entry<'_>> = layouts
        .iter()
        .zip(&pems)
        .zip(&contexts)
        .map(|((layout, (ca, cert, key)), context)| Entry {
            context,
            server: layout.api_server_url(),
            ca_pem: ca,
            credentials: Credentials::ClientCert { cert_pem: cert, key_pem: key },
        })
        .collect();
    let path = dir.join(KUBECONFIG_FILE);
    let rendered = kubeconfig::render(&entries);
    kubeconfig::write(&path, &rendered).map_err(SandboxError::io(&path))?;
    Ok(rendered)
}
