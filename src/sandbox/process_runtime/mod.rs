//! The `process` runtime: every cluster is local processes (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler, kwok, Kueue and this project's controller) with its
//! own PKI and loopback ports, from the pinned toolchain. Kueue, the add-ons and our controller
//! go on as a real install would put them, their webhooks called by URL on loopback.

mod addons;
pub mod health;
mod kueue;
pub mod kwok;
mod layout;
pub use layout::kueue_config_file;
mod our_controller;
pub mod pki;
pub mod ports;
pub(super) mod process;
pub(super) mod revive;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::future::join_all;

use addons::AddonLayout;
use health::Prober;
use layout::{ADMIN_KUBECONFIG, ComponentSpec, Layout, Ports};
use pki::Pki;
use process::Launch;

use super::cluster_setup::addons::{self as sandbox_addons, Addon, AddonError, BuiltAddon};
use super::error::SandboxError;
use super::kubeconfig::{self, Credentials, Entry};
use super::progress::Progress;
use super::record::{Cluster, Component, RuntimeKind, SandboxRecord, SandboxState};
use super::runtime::{AdminAccess, ClusterPlan, ClusterRuntime, ComponentHealth, StartedCluster};
use super::toolchain::{self, Toolchain};
use crate::kube_util::{self, KubeconfigError};

const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a component gets to exit on SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(10);

/// Clusters as local processes; `toolchain` is `None` when only checking or removing a sandbox.
pub struct ProcessRuntime {
    toolchain: Option<Toolchain>,
    self_exe: PathBuf,
    component_args: Vec<(String, String)>,
    addons: Vec<BuiltAddon>,
}

impl ProcessRuntime {
    /// Builds (or finds) the toolchain and says why this runtime runs.
    pub async fn prepare(
        api_server_port: Option<u16>,
        component_args: Vec<(String, String)>,
        addons: &[Addon],
        reason: &str,
        progress: &Progress,
    ) -> Result<Self, SandboxError> {
        for addon in addons {
            if let Some(why) = addon.spec().not_a_local_process {
                return Err(AddonError::NotALocalProcess { addon: addon.name(), why }.into());
            }
        }
        if let Some(port) = api_server_port.filter(|p| !ports::is_free(*p)) {
            return Err(SandboxError::PortInUse { port, what: "kube-apiserver of cluster manager".into() });
        }
        let toolchain = toolchain::ensure(progress).await?;
        progress.line(format!("Runtime: process ({reason}; binaries from {})", toolchain.bin_dir().display()));
        let addons = sandbox_addons::ensure_built(&toolchain, addons, progress).await?;
        let self_exe = std::env::current_exe().map_err(SandboxError::io("the plugin's own executable"))?;
        Ok(ProcessRuntime { toolchain: Some(toolchain), self_exe, component_args, addons })
    }

    /// For `status` and `down` of a recorded sandbox: nothing to build.
    pub fn recorded() -> Self {
        ProcessRuntime { toolchain: None, self_exe: PathBuf::new(), component_args: Vec::new(), addons: Vec::new() }
    }
}

impl ClusterRuntime for ProcessRuntime {
    fn runtime_kind(&self) -> RuntimeKind {
        RuntimeKind::Process
    }

    async fn start_cluster(
        &self,
        plan: &ClusterPlan,
        record: &SandboxRecord,
        progress: &Progress,
    ) -> Result<StartedCluster, SandboxError> {
        let Some(toolchain) = &self.toolchain else {
            return Err(SandboxError::step(&plan.name, "starting", "the process runtime was not prepared"));
        };
        let wanted = Ports::COUNT + AddonLayout::PORTS * self.addons.len();
        let mut free = ports::allocate(wanted).map_err(SandboxError::io("127.0.0.1"))?;
        if let Some(port) = plan.fixed_api_port {
            free[2] = port;
        }
        let ports = Ports::from_slice(free[..Ports::COUNT].try_into().expect("allocated Ports::COUNT ports"));
        let layout = Layout::new(&plan.name, &record.dir.join(&plan.name), toolchain, ports, &self.self_exe);
        let addon_ports = free[Ports::COUNT..].chunks_exact(AddonLayout::PORTS);
        let addons: Vec<AddonLayout> = self
            .addons
            .iter()
            .zip(addon_ports)
            .map(|(built, ports)| AddonLayout::new(built, &layout, ports.try_into().expect("PORTS ports per add-on")))
            .collect();
        start_cluster(plan, &layout, &addons, toolchain, record, &self.component_args, progress).await
    }

    /// Stops every recorded process (all at once: nothing is kept, so order does not matter,
    /// and waiting for each in turn would only add up grace periods).
    async fn teardown(&self, state: &SandboxState) -> Result<usize, SandboxError> {
        let running: Vec<_> =
            state.processes_in_stop_order().into_iter().filter(|(_, c)| c.process.is_running()).collect();
        join_all(running.iter().map(|(_, c)| c.process.stop(GRACE))).await;
        Ok(running.len())
    }

