//! The sandbox record kept by `up`: saved after every change, so a crash mid-`up` leaves a
//! record that `status` explains and `down` cleans up.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::KUBECONFIG_FILE;
use super::addons::Addon;
use super::error::SandboxError;
use super::state::{Cluster, Component, Role, RuntimeKind, SandboxPhase, SandboxState};
use crate::integrations::declarative::config::Integration;

/// The sandbox record, saved after every change so a crash mid-`up` leaves a record `down` can use.
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
