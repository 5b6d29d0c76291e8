//! The clusters a run talks to, read from the sandbox's state: single-cluster checks on the
//! first worker (a full Kueue cluster with kwok nodes), MultiKueue checks on the manager; with
//! no workers, everything on the one cluster and no MultiKueue.

use std::path::{Path, PathBuf};

use kube::Client;

use crate::integrations::declarative::config::IntegrationConfig;
use crate::sandbox::SandboxError;
use crate::sandbox::state::{Cluster, Role, SandboxState};

#[derive(Clone)]
pub struct Named {
    pub name: String,
    pub client: Client,
}

pub struct MultiKueue {
    pub manager: Named,
    pub workers: Vec<Named>,
}

pub struct Target {
    pub single: Named,
    pub multikueue: Option<MultiKueue>,
    /// The sandbox's integrations file and what it says, when kinds are configured.
    pub integrations: Option<(PathBuf, IntegrationConfig)>,
}

impl Target {
    pub async fn from_sandbox(dir: &Path) -> anyhow::Result<Target> {
        let state = SandboxState::load(dir)
            .map_err(SandboxError::io(dir))?
            .ok_or(SandboxError::NotUp { dir: dir.to_path_buf() })?;
        let connect = async |cluster: &Cluster| -> anyhow::Result<Named> {
            let client = crate::kube_util::client_for(&state.kubeconfig, &cluster.context).await?;
            Ok(Named { name: cluster.name.clone(), client })
        };
        let manager = state.clusters.iter().find(|c| c.role == Role::Manager);
        let workers: Vec<&Cluster> = state.clusters.iter().filter(|c| c.role == Role::Worker).collect();
        let single_cluster =
            workers.first().copied().or(manager).ok_or_else(|| {
                anyhow::anyhow!("the sandbox at {} records no cluster: run `up` again", dir.display())
            })?;
        let multikueue = match (manager, workers.is_empty()) {
            (Some(manager), false) => {
                let mut connected = Vec::new();
                for worker in &workers {
                    connected.push(connect(worker).await?);
                }
                Some(MultiKueue { manager: connect(manager).await?, workers: connected })
            }
            _ => None,
        };
        // Every cluster gets the same file: the process runtime's controller reads it where
        // `Layout::integrations_file` puts it; on kind it is a ConfigMap, and the record says it.
        let file = single_cluster.dir.join("kueue-ext").join("integrations.yaml");
        let integrations = if file.exists() {
            Some((file.clone(), IntegrationConfig::load(&file)?))
        } else if !state.integrations.is_empty() {
            Some((dir.join(crate::sandbox::state::STATE_FILE), IntegrationConfig::new(state.integrations.clone())))
        } else {
            None
        };
        Ok(Target { single: connect(single_cluster).await?, multikueue, integrations })
    }
}
