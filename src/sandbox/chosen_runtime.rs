//! Either runtime, chosen at run time. `ClusterRuntime` returns `impl Future`, so it cannot be a
//! trait object; this enum stands in for one, and is the one place a sandbox's record names the
//! runtime that `status` and `down` use.

use super::error::SandboxError;
use super::kind_runtime::{self, BollardDocker, KindCli, KindError, KindRuntime};
use super::process_runtime::ProcessRuntime;
use super::progress::Progress;
use super::record::{Cluster, RuntimeKind, SandboxRecord, SandboxState};
use super::runtime::{ClusterPlan, ClusterRuntime, ComponentHealth, StartedCluster};
use crate::kube_util::KubeconfigError;

pub enum ChosenRuntime {
    Process(ProcessRuntime),
    Kind(KindRuntime<KindCli, BollardDocker>),
}

impl ChosenRuntime {
    /// The runtime that made `state`, to read its health. That needs Docker and the API
    /// servers, not the kind CLI, so `kind` on the PATH stands in for a missing one.
    pub fn to_inspect(state: &SandboxState) -> Self {
        Self::recorded(state, kind_runtime::installed_kind_cli().unwrap_or_else(kind_on_path))
    }

    /// The runtime that made `state`, to remove it: deleting kind clusters needs the kind CLI.
    pub fn to_remove(state: &SandboxState) -> Result<Self, KindError> {
        let clusters: Vec<&str> = state.clusters.iter().filter_map(|c| c.kind_cluster.as_deref()).collect();
        let kind_cli = match kind_runtime::installed_kind_cli() {
            Some(kind_cli) => kind_cli,
            None if clusters.is_empty() => kind_on_path(),
            None => return Err(KindError::KindMissingForDown { clusters: clusters.join(", ") }),
        };
        Ok(Self::recorded(state, kind_cli))
    }

    fn recorded(state: &SandboxState, kind_cli: KindCli) -> Self {
        match state.runtime {
            RuntimeKind::Process => ChosenRuntime::Process(ProcessRuntime::recorded()),
            RuntimeKind::Kind => ChosenRuntime::Kind(KindRuntime::recorded(kind_cli, BollardDocker::connect())),
        }
    }
}

fn kind_on_path() -> KindCli {
    KindCli::new("kind".into())
}

impl ClusterRuntime for ChosenRuntime {
    fn runtime_kind(&self) -> RuntimeKind {
        match self {
            ChosenRuntime::Process(runtime) => runtime.runtime_kind(),
            ChosenRuntime::Kind(runtime) => runtime.runtime_kind(),
        }
    }

    async fn start_cluster(
        &self,
        plan: &ClusterPlan,
        record: &SandboxRecord,
        progress: &Progress,
    ) -> Result<StartedCluster, SandboxError> {
        match self {
            ChosenRuntime::Process(runtime) => runtime.start_cluster(plan, record, progress).await,
            ChosenRuntime::Kind(runtime) => runtime.start_cluster(plan, record, progress).await,
        }
    }

    async fn teardown(&self, state: &SandboxState) -> Result<usize, SandboxError> {
        match self {
            ChosenRuntime::Process(runtime) => runtime.teardown(state).await,
            ChosenRuntime::Kind(runtime) => runtime.teardown(state).await,
        }
    }

    async fn components(&self, state: &SandboxState, cluster: &Cluster) -> Vec<ComponentHealth> {
        match self {
            ChosenRuntime::Process(runtime) => runtime.components(state, cluster).await,
            ChosenRuntime::Kind(runtime) => runtime.components(state, cluster).await,
        }
    }

    async fn admin_client(&self, state: &SandboxState, cluster: &Cluster) -> Result<kube::Client, KubeconfigError> {
        match self {
            ChosenRuntime::Process(runtime) => runtime.admin_client(state, cluster).await,
            ChosenRuntime::Kind(runtime) => runtime.admin_client(state, cluster).await,
        }
    }
}
