//! One add-on on one process-runtime cluster: its CRDs, namespace, RBAC and webhook
//! configurations from its module, and the files its process reads (a kubeconfig with its
//! ServiceAccount's token, its Configuration, the cluster's serving certificate).

use std::path::PathBuf;

use kube::Client;
use serde_json::{Value, json};

use super::layout::{ComponentSpec, Layout};
use crate::kube_util;
use crate::sandbox::cluster_setup::addons::{Addon, AddonError, BuiltAddon};
use crate::sandbox::cluster_setup::kustomize;
use crate::sandbox::kubeconfig::{self, Credentials, Entry};
use crate::sandbox::record::Probe;

/// A year, as for Kueue's token: a token that expires mid-run would stall the controller.
const TOKEN_SECONDS: i64 = 365 * 24 * 3600;

/// Files and ports of one add-on on one cluster.
#[derive(Clone, Debug)]
pub struct AddonLayout {
    pub built: BuiltAddon,
    /// `<cluster dir>/<add-on name>`.
    pub dir: PathBuf,
    pub webhook_port: u16,
    pub health_port: u16,
}

impl AddonLayout {
    /// Ports an add-on needs on each cluster (webhook, health).
    pub const PORTS: usize = 2;

    pub fn new(built: &BuiltAddon, cluster: &Layout, ports: [u16; Self::PORTS]) -> AddonLayout {
        AddonLayout {
            built: built.clone(),
            dir: cluster.dir.join(built.addon.name()),
            webhook_port: ports[0],
            health_port: ports[1],
        }
    }

    fn certs(&self) -> PathBuf {
        self.dir.join("certs")
    }

    pub fn component(&self) -> ComponentSpec {
        let arg = |name: &str, file: &str| format!("--{name}={}", self.dir.join(file).display());
        ComponentSpec {
            name: self.built.addon.name(),
            program: self.built.program.clone(),
            args: vec![arg("config", "config.yaml"), arg("kubeconfig", "kubeconfig")],
            probe: Probe::Http { port: self.health_port, path: "/readyz".into() },
        }
    }

    /// The add-on's own Configuration: one replica per cluster without leader election,
    /// certificates from the sandbox PKI (its internal manager would rotate them into a Secret
    /// for a kubelet to mount), servers on loopback, metrics off.
    fn configuration(&self) -> Option<Value> {
        match self.built.addon {
            Addon::Jobset => Some(json!({
                "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
                "kind": "Configuration",
                "leaderElection": {"leaderElect": false},
                "internalCertManagement": {"enable": false},
                "webhook": {"host": "127.0.0.1", "port": self.webhook_port, "certDir": self.certs().display().to_string()},
                "health": {"healthProbeBindAddress": format!("127.0.0.1:{}", self.health_port)},
                "metrics": {"bindAddress": "0"},
            })),
            Addon::Appwrapper | Addon::Kubeflow | Addon::Tekton => None,
        }
    }
}

/// The add-on's CRDs, applied on a cluster before Kueue starts (Kueue's integration of the
/// kind and MultiKueue's check of the workers both look for them).
pub async fn install_crds(client: &Client, built: &BuiltAddon) -> Result<(), AddonError> {
    let addon = built.addon.name();
    let crds = kustomize::crds(&built.components()).map_err(|source| AddonError::Manifest { addon, source })?;
    kube_util::apply_crds(client, &crds).await.map_err(|source| AddonError::Apply { addon, source })
}

/// Applies the add-on's namespace, RBAC and webhooks and writes the files its process reads.
pub async fn install(client: &Client, cluster: &Layout, layout: &AddonLayout) -> Result<(), AddonError> {
    let built = &layout.built;
    let spec = built.addon.spec();
    let addon = spec.name;
    let manifest = |source| AddonError::Manifest { addon, source };
    let apply = |source| AddonError::Apply { addon, source };
    let namespace = spec.kustomization.namespace;
    let ca_pem = std::fs::read_to_string(&cluster.pki.ca_cert).map_err(AddonError::io(addon, &cluster.pki.ca_cert))?;
    let objects = std::iter::once(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}))
        .chain(spec.kustomization.rbac(&built.components()).map_err(manifest)?)
        .chain(
            spec.kustomization
                .webhooks(&built.components(), layout.webhook_port, &kubeconfig::b64(&ca_pem))
                .map_err(manifest)?,
        );
    for obj in objects {
        kube_util::apply(client, &obj).await.map_err(apply)?;
    }

    let service_account = spec.kustomization.service_account();
    let token = kube_util::service_account_token(client, namespace, &service_account, TOKEN_SECONDS)
        .await
        .map_err(|source| AddonError::Token { addon, source })?;
    let entry = Entry {
        context: addon,
        server: cluster.api_server_url(),
        ca_pem: &ca_pem,
        credentials: Credentials::Token(&token),
    };
    let path = layout.dir.join("kubeconfig");
    kubeconfig::write(&path, &kubeconfig::render(&[entry])).map_err(AddonError::io(addon, &path))?;
    let path = layout.dir.join("config.yaml");
    let why = spec.not_a_local_process.unwrap_or_default();
    let configuration = layout.configuration().ok_or(AddonError::NotALocalProcess { addon, why })?;
    let config =
        serde_saphyr::to_string(&configuration).map_err(|e| AddonError::io(addon, &path)(std::io::Error::other(e)))?;
    std::fs::write(&path, config).map_err(AddonError::io(addon, &path))?;
    let certs = layout.certs();
    cluster.pki.copy_serving_pair(&certs).map_err(AddonError::io(addon, &certs))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn jobset_serves_on_loopback_with_the_sandbox_certificate_and_no_leader_election() {
        let built = BuiltAddon {
            addon: Addon::Jobset,
            program: PathBuf::from("/cache/addons/jobset-v0.12.0/bin/jobset"),
            entry: PathBuf::from("/cache/addons/jobset-v0.12.0"),
        };
        let layout =
            AddonLayout { built, dir: PathBuf::from("/state/manager/jobset"), webhook_port: 9443, health_port: 8081 };
        let config = layout.configuration().unwrap();
        assert_eq!(
            config["webhook"],
            json!({"host": "127.0.0.1", "port": 9443, "certDir": "/state/manager/jobset/certs"})
        );
        assert_eq!(config["health"]["healthProbeBindAddress"], "127.0.0.1:8081");
        assert_eq!(config["leaderElection"]["leaderElect"], false);
        assert_eq!(config["internalCertManagement"]["enable"], false);
        let component = layout.component();
        assert_eq!(component.name, "jobset");
        assert_eq!(
            component.args,
            ["--config=/state/manager/jobset/config.yaml", "--kubeconfig=/state/manager/jobset/kubeconfig"]
        );
        assert!(Path::new(&component.program).ends_with("bin/jobset"));
    }
}
