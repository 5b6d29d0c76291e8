//! Kueue's install manifests, read from its module and shaped the way its `config/default`
//! kustomization shapes them (name prefix `kueue-`, namespace `kueue-system`, workload webhooks
//! kept out of system namespaces), except that webhooks call the local Kueue process by URL.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub const NAMESPACE: &str = "kueue-system";
const NAME_PREFIX: &str = "kueue-";
/// The ServiceAccount Kueue runs as, after the name prefix.
pub const SERVICE_ACCOUNT: &str = "kueue-controller-manager";

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read Kueue manifest {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("Kueue manifest {path}, document {index}: {message}")]
    Parse { path: PathBuf, index: usize, message: String },
}

/// Every object of a multi-document YAML file, skipping empty documents.
pub fn read_documents(path: &Path) -> Result<Vec<Value>, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read { path: path.into(), source })?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| ManifestError::Parse {
        path: path.into(),
        index: 0,
        message: e.to_string(),
    })?;
    Ok(docs.into_iter().filter(|d| d.is_object()).collect())
}

/// Kueue's CRDs (`crd/bases`), sorted by file name.
pub fn crds(components: &Path) -> Result<Vec<Value>, ManifestError> {
    let dir = components.join("crd/bases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|source| ManifestError::Read { path: dir.clone(), source })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        out.extend(read_documents(&file)?);
    }
    Ok(out)
}

/// The RBAC objects listed in `rbac/kustomization.yaml`, prefixed and namespaced.
pub fn rbac(components: &Path) -> Result<Vec<Value>, ManifestError> {
    let kustomization = components.join("rbac/kustomization.yaml");
    let doc = read_documents(&kustomization)?.into_iter().next().unwrap_or(Value::Null);
    let resources = doc["resources"].as_array().cloned().unwrap_or_default();
    if resources.is_empty() {
        return Err(ManifestError::Parse { path: kustomization, index: 0, message: "no resources listed".into() });
    }
    let mut out = Vec::new();
    for resource in resources.iter().filter_map(Value::as_str) {
        for mut obj in read_documents(&components.join("rbac").join(resource))? {
            kustomize(&mut obj);
            out.push(obj);
        }
    }
    Ok(out)
}

/// The webhook configurations, pointed at `https://127.0.0.1:<port><path>` with `ca_bundle`.
pub fn webhooks(components: &Path, port: u16, ca_bundle_b64: &str) -> Result<Vec<Value>, ManifestError> {
    let mut out = Vec::new();
    for mut obj in read_documents(&components.join("webhook/manifests.yaml"))? {
        kustomize(&mut obj);
        for webhook in obj["webhooks"].as_array_mut().into_iter().flatten() {
            point_at_url(webhook, port, ca_bundle_b64);
            if watches_workload_kinds(webhook) {
                webhook["namespaceSelector"] = system_namespaces_excluded();
            }
        }
        out.push(obj);
    }
    Ok(out)
}

/// Applies the prefix and namespace the way kustomize's `namePrefix` and `namespace` do.
fn kustomize(obj: &mut Value) {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    if let Some(name) = obj["metadata"]["name"].as_str() {
        obj["metadata"]["name"] = json!(format!("{NAME_PREFIX}{name}"));
    }
    let cluster_scoped = matches!(
        kind.as_str(),
        "ClusterRole" | "ClusterRoleBinding" | "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"
    );
    if !cluster_scoped {
        obj["metadata"]["namespace"] = json!(NAMESPACE);
    }
    if matches!(kind.as_str(), "RoleBinding" | "ClusterRoleBinding") {
        if let Some(role) = obj["roleRef"]["name"].as_str() {
            obj["roleRef"]["name"] = json!(format!("{NAME_PREFIX}{role}"));
        }
        for subject in obj["subjects"].as_array_mut().into_iter().flatten() {
            if subject["kind"] == "ServiceAccount" {
                let name = subject["name"].as_str().unwrap_or_default().to_string();
                subject["name"] = json!(format!("{NAME_PREFIX}{name}"));
                subject["namespace"] = json!(NAMESPACE);
            }
        }
    }
}

fn point_at_url(webhook: &mut Value, port: u16, ca_bundle_b64: &str) {
    let path = webhook["clientConfig"]["service"]["path"].as_str().unwrap_or("/").to_string();
    webhook["clientConfig"] = json!({ "url": format!("https://127.0.0.1:{port}{path}"), "caBundle": ca_bundle_b64 });
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
    fn bindings_follow_the_prefixed_names() {
        let mut binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "manager-rolebinding"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "manager-role"},
            "subjects": [{"kind": "ServiceAccount", "name": "controller-manager", "namespace": "system"}],
        });
        kustomize(&mut binding);
        assert_eq!(binding["metadata"]["name"], "kueue-manager-rolebinding");
        assert_eq!(binding["roleRef"]["name"], "kueue-manager-role");
        assert_eq!(binding["subjects"][0]["name"], SERVICE_ACCOUNT);
        assert_eq!(binding["subjects"][0]["namespace"], NAMESPACE);
        assert!(binding["metadata"].get("namespace").is_none(), "cluster-scoped objects get no namespace");
    }

    #[test]
    fn namespaced_objects_land_in_kueue_system() {
        let mut sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "controller-manager", "namespace": "system"}});
        kustomize(&mut sa);
        assert_eq!(sa["metadata"], json!({"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}));
    }

    #[test]
    fn webhooks_call_the_local_process_and_skip_system_namespaces_for_jobs() {
        let mut job = json!({
            "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": "/mutate-batch-v1-job"}},
            "rules": [{"apiGroups": ["batch"], "resources": ["jobs"]}],
        });
        point_at_url(&mut job, 9443, "Q0E=");
        assert_eq!(
            job["clientConfig"],
            json!({"url": "https://127.0.0.1:9443/mutate-batch-v1-job", "caBundle": "Q0E="})
        );
        assert!(watches_workload_kinds(&job));
        let queue = json!({"rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"]}]});
        assert!(!watches_workload_kinds(&queue));
    }
}
