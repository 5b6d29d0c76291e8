//! Kueue on a process-runtime cluster, installed the way a real install looks: its CRDs,
//! namespace, ServiceAccount and RBAC from its own manifests, webhook configurations with a
//! caBundle, a Configuration file, and the `kueue` binary running as that ServiceAccount (not as
//! admin).

use std::path::{Path, PathBuf};

use kube::Client;
use serde_json::{Value, json};

use super::layout::Layout;
use super::pki::Pki;
use crate::integrations::declarative::config::Integration;
use crate::kube_util;
use crate::sandbox::cluster_setup::addons::Addon;
use crate::sandbox::cluster_setup::kueue::{configure_for_sandbox, frameworks, manifests};
use crate::sandbox::cluster_setup::kustomize;
use crate::sandbox::from_capture::overlay_kueue_settings;
use crate::sandbox::fsutil::write_private;
use crate::sandbox::kubeconfig::{self, Credentials, Entry};
use crate::sandbox::runtime::MultiKueueManager;
use crate::sandbox::toolchain;

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

/// Kueue's Configuration for one process-runtime cluster; `replayed` holds a capture's
/// settings (`up --from`), laid over the sandbox's before what every sandbox needs is set.
pub fn configuration(
    layout: &Layout,
    multikueue_manager: Option<MultiKueueManager>,
    integrations: &[Integration],
    addons: &[Addon],
    replayed: Option<&Value>,
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
    if let Some(settings) = replayed {
        overlay_kueue_settings(&mut config, settings);
    }
    configure_for_sandbox(&mut config, multikueue_manager, integrations);
    config
}

/// Applies Kueue's objects and writes the files the `kueue` process needs.
pub async fn install(
    client: &Client,
    layout: &Layout,
    components: &Path,
    multikueue_manager: Option<MultiKueueManager>,
    integrations: &[Integration],
    addons: &[Addon],
    replayed: Option<&Value>,
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
    let config_path = layout.kueue_config();
    let config = serde_saphyr::to_string(&configuration(layout, multikueue_manager, integrations, addons, replayed))
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
        version: toolchain::versions::KUEUE,
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
}
