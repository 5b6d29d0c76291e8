//! Kueue installed the way a real install looks: its CRDs, namespace, ServiceAccount and RBAC
//! from its own manifests, webhook configurations with a caBundle, a Configuration file, and the
//! `kueue` binary running as that ServiceAccount (not as admin).

pub mod manifests;

use std::path::{Path, PathBuf};

use kube::Client;
use serde_json::{Value, json};

use super::addons::{self, Addon};
use super::fsutil::write_private;
use super::kubeconfig::{self, Credentials, Entry};
use super::kustomize;
use super::layout::Layout;
use super::pki::Pki;
use super::runtime::MultiKueueManager;
use crate::integrations::declarative::config::Integration;
use crate::kube_util;
use crate::manifests::external_frameworks;

/// Kueue reads its metrics serving certificate from this fixed path whenever its internal
/// certificate management is off, even with metrics disabled (cmd/kueue/main.go in v0.19).
const METRICS_CERT_DIR: &str = "/etc/kueue/metrics/certs";

/// A year: the sandbox is short-lived, and a token that expires mid-run would stall Kueue.
const TOKEN_SECONDS: i64 = 365 * 24 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum KueueError {
    #[error(transparent)]
    Manifest(#[from] manifests::ManifestError),
    #[error("applying Kueue's manifests: {0}")]
    Apply(#[from] kube_util::ApplyError),
    #[error("requesting a token for ServiceAccount {namespace}/{name}: {source}")]
    Token {
        namespace: &'static str,
        name: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error(
        "Kueue needs a metrics certificate at {dir} (a fixed path in Kueue {version}) and it cannot be written: \
         {source}. Run as a user who may write it, or create tls.crt and tls.key there once"
    )]
    MetricsCert {
        dir: String,
        version: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KueueError + '_ {
    move |source| KueueError::Io { path: path.to_path_buf(), source }
}

/// Kueue's Configuration for one process-runtime cluster.
pub fn configuration(
    layout: &Layout,
    multikueue_manager: Option<MultiKueueManager>,
    integrations: &[Integration],
    addons: &[Addon],
) -> Value {
    let mut config = json!({
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": manifests::NAMESPACE,
        "health": {"healthProbeBindAddress": format!("127.0.0.1:{}", layout.ports.kueue_health)},
        "metrics": {"bindAddress": "0"},
        "webhook": {
            "host": "127.0.0.1",
            "port": layout.ports.kueue_webhook,
            "certDir": layout.kueue_dir().join("certs").display().to_string(),
        },
        // One replica per cluster; a restart must not wait out a stale lease.
        "leaderElection": {"leaderElect": false},
        // Certificates come from the sandbox PKI: the internal manager expects a kubelet to
        // mount its Secret, and there is none.
        "internalCertManagement": {"enable": false},
        // The visibility server needs its own aggregated API and fixed cert paths.
        "featureGates": {"VisibilityOnDemand": false},
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {"frameworks": frameworks(addons)},
    });
    configure_for_sandbox(&mut config, multikueue_manager, integrations);
    config
}

/// Kueue's built-in integrations every sandbox enables (add-ons bring theirs): a framework whose
/// MultiKueue adapter is on needs its CRD on every worker, or the whole worker connection fails.
const SANDBOX_FRAMEWORKS: [&str; 1] = ["batch/job"];

/// The built-in integrations a sandbox with `addons` enables.
pub fn frameworks(addons: &[Addon]) -> Vec<&'static str> {
    SANDBOX_FRAMEWORKS.into_iter().chain(addons::kueue_frameworks(addons)).collect()
}

/// What every sandbox's Kueue is told, whatever runs it: our kinds as external frameworks (and
/// MultiKueue's generic adapter for them, which is gated), and on a manager of workers
/// MultiKueue with sandbox timings.
pub fn configure_for_sandbox(
    config: &mut Value,
    multikueue_manager: Option<MultiKueueManager>,
    integrations: &[Integration],
) {
    let frameworks = external_frameworks(integrations);
    config["integrations"]["externalFrameworks"] = json!(frameworks);
    // A kind configured here replaces Kueue's built-in integration of it: one owner per kind.
    let configured =
        |framework: &str| built_in_kind(framework).is_some_and(|kind| integrations.iter().any(|i| i.kind == kind));
    if let Some(built_in) = config["integrations"]["frameworks"].as_array_mut() {
        built_in.retain(|name| !name.as_str().is_some_and(configured));
        // Kueue turns an empty list into `batch/job`: keep one whose CRD a sandbox does not
        // install (Kueue then only waits for it) and that has no MultiKueue adapter (which
        // would need the CRD on every worker).
        if built_in.is_empty() {
            built_in.push(json!(IDLE_FRAMEWORK.0));
            config["featureGates"][IDLE_FRAMEWORK.1] = json!(true);
        }
    }
    config["featureGates"]["MultiKueueAdaptersForCustomJobs"] = json!(true);
    if let Some(manager) = multikueue_manager {
        // Orphaned remote objects are collected every 30s (default 1m): a sandbox is watched.
        let external: Vec<Value> = frameworks.iter().map(|name| json!({"name": name})).collect();
        let lost = format!("{}s", manager.worker_lost_timeout.as_secs());
        config["multiKueue"] = json!({"gcInterval": "30s", "workerLostTimeout": lost, "externalFrameworks": external});
    }
}

/// A built-in framework that stays idle in a sandbox, and the feature gate it needs.
const IDLE_FRAMEWORK: (&str, &str) = ("sparkoperator.k8s.io/sparkapplication", "SparkApplicationIntegration");

/// The kind (`Kind.version.group`) of one of Kueue's built-in frameworks a sandbox enables.
fn built_in_kind(framework: &str) -> Option<String> {
    match framework {
        "batch/job" => Some("Job.v1.batch".into()),
        _ => addons::framework_kind(framework),
    }
}

/// Applies Kueue's objects and writes the files the `kueue` process needs.
pub async fn install(
    client: &Client,
    layout: &Layout,
    components: &Path,
    multikueue_manager: Option<MultiKueueManager>,
    integrations: &[Integration],
    addons: &[Addon],
) -> Result<(), KueueError> {
    kube_util::apply_crds(client, &kustomize::crds(components)?).await?;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": manifests::NAMESPACE}});
    kube_util::apply(client, &namespace).await?;
    for obj in manifests::KUSTOMIZATION.rbac(components)? {
        kube_util::apply(client, &obj).await?;
    }
    let ca_pem = std::fs::read_to_string(&layout.pki.ca_cert).map_err(io(&layout.pki.ca_cert))?;
    for obj in manifests::webhooks(components, layout.ports.kueue_webhook, &kubeconfig::b64(&ca_pem))? {
        kube_util::apply(client, &obj).await?;
    }

    let dir = layout.kueue_dir();
    let token =
        kube_util::service_account_token(client, manifests::NAMESPACE, manifests::SERVICE_ACCOUNT, TOKEN_SECONDS)
            .await
            .map_err(|source| KueueError::Token {
                namespace: manifests::NAMESPACE,
                name: manifests::SERVICE_ACCOUNT,
                source,
            })?;
    let entry = Entry {
        context: "kueue",
        server: layout.api_server_url(),
        ca_pem: &ca_pem,
        credentials: Credentials::Token(&token),
    };
    let kubeconfig_path = dir.join("kubeconfig");
    kubeconfig::write(&kubeconfig_path, &kubeconfig::render(&[entry])).map_err(io(&kubeconfig_path))?;
    let config_path = dir.join("config.yaml");
    let config = serde_saphyr::to_string(&configuration(layout, multikueue_manager, integrations, addons))
        .map_err(|e| io(&config_path)(std::io::Error::other(e)))?;
    std::fs::write(&config_path, config).map_err(io(&config_path))?;
    let certs = dir.join("certs");
    layout.pki.copy_serving_pair(&certs).map_err(io(&certs))?;
    ensure_metrics_cert()
}

/// Puts a certificate at Kueue's fixed metrics path when none is there. The metrics endpoint
/// is disabled, so a throwaway self-signed pair serves; it is shared by every sandbox on the
/// machine and left in place, since one sandbox's `down` must not take away what another's Kueue
/// reads as it starts. The pair appears at once (written beside, then renamed into place), so
/// two sandboxes starting together never mix one's certificate with the other's key.
pub fn ensure_metrics_cert() -> Result<(), KueueError> {
    ensure_metrics_cert_in(Path::new(METRICS_CERT_DIR))
}

fn ensure_metrics_cert_in(dir: &Path) -> Result<(), KueueError> {
    let complete = || dir.join("tls.crt").exists() && dir.join("tls.key").exists();
    if complete() {
        return Ok(());
    }
    let fail = |source| KueueError::MetricsCert {
        dir: dir.display().to_string(),
        version: super::toolchain::versions::KUEUE,
        source,
    };
    let parent = dir.parent().unwrap_or(Path::new("/"));
    let staging = parent.join(format!(".kueue-ext-{}", std::process::id()));
    let pair =
        Pki::service_certificate("kueue-metrics", &["localhost".into()]).map_err(|e| fail(std::io::Error::other(e)))?;
    let written = write_private(&staging.join("tls.crt"), pair.cert_pem.as_bytes())
        .and_then(|()| write_private(&staging.join("tls.key"), pair.key_pem.as_bytes()))
        .and_then(|()| std::fs::rename(&staging, dir));
    let _ = std::fs::remove_dir_all(&staging);
    match written {
        Ok(()) => Ok(()),
        // Another sandbox put its pair there first.
        Err(_) if complete() => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_pair_appears_whole_once_and_is_then_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("etc/kueue/metrics/certs");
        ensure_metrics_cert_in(&dir).unwrap();
        let crt = std::fs::read_to_string(dir.join("tls.crt")).unwrap();
        assert!(crt.starts_with("-----BEGIN CERTIFICATE-----"), "{crt}");
        assert!(std::fs::read_to_string(dir.join("tls.key")).unwrap().contains("PRIVATE KEY"));
        ensure_metrics_cert_in(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("tls.crt")).unwrap(), crt, "an existing pair stays");
        let parent = dir.parent().unwrap();
        let names: Vec<_> = std::fs::read_dir(parent).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["certs"], "no staging dir is left");

        std::fs::remove_file(dir.join("tls.key")).unwrap();
        let err = ensure_metrics_cert_in(&dir).unwrap_err().to_string();
        assert!(err.contains(&format!("metrics certificate at {}", dir.display())), "a half pair is named: {err}");
    }
    use crate::integrations::declarative::config::IntegrationConfig;

    #[test]
    fn a_configured_kind_replaces_kueues_built_in_integration_of_it() {
        let file = include_str!("../../../samples/integrations/job-integration.yaml");
        let integrations = IntegrationConfig::parse("job-integration.yaml", file).unwrap().integrations;
        let mut config = json!({"integrations": {"frameworks": ["batch/job"]}});
        configure_for_sandbox(&mut config, Some(MultiKueueManager::default()), &integrations);
        assert_eq!(
            config["integrations"]["frameworks"],
            json!([IDLE_FRAMEWORK.0]),
            "never empty: Kueue would default it"
        );
        assert_eq!(config["featureGates"][IDLE_FRAMEWORK.1], true);
        let external = config["integrations"]["externalFrameworks"].as_array().unwrap();
        assert!(
            external.contains(&json!("Job.v1.batch"))
                && external.contains(&json!("ExternalJob.v1alpha1.kueue-ext.dev"))
        );
        assert!(
            config["multiKueue"]["externalFrameworks"].as_array().unwrap().contains(&json!({"name": "Job.v1.batch"}))
        );
        assert_eq!(config["multiKueue"]["workerLostTimeout"], "300s", "longer than an API server restart");

        let mut untouched = json!({"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}});
        configure_for_sandbox(&mut untouched, None, &[]);
        assert_eq!(untouched["integrations"]["frameworks"], json!(["batch/job", "jobset.x-k8s.io/jobset"]));
        assert!(untouched["featureGates"].get(IDLE_FRAMEWORK.1).is_none());
    }

    #[test]
    fn the_jobset_add_on_brings_kueues_jobset_integration_unless_an_integrations_file_configures_jobsets() {
        let mut config = json!({"integrations": {"frameworks": frameworks(&[Addon::Jobset])}});
        configure_for_sandbox(&mut config, None, &[]);
        assert_eq!(config["integrations"]["frameworks"], json!(["batch/job", "jobset.x-k8s.io/jobset"]));

        let file = include_str!("../../../samples/addons/jobset/jobset-integration.yaml");
        let integrations = IntegrationConfig::parse("jobset-integration.yaml", file).unwrap().integrations;
        let mut config = json!({"integrations": {"frameworks": frameworks(&[Addon::Jobset])}});
        configure_for_sandbox(&mut config, Some(MultiKueueManager::default()), &integrations);
        assert_eq!(config["integrations"]["frameworks"], json!(["batch/job"]), "ours replaces Kueue's");
        assert!(
            config["multiKueue"]["externalFrameworks"]
                .as_array()
                .unwrap()
                .contains(&json!({"name": "JobSet.v1alpha2.jobset.x-k8s.io"}))
        );
    }
}
