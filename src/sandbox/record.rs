//! The sandbox's record of itself (`<state dir>/state.json`): which runtime, which clusters,
//! which processes, which ports. [`SandboxState`] is the record as data, what `status`, `down`
//! and `up` on an existing sandbox load; [`SandboxRecord`] is `up`'s handle on it, saving it
//! after every change, so a crash mid-`up` leaves a record that `status` explains and `down`
//! cleans up.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::KUBECONFIG_FILE;
use super::cluster_setup::addons::Addon;
use super::error::SandboxError;
use super::fsutil::write_private;
use super::process_runtime::process::ProcessRecord;
use crate::integrations::declarative::config::Integration;

pub const STATE_FILE: &str = "state.json";

/// Which runtime made a sandbox (recorded in its state).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// Local processes: etcd, kube-apiserver, … built from pinned Go modules.
    Process,
    /// kind clusters in Docker.
    Kind,
}

impl std::fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RuntimeKind::Process => "process",
            RuntimeKind::Kind => "kind",
        })
    }
}

pub use crate::api::kueue::Role;

/// How to tell that a component serves.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Probe {
    /// HTTPS GET with the cluster's CA and admin certificate; 200 means ready.
    Https { port: u16, path: String },
    /// Plain HTTP GET on loopback; 200 means ready.
    Http { port: u16, path: String },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Component {
    pub name: String,
    pub process: ProcessRecord,
    pub probe: Probe,
    /// Program and arguments it was started with, to start it again the same way.
    #[serde(default)]
    pub command: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Cluster {
    pub name: String,
    pub role: Role,
    pub context: String,
    pub dir: PathBuf,
    pub api_server_port: u16,
    pub components: Vec<Component>,
    /// The kind cluster this sandbox created for it (kind runtime): `down` deletes exactly it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_cluster: Option<String>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SandboxPhase {
    /// `up` is running or died half-way.
    Starting,
    Up,
}

/// The record as data: what `state.json` holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SandboxState {
    pub name: String,
    pub runtime: RuntimeKind,
    pub phase: SandboxPhase,
    pub workers: u32,
    pub kubeconfig: PathBuf,
    pub clusters: Vec<Cluster>,
    /// The user's kubeconfig into which `up --merge-kubeconfig` merged the sandbox contexts.
    #[serde(default)]
    pub merged_kubeconfig: Option<PathBuf>,
    /// The kinds `up --integrations` configured on every cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrations: Vec<Integration>,
    /// The CustomResourceDefinitions `up --crds` applied on every cluster, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crds: Vec<String>,
    /// The add-ons `up --addons` runs on every cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addons: Vec<Addon>,
    /// The Docker network this sandbox's first kind cluster created: `down` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_network: Option<String>,
}

impl SandboxState {
    pub fn load(dir: &Path) -> std::io::Result<Option<SandboxState>> {
        let path = dir.join(STATE_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Atomic replace, so a crash mid-write never leaves a torn record.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let tmp = dir.join(format!("{STATE_FILE}.tmp"));
        write_private(&tmp, &serde_json::to_vec_pretty(self).expect("state serializes"))?;
        std::fs::rename(&tmp, dir.join(STATE_FILE))
    }

    pub fn cluster(&self, name: &str) -> Option<&Cluster> {
        self.clusters.iter().find(|c| c.name == name)
    }

    pub fn cluster_mut(&mut self, name: &str) -> Option<&mut Cluster> {
        self.clusters.iter_mut().find(|c| c.name == name)
    }

    /// Every recorded process, in the order it must stop: clusters in reverse, and within a
    /// cluster the last started first (Kueue before the apiserver, the apiserver before etcd).
    pub fn processes_in_stop_order(&self) -> Vec<(&Cluster, &Component)> {
        self.clusters
            .iter()
            .rev()
            .flat_map(|cluster| cluster.components.iter().rev().map(move |c| (cluster, c)))
            .collect()
    }
}

/// `up`'s handle on the record, saved after every change so a crash mid-`up` leaves a record
/// `down` can use.
pub struct SandboxRecord {
    pub dir: PathBuf,
    state: Arc<Mutex<SandboxState>>,
}

impl SandboxRecord {
    pub fn new(
        name: &str,
        dir: &Path,
        workers: u32,
        runtime: RuntimeKind,
        integrations: &[Integration],
        crds: &[String],
        addons: &[Addon],
    ) -> Self {
        let state = SandboxState {
            name: name.into(),
            runtime,
            phase: SandboxPhase::Starting,
            workers,
            kubeconfig: dir.join(KUBECONFIG_FILE),
            clusters: Vec::new(),
            merged_kubeconfig: None,
            integrations: integrations.to_vec(),
            crds: crds.to_vec(),
            addons: addons.to_vec(),
            kind_network: None,
        };
        SandboxRecord { dir: dir.to_path_buf(), state: Arc::new(Mutex::new(state)) }
    }

