//! Whether a cluster admits jobs of an add-on's kind yet: every webhook on the kind (the add-on's
//! own, and Kueue's integration of it, which Kueue sets up once it has seen the CRD) answers.

use std::time::{Duration, Instant};

use kube::Client;
use serde_json::json;

use super::{Addon, AddonError};
use crate::kube_util;

/// A dry-run create of an empty job of the add-on's kind: refused by validation (an answer) or
/// let through, but not failed because a webhook could not be called.
pub async fn admits(client: &Client, addon: Addon) -> Result<(), kube::Error> {
    let kind = addon.spec().job_kind();
    let probe = json!({
        "apiVersion": kind.api_version(), "kind": kind.kind,
        "metadata": {"name": "kueue-ext-webhook-probe"}, "spec": {},
    });
    kube_util::webhooks_answer(client, &probe).await
}

/// Waits until the cluster [`admits`] jobs of every add-on, or says what the last refusal was.
pub async fn wait_until_admitted(client: &Client, addons: &[Addon], timeout: Duration) -> Result<(), AddonError> {
    let deadline = Instant::now() + timeout;
    for &addon in addons {
        loop {
            match admits(client, addon).await {
                Ok(()) => break,
                Err(source) if Instant::now() >= deadline => {
                    return Err(AddonError::NotAdmitted { addon: addon.name(), seconds: timeout.as_secs(), source });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }
    Ok(())
}
