//! Leader election on a Lease, so replicas can run side by side: every replica serves the
//! webhooks, only the holder of the Lease reconciles (two writers would fight over Workloads).

use super::error::ControllerError;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

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

/// Waits until this replica holds the Lease. The receiver then turns `false` if the Lease is
/// lost; the handle keeps renewing it.
pub async fn lead(
    client: Client,
    election: &Election,
) -> Result<
    (watch::Receiver<bool>, JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>),
    ControllerError,
> {
    let client_for_log = client.clone();
    let manager = LeaseManagerBuilder::new(client, LEASE)
        .with_namespace(&election.namespace)
        .with_identity(&election.identity)
        .with_duration(election.duration)
        .with_grace(election.duration.div_ceil(3).max(1))
        .with_field_manager(LEASE)
        .build()
        .await
        .map_err(|e| ControllerError::Lease(e.to_string()))?;
    say_who_leads(&client_for_log, election).await;
    let (mut leading, renewer) = manager.watch().await;
    while !*leading.borrow_and_update() {
        leading.changed().await.map_err(|e| ControllerError::Lease(e.to_string()))?;
    }
    Ok((leading, renewer))
}
