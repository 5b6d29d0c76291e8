//! This project's controller on a process-runtime cluster: on top of its definitions (shared,
//! `cluster_setup/our_controller.rs`), webhooks registered by URL with a caBundle, and the process
//! running with its ServiceAccount's token (not as admin).

use std::path::Path;

use kube::Client;
use serde_json::Value;

use super::layout::Layout;
use crate::integrations::declarative::config::{Integration, IntegrationConfig};
use crate::kube_util;
use crate::manifests::{self, Endpoint};
use crate::sandbox::cluster_setup::our_controller::{InstallError, install_definitions};
use crate::sandbox::kubeconfig::{self, Credentials, Entry};

const TOKEN_SECONDS: i64 = 365 * 24 * 3600;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io { path: path.to_path_buf(), source }
}

/// Applies our manifests and writes the controller's kubeconfig, serving certificate and, with
/// kinds integrated by configuration, its integrations file.
pub async fn install(
    client: &Client,
    layout: &Layout,
    integrations: &[Integration],
    crds: &[Value],
) -> Result<(), InstallError> {
    install_definitions(client, integrations, crds).await?;
    let ca_pem = std::fs::read_to_string(&layout.pki.ca_cert).map_err(io(&layout.pki.ca_cert))?;
    let endpoint = Endpoint::Url {
        base: format!("https://127.0.0.1:{}", layout.ports.controller),
        ca_bundle_b64: &kubeconfig::b64(&ca_pem),
    };
    for obj in manifests::webhooks(&endpoint).into_iter().chain(manifests::configured_webhooks(&endpoint, integrations))
    {
        kube_util::apply(client, &obj).await?;
    }

    let token =
        kube_util::service_account_token(client, manifests::NAMESPACE, manifests::SERVICE_ACCOUNT, TOKEN_SECONDS)
            .await
            .map_err(InstallError::Token)?;
    let dir = layout.controller_dir();
    let entry = Entry {
        context: manifests::SERVICE_ACCOUNT,
        server: layout.api_server_url(),
        ca_pem: &ca_pem,
        credentials: Credentials::Token(&token),
    };
    let path = dir.join("kubeconfig");
    kubeconfig::write(&path, &kubeconfig::render(&[entry])).map_err(io(&path))?;
    let certs = dir.join("certs");
    layout.pki.copy_serving_pair(&certs).map_err(io(&certs))?;
    if !integrations.is_empty() {
        let path = layout.integrations_file();
        let config = IntegrationConfig::new(integrations.to_vec());
        let text = serde_saphyr::to_string(&config).map_err(|e| io(&path)(std::io::Error::other(e)))?;
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        std::fs::write(&path, text).map_err(io(&path))?;
    }
    Ok(())
}
