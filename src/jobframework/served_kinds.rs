//! Which API resource serves each component kind, from discovery. ServedKinds rarely change, so
//! answers are kept for the life of the process; a kind not found is asked again (a CRD
//! installed after a refusal must be usable at once). Shared by the webhooks and the controllers
//! of every kind that names other kinds (WrappedJob's components, the API authorizer).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use kube::Client;
use kube::api::{ApiResource, GroupVersionKind};
use kube::discovery::{self, Scope};
use kube::error::DiscoveryError;

use crate::jobframework::api_error;
use crate::jobframework::webhook::{dns1123_label, dns1123_subdomain};

/// `(group, version)` of a well-formed apiVersion. Discovery puts it in a URL path, so nothing
/// else may reach it.
pub fn group_version(api_version: &str) -> Option<(&str, &str)> {
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (dns1123_subdomain(group).ok().map(|()| group)?, version),
        None => ("", api_version),
    };
    dns1123_label(version).ok().map(|()| (group, version))
}

/// A kind the API server serves.
#[derive(Clone, Debug)]
pub struct Served {
    pub resource: ApiResource,
    pub namespaced: bool,
}

pub struct ServedKinds {
    client: Client,
    found: Mutex<HashMap<(String, String), Served>>,
}

impl ServedKinds {
    pub fn new(client: Client) -> Self {
        ServedKinds { client, found: Mutex::default() }
    }

    /// `None` when nothing serves `kind` in `api_version` (`group/version`, or `version` for
    /// the core group).
    pub async fn served(&self, api_version: &str, kind: &str) -> Result<Option<Served>, kube::Error> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(served) = self.found.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Ok(Some(served.clone()));
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let (resource, capabilities) =
            match discovery::pinned_kind(&self.client, &GroupVersionKind::gvk(group, version, kind)).await {
                Ok(found) => found,
                Err(kube::Error::Discovery(DiscoveryError::MissingKind(_))) => return Ok(None),
                Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(None),
                // A group or version the API server does not know: a bare 404, not a Status.
                Err(err) if api_error::is_unserved(&err) => return Ok(None),
                Err(err) => return Err(err),
            };
        let served = Served { resource, namespaced: capabilities.scope == Scope::Namespaced };
        self.found.lock().unwrap_or_else(PoisonError::into_inner).insert(key, served.clone());
        Ok(Some(served))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-apiserver answers a path of a group it does not serve with its HTTP mux's plain
    /// `404 page not found`, not with a Status: a kind nobody serves, not an error to report.
    #[tokio::test]
    async fn a_group_the_api_server_does_not_serve_serves_no_kind() {
        let kinds = ServedKinds::new(api_error::serving_nothing());
        let served = kinds.served("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet").await;
        assert!(matches!(served, Ok(None)), "{served:?}");
    }
}
