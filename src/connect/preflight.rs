//! What a worker must serve before MultiKueue can use it: every kind the manager's Kueue copies
//! there. Kueue keeps a worker inactive until it may watch each of them (its condition says
//! `no matches for kind …`), so a missing CRD is said before anything is written rather than
//! after a wait for a connection that cannot come.

use std::collections::{BTreeMap, BTreeSet};

use kube::Client;

use super::JobResource;
use crate::install::preflight::{self, PreflightError};
use crate::integrations::registry;

/// The kinds `worker` does not serve, as `resource.group`, of ours and `kinds`. Each API group
/// is asked for once, however many of the kinds share it (Kubeflow's six, say).
pub async fn unserved(worker: &Client, kinds: &[JobResource]) -> Result<Vec<String>, PreflightError> {
    let ours = registry::compiled().iter().map(|(description, _)| JobResource::of(description));
    let mut served: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut missing = Vec::new();
    for kind in ours.chain(kinds.iter().cloned()) {
        if !served.contains_key(&kind.group) {
            let group = preflight::group(worker, &kind.group).await?;
            let plurals = group.iter().flat_map(|g| g.resources_by_stability()).map(|(api, _)| api.plural).collect();
            served.insert(kind.group.clone(), plurals);
        }
        if !served[&kind.group].contains(&kind.resource) {
            missing.push(format!("{}.{}", kind.resource, kind.group));
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use http::Method;
    use serde_json::{Value, json};

    use super::*;
    use crate::test_api_server::{requested, scripted_client};

    /// Discovery's answers of an API server that serves each group at v1 with its resources.
    fn group_documents(path: &str, groups: &[(&str, &[&str])]) -> Result<Value, u16> {
        if path == "/apis" {
            let listed: Vec<Value> = groups
                .iter()
                .map(|(group, _)| {
                    let version = json!({"groupVersion": format!("{group}/v1"), "version": "v1"});
                    json!({"name": group, "versions": [version], "preferredVersion": version})
                })
                .collect();
            return Ok(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}));
        }
        for (group, plurals) in groups {
            if path == format!("/apis/{group}/v1") {
                let resources: Vec<Value> = plurals
                    .iter()
                    .map(|p| json!({"name": p, "singularName": "", "namespaced": true, "kind": p, "verbs": ["get"]}))
                    .collect();
                return Ok(json!({"kind": "APIResourceList", "apiVersion": "v1",
                                 "groupVersion": format!("{group}/v1"), "resources": resources}));
            }
        }
        Err(404)
    }

    #[tokio::test]
    async fn a_worker_is_asked_once_per_group_and_its_missing_kinds_are_named() {
        let (worker, requests) = scripted_client(|method, path| match *method {
            Method::GET => group_documents(
                path,
                &[("kueue-ext.dev", &["externaljobs", "wrappedjobs"]), ("kubeflow.org", &["pytorchjobs"])],
            ),
            _ => Err(405),
        });
        let kinds = [
            JobResource::new("kubeflow.org", "pytorchjobs"),
            JobResource::new("kubeflow.org", "tfjobs"),
            JobResource::new("jobset.x-k8s.io", "jobsets"),
        ];
        let missing = unserved(&worker, &kinds).await.unwrap();
        assert_eq!(missing, ["tfjobs.kubeflow.org", "jobsets.jobset.x-k8s.io"]);
        let asked = requested(&requests);
        let times = |request: &str| asked.iter().filter(|r| *r == request).count();
        assert_eq!((times("GET /apis"), times("GET /apis/kubeflow.org/v1")), (3, 1), "one look per group: {asked:?}");
    }
}
