//! `submit`: check every document first, write nothing if any fails, then apply them in
//! dependency order with server-side apply, and optionally wait for the jobs to finish. A
//! document named only by `metadata.generateName` is created instead, as `kubectl create` does:
//! a new object each time, under the name the API server gives it.

pub mod appwrapper;
pub mod documents;

use std::collections::BTreeSet;
use std::sync::OnceLock;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, ApiCapabilities, ApiResource, Scope};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

pub use documents::{Document, Origin, Problem};

use crate::api::kueue::{LocalQueue, QUEUE_NAME_LABEL};
use crate::integrations::registry::{JobKind, KindRegistry};
use crate::jobframework::api_error;
use crate::kube_util::FIELD_MANAGER;

/// Apply order: what others refer to goes first.
fn rank(kind: &str) -> u8 {
    match kind {
        "Namespace" => 0,
        "CustomResourceDefinition" => 1,
        "ResourceFlavor" | "WorkloadPriorityClass" | "PriorityClass" | "Topology" => 2,
        "AdmissionCheck" | "MultiKueueConfig" | "MultiKueueCluster" | "Cohort" => 3,
        "ClusterQueue" => 4,
        "LocalQueue" => 5,
        _ => 6,
    }
}

/// A document resolved against the cluster, ready to apply.
pub struct Planned {
    pub doc: Document,
    pub resource: ApiResource,
    pub namespaced: bool,
    /// The object exists on the cluster already.
    pub exists: bool,
    /// Its job kind, when it is a job (`--queue` and `--wait` apply to it).
    pub job_kind: Option<JobKind>,
    /// The name the API server gave an object created from `metadata.generateName`.
    generated: OnceLock<String>,
}

impl Planned {
    /// A job that was submitted before: it is left alone, as re-applying its manifest would
    /// fight the admission Kueue injected (and running jobs keep their pod templates).
    pub fn already_submitted(&self) -> bool {
        self.exists && self.job_kind.is_some()
    }

    /// `kind.group/name`, as kubectl prints objects; before the API server has named an object
    /// of `generateName`, the prefix it was given.
    pub fn display_name(&self) -> String {
        let kind = self.resource.kind.to_lowercase();
        let name = match self.name() {
            "" => self.doc.object["metadata"]["generateName"].as_str().unwrap_or_default(),
            name => name,
        };
        if self.resource.group.is_empty() {
            format!("{kind}/{name}")
        } else {
            format!("{kind}.{}/{name}", self.resource.group)
        }
    }

    pub fn api(&self, client: &Client) -> Api<DynamicObject> {
        match self.doc.object["metadata"]["namespace"].as_str().filter(|_| self.namespaced) {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &self.resource),
            None => Api::all_with(client.clone(), &self.resource),
        }
    }

    /// Its name: as written, or as the API server generated it once created.
    pub fn name(&self) -> &str {
        match self.doc.object["metadata"]["name"].as_str() {
            Some(name) if !name.is_empty() => name,
            _ => self.generated.get().map_or("", String::as_str),
        }
    }

    /// Named by `metadata.generateName` alone: created anew by every submit, as by `kubectl
    /// create`. Server-side apply needs a name, so such an object cannot be applied.
    pub fn generates_name(&self) -> bool {
        documents::generates_name(&self.doc.object)
    }
}

/// Settings that fill in what documents leave out, and the job kinds the cluster runs.
pub struct Defaults<'a> {
    pub namespace: &'a str,
    pub queue: Option<&'a str>,
    pub kinds: &'a KindRegistry,
    /// What would serve a kind of this API group that the cluster does not serve (a sandbox's
    /// add-on), said after the refusal.
    pub serves_group: &'a dyn Fn(&str) -> Option<String>,
}

