//! What the Deployments a sandbox installs on kind ask of the node. A kind node has the machine's
//! few cores, and the releases' requests (Kueue's and JobSet's 500m each) would leave the jobs'
//! pods Pending: every container of ours, Kueue's and the add-ons' asks for a tenth of a core.

use serde_json::{Value, json};

const CPU_REQUEST: &str = "100m";

/// Sets every Deployment container's CPU request to [`CPU_REQUEST`], leaving its other resources.
pub fn ask_for_little_cpu(docs: &mut [Value]) {
    for deployment in docs.iter_mut().filter(|d| d["kind"] == "Deployment") {
        for container in deployment["spec"]["template"]["spec"]["containers"].as_array_mut().into_iter().flatten() {
            container["resources"]["requests"]["cpu"] = json!(CPU_REQUEST);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_deployment_container_asks_for_a_tenth_of_a_core_and_keeps_its_other_requests() {
        let mut docs = vec![
            json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
                {"name": "manager", "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"memory": "4Gi"}}},
                {"name": "sidecar"}]}}}}),
            json!({"kind": "Service", "spec": {}}),
        ];
        ask_for_little_cpu(&mut docs);
        let containers = &docs[0]["spec"]["template"]["spec"]["containers"];
        assert_eq!(
            containers[0]["resources"],
            json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "4Gi"}})
        );
        assert_eq!(containers[1]["resources"]["requests"]["cpu"], "100m");
        assert_eq!(docs[1], json!({"kind": "Service", "spec": {}}));
    }
}
