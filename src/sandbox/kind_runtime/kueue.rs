//! Kueue on a kind cluster: its pinned release manifests, verified by sha256, with its
//! Configuration told about our kinds (and about MultiKueue on a manager), applied, and waited
//! for until its webhook answers.

use std::path::Path;
use std::time::Duration;

use kube::Client;
use serde_json::{Value, json};

use super::error::{InstallError, KindError};
use super::{download, requests};
use crate::integrations::declarative::config::Integration;
use crate::kube_util;
use crate::kube_util::wait;
use crate::sandbox::cluster_setup::addons::Addon;
use crate::sandbox::cluster_setup::kueue::manifests::NAMESPACE;
use crate::sandbox::cluster_setup::kueue::{configure_for_sandbox, frameworks};
use crate::sandbox::runtime::MultiKueueManager;
use crate::sandbox::toolchain::versions::KUEUE;

/// Kueue's Deployment and the ConfigMap its Configuration is read from, as the release names them.
const DEPLOYMENT: &str = "kueue-controller-manager";
const CONFIG_MAP: &str = "kueue-manager-config";
const CONFIG_KEY: &str = "controller_manager_config.yaml";
/// Pulling Kueue's image and issuing its webhook certificate take a while on a cold machine.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// Why the release's Configuration could not be set up for a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum ConfigurationError {
    #[error("the release has no ConfigMap {CONFIG_MAP}")]
    NoConfigMap,
    #[error("ConfigMap {CONFIG_MAP} has no {CONFIG_KEY}")]
    NoConfiguration,
    #[error("ConfigMap {CONFIG_MAP}, {CONFIG_KEY}: {0}")]
    Unreadable(#[source] serde_saphyr::Error),
    #[error(transparent)]
    Unwritable(#[from] serde_saphyr::SerializeError),
}

/// sha256 of `bytes`, lowercase hex.
pub fn verify(bytes: &[u8], expected: &str, source_name: &str) -> Result<(), KindError> {
    let actual = super::sha256_hex(bytes);
    if actual.eq_ignore_ascii_case(expected.trim()) {
        return Ok(());
    }
    Err(KindError::KueueDigest {
        source_name: source_name.to_string(),
        expected: expected.to_string(),
        actual,
        version: KUEUE,
    })
}

/// The release's documents from a URL (downloaded once, then cached under `cache_dir` by
/// digest) or from a local file, checked against `sha256` either way.
pub async fn load(source: &str, sha256: &str, cache_dir: &Path) -> Result<Vec<Value>, KindError> {
    let bytes = if source.starts_with("https://") || source.starts_with("http://") {
        let cached = cache_dir.join(format!("kueue-{KUEUE}-{}.yaml", sha256.trim()));
        match std::fs::read(&cached) {
            Ok(bytes) if verify(&bytes, sha256, source).is_ok() => bytes,
            _ => {
                let bytes = download::get(source).await.map_err(|e| KindError::KueueManifests {
                    source_name: source.to_string(),
                    detail: e.to_string(),
                })?;
                verify(&bytes, sha256, source)?;
                std::fs::create_dir_all(cache_dir).map_err(KindError::io(cache_dir))?;
                std::fs::write(&cached, &bytes).map_err(KindError::io(&cached))?;
                bytes
            }
        }
    } else {
        let bytes = std::fs::read(source).map_err(KindError::io(source))?;
        verify(&bytes, sha256, source)?;
        bytes
    };
    parse(&bytes, source)
}

/// Manifests rendered from Kueue's module (the local image set): made here, so not pinned by digest.
pub fn load_rendered(path: &Path) -> Result<Vec<Value>, KindError> {
    let bytes = std::fs::read(path).map_err(KindError::io(path))?;
    parse(&bytes, &path.display().to_string())
}

fn parse(bytes: &[u8], source: &str) -> Result<Vec<Value>, KindError> {
    let failed = |detail: String| KindError::KueueManifests { source_name: source.to_string(), detail };
    let text = std::str::from_utf8(bytes).map_err(|e| failed(format!("not UTF-8 text: {e}")))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| failed(e.to_string()))?;
    let docs: Vec<Value> = docs.into_iter().filter(Value::is_object).collect();
    if !docs.iter().any(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == DEPLOYMENT) {
        return Err(failed(format!("no Deployment {DEPLOYMENT}: not Kueue's release manifests")));
    }
    Ok(docs)
}