/// Resolves every document against the cluster and checks it (kind served, queue exists, and a
/// server-side dry run). Returns all problems at once; nothing is written either way.
pub async fn plan(client: &Client, docs: Vec<Document>, defaults: &Defaults<'_>) -> Result<Vec<Planned>, Vec<Problem>> {
    let mut problems: Vec<Problem> = docs.iter().flat_map(documents::check_shape).collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    let batch_namespaces: BTreeSet<String> = docs
        .iter()
        .filter(|d| d.object["kind"] == "Namespace" && d.object["apiVersion"] == "v1")
        .filter_map(|d| d.object["metadata"]["name"].as_str().map(String::from))
        .collect();
    let batch_queues: BTreeSet<(String, String)> = docs
        .iter()
        .filter(|d| d.object["kind"] == "LocalQueue")
        .map(|d| {
            let ns = d.object["metadata"]["namespace"].as_str().unwrap_or(defaults.namespace).to_string();
            (ns, d.object["metadata"]["name"].as_str().unwrap_or_default().to_string())
        })
        .collect();

    let mut planned = Vec::new();
    for mut doc in docs {
        let (resource, caps) = match resolve(client, &doc.object).await {
            Ok(found) => found,
            Err(not_served) => {
                let group = not_served.api_version.rsplit_once('/').map(|(group, _)| group).unwrap_or_default();
                let message = match (defaults.serves_group)(group) {
                    Some(remedy) => format!("{not_served}; {remedy}"),
                    None => not_served.to_string(),
                };
                problems.push(Problem::new(&doc.origin, Some("kind"), message));
                continue;
            }
        };
        let namespaced = caps.scope == Scope::Namespaced;
        if namespaced && doc.object["metadata"]["namespace"].as_str().is_none() {
            doc.object["metadata"]["namespace"] = json!(defaults.namespace);
        }
        let job_kind = defaults.kinds.of_object(&doc.object).cloned();
        if job_kind.is_some() {
            if let Some(queue) = defaults.queue
                && doc.object["metadata"]["labels"][QUEUE_NAME_LABEL].is_null()
            {
                doc.object["metadata"]["labels"][QUEUE_NAME_LABEL] = json!(queue);
            }
            if let Some(problem) = check_queue(client, &doc, &batch_queues).await {
                problems.push(problem);
            }
        }
        let mut p = Planned { doc, resource, namespaced, exists: false, job_kind, generated: OnceLock::new() };
        p.exists = !p.generates_name() && matches!(p.api(client).get_opt(p.name()).await, Ok(Some(_)));
        planned.push(p);
    }
    planned.sort_by_key(|p| rank(&p.resource.kind));
    // Every document gets checked, so one run reports every problem of the batch.
    let flagged: Vec<Origin> = problems.iter().map(|p| p.origin.clone()).collect();
    for p in &planned {
        if flagged.contains(&p.doc.origin) {
            continue;
        }
        let namespace = p.doc.object["metadata"]["namespace"].as_str().unwrap_or_default();
        // An object in a namespace this batch creates cannot be dry-run before it exists.
        if p.already_submitted() || (p.namespaced && batch_namespaces.contains(namespace)) {
            continue;
        }
        if let Err(err) = apply_one(client, p, true).await {
            problems.push(Problem::new(&p.doc.origin, None, rejection(&err)));
        }
    }
    if problems.is_empty() { Ok(planned) } else { Err(problems) }
}

/// A document's kind that discovery did not find on the cluster.
#[derive(Debug, thiserror::Error)]
#[error("{}", api_error::not_served(.kind, .api_version))]
struct NotServed {
    kind: String,
    api_version: String,
    #[source]
    source: kube::Error,
}

async fn resolve(client: &Client, obj: &Value) -> Result<(ApiResource, ApiCapabilities), NotServed> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    discovery::pinned_kind(client, &GroupVersionKind::gvk(group, version, kind)).await.map_err(|source| NotServed {
        kind: kind.to_string(),
        api_version: api_version.to_string(),
        source,
    })
}

async fn check_queue(client: &Client, doc: &Document, in_batch: &BTreeSet<(String, String)>) -> Option<Problem> {
    let queue = doc.object["metadata"]["labels"][QUEUE_NAME_LABEL].as_str()?;
    let namespace = doc.object["metadata"]["namespace"].as_str().unwrap_or_default();
    if in_batch.contains(&(namespace.to_string(), queue.to_string())) {
        return None;
    }
    let queues: Api<LocalQueue> = Api::namespaced(client.clone(), namespace);
    let field = format!("metadata.labels[{QUEUE_NAME_LABEL}]");
    match queues.get_opt(queue).await {
        Ok(Some(_)) => None,
        Ok(None) => Some(Problem::new(
            &doc.origin,
            Some(&field),
            format!(
                "LocalQueue {namespace}/{queue} does not exist; list them with `kubectl get localqueues -n {namespace}`"
            ),
        )),
        // Kueue is not installed (or not its v1beta2): no job can be queued.
        Err(err) if api_error::is_unserved(&err) => {
            let not_served = api_error::not_served("LocalQueue", &LocalQueue::api_version(&()));
            Some(Problem::new(&doc.origin, Some(&field), not_served))
        }
        Err(err) => Some(Problem::new(
            &doc.origin,
            Some(&field),
            format!("cannot check LocalQueue {queue}: {}", api_error::in_words(&err)),
        )),
    }
}

/// The API server's words for a rejection (webhook denials included).
pub fn rejection(err: &kube::Error) -> String {
    api_error::in_words(err)
}

