//! What a worker must serve before MultiKueue can use it: every kind the manager's Kueue copies
//! there. Kueue keeps a worker inactive until it may watch each of them (its condition says
//! `no matches for kind …`), so a missing CRD is said before anything is written rather than
//! after a wait for a connection that cannot come.

use kube::Client;

use super::JobResource;
use crate::install::preflight::{self, PreflightError};
use crate::integrations::registry;

/// The kinds `worker` does not serve, as `resource.group`, of ours and `kinds`.
pub async fn unserved(worker: &Client, kinds: &[JobResource]) -> Result<Vec<String>, PreflightError> {
    let ours = registry::compiled().into_iter().map(|(description, _)| JobResource::of(&description));
    let mut missing = Vec::new();
    for kind in ours.chain(kinds.iter().cloned()) {
        let served = preflight::group(worker, &kind.group)
            .await?
            .is_some_and(|group| group.resources_by_stability().iter().any(|(api, _)| api.plural == kind.resource));
        if !served {
            missing.push(format!("{}.{}", kind.resource, kind.group));
        }
    }
    Ok(missing)
}
