//! The faults of the kind soak, as they meet clusters of real nodes: our controller's leading
//! pod deleted, Kueue's pod deleted, the worker's node container restarted (`docker restart`),
//! and the worker's kube-apiserver killed (its static pod's container stopped; the kubelet
//! starts it again). Pods are deleted with no grace and the API server killed at once: a
//! crash, not a drain; the node is restarted as a reboot does it.
//!
//! A fault counts only once it is seen to take effect: another controller renewing the Lease,
//! another Kueue pod ready, the node container started anew and its Node ready, another
//! kube-apiserver container answering.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Client, ResourceExt};

use super::Rng;

/// How long a fault may take to be seen: a successor leads once the deleted leader's Lease
/// expires (15 s); a restarted node brings its whole control plane back.
const TAKING_EFFECT: Duration = Duration::from_secs(240);
const KUEUE_NAMESPACE: &str = "kueue-system";
const KUEUE_POD_PREFIX: &str = "kueue-controller-manager-";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Our controller's leading pod deleted, on any cluster.
    ControllerPod,
    /// Kueue's pod deleted, on any cluster.
    KueuePod,
    /// The worker's node container restarted: every pod on it, its API server included.
    NodeRestart,
    /// The worker's kube-apiserver container killed.
    ApiServerKill,
}

impl Fault {
    const ALL: [Fault; 4] = [Fault::ControllerPod, Fault::KueuePod, Fault::NodeRestart, Fault::ApiServerKill];

    fn on_any_cluster(self) -> bool {
        matches!(self, Fault::ControllerPod | Fault::KueuePod)
    }
}

/// `count` faults in a random order, every kind of fault among them once `count` allows, each
/// with the cluster it hits.
pub fn plan(count: usize, clusters: &[String], rng: &mut Rng) -> Vec<(Fault, String)> {
    let mut planned: Vec<(Fault, String)> = (0..count)
        .map(|i| {
            let fault = Fault::ALL[i % Fault::ALL.len()];
            let cluster = if fault.on_any_cluster() {
                clusters[rng.between(0, clusters.len() as u64 - 1) as usize].clone()
            } else {
                clusters.last().expect("a worker").clone()
            };
            (fault, cluster)
        })
        .collect();
    for i in (1..planned.len()).rev() {
        planned.swap(i, rng.between(0, i as u64) as usize);
    }
    planned
}

/// One fault as injected and seen.
#[derive(Debug, Clone)]
pub struct Injected {
    pub fault: Fault,
    pub cluster: String,
    /// What it hit: a pod, a container.
    pub target: String,
    /// When, in seconds since the epoch.
    pub at: i64,
    /// How long until it was seen taking effect, or why it was not.
    pub seen: Result<Duration, String>,
}

/// The node container of a kind cluster.
fn node_container(kind_cluster: &str) -> String {
    format!("{kind_cluster}-control-plane")
}

