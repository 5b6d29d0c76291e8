//! kind's cluster configuration for each sandbox cluster.

use serde_json::{Value, json};

use super::local_images::recipes;
use super::versions::COREDNS;
use crate::sandbox::runtime::ClusterPlan;

/// The API server as another cluster's pods reach it: the control plane node's address on
/// kind's Docker network, which kubeadm puts in the serving certificate. (Only Docker's DNS knows
/// the node's name, and a pod's DNS is the cluster's.)
pub fn internal_server(node_address: &str) -> String {
    format!("https://{node_address}:6443")
}

/// The config for one cluster: one node, which kind leaves schedulable, runs Kueue, the
/// controller and the jobs (a node per cluster is what two cores carry for three clusters).
/// On the locally built node image kubeadm takes its images from [`recipes::REGISTRY`] (CoreDNS
/// at the tag built here), and kubelet runs on cgroup v1 hosts too and syncs pods
/// every 10 s (Kueue waits for its webhook certificate Secret to reach its volume, which kubelet
/// refreshes at that pace: a minute by default); the node image brings its own bridge network
/// instead of kind's.
pub fn cluster_config(plan: &ClusterPlan, local_images: bool) -> String {
    kind_config(plan.fixed_api_port, local_images)
}

/// [`cluster_config`] of a cluster whose API server listens on `api_port` (random if `None`).
pub fn kind_config(api_port: Option<u16>, local_images: bool) -> String {
    let mut networking = json!({"apiServerAddress": "127.0.0.1"});
    if let Some(port) = api_port {
        networking["apiServerPort"] = json!(port);
    }
    let mut config: Value = json!({
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "networking": networking,
        "nodes": [{
            "role": "control-plane",
            "labels": {(crate::sandbox::SANDBOX_NODE_LABEL.0): crate::sandbox::SANDBOX_NODE_LABEL.1},
        }],
    });
    if local_images {
        config["networking"]["disableDefaultCNI"] = json!(true);
        config["kubeadmConfigPatches"] = json!([
            format!(
                "kind: ClusterConfiguration\nimageRepository: {}\netcd:\n  local:\n    imageTag: \"{}\"\n\
                 dns:\n  imageTag: \"{COREDNS}\"\n",
                recipes::REGISTRY,
                recipes::etcd_tag()
            ),
            "kind: InitConfiguration\nskipPhases: [preflight]\n",
            "kind: KubeletConfiguration\nfailCgroupV1: false\nsyncFrequency: 10s\n",
        ]);
    }
    serde_saphyr::to_string(&config).expect("a JSON value serializes to YAML")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::runtime::NodePool;

    #[test]
    fn every_cluster_is_one_node_and_the_manager_keeps_its_fixed_port() {
        let plans = ClusterPlan::all(crate::sandbox::DEFAULT_NAME, 2, &NodePool::default(), Some(16443));
        assert_eq!(
            cluster_config(&plans[0], false),
            "apiVersion: kind.x-k8s.io/v1alpha4\n\
             kind: Cluster\n\
             networking:\n  apiServerAddress: \"127.0.0.1\"\n  apiServerPort: 16443\n\
             nodes:\n- labels:\n    kueue-ext.dev/sandbox-node: \"true\"\n  role: control-plane\n"
        );
        assert!(!cluster_config(&plans[1], false).contains("apiServerPort"));
        assert_eq!(cluster_config(&plans[1], false).matches("role:").count(), 1);
    }

    #[test]
    fn local_images_are_named_to_kubeadm_and_kubelet_runs_on_cgroup_v1() {
        let plan = &ClusterPlan::all(crate::sandbox::DEFAULT_NAME, 1, &NodePool::default(), None)[1];
        let config: Value = serde_saphyr::from_str(&cluster_config(plan, true)).unwrap();
        assert_eq!(config["networking"]["disableDefaultCNI"], true);
        let patches: Vec<Value> = config["kubeadmConfigPatches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| serde_saphyr::from_str(p.as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(patches[0]["imageRepository"], "kueue-ext.local");
        assert_eq!(patches[0]["etcd"]["local"]["imageTag"], recipes::etcd_tag());
        assert_eq!(patches[0]["dns"]["imageTag"], COREDNS, "the CoreDNS image the node carries");
        assert_eq!(patches[1]["skipPhases"], json!(["preflight"]), "CoreDNS is deployed");
        assert_eq!(patches[2]["failCgroupV1"], false);
        assert_eq!(patches[2]["syncFrequency"], "10s");
    }

    #[test]
    fn names_follow_the_sandbox_contexts() {
        assert_eq!(internal_server("172.18.0.3"), "https://172.18.0.3:6443");
    }
}
