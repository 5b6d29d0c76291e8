//! The cluster's DNS: kubeadm's CoreDNS, ready before `up` returns so that pods find Services by
//! name (a PyTorchJob's Workers look their Master up so). One replica: kubeadm's second would
//! take a tenth of a core the node's jobs need more.
//!
//! On the locally built node image, the node's resolver is Docker's, on the loopback address
//! 127.0.0.11; from CoreDNS's pod that address is CoreDNS itself, so kubeadm's "forward to the
//! node's resolver" is a loop CoreDNS refuses to start with. There it answers for the cluster's
//! names only (the sandbox is offline anyway).

use std::time::Duration;

use kube::Client;
use serde_json::{Value, json};

use super::error::InstallError;
use crate::kube_util;
use crate::kube_util::wait;

const NAMESPACE: &str = "kube-system";
const DEPLOYMENT: &str = "coredns";
/// Its Deployment, as `status` lists it.
pub const DEPLOYMENT_REF: (&str, &str) = (NAMESPACE, DEPLOYMENT);
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// kubeadm's Corefile without its upstream: the cluster's zone, health, readiness and metrics,
/// and no cached answers for the cluster's names (a Service's name resolves as soon as it has a
/// ready pod, not 30 s after a first lookup found none).
pub(super) const CLUSTER_ONLY_COREFILE: &str = "\
.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    reload
    loadbalance
}
";

/// What to apply over kubeadm's CoreDNS objects: one replica and, when the node's resolver is
/// out of the pods' reach, the cluster-only Corefile (and a pod template that names it, so the
/// new configuration starts a fresh pod rather than waiting for a crash-looping one's back-off).
fn overrides(cluster_only: bool) -> Vec<Value> {
    let mut deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE},
        "spec": {"replicas": 1},
    });
    if !cluster_only {
        return vec![deployment];
    }
    let digest = &super::sha256_hex(CLUSTER_ONLY_COREFILE.as_bytes())[..12];
    deployment["spec"]["template"] = json!({"metadata": {"annotations": {"kueue-ext.dev/corefile": digest}}});
    let corefile = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "coredns", "namespace": NAMESPACE},
        "data": {"Corefile": CLUSTER_ONLY_COREFILE},
    });
    vec![corefile, deployment]
}

/// Applies [`overrides`] and waits until CoreDNS serves.
pub async fn ready(client: &Client, cluster_only: bool) -> Result<(), InstallError> {
    for object in overrides(cluster_only) {
        kube_util::apply(client, &object).await?;
    }
    Ok(wait::until("the cluster's DNS (CoreDNS) to become ready", READY_TIMEOUT, || {
        wait::deployment_available(client, NAMESPACE, DEPLOYMENT)
    })
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_local_images_coredns_answers_for_the_cluster_without_forwarding_to_itself() {
        let [corefile, deployment] = overrides(true).try_into().unwrap();
        let text = corefile["data"]["Corefile"].as_str().unwrap();
        assert!(text.contains("kubernetes cluster.local") && !text.contains("forward") && !text.contains("loop"));
        assert!(text.contains("disable denial cluster.local"), "a missing name is asked again: {text}");
        assert_eq!(deployment["spec"]["replicas"], 1);
        assert!(deployment["spec"]["template"]["metadata"]["annotations"]["kueue-ext.dev/corefile"].is_string());

        let [deployment] = overrides(false).try_into().unwrap();
        assert_eq!(deployment["spec"], json!({"replicas": 1}), "kubeadm's Corefile is kept");
    }
}
