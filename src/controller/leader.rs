//! Leader election on a Lease, so replicas can run side by side: every replica serves the
//! webhooks, only the holder of the Lease reconciles (two writers would fight over Workloads).

use std::time::Duration;

use super::error::ControllerError;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The longest wait between two tries to reach the Lease at start.
const MAX_PAUSE: Duration = Duration::from_secs(16);

/// Name of the Lease the replicas share.
pub const LEASE: &str = "kueue-ext-controller";

pub struct Election {
    pub namespace: String,
    pub identity: String,
    /// Seconds a holder keeps the Lease without renewing it; a successor waits this long.
    pub duration: u64,
}

/// Who this replica is by default: host name and pid, unique on a machine and across pods.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}-{}", host.trim(), std::process::id())
}

/// Names the replica that leads, if another does: an operator reading a waiting replica's log
/// learns whom it waits for.
async fn say_who_leads(client: &Client, election: &Election) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), &election.namespace);
    let holder = leases.get_opt(LEASE).await.ok().flatten().and_then(|lease| lease.spec?.holder_identity);
    if let Some(holder) = holder.filter(|holder| *holder != election.identity && !holder.is_empty()) {
        tracing::info!(%holder, lease = LEASE, "another replica leads; waiting until its Lease expires");
    }
}

/// Whether this replica leads, as that changes.
pub struct Leadership {
    leading: watch::Receiver<bool>,
    /// Keeps the Lease; `None` for a replica alone, which leads from the start and for good.
    renewer: Option<JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>>,
}

impl Leadership {
    /// A replica without leader election: the only writer there is.
    pub fn alone() -> Self {
        Leadership { leading: watch::channel(true).1, renewer: None }
    }

    /// Starts competing for the Lease and returns at once: what must work before leading (the
    /// webhooks, the certificate every replica waits for) must not wait for the Lease, nor the
    /// Lease for it.
    pub async fn campaign(client: Client, election: &Election) -> Result<Self, ControllerError> {
        // An API server that does not answer yet (the node just restarted) is waited for here:
        // a replica that exited instead would come back only after the kubelet's growing
        // back-off, minutes on a node that restarts often.
        let mut pause = Duration::from_millis(500);
        let manager = loop {
            let built = LeaseManagerBuilder::new(client.clone(), LEASE)
                .with_namespace(&election.namespace)
                .with_identity(&election.identity)
                .with_duration(election.duration)
                .with_grace(election.duration.div_ceil(3).max(1))
                .with_field_manager(LEASE)
                .build()
                .await;
            match built {
                Ok(manager) => break manager,
                Err(error) => {
                    tracing::warn!(%error, lease = LEASE, "cannot reach the Lease yet; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_PAUSE);
                }
            }
        };
        say_who_leads(&client, election).await;
        let (leading, renewer) = manager.watch().await;
        Ok(Leadership { leading, renewer: Some(renewer) })
    }

    /// `true` while this replica leads, for a writer that must stop the moment it does not.
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Waits until this replica leads.
    pub async fn until_leading(&mut self) -> Result<(), ControllerError> {
        match self.leading.wait_for(|leads| *leads).await {
            Ok(_) => Ok(()),
            Err(e) => Err(ControllerError::Lease(e.to_string())),
        }
    }

    /// Resolves when this replica, once leading, leads no more (a renewer that stopped counts);
    /// never for a replica alone.
    pub async fn until_lost(mut self) {
        match self.renewer {
            Some(_renewer) => {
                let _ = self.leading.wait_for(|leads| !*leads).await;
            }
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    #[tokio::test]
    async fn a_replica_alone_leads_at_once_and_for_good() {
        let mut alone = Leadership::alone();
        alone.until_leading().await.unwrap();
        assert!(*alone.leading().borrow());
        assert!(alone.until_lost().now_or_never().is_none());
    }
}
