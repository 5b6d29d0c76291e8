//! A project's install manifests read from its Go module and shaped the way its `config/default`
//! kustomization shapes them (a name prefix and a namespace), except that webhooks call a local
//! process by URL. Kueue and the add-ons are installed through it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read manifest {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("manifest {path}, document {index}: {message}")]
    Parse { path: PathBuf, index: usize, message: String },
}

/// The name prefix and namespace of a project's `config/default` kustomization.
#[derive(Clone, Copy, Debug)]
pub struct Kustomization {
    pub namespace: &'static str,
    pub name_prefix: &'static str,
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

/// The CRDs of `components/crd/bases`, sorted by file name. Conversion webhooks are not read:
/// every project a sandbox installs serves one version of each kind.
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

impl Kustomization {
    /// The ServiceAccount `controller-manager` of the project's RBAC, after the name prefix.
    pub fn service_account(&self) -> String {
        format!("{}controller-manager", self.name_prefix)
    }

    /// The RBAC objects listed in `rbac/kustomization.yaml`, prefixed and namespaced.
    pub fn rbac(&self, components: &Path) -> Result<Vec<Value>, ManifestError> {
        let dir = components.join("rbac");
        let (resources, _) = self.listed(&dir)?;
        let mut out = Vec::new();
        for resource in resources {
            for mut obj in read_documents(&dir.join(resource))? {
                self.shape(&mut obj);
                out.push(obj);
            }
        }
        Ok(out)
    }

    /// The webhook configurations with the kustomization's JSON patches applied (its
    /// strategic-merge patches are not read), pointed at `https://127.0.0.1:<port><path>`.
    pub fn webhooks(&self, components: &Path, port: u16, ca_bundle_b64: &str) -> Result<Vec<Value>, ManifestError> {
        let dir = components.join("webhook");
        let (_, patches) = self.listed(&dir)?;
        let mut out = Vec::new();
        for mut obj in read_documents(&dir.join("manifests.yaml"))? {
            for patch in &patches {
                if patch.targets(&obj) {
                    patch.apply(&mut obj)?;
                }
            }
            self.shape(&mut obj);
            for webhook in obj["webhooks"].as_array_mut().into_iter().flatten() {
                point_at_url(webhook, port, ca_bundle_b64);
            }
            out.push(obj);
        }
        Ok(out)
    }

    /// The resources and JSON patches a component's `kustomization.yaml` lists.
    fn listed(&self, dir: &Path) -> Result<(Vec<String>, Vec<JsonPatch>), ManifestError> {
        let path = dir.join("kustomization.yaml");
        let doc = read_documents(&path)?.into_iter().next().unwrap_or(Value::Null);
        let resources: Vec<String> =
            doc["resources"].as_array().into_iter().flatten().filter_map(|r| r.as_str().map(String::from)).collect();
        if resources.is_empty() {
            return Err(ManifestError::Parse { path, index: 0, message: "no resources listed".into() });
        }
        let mut patches = Vec::new();
        for entry in doc["patches"].as_array().into_iter().flatten() {
            if let (Some(file), Some(target)) = (entry["path"].as_str(), entry.get("target")) {
                patches.push(JsonPatch::read(&dir.join(file), target)?);
            }
        }
        Ok((resources, patches))
    }

    /// Applies the prefix and namespace the way kustomize's `namePrefix` and `namespace` do.
    pub fn shape(&self, obj: &mut Value) {
        let Kustomization { namespace, name_prefix } = *self;
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        if let Some(name) = obj["metadata"]["name"].as_str() {
            obj["metadata"]["name"] = json!(format!("{name_prefix}{name}"));
        }
        let cluster_scoped = matches!(
            kind.as_str(),
            "ClusterRole" | "ClusterRoleBinding" | "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"
        );
        if !cluster_scoped {
            obj["metadata"]["namespace"] = json!(namespace);
        }
        if matches!(kind.as_str(), "RoleBinding" | "ClusterRoleBinding") {
            if let Some(role) = obj["roleRef"]["name"].as_str() {
                obj["roleRef"]["name"] = json!(format!("{name_prefix}{role}"));
            }
            for subject in obj["subjects"].as_array_mut().into_iter().flatten() {
                if subject["kind"] == "ServiceAccount" {
                    let name = subject["name"].as_str().unwrap_or_default().to_string();
                    subject["name"] = json!(format!("{name_prefix}{name}"));
                    subject["namespace"] = json!(namespace);
                }
            }
        }
    }
}

/// A kustomization's JSON 6902 patch and the object it targets (by kind and name).
struct JsonPatch {
    path: PathBuf,
    kind: String,
    name: String,
    patch: json_patch::Patch,
}

impl JsonPatch {
    fn read(path: &Path, target: &Value) -> Result<JsonPatch, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read { path: path.into(), source })?;
        let parse = |message: String| ManifestError::Parse { path: path.into(), index: 0, message };
        let ops: Value = serde_saphyr::from_str(&text).map_err(|e| parse(e.to_string()))?;
        let patch = serde_json::from_value(ops).map_err(|e| parse(format!("not a JSON patch: {e}")))?;
        let field = |name: &str| target[name].as_str().unwrap_or_default().to_string();
        Ok(JsonPatch { path: path.into(), kind: field("kind"), name: field("name"), patch })
    }

    fn targets(&self, obj: &Value) -> bool {
        obj["kind"] == self.kind.as_str() && obj["metadata"]["name"] == self.name.as_str()
    }

    fn apply(&self, obj: &mut Value) -> Result<(), ManifestError> {
        json_patch::patch(obj, &self.patch).map_err(|e| ManifestError::Parse {
            path: self.path.clone(),
            index: 0,
            message: format!("does not apply to {} {}: {e}", self.kind, self.name),
        })
    }
}

