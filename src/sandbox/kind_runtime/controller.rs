//! This project's controller on a kind cluster, from the same manifests as `manifests/` (its CRDs
//! and RBAC are applied before Kueue, as on every runtime): a serving certificate Secret made
//! here, the Deployment of the image we loaded, its Service, and the webhook configurations
//! trusting the certificate's CA.

use std::time::Duration;

use kube::Client;
use serde_json::json;

use super::error::InstallError;
use super::wait;
use crate::integrations::declarative::config::Integration;
use crate::kube_util;
use crate::manifests::{self, Endpoint};
use crate::sandbox::kubeconfig::b64;
use crate::sandbox::pki::Pki;

const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// Installs the controller running `image` (reading `integrations` when there are any) and
/// waits until its webhook server is ready.
pub async fn install(client: &Client, image: &str, integrations: &[Integration]) -> Result<(), InstallError> {
    let cert = Pki::service_certificate(manifests::WEBHOOK_SERVICE, &manifests::webhook_dns_names())
        .map_err(InstallError::Certificate)?;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": manifests::WEBHOOK_CERT_SECRET, "namespace": manifests::NAMESPACE},
        "stringData": {"tls.crt": cert.cert_pem, "tls.key": cert.key_pem, "ca.crt": cert.ca_pem},
    });
    let ca_bundle = b64(&cert.ca_pem);
    let endpoint = Endpoint::Service { ca_bundle_b64: Some(&ca_bundle) };
    let mut deployment = manifests::deployment(image);
    let mut objects = vec![secret];
    // The ConfigMap itself is applied with the other definitions, before Kueue.
    if !integrations.is_empty() {
        manifests::read_integrations(&mut deployment);
    }
    objects.extend([deployment, manifests::service()]);
    objects.extend(manifests::webhooks(&endpoint));
    objects.extend(manifests::configured_webhooks(&endpoint, integrations));
    for obj in objects {
        kube_util::apply(client, &obj).await?;
    }
    wait::until("the kueue-ext controller to become ready", READY_TIMEOUT, || {
        wait::deployment_available(client, manifests::NAMESPACE, manifests::DEPLOYMENT)
    })
    .await?;
    // A ready pod is not yet a Service endpoint: until kube-proxy has it, a job submitted right
    // after `up` is refused because the webhook cannot be called.
    let probe = json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
        "metadata": {"name": "kueue-ext-webhook-probe"}, "spec": {},
    });
    Ok(wait::until("the kueue-ext webhook to answer", READY_TIMEOUT, || kube_util::webhooks_answer(client, &probe))
        .await?)
}