/// The release with its Configuration set up for a sandbox cluster.
pub fn configured(
    release: &[Value],
    multikueue_manager: Option<MultiKueueManager>,
    integrations: &[Integration],
    addons: &[Addon],
) -> Result<Vec<Value>, ConfigurationError> {
    let mut docs = release.to_vec();
    let config_map = docs
        .iter_mut()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == CONFIG_MAP)
        .ok_or(ConfigurationError::NoConfigMap)?;
    let text = config_map["data"][CONFIG_KEY].as_str().ok_or(ConfigurationError::NoConfiguration)?;
    let mut config: Value = serde_saphyr::from_str(text).map_err(ConfigurationError::Unreadable)?;
    // The release enables every framework Kueue knows; a sandbox, the ones it has CRDs for.
    config["integrations"]["frameworks"] = json!(frameworks(addons));
    configure_for_sandbox(&mut config, multikueue_manager, integrations);
    config_map["data"][CONFIG_KEY] = json!(serde_saphyr::to_string(&config)?);
    requests::ask_for_little_cpu(&mut docs);
    keep_webhooks_out_of_our_namespace(&mut docs);
    Ok(docs)
}

/// Kueue's webhooks on pods and other workloads skip the system namespaces, and now ours too:
/// with Kueue down (failurePolicy Fail) no pod could be made there, so our controller could not
/// come back until Kueue had, nor roll to a new image.
fn keep_webhooks_out_of_our_namespace(docs: &mut [Value]) {
    let configurations = docs
        .iter_mut()
        .filter(|d| d["kind"] == "MutatingWebhookConfiguration" || d["kind"] == "ValidatingWebhookConfiguration");
    let webhooks = configurations.flat_map(|c| c["webhooks"].as_array_mut().into_iter().flatten());
    // `get_mut`, as indexing a missing field would add it.
    let expressions = webhooks.flat_map(|w| {
        let selector = w.get_mut("namespaceSelector").and_then(|s| s.get_mut("matchExpressions"));
        selector.and_then(Value::as_array_mut).into_iter().flatten()
    });
    for expression in expressions {
        let excludes_names = expression["key"] == "kubernetes.io/metadata.name" && expression["operator"] == "NotIn";
        let Some(names) = expression["values"].as_array_mut().filter(|_| excludes_names) else { continue };
        if !names.iter().any(|n| n == crate::manifests::NAMESPACE) {
            names.push(json!(crate::manifests::NAMESPACE));
        }
    }
}