fn point_at_url(webhook: &mut Value, port: u16, ca_bundle_b64: &str) {
    let path = webhook["clientConfig"]["service"]["path"].as_str().unwrap_or("/").to_string();
    webhook["clientConfig"] = json!({ "url": format!("https://127.0.0.1:{port}{path}"), "caBundle": ca_bundle_b64 });
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUEUE: Kustomization = Kustomization { namespace: "kueue-system", name_prefix: "kueue-" };

    #[test]
    fn bindings_follow_the_prefixed_names() {
        let mut binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "manager-rolebinding"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "manager-role"},
            "subjects": [{"kind": "ServiceAccount", "name": "controller-manager", "namespace": "system"}],
        });
        KUEUE.shape(&mut binding);
        assert_eq!(binding["metadata"]["name"], "kueue-manager-rolebinding");
        assert_eq!(binding["roleRef"]["name"], "kueue-manager-role");
        assert_eq!(binding["subjects"][0]["name"], KUEUE.service_account());
        assert_eq!(binding["subjects"][0]["namespace"], "kueue-system");
        assert!(binding["metadata"].get("namespace").is_none(), "cluster-scoped objects get no namespace");
    }

    #[test]
    fn namespaced_objects_land_in_the_kustomization_namespace() {
        let mut sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "controller-manager", "namespace": "system"}});
        KUEUE.shape(&mut sa);
        assert_eq!(sa["metadata"], json!({"name": "kueue-controller-manager", "namespace": "kueue-system"}));
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn webhooks_get_their_json_patches_and_call_the_local_process() {
        let components = tempfile::tempdir().unwrap();
        let dir = components.path().join("webhook");
        write(
            &dir,
            "manifests.yaml",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n\
             metadata: {name: mutating-webhook-configuration}\nwebhooks:\n\
             - name: mpod.kb.io\n  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}\n",
        );
        write(
            &dir,
            "kustomization.yaml",
            "resources: [manifests.yaml]\npatches:\n\
             - path: pod.yaml\n  target: {kind: MutatingWebhookConfiguration, name: mutating-webhook-configuration}\n\
             - patch: 'a strategic merge patch, not read'\n",
        );
        write(
            &dir,
            "pod.yaml",
            "- op: add\n  path: /webhooks/0/objectSelector\n  value: {matchExpressions: [{key: owner, operator: Exists}]}\n",
        );
        let jobset = Kustomization { namespace: "jobset-system", name_prefix: "jobset-" };
        let hooks = jobset.webhooks(components.path(), 9443, "Q0E=").unwrap();
        assert_eq!(hooks[0]["metadata"]["name"], "jobset-mutating-webhook-configuration");
        let hook = &hooks[0]["webhooks"][0];
        assert_eq!(hook["objectSelector"]["matchExpressions"][0]["key"], "owner");
        assert_eq!(hook["clientConfig"], json!({"url": "https://127.0.0.1:9443/mutate--v1-pod", "caBundle": "Q0E="}));

        write(&dir, "pod.yaml", "- op: replace\n  path: /webhooks/3\n  value: {}\n");
        let err = jobset.webhooks(components.path(), 9443, "Q0E=").unwrap_err().to_string();
        assert!(err.contains("pod.yaml") && err.contains("does not apply to MutatingWebhookConfiguration"), "{err}");
    }
}
