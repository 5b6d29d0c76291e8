//! What a cluster must offer before anything is written to it: Kueue's API at the version this
//! controller speaks, the CRD of every kind integrated by configuration, and cert-manager's API
//! where it is to issue the webhook's certificate.

use kube::Client;
use kube::discovery::{self, ApiGroup};

use crate::integrations::declarative::config::Integration;

pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";
pub const KUEUE_VERSION: &str = "v1beta2";
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";
pub const CERT_MANAGER_VERSION: &str = "v1";
/// What `install --cert-manager` makes, which cert-manager must serve.
const CERT_MANAGER_KINDS: [&str; 2] = ["Certificate", "Issuer"];

#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error("asking the API server which APIs it serves: {0}")]
    Discovery(#[source] kube::Error),
    #[error("Kueue is not installed: the cluster serves no {KUEUE_GROUP} API (install Kueue v0.15 or later first)")]
    NoKueue,
    #[error(
        "Kueue is too old: the cluster serves {KUEUE_GROUP} {served} but not {KUEUE_VERSION} (Kueue v0.15 or later serves it)"
    )]
    OldKueue { served: String },
    #[error("the cluster does not serve {} ({}), which the integrations file integrates: install its CRD first", kinds.join(", "), if kinds.len() == 1 { "its kind" } else { "their kinds" })]
    KindsNotServed { kinds: Vec<String> },
    #[error(
        "cert-manager is not installed: the cluster does not serve {} of {CERT_MANAGER_GROUP}/{CERT_MANAGER_VERSION} (install cert-manager v1.11 or later first, or install without --cert-manager)",
        kinds.join(" or ")
    )]
    NoCertManager { kinds: Vec<&'static str> },
}

/// Checks Kueue's API and the configured kinds' CRDs.
pub async fn check(client: &Client, integrations: &[Integration]) -> Result<(), PreflightError> {
    let kueue = group(client, KUEUE_GROUP).await?.ok_or(PreflightError::NoKueue)?;
    let versions: Vec<&str> = kueue.versions().collect();
    if !versions.contains(&KUEUE_VERSION) {
        return Err(PreflightError::OldKueue { served: versions.join(", ") });
    }
    let mut missing = Vec::new();
    for integration in integrations {
        let gvk = integration.gvk();
        if discovery::pinned_kind(client, &gvk).await.is_err() {
            missing.push(integration.kind.clone());
        }
    }
    if missing.is_empty() { Ok(()) } else { Err(PreflightError::KindsNotServed { kinds: missing }) }
}

/// Checks that cert-manager serves the kinds `install --cert-manager` makes.
pub async fn check_cert_manager(client: &Client) -> Result<(), PreflightError> {
    let served: Vec<String> = match group(client, CERT_MANAGER_GROUP).await? {
        Some(group) => {
            group.versioned_resources(CERT_MANAGER_VERSION).into_iter().map(|(resource, _)| resource.kind).collect()
        }
        None => Vec::new(),
    };
    let kinds: Vec<&str> = CERT_MANAGER_KINDS.into_iter().filter(|kind| !served.iter().any(|s| s == kind)).collect();
    if kinds.is_empty() { Ok(()) } else { Err(PreflightError::NoCertManager { kinds }) }
}

/// The API group `name` as the cluster serves it, or `None` where it serves no such group.
pub async fn group(client: &Client, name: &str) -> Result<Option<ApiGroup>, PreflightError> {
    match discovery::group(client, name).await {
        Ok(group) => Ok(Some(group)),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(e) => Err(PreflightError::Discovery(e)),
    }
}