    async fn components(&self, _state: &SandboxState, cluster: &Cluster) -> Vec<ComponentHealth> {
        let mut prober = Prober::for_cluster_dir(&cluster.dir).ok();
        let mut components = Vec::new();
        for component in &cluster.components {
            let reason = if !component.process.is_running() {
                Some(format!("process {} is not running", component.process.pid))
            } else {
                match prober.as_mut() {
                    Some(prober) => prober.check(&component.probe).await.err().map(|e| format!("health check: {e}")),
                    None => Some("the cluster's certificates are missing".into()),
                }
            };
            components.push(ComponentHealth {
                name: component.name.clone(),
                ready: reason.is_none(),
                pid: Some(component.process.pid),
                log: component.process.log.display().to_string(),
                reason,
            });
        }
        components
    }

    async fn admin_client(&self, _state: &SandboxState, cluster: &Cluster) -> Result<kube::Client, KubeconfigError> {
        kube_util::client_for(&cluster.dir.join(ADMIN_KUBECONFIG), "admin").await
    }
}

async fn start_cluster(
    plan: &ClusterPlan,
    layout: &Layout,
    addons: &[AddonLayout],
    toolchain: &Toolchain,
    record: &SandboxRecord,
    component_args: &[(String, String)],
    progress: &Progress,
) -> Result<StartedCluster, SandboxError> {
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
    record.add_cluster(Cluster {
        name: name.to_string(),
        role: plan.role,
        context: plan.context.clone(),
        dir: layout.dir.clone(),
        api_server_port: layout.ports.api_server,
        components: Vec::new(),
        kind_cluster: None,
    })?;

    let mut prober = Prober::new(pki.ca_cert.clone(), pki.admin_cert.clone(), pki.admin_key.clone());
    let launcher = Launcher { cluster: name, layout, record, extra_args: component_args };
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
    for addon in addons {
        addons::install_crds(&client, &addon.built).await?;
    }
    kueue::install(
        &client,
        layout,
        &toolchain.kueue_components(),
        plan.multikueue_manager,
        &plan.integrations,
        &plan.addons,
        plan.kueue_settings.as_ref(),
    )
    .await
    .map_err(|e| SandboxError::step(name, "installing Kueue", e))?;
    our_controller::install(&client, layout, &plan.integrations, &plan.crds)
        .await
        .map_err(|e| SandboxError::step(name, "installing kueue-ext", e))?;
    for addon in addons {
        addons::install(&client, layout, addon).await?;
    }
    // Kueue, our controller and the add-ons need only the API server; they start side by side.
    started.push(launcher.start(&layout.kueue())?);
    started.push(launcher.start(&layout.controller())?);
    for addon in addons {
        started.push(launcher.start(&addon.component())?);
    }
    for component in &started {
        launcher.wait_ready(component, &mut prober).await?;
    }
    // Kueue sets its integration of an add-on's kind up once it has seen the CRD, after it serves.
    sandbox_addons::wait_until_admitted(&client, &plan.addons, READY_TIMEOUT).await?;
    step.done();
    Ok(StartedCluster {
        name: name.to_string(),
        role: plan.role,
        client,
        internal_server: layout.api_server_url(),
        admin: AdminAccess {
            server: layout.api_server_url(),
            ca_pem: pki.ca_cert,
            cert_pem: pki.admin_cert,
            key_pem: pki.admin_key,
        },
    })
}

struct Launcher<'a> {
    cluster: &'a str,
    layout: &'a Layout,
    record: &'a SandboxRecord,
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
        self.record.add_component(self.cluster, component.clone())?;
        Ok(component)
    }

    async fn start_and_wait(&self, spec: &ComponentSpec, prober: &mut Prober) -> Result<(), SandboxError> {
        let component = self.start(spec)?;
        self.wait_ready(&component, prober).await
    }

    async fn wait_ready(&self, component: &Component, prober: &mut Prober) -> Result<(), SandboxError> {
        wait_ready(self.cluster, component, prober).await
    }
}

/// Polls the probe until it answers, failing fast if the process exits.
async fn wait_ready(cluster: &str, component: &Component, prober: &mut Prober) -> Result<(), SandboxError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if !component.process.is_running() {
            // Give the process a moment to flush its last words to the log.
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Err(SandboxError::Died {
                cluster: cluster.to_string(),
                component: component.name.clone(),
                log: component.process.log.clone(),
                tail: toolchain::log_tail(&component.process.log, 15),
            });
        }
        let last_error = match prober.check(&component.probe).await {
            Ok(()) => return Ok(()),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(SandboxError::NotReady {
                cluster: cluster.to_string(),
                component: component.name.clone(),
                seconds: READY_TIMEOUT.as_secs(),
                last_error,
                log: component.process.log.clone(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_add_on_that_cannot_run_as_a_local_process_is_refused_before_anything_is_built() {
        let progress = Progress::stderr();
        let refused =
            ProcessRuntime::prepare(None, vec![], &[Addon::Jobset, Addon::Appwrapper], "test", &progress).await;
        let err = refused.err().expect("refused").to_string();
        assert!(err.starts_with("add-on appwrapper cannot run on the process runtime: its webhook server"), "{err}");
        assert!(err.ends_with("run it on kind (--runtime kind)"), "{err}");
        let refused = ProcessRuntime::prepare(None, vec![], &[Addon::Kubeflow], "test", &progress).await;
        let err = refused.err().expect("refused").to_string();
        assert!(err.starts_with("add-on kubeflow cannot run on the process runtime: its webhook server"), "{err}");
    }
}
