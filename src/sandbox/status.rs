//! `status`: each cluster and component of the sandbox, ready or not, and why.

use std::path::{Path, PathBuf};

use serde::Serialize;

use kube::ResourceExt;
use kube::api::Api;

use super::chosen_runtime::ChosenRuntime;
use super::cluster_setup::multikueue::{self, ClusterConnection, Connections};
use super::error::SandboxError;
use super::record::{Cluster, Role, RuntimeKind, SandboxPhase, SandboxState};
use super::runtime::{ClusterRuntime, ComponentHealth};
use crate::api::kueue::{ADMITTED, EVICTED, FINISHED, Workload};
use crate::kube_util::KubeconfigError;

#[derive(Debug, Serialize)]
pub struct ClusterStatus {
    pub name: String,
    pub role: Role,
    pub context: String,
    pub ready: bool,
    pub components: Vec<ComponentHealth>,
    /// On a manager with workers: each worker connection as its Kueue sees it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multikueue: Option<MultiKueueStatus>,
}

#[derive(Debug, Serialize)]
pub struct MultiKueueStatus {
    pub admission_check_active: bool,
    pub clusters: Vec<ClusterConnection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why an inactive worker cannot serve MultiKueue (missing CRDs or permissions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<String>,
    /// Each job on the manager and the worker MultiKueue placed it on.
    pub jobs: Vec<JobPlacement>,
}

#[derive(Debug, Serialize)]
pub struct JobPlacement {
    /// `kind/namespace/name` of the job that owns the Workload.
    pub job: String,
    pub workload: String,
    /// `Pending`, `Admitted`, `Finished` or `Evicted`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

fn placement(wl: &Workload) -> JobPlacement {
    let owner = wl.owner_references().iter().find(|o| o.controller == Some(true));
    let state = if wl.is(FINISHED) {
        "Finished"
    } else if wl.is(EVICTED) {
        "Evicted"
    } else if wl.is(ADMITTED) {
        "Admitted"
    } else {
        "Pending"
    };
    JobPlacement {
        job: owner.map(|o| format!("{}/{}/{}", o.kind, wl.namespace().unwrap_or_default(), o.name)).unwrap_or_default(),
        workload: wl.name_any(),
        state: state.into(),
        worker: wl.status.as_ref().and_then(|s| s.cluster_name.clone()),
    }
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub name: String,
    pub runtime: RuntimeKind,
    pub state_dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub phase: SandboxPhase,
    pub ready: bool,
    pub clusters: Vec<ClusterStatus>,
}

impl StatusReport {
    /// One line per component that is not ready.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.phase == SandboxPhase::Starting {
            out.push("its start-up did not finish".to_string());
        }
        for cluster in &self.clusters {
            for c in cluster.components.iter().filter(|c| !c.ready) {
                let reason = c.reason.as_deref().unwrap_or("not ready");
                out.push(format!("{} of cluster {}: {reason} (log {})", c.name, cluster.name, c.log));
            }
            if let Some(mk) = &cluster.multikueue {
                if let Some(error) = &mk.error {
                    out.push(format!("MultiKueue state unreadable on {}: {error}", cluster.name));
                }
                for c in mk.clusters.iter().filter(|c| !c.active) {
                    out.push(format!("MultiKueueCluster {} is not Active: {} {}", c.name, c.reason, c.message));
                }
                if !mk.admission_check_active {
                    out.push("AdmissionCheck multikueue is not Active".to_string());
                }
                out.extend(mk.preflight.iter().cloned());
            }
        }
        out
    }
}

async fn multikueue_status(client: Result<kube::Client, KubeconfigError>) -> MultiKueueStatus {
    let read = async {
        let client = client.map_err(|e| e.to_string())?;
        let connections = multikueue::connections(&client).await.map_err(|e| e.to_string())?;
        let workloads = Api::<Workload>::all(client).list(&Default::default()).await.map_err(|e| e.to_string())?;
        Ok::<_, String>((connections, workloads.items.iter().map(placement).collect()))
    };
    match read.await {
        Ok((c, jobs)) => MultiKueueStatus {
            admission_check_active: c.admission_check_active,
            clusters: c.clusters,
            error: None,
            preflight: Vec::new(),
            jobs,
        },
        Err(e) => MultiKueueStatus {
            admission_check_active: false,
            clusters: Vec::new(),
            error: Some(e),
            preflight: Vec::new(),
            jobs: Vec::new(),
        },
    }
}

async fn worker_preflight(runtime: &impl ClusterRuntime, state: &SandboxState, worker: &Cluster) -> Vec<String> {
    match runtime.admin_client(state, worker).await {
        Ok(client) => multikueue::preflight(&worker.name, &client, &state.integrations, &state.addons).await,
        Err(e) => vec![format!("{}: unreachable: {e}", worker.name)],
    }
}

pub async fn status(dir: &Path) -> Result<StatusReport, SandboxError> {
    let state = SandboxState::load(dir)
        .map_err(SandboxError::io(dir))?
        .ok_or(SandboxError::NotUp { dir: dir.to_path_buf() })?;
    Ok(status_with(&ChosenRuntime::to_inspect(&state), dir, state).await)
}

async fn status_with(runtime: &impl ClusterRuntime, dir: &Path, state: SandboxState) -> StatusReport {
    let mut clusters = Vec::new();
    for cluster in &state.clusters {
        let components = runtime.components(&state, cluster).await;
        let mut ready = !components.is_empty() && components.iter().all(|c| c.ready);
        let multikueue = if cluster.role == Role::Manager && state.workers > 0 && ready {
            let mut status = multikueue_status(runtime.admin_client(&state, cluster).await).await;
            // Checked for every worker: a missing CRD breaks MultiKueue's watch before Kueue
            // says so, and Kueue never says why.
            for worker in state.clusters.iter().filter(|c| c.role == Role::Worker) {
                status.preflight.extend(worker_preflight(runtime, &state, worker).await);
            }
            ready = status.error.is_none()
                && status.preflight.is_empty()
                && (Connections {
                    admission_check: multikueue::ADMISSION_CHECK.into(),
                    admission_check_active: status.admission_check_active,
                    clusters: status.clusters.clone(),
                })
                .all_active(state.workers as usize);
            Some(status)
        } else {
            None
        };
        clusters.push(ClusterStatus {
            name: cluster.name.clone(),
            role: cluster.role,
            context: cluster.context.clone(),
            ready,
            components,
            multikueue,
        });
    }
    let ready = state.phase == SandboxPhase::Up && !clusters.is_empty() && clusters.iter().all(|c| c.ready);
    StatusReport {
        name: state.name,
        runtime: state.runtime,
        state_dir: dir.to_path_buf(),
        kubeconfig: state.kubeconfig,
        phase: state.phase,
        ready,
        clusters,
    }
}
