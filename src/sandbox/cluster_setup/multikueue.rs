//! The sandbox's MultiKueue: wired through [`crate::connect`] as `connect` wires clusters of
//! the user's, with the add-ons' kinds copied to the workers, then checked on each worker.

use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::Value;

use super::addons::Addon;
use super::kueue::manifests::NAMESPACE;
use crate::connect::{self, JobResource, Names, Wiring, WiringError, worker_role_rules};
pub use crate::connect::{ADMISSION_CHECK, ClusterConnection, Connections, Worker};
use crate::integrations::declarative::config::Integration;
use crate::jobframework::api_error::{self, in_words};

/// A week, as in Kueue's own MultiKueue setup; the sandbox is not meant to live longer.
const TOKEN_SECONDS: i64 = 7 * 24 * 3600;

/// The kinds the sandbox's workers accept beyond ours and batch/Job: the configured ones and the
/// add-ons'.
fn worker_kinds(integrations: &[Integration], addons: &[Addon]) -> Vec<JobResource> {
    let configured = integrations.iter().map(JobResource::of);
    let added = addons.iter().map(|a| a.spec().job_kind()).map(|kind| JobResource::new(kind.group, kind.plural));
    configured.chain(added).collect()
}

/// Creates the worker credentials and the manager objects that use them.
pub async fn wire(
    manager: &Client,
    workers: &[Worker<'_>],
    integrations: &[Integration],
    addons: &[Addon],
) -> Result<(), WiringError> {
    let names = Names::default();
    let kinds = worker_kinds(integrations, addons);
    let wiring = Wiring {
        names: &names,
        kinds: &kinds,
        token_seconds: TOKEN_SECONDS,
        checked_queues: &[],
        connected_before: &[],
    };
    connect::wire(manager, workers, &wiring, &|_| {}).await
}

/// Reads the MultiKueueClusters and the sandbox's AdmissionCheck from the manager.
pub async fn connections(manager: &Client) -> Result<Connections, kube::Error> {
    connect::connections(manager, ADMISSION_CHECK).await
}

/// What a worker must have for MultiKueue to mirror every integrated kind there: the CRDs, and
/// each rule of the MultiKueue role granted to its ServiceAccount. Kueue itself only reports an
/// inactive cluster; this names what is missing.
pub async fn preflight(worker: &str, client: &Client, integrations: &[Integration], addons: &[Addon]) -> Vec<String> {
    use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let mut problems = Vec::new();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::manifests::crds() {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        match crds.get_opt(name).await {
            Ok(Some(_)) => {}
            Ok(None) => problems.push(format!("{worker}: CustomResourceDefinition {name} is missing")),
            Err(e) => problems.push(format!("{worker}: cannot read CustomResourceDefinition {name}: {}", in_words(&e))),
        }
    }
    for integration in integrations {
        let jobs: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &integration.api_resource());
        match jobs.list_metadata(&kube::api::ListParams::default().limit(1)).await {
            Ok(_) => {}
            Err(e) if api_error::is_unserved(&e) => problems.push(format!(
                "{worker}: {} is not served there: install its CRD on every cluster (`up --crds FILE`)",
                integration.kind
            )),
            Err(e) => problems.push(format!("{worker}: cannot list {}: {}", integration.kind, in_words(&e))),
        }
    }
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let user = format!("system:serviceaccount:{NAMESPACE}:{}", connect::SERVICE_ACCOUNT);
    let rules = worker_role_rules(&worker_kinds(integrations, addons));
    let checks = rules.as_array().into_iter().flatten().flat_map(|rule| {
        let group = rule["apiGroups"][0].as_str().unwrap_or_default().to_string();
        let resources: Vec<String> =
            rule["resources"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
        let verbs: Vec<String> =
            rule["verbs"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
        resources.into_iter().flat_map(move |full| {
            let group = group.clone();
            verbs.clone().into_iter().map(move |verb| (group.clone(), full.clone(), verb))
        })
    });
    for (group, full, verb) in checks {
        let (resource, subresource) = match full.split_once('/') {
            Some((r, s)) => (r.to_string(), Some(s.to_string())),
            None => (full.clone(), None),
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.clone()),
                resource_attributes: Some(ResourceAttributes {
                    group: Some(group.clone()),
                    resource: Some(resource),
                    subresource,
                    verb: Some(verb.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let allowed = reviews
            .create(&PostParams::default(), &review)
            .await
            .map(|r| r.status.is_some_and(|s| s.allowed))
            .unwrap_or(false);
        if !allowed {
            problems.push(format!("{worker}: {NAMESPACE}/{} may not {verb} {full}.{group}", connect::SERVICE_ACCOUNT));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_add_ons_kind_is_copied_to_the_workers_like_an_integrated_one() {
        let rules = worker_role_rules(&worker_kinds(&[], &[Addon::Jobset]));
        let rules = rules.as_array().unwrap();
        let jobsets = json!({"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"],
                             "verbs": ["create", "update", "patch", "delete", "get", "list", "watch"]});
        assert!(rules.contains(&jobsets), "Kueue's JobSet adapter watches them: {rules:?}");
        assert!(!worker_role_rules(&worker_kinds(&[], &[])).as_array().unwrap().contains(&jobsets));
    }
}
