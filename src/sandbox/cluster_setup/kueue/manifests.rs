//! Kueue's install manifests, read from its module and shaped the way its `config/default`
//! kustomization shapes them (name prefix `kueue-`, namespace `kueue-system`, workload webhooks
//! kept out of system namespaces), except that webhooks call the local Kueue process by URL.

use std::path::Path;

use serde_json::{Value, json};

use crate::sandbox::cluster_setup::kustomize::Kustomization;
pub use crate::sandbox::cluster_setup::kustomize::ManifestError;

pub const NAMESPACE: &str = "kueue-system";
pub const KUSTOMIZATION: Kustomization = Kustomization { namespace: NAMESPACE, name_prefix: "kueue-" };
/// The ServiceAccount Kueue runs as, after the name prefix.
pub const SERVICE_ACCOUNT: &str = "kueue-controller-manager";

/// The webhook configurations, pointed at `https://127.0.0.1:<port><path>` with `ca_bundle`;
/// those on workload kinds skip the system namespaces, as Kueue's own kustomization patches them.
pub fn webhooks(components: &Path, port: u16, ca_bundle_b64: &str) -> Result<Vec<Value>, ManifestError> {
    let mut out = KUSTOMIZATION.webhooks(components, port, ca_bundle_b64)?;
    for webhook in out.iter_mut().flat_map(|obj| obj["webhooks"].as_array_mut().into_iter().flatten()) {
        if watches_workload_kinds(webhook) {
            webhook["namespaceSelector"] = system_namespaces_excluded();
        }
    }
    Ok(out)
}

/// Webhooks on workload kinds (not Kueue's own API) skip kube-system and kueue-system, as in
/// Kueue's kustomization, so a broken Kueue cannot block the system namespaces.
fn watches_workload_kinds(webhook: &Value) -> bool {
    webhook["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|rule| rule["apiGroups"].as_array().into_iter().flatten().any(|g| g.as_str() != Some("kueue.x-k8s.io")))
}

fn system_namespaces_excluded() -> Value {
    json!({ "matchExpressions": [{
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["kube-system", NAMESPACE],
    }]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_account_is_the_prefixed_controller_manager() {
        assert_eq!(KUSTOMIZATION.service_account(), SERVICE_ACCOUNT);
    }

    #[test]
    fn webhooks_on_jobs_skip_system_namespaces_and_those_on_queues_do_not() {
        let job = json!({"rules": [{"apiGroups": ["batch"], "resources": ["jobs"]}]});
        assert!(watches_workload_kinds(&job));
        let queue = json!({"rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"]}]});
        assert!(!watches_workload_kinds(&queue));
    }
}
