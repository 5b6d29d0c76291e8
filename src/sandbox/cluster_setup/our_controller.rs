//! This project's controller in a sandbox cluster, installed as a real install would be: the
//! user's CRDs (`up --crds`), ours, our namespace, ServiceAccount and RBAC from `manifests`, the
//! same on every runtime. The controller itself runs as each runtime runs it: a local process
//! with its webhooks called by URL (`process_runtime/our_controller.rs`), or this project's own
//! install on kind (`crate::install`).

use std::path::PathBuf;

use kube::Client;
use serde_json::Value;

use crate::integrations::declarative::config::Integration;
use crate::kube_util::{self, ApplyError};
use crate::manifests;

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error("requesting a token for the controller's ServiceAccount kueue-ext-system/kueue-ext-controller: {0}")]
    Token(#[source] kube::Error),
    #[error("writing the integrations ConfigMap: {0}")]
    Render(#[source] serde_saphyr::SerializeError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The user's CRDs (`up --crds`), ours, our namespace, ServiceAccount and RBAC (with what
/// configured kinds need), and the integrations ConfigMap when kinds are configured: the same on
/// every runtime, before Kueue and our controller start.
pub async fn install_definitions(
    client: &Client,
    integrations: &[Integration],
    crds: &[Value],
) -> Result<(), InstallError> {
    kube_util::apply_crds(client, crds).await?;
    kube_util::apply_crds(client, &manifests::crds()).await?;
    for obj in manifests::rbac().into_iter().chain(manifests::configured_rbac(integrations)) {
        kube_util::apply(client, &obj).await?;
    }
    if !integrations.is_empty() {
        let config_map = manifests::integrations_config_map(integrations).map_err(InstallError::Render)?;
        kube_util::apply(client, &config_map).await?;
    }
    Ok(())
}