async fn docker(args: &[&str]) -> Result<String, String> {
    let output = tokio::process::Command::new("docker").args(args).output().await.map_err(|e| e.to_string())?;
    let said = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if output.status.success() {
        Ok(said)
    } else {
        Err(format!("docker {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

/// Injects `fault` on `cluster` (`client` is its) and waits until it is seen taking effect.
pub async fn inject(fault: Fault, cluster: &str, kind_cluster: &str, client: &Client) -> Injected {
    let at = Timestamp::now().as_second();
    let started = Instant::now();
    let (target, seen) = match fault {
        Fault::ControllerPod => delete_leading_controller(client).await,
        Fault::KueuePod => delete_kueue_pod(client).await,
        Fault::NodeRestart => restart_node(kind_cluster, client, at).await,
        Fault::ApiServerKill => kill_api_server(kind_cluster, client).await,
    };
    let seen = seen.map(|()| started.elapsed());
    Injected { fault, cluster: cluster.to_string(), target, at, seen }
}

/// `check` until it holds or [`TAKING_EFFECT`] passed (then the last reason it did not).
async fn until_seen<F, Fut>(mut check: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + TAKING_EFFECT;
    loop {
        match check().await {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => return Err(format!("not seen within {TAKING_EFFECT:?}: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

fn no_grace() -> DeleteParams {
    DeleteParams { grace_period_seconds: Some(0), ..Default::default() }
}

/// Deletes the pod that holds our controller's Lease; seen once another holder renewed it.
async fn delete_leading_controller(client: &Client) -> (String, Result<(), String>) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), kueue_ext::manifests::NAMESPACE);
    let holder = || async {
        let lease = leases.get(kueue_ext::controller::leader::LEASE).await.map_err(|e| e.to_string())?;
        let spec = lease.spec.unwrap_or_default();
        let renewed = spec.renew_time.map(|t| t.0.as_second());
        spec.holder_identity.map(|h| (h, renewed)).ok_or_else(|| "no holder".to_string())
    };
    let Ok((leader, _)) = holder().await else { return ("no leader".into(), Err("the Lease has no holder".into())) };
    // The identity is `<host>-<pid>`, and a pod's host name is its name.
    let pod = leader.rsplit_once('-').map_or(leader.as_str(), |(host, _)| host).to_string();
    let pods: Api<Pod> = Api::namespaced(client.clone(), kueue_ext::manifests::NAMESPACE);
    if let Err(e) = pods.delete(&pod, &no_grace()).await {
        return (pod, Err(format!("deleting it: {e}")));
    }
    let at = Timestamp::now().as_second();
    let seen = until_seen(|| async {
        match holder().await? {
            (now, Some(renewed)) if now != leader && renewed >= at => Ok(()),
            (now, _) => Err(format!("the Lease is held by {now}")),
        }
    })
    .await;
    (pod, seen)
}

/// Deletes Kueue's pod; seen once another is ready.
async fn delete_kueue_pod(client: &Client) -> (String, Result<(), String>) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), KUEUE_NAMESPACE);
    let kueue_pods = || async {
        let listed = pods.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(
            listed.items.into_iter().filter(|p| p.name_any().starts_with(KUEUE_POD_PREFIX)).collect::<Vec<_>>(),
        )
    };
    let Some(pod) = kueue_pods().await.ok().and_then(|p| p.first().map(|p| p.name_any())) else {
        return ("no Kueue pod".into(), Err(format!("no pod {KUEUE_POD_PREFIX}* in {KUEUE_NAMESPACE}")));
    };
    if let Err(e) = pods.delete(&pod, &no_grace()).await {
        return (pod, Err(format!("deleting it: {e}")));
    }
    let seen = until_seen(|| async {
        let others: Vec<Pod> = kueue_pods().await?.into_iter().filter(|p| p.name_any() != pod).collect();
        if others.iter().any(pod_ready) { Ok(()) } else { Err("no other Kueue pod is ready".into()) }
    })
    .await;
    (pod, seen)
}

fn pod_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Restarts the node container; seen once Docker started it anew and its Node is ready again,
/// by a heartbeat of the kubelet since.
async fn restart_node(kind_cluster: &str, client: &Client, at: i64) -> (String, Result<(), String>) {
    let node = node_container(kind_cluster);
    let started_at = || async { docker(&["inspect", "-f", "{{.State.StartedAt}}", &node]).await };
    let before = match started_at().await {
        Ok(before) => before,
        Err(e) => return (node, Err(e)),
    };
    // As a node is rebooted: its systemd stops the kubelet and containerd, killed after 10 s.
    if let Err(e) = docker(&["restart", &node]).await {
        // A runc killed mid-create leaves the node unable to stop (`sandbox::thaw_kind_cluster`).
        let thawed = kueue_ext::sandbox::thaw_kind_cluster(kind_cluster).await;
        if let Err(again) = docker(&["restart", &node]).await {
            return (node, Err(format!("{e}; after thawing {thawed} frozen cgroups: {again}")));
        }
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let seen = until_seen(|| async {
        if started_at().await? == before {
            return Err("the container was not started again".into());
        }
        let node = nodes.get(&node).await.map_err(|e| e.to_string())?;
        let conditions = node.status.and_then(|s| s.conditions).unwrap_or_default();
        let ready = conditions.iter().find(|c| c.type_ == "Ready");
        match ready {
            Some(c) if c.status == "True" && c.last_heartbeat_time.as_ref().is_some_and(|t| t.0.as_second() > at) => {
                Ok(())
            }
            other => Err(format!("Node not ready since the restart: {other:?}")),
        }
    })
    .await;
    (node, seen)
}

/// The id of the kube-apiserver container that runs on `node`, from its mirror pod.
async fn api_server_container(client: &Client, node: &str) -> Result<String, String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let pod = pods.get(&format!("kube-apiserver-{node}")).await.map_err(|e| e.to_string())?;
    let statuses = pod.status.and_then(|s| s.container_statuses).unwrap_or_default();
    let running = statuses.iter().find(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
    let id = running.and_then(|c| c.container_id.as_deref()).ok_or("no kube-apiserver container runs")?;
    Ok(id.trim_start_matches("containerd://").to_string())
}

/// Kills the kube-apiserver container (its task, in the node's containerd); seen once the
/// kubelet runs another one and the API server answers. Just after a node restart the mirror
/// pod's status can still name the container the restart ended: that one is looked up again
/// until the status names a task the node has.
async fn kill_api_server(kind_cluster: &str, client: &Client) -> (String, Result<(), String>) {
    let node = node_container(kind_cluster);
    let deadline = Instant::now() + TAKING_EFFECT;
    let killed = loop {
        let id = match api_server_container(client, &node).await {
            Ok(id) => id,
            Err(e) => return (node, Err(e)),
        };
        match docker(&["exec", &node, "ctr", "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", &id]).await {
            Ok(_) => break id,
            Err(e) if e.contains("not found") && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return (format!("kube-apiserver container {}", short(&id)), Err(e)),
        }
    };
    let target = format!("kube-apiserver container {}", short(&killed));
    let seen = until_seen(|| async {
        if api_server_container(client, &node).await? == killed {
            return Err("the killed container still runs".into());
        }
        client.apiserver_version().await.map(|_| ()).map_err(|e| format!("the API server does not answer: {e}"))
    })
    .await;
    (target, seen)
}

fn short(container: &str) -> &str {
    &container[..container.len().min(13)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_has_every_fault_once_it_can_and_hits_the_worker_where_only_the_worker_is_meant() {
        let clusters = ["manager".to_string(), "worker1".to_string()];
        let planned = plan(8, &clusters, &mut Rng::new(3));
        assert_eq!(planned.len(), 8);
        for fault in Fault::ALL {
            assert_eq!(planned.iter().filter(|(f, _)| *f == fault).count(), 2, "{fault:?} in {planned:?}");
        }
        let worker_only = planned.iter().filter(|(f, _)| !f.on_any_cluster());
        assert!(worker_only.clone().all(|(_, c)| c == "worker1"), "{planned:?}");
        assert_ne!(planned, plan(8, &clusters, &mut Rng::new(4)), "the seed decides the order");
    }
}