    pub fn update(&self, change: impl FnOnce(&mut SandboxState)) -> Result<(), SandboxError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut state);
        state.save(&self.dir).map_err(SandboxError::io(&self.dir))
    }

    pub fn save(&self) -> Result<(), SandboxError> {
        self.update(|_| {})
    }

    pub fn add_cluster(&self, cluster: Cluster) -> Result<(), SandboxError> {
        // Keep the manager first whatever order parallel starts finish in.
        self.update(|s| {
            s.clusters.push(cluster);
            s.clusters.sort_by_key(|c| (c.role != Role::Manager, c.name.clone()));
        })
    }

    pub fn add_component(&self, cluster: &str, component: Component) -> Result<(), SandboxError> {
        self.update(|s| {
            if let Some(c) = s.cluster_mut(cluster) {
                c.components.push(component);
            }
        })
    }

    pub fn finish(&self) -> Result<SandboxState, SandboxError> {
        self.update(|s| s.phase = SandboxPhase::Up)?;
        Ok(self.snapshot())
    }

    /// The record as it is now.
    pub fn snapshot(&self) -> SandboxState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The default state dir: `$KUEUE_EXT_HOME`, else the XDG state dir.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KUEUE_EXT_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::state_dir().or_else(dirs::data_local_dir).unwrap_or_else(std::env::temp_dir).join("kueue-ext")
}

/// The state dir of the sandbox `name`: the default one for the default name, else a sibling of
/// it named after the sandbox (`~/.local/state/kueue-ext-dev`), so that `down` of one never
/// touches another's.
pub fn dir_of(default: PathBuf, name: &str) -> PathBuf {
    if name == super::DEFAULT_NAME {
        return default;
    }
    let mut file_name = default.file_name().map(|f| f.to_os_string()).unwrap_or_default();
    file_name.push(format!("-{name}"));
    default.with_file_name(file_name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_named_sandbox_keeps_its_state_beside_the_default_one() {
        let default = std::path::PathBuf::from("/home/me/.local/state/kueue-ext");
        assert_eq!(super::dir_of(default.clone(), "kueue-ext"), default);
        assert_eq!(super::dir_of(default, "dev"), std::path::Path::new("/home/me/.local/state/kueue-ext-dev"));
    }

    use super::*;

    #[test]
    fn runtime_names_are_what_the_state_records() {
        assert_eq!(serde_json::to_value(RuntimeKind::Kind).unwrap(), "kind");
        assert_eq!(RuntimeKind::Process.to_string(), "process");
    }

    fn component(name: &str) -> Component {
        Component {
            name: name.into(),
            process: ProcessRecord { pid: 1, start_ticks: 1, log: PathBuf::from(format!("{name}.log")) },
            probe: Probe::Http { port: 1, path: "/healthz".into() },
            command: vec![name.into()],
        }
    }

    fn state() -> SandboxState {
        let cluster = |name: &str, role| Cluster {
            name: name.into(),
            role,
            context: format!("kueue-ext-{name}"),
            dir: PathBuf::from(name),
            api_server_port: 6443,
            components: vec![component("etcd"), component("kube-apiserver"), component("kueue")],
            kind_cluster: None,
        };
        SandboxState {
            name: "kueue-ext".into(),
            runtime: RuntimeKind::Process,
            phase: SandboxPhase::Starting,
            workers: 1,
            kubeconfig: PathBuf::from("kubeconfig"),
            clusters: vec![cluster("manager", Role::Manager), cluster("worker1", Role::Worker)],
            merged_kubeconfig: None,
            integrations: vec![],
            crds: vec![],
            addons: vec![],
            kind_network: None,
        }
    }

    #[test]
    fn stop_order_is_reverse_start_order() {
        let state = state();
        let order: Vec<String> =
            state.processes_in_stop_order().iter().map(|(c, p)| format!("{}/{}", c.name, p.name)).collect();
        assert_eq!(order.first().map(String::as_str), Some("worker1/kueue"));
        assert_eq!(order.last().map(String::as_str), Some("manager/etcd"));
    }

    #[test]
    fn state_round_trips_through_disk() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(SandboxState::load(dir.path()).unwrap(), None);
        let state = state();
        state.save(dir.path()).unwrap();
        assert_eq!(SandboxState::load(dir.path()).unwrap(), Some(state));
    }

    #[test]
    fn process_records_carry_no_kind_cluster_and_kind_ones_do() {
        let mut state = state();
        let json = serde_json::to_value(&state).unwrap();
        assert!(json["clusters"][0].get("kind_cluster").is_none(), "process state files keep their shape");
        assert_eq!(json["runtime"], "process");
        state.runtime = RuntimeKind::Kind;
        state.clusters[0].kind_cluster = Some("kueue-ext-manager".into());
        let back: SandboxState = serde_json::from_value(serde_json::to_value(&state).unwrap()).unwrap();
        assert_eq!(back.clusters[0].kind_cluster.as_deref(), Some("kueue-ext-manager"));
        assert_eq!(back.runtime, RuntimeKind::Kind);
    }

    #[test]
    fn torn_state_file_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(STATE_FILE), b"{").unwrap();
        let err = SandboxState::load(dir.path()).unwrap_err();
        assert!(err.to_string().contains(STATE_FILE));
    }
}
