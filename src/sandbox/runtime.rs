//! What differs between sandbox runtimes, behind one trait: how a cluster with Kueue and this
//! project's controller comes up, how its parts are checked, and how it goes away. The rest —
//! MultiKueue wiring, default queues, the user's kubeconfig, the sandbox's record, `status` and
//! `down` — is shared code that calls only this trait.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::cluster_setup::addons::Addon;
use super::error::SandboxError;
use super::progress::Progress;
use super::record::{Cluster, Role, RuntimeKind, SandboxRecord, SandboxState};
use crate::integrations::declarative::config::Integration;
use crate::kube_util::KubeconfigError;

/// One cluster to bring up.
#[derive(Clone, Debug)]
pub struct ClusterPlan {
    pub name: String,
    /// Its context in the sandbox's kubeconfig, and its kind cluster's name.
    pub context: String,
    pub role: Role,
    /// Port of its API server on 127.0.0.1, when the user fixed one.
    pub fixed_api_port: Option<u16>,
    /// Fake nodes to create, on clusters that run pods.
    pub nodes: Option<NodePool>,
    /// Set when its Kueue runs MultiKueue for workers.
    pub multikueue_manager: Option<MultiKueueManager>,
    /// Kinds integrated by configuration, on every cluster.
    pub integrations: Arc<[Integration]>,
    /// CustomResourceDefinitions applied before Kueue and our controller start (`up --crds`).
    pub crds: Arc<[Value]>,
    /// Third-party controllers run beside Kueue (`up --addons`).
    pub addons: Arc<[Addon]>,
    /// Settings of a captured Kueue Configuration laid over the sandbox's own (`up --from`).
    pub kueue_settings: Option<Value>,
}

/// Shape of the fake nodes of a cluster: kwok's on the process runtime; on kind, what sizes the
/// default queues.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePool {
    pub count: u32,
    pub cpu: String,
    pub memory: String,
}

impl Default for NodePool {
    fn default() -> Self {
        NodePool { count: 4, cpu: "8".into(), memory: "32Gi".into() }
    }
}

/// How a manager's Kueue runs MultiKueue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiKueueManager {
    /// How long a worker may be unreachable before MultiKueue runs its jobs elsewhere (they
    /// may then have run twice: longer than an API server restart on a busy machine).
    pub worker_lost_timeout: std::time::Duration,
}

impl Default for MultiKueueManager {
    fn default() -> Self {
        MultiKueueManager { worker_lost_timeout: std::time::Duration::from_secs(5 * 60) }
    }
}

impl ClusterPlan {
    /// The manager, then `workers` workers. With workers the manager admits by quota only;
    /// alone it runs the pods itself.
    pub fn all(sandbox: &str, workers: u32, nodes: &NodePool, api_server_port: Option<u16>) -> Vec<ClusterPlan> {
        let mut plans = vec![ClusterPlan {
            name: "manager".into(),
            context: super::context_name(sandbox, "manager"),
            role: Role::Manager,
            fixed_api_port: api_server_port,
            nodes: (workers == 0).then(|| nodes.clone()),
            multikueue_manager: (workers > 0).then_some(MultiKueueManager::default()),
            integrations: Arc::from([]),
            crds: Arc::from([]),
            addons: Arc::from([]),
            kueue_settings: None,
        }];
        for i in 1..=workers {
            plans.push(ClusterPlan {
                name: format!("worker{i}"),
                context: super::context_name(sandbox, &format!("worker{i}")),
                role: Role::Worker,
                fixed_api_port: None,
                nodes: Some(nodes.clone()),
                multikueue_manager: None,
                integrations: Arc::from([]),
                crds: Arc::from([]),
                addons: Arc::from([]),
                kueue_settings: None,
            });
        }
        plans
    }
}

/// Admin access to a cluster from this machine: what the user's kubeconfig holds.
#[derive(Clone, Debug, PartialEq)]
pub struct AdminAccess {
    pub server: String,
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// A cluster whose control plane, Kueue and controller are up.
pub struct StartedCluster {
    pub name: String,
    pub role: Role,
    pub client: kube::Client,
    pub admin: AdminAccess,
    /// The API server as the other clusters' Kueue reaches it (MultiKueue kubeconfigs).
    pub internal_server: String,
}

/// Health of one part of a cluster, as `status` reports it.
#[derive(Debug, Serialize)]
pub struct ComponentHealth {
    pub name: String,
    pub ready: bool,
    /// The process, on the process runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Where its log is: a file, or the command that shows it.
    pub log: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A way to run sandbox clusters.
pub trait ClusterRuntime {
    fn runtime_kind(&self) -> RuntimeKind;

    /// Brings up one cluster: control plane, nodes, Kueue (configured for MultiKueue when the
    /// plan says so), this project's CRDs, RBAC, webhooks and controller. Records in `record`
    /// what `teardown` must undo as soon as it exists.
    fn start_cluster(
        &self,
        plan: &ClusterPlan,
        record: &SandboxRecord,
        progress: &Progress,
    ) -> impl Future<Output = Result<StartedCluster, SandboxError>>;

    /// Stops and removes what the recorded clusters run; returns how many things it stopped.
    fn teardown(&self, state: &SandboxState) -> impl Future<Output = Result<usize, SandboxError>>;

    /// Health of each part of a recorded cluster.
    fn components(&self, state: &SandboxState, cluster: &Cluster) -> impl Future<Output = Vec<ComponentHealth>>;

    /// A client with admin rights on a recorded cluster.
    fn admin_client(
        &self,
        state: &SandboxState,
        cluster: &Cluster,
    ) -> impl Future<Output = Result<kube::Client, KubeconfigError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_manager_runs_pods_and_a_manager_of_workers_does_not() {
        let pool = NodePool::default();
        let alone = ClusterPlan::all("kueue-ext", 0, &pool, Some(6443));
        assert_eq!(alone.len(), 1);
        assert!(alone[0].nodes.is_some() && alone[0].multikueue_manager.is_none());
        assert_eq!(alone[0].fixed_api_port, Some(6443));
        let names: Vec<(String, String)> =
            ClusterPlan::all("dev", 2, &pool, None).into_iter().map(|p| (p.name, p.context)).collect();
        let expected = [("manager", "dev-manager"), ("worker1", "dev-worker1"), ("worker2", "dev-worker2")];
        assert_eq!(names, expected.map(|(name, context)| (name.to_string(), context.to_string())));
        let with_workers = ClusterPlan::all("kueue-ext", 2, &pool, None);
        assert!(with_workers[0].nodes.is_none() && with_workers[0].multikueue_manager.is_some());
        assert!(with_workers[1].nodes.is_some() && with_workers[1].fixed_api_port.is_none());
    }
}
