//! kind's cluster configuration for each sandbox cluster.

use serde_json::{Value, json};

use crate::sandbox::runtime::ClusterPlan;

/// Name of the kind cluster behind a sandbox cluster: `kueue-ext-manager`, `kueue-ext-worker1`;
/// its nodes are `<name>-control-plane`, `<name>-worker`.
pub fn cluster_name(cluster: &str) -> String {
    crate::sandbox::context_name(cluster)
}

/// The API server as containers on kind's Docker network reach it: the name of its control
/// plane container, which kind puts in the serving certificate.
pub fn internal_server(kind_cluster: &str) -> String {
    format!("https://{kind_cluster}-control-plane:6443")
}

/// The config for one cluster. A manager of workers only admits by quota, so a lone
/// control-plane node (which kind leaves schedulable) carries Kueue and the controller; a
/// cluster that runs jobs gets a worker node for them.
pub fn cluster_config(plan: &ClusterPlan) -> String {
    let mut networking = json!({"apiServerAddress": "127.0.0.1"});
    if let Some(port) = plan.fixed_api_port {
        networking["apiServerPort"] = json!(port);
    }
    let mut nodes = vec![json!({"role": "control-plane"})];
    if plan.nodes.is_some() {
        nodes.push(json!({"role": "worker"}));
    }
    let config: Value = json!({
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "networking": networking,
        "nodes": nodes,
    });
    serde_saphyr::to_string(&config).expect("a JSON value serializes to YAML")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::kwok::NodePool;

    #[test]
    fn manager_of_workers_is_one_control_plane_on_its_fixed_port() {
        let plans = ClusterPlan::all(2, &NodePool::default(), Some(16443));
        assert_eq!(
            cluster_config(&plans[0]),
            "apiVersion: kind.x-k8s.io/v1alpha4\n\
             kind: Cluster\n\
             networking:\n  apiServerAddress: \"127.0.0.1\"\n  apiServerPort: 16443\n\
             nodes:\n- role: control-plane\n"
        );
    }

    #[test]
    fn workers_and_a_lone_manager_get_a_node_for_jobs() {
        let worker = &ClusterPlan::all(1, &NodePool::default(), None)[1];
        let expected = "apiVersion: kind.x-k8s.io/v1alpha4\n\
                        kind: Cluster\n\
                        networking:\n  apiServerAddress: \"127.0.0.1\"\n\
                        nodes:\n- role: control-plane\n- role: worker\n";
        assert_eq!(cluster_config(worker), expected);
        let alone = &ClusterPlan::all(0, &NodePool::default(), None)[0];
        assert_eq!(cluster_config(alone), expected);
    }

    #[test]
    fn names_follow_the_sandbox_contexts() {
        assert_eq!(cluster_name("worker1"), "kueue-ext-worker1");
        assert_eq!(internal_server("kueue-ext-worker1"), "https://kueue-ext-worker1-control-plane:6443");
    }
}