/// Server-side applies one planned object, or creates it when it is named by `generateName`
/// (as a dry run when `dry_run`; the API server generates a name for a dry run too, so the
/// check before anything is written holds for such objects as well). A created object is known
/// by its generated name from then on.
pub async fn apply_one(client: &Client, planned: &Planned, dry_run: bool) -> Result<DynamicObject, kube::Error> {
    if planned.generates_name() {
        let object: DynamicObject =
            serde_json::from_value(planned.doc.object.clone()).map_err(kube::Error::SerdeError)?;
        let params = PostParams { dry_run, field_manager: Some(FIELD_MANAGER.into()) };
        let created = planned.api(client).create(&params, &object).await?;
        if !dry_run {
            // Each planned object is created once per run, so its name is set once.
            let _ = planned.generated.set(created.name_any());
        }
        return Ok(created);
    }
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = dry_run;
    planned.api(client).patch(planned.name(), &params, &Patch::Apply(&planned.doc.object)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_come_before_jobs_and_namespaces_first() {
        let mut kinds = ["ExternalJob", "LocalQueue", "Namespace", "ClusterQueue", "ResourceFlavor"];
        kinds.sort_by_key(|k| rank(k));
        assert_eq!(kinds, ["Namespace", "ResourceFlavor", "ClusterQueue", "LocalQueue", "ExternalJob"]);
    }

    fn planned(metadata: Value) -> Planned {
        let origin = Origin { file: "job.yaml".into(), index: 1, line: 1, column: None };
        let object = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata});
        let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("batch", "v1", "Job"), "jobs");
        Planned {
            doc: Document { origin, object },
            resource,
            namespaced: true,
            exists: false,
            job_kind: None,
            generated: OnceLock::new(),
        }
    }

    /// `kubectl create`: each submit POSTs a new object (a dry run first, as for applied ones),
    /// and from then on it is known by the name the API server gave it.
    #[tokio::test]
    async fn an_object_of_generate_name_is_created_and_then_known_by_its_generated_name() {
        use crate::test_api_server::{requested, scripted_client};

        let p = planned(json!({"generateName": "sample-job-", "namespace": "default"}));
        assert_eq!(p.display_name(), "job.batch/sample-job-");
        let (client, requests) = scripted_client(|method, path| match (method.as_str(), path) {
            ("POST", "/apis/batch/v1/namespaces/default/jobs") => Ok(json!({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "sample-job-x7k2p", "generateName": "sample-job-", "namespace": "default"},
            })),
            _ => Err(500),
        });
        apply_one(&client, &p, true).await.expect("dry run");
        assert_eq!(p.name(), "", "a dry run names nothing");
        apply_one(&client, &p, false).await.expect("created");
        assert_eq!((p.name(), p.display_name().as_str()), ("sample-job-x7k2p", "job.batch/sample-job-x7k2p"));
        assert_eq!(
            requested(&requests),
            [
                "POST /apis/batch/v1/namespaces/default/jobs?dryRun=All&fieldManager=kueue-ext",
                "POST /apis/batch/v1/namespaces/default/jobs?fieldManager=kueue-ext",
            ]
        );
    }

    #[tokio::test]
    async fn a_named_object_is_still_applied_server_side() {
        use crate::test_api_server::{requested, scripted_client};

        let p = planned(json!({"name": "sample-job", "generateName": "sample-job-", "namespace": "default"}));
        let (client, requests) = scripted_client(|method, path| match (method.as_str(), path) {
            ("PATCH", "/apis/batch/v1/namespaces/default/jobs/sample-job") => {
                Ok(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sample-job"}}))
            }
            _ => Err(500),
        });
        apply_one(&client, &p, false).await.expect("applied");
        assert_eq!(
            requested(&requests),
            ["PATCH /apis/batch/v1/namespaces/default/jobs/sample-job?force=true&fieldManager=kueue-ext"]
        );
    }

    /// A cluster without Kueue: no job can be queued there, and the user is told why.
    #[tokio::test]
    async fn a_cluster_that_does_not_serve_local_queues_is_named_as_such() {
        let mut p = planned(json!({"name": "sample-job", "namespace": "default"}));
        p.doc.object["metadata"]["labels"] = json!({QUEUE_NAME_LABEL: "user-queue"});
        let problem = check_queue(&api_error::serving_nothing(), &p.doc, &BTreeSet::new()).await.expect("a problem");
        assert_eq!(
            problem.to_string(),
            "job.yaml:1 (document 1): metadata.labels[kueue.x-k8s.io/queue-name]: the cluster does not serve \
             LocalQueue in kueue.x-k8s.io/v1beta2: is its CRD installed (kubectl get crds)?"
        );
    }
}