/// Applies the release (CRDs first) and waits until Kueue runs and its webhook answers.
pub async fn install(client: &Client, docs: &[Value]) -> Result<(), InstallError> {
    let (crds, rest): (Vec<Value>, Vec<Value>) =
        docs.iter().cloned().partition(|d| d["kind"] == "CustomResourceDefinition");
    kube_util::apply_crds(client, &crds).await?;
    for obj in &rest {
        kube_util::apply(client, obj).await?;
    }
    wait::until("Kueue's Deployment to become available", READY_TIMEOUT, || {
        wait::deployment_available(client, NAMESPACE, DEPLOYMENT)
    })
    .await?;
    // Available pods do not mean a served webhook: Kueue issues its own certificate and
    // injects the CA first. A dry-run through the webhook proves it answers.
    let probe = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "kueue-ext-webhook-probe"},
    });
    Ok(wait::until("Kueue's webhook to answer", READY_TIMEOUT, || kube_util::webhooks_answer(client, &probe)).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELEASE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kueue-system\n---\n\
        apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kueue-manager-config\n  namespace: kueue-system\n\
        data:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta2\n    \
        kind: Configuration\n    webhook:\n      port: 9443\n    integrations:\n      frameworks:\n      \
        - batch/job\n      - jobset.x-k8s.io/jobset\n---\n\
        apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: kueue-controller-manager\n  namespace: kueue-system\n\
        spec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        \
        resources: {requests: {cpu: 500m}}\n";

    fn config_of(docs: &[Value]) -> Value {
        let text = docs[1]["data"][CONFIG_KEY].as_str().unwrap();
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn a_file_with_another_digest_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifests.yaml");
        std::fs::write(&path, RELEASE).unwrap();
        let source = path.display().to_string();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let err = rt.block_on(load(&source, &"0".repeat(64), dir.path())).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("not the pinned") && message.contains(&super::super::sha256_hex(RELEASE.as_bytes())),
            "{message}"
        );
        let docs = rt.block_on(load(&source, &super::super::sha256_hex(RELEASE.as_bytes()), dir.path())).unwrap();
        assert_eq!(docs.len(), 3);
    }

    #[test]
    fn a_cached_download_is_reused_when_its_digest_matches() {
        let dir = tempfile::tempdir().unwrap();
        let digest = super::super::sha256_hex(RELEASE.as_bytes());
        std::fs::write(dir.path().join(format!("kueue-{KUEUE}-{digest}.yaml")), RELEASE).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        // The URL is never reached: the cached copy answers.
        let docs = rt.block_on(load("https://127.0.0.1:9/manifests.yaml", &digest, dir.path())).unwrap();
        assert_eq!(docs[2]["kind"], "Deployment");
    }

    #[test]
    fn other_yaml_is_not_taken_for_kueue() {
        let err = parse(b"apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", "f").unwrap_err();
        assert!(err.to_string().contains("not Kueue's release manifests"), "{err}");
    }

    #[test]
    fn kueues_workload_webhooks_skip_our_namespace_as_they_skip_the_system_ones() {
        let skipping = json!({"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kueue-system"]}]});
        let mut docs = parse(RELEASE.as_bytes(), "f").unwrap();
        docs.push(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "kueue-mutating-webhook-configuration"},
            "webhooks": [{"name": "mpod.kb.io", "namespaceSelector": skipping},
                         {"name": "mclusterqueue.kb.io"}]}));
        let docs = configured(&docs, None, &[], &[]).unwrap();
        let webhooks = &docs.last().unwrap()["webhooks"];
        assert_eq!(
            webhooks[0]["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["kube-system", "kueue-system", crate::manifests::NAMESPACE])
        );
        assert!(webhooks[1].get("namespaceSelector").is_none(), "a webhook on every namespace stays so");
        let again = configured(&docs, None, &[], &[]).unwrap();
        assert_eq!(again.last().unwrap()["webhooks"], *webhooks, "configuring twice adds nothing");
    }

    #[test]
    fn configuration_keeps_the_release_settings_and_adds_ours() {
        let docs = parse(RELEASE.as_bytes(), "f").unwrap();
        let manager = config_of(
            &configured(&docs, Some(MultiKueueManager { worker_lost_timeout: Duration::from_secs(30) }), &[], &[])
                .unwrap(),
        );
        assert_eq!(manager["webhook"]["port"], 9443, "release settings stay");
        // The release's jobset framework would need JobSet's CRD on every worker.
        assert_eq!(manager["integrations"]["frameworks"], json!(["batch/job"]));
        assert_eq!(manager["integrations"]["externalFrameworks"], json!(crate::manifests::external_frameworks(&[])));
        assert_eq!(manager["featureGates"]["MultiKueueAdaptersForCustomJobs"], true);
        assert_eq!(manager["multiKueue"]["workerLostTimeout"], "30s");
        let worker = configured(&docs, None, &[], &[]).unwrap();
        assert!(config_of(&worker).get("multiKueue").is_none());
        let deployment = worker.iter().find(|d| d["kind"] == "Deployment").unwrap();
        assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "100m");
        assert!(configured(&docs[..1], None, &[], &[]).unwrap_err().to_string().contains(CONFIG_MAP));
    }
}
