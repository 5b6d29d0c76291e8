//! What the watches hold at one moment, cluster by cluster: the only input of the model. Objects
//! stay as the API server sent them (shared, never copied); pods and events are reduced here to
//! the little the model needs, because a cluster can hold many of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use kube::{Resource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::pods::{PodProblem, dominant, problem_of};
use crate::api::wrapped_job::{WRAPPED_JOB_LABEL, WrappedJob};
pub use crate::integrations::registry::JobKind;

pub use crate::api::kueue::Role;

/// An object as events name it: kind, namespace, name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectKey {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(kind: &str, namespace: &str, name: &str) -> Self {
        ObjectKey { kind: kind.into(), namespace: namespace.into(), name: name.into() }
    }
}

#[derive(Clone, Debug)]
pub struct JobObject {
    pub kind: JobKind,
    pub object: Arc<DynamicObject>,
}

/// Pods of one job by phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PodCounts {
    pub pending: u32,
    pub running: u32,
    pub succeeded: u32,
    pub failed: u32,
}

impl PodCounts {
    pub fn total(&self) -> u32 {
        self.pending + self.running + self.succeeded + self.failed
    }
}

/// One event, reduced to what the detail view shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventLine {
    pub object: ObjectKey,
    /// `Normal` or `Warning`.
    pub type_: String,
    pub reason: String,
    pub message: String,
    /// Seconds since the epoch of its last occurrence.
    pub time: Option<i64>,
    pub count: i32,
}

/// One cluster as its watches see it.
#[derive(Clone, Debug)]
pub struct ClusterSnapshot {
    /// `manager`, `worker1` — the name MultiKueue knows it by.
    pub name: String,
    pub context: String,
    pub role: Role,
    /// Kinds that could not be read (`LocalQueue` → why); all of them: the cluster is unreachable.
    pub problems: BTreeMap<String, String>,
    pub reachable: bool,
    pub jobs: Vec<JobObject>,
    pub workloads: Vec<Arc<DynamicObject>>,
    pub local_queues: Vec<Arc<DynamicObject>>,
    pub cluster_queues: Vec<Arc<DynamicObject>>,
    pub admission_checks: Vec<Arc<DynamicObject>>,
    pub multikueue_clusters: Vec<Arc<DynamicObject>>,
    /// Keyed by the job that owns the pods (kind name, namespace, name).
    pub pods: BTreeMap<ObjectKey, PodCounts>,
    /// What keeps most of a job's pods from running, keyed as `pods`.
    pub pod_problems: BTreeMap<ObjectKey, PodProblem>,
    /// Each node's `spec.providerID`: `kind://docker/CLUSTER/NODE` on kind. Empty where nodes
    /// cannot be read.
    pub provider_ids: Vec<String>,
    pub events: Vec<EventLine>,
    /// What Kueue's visibility API said of each ClusterQueue's pending Workloads.
    pub visibility: Visibility,
    /// When it was read (seconds since the epoch): the ages of queued Workloads count to it.
    pub read_at: Option<i64>,
}

/// One pending Workload as Kueue's visibility API lists it (`PendingWorkload` of
/// `visibility.kueue.x-k8s.io/v1beta2`); its positions count from 0.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VisiblePending {
    pub metadata: ObjectMeta,
    pub priority: i32,
    pub local_queue_name: String,
    pub position_in_cluster_queue: i32,
    pub position_in_local_queue: i32,
}

/// Whether a cluster's Kueue told the order of its queues.
#[derive(Clone, Debug, Default)]
pub enum Visibility {
    /// Not asked yet (the live view asks it at an interval, `--once` and `explain` once).
    #[default]
    NotAsked,
    /// Asked and not answered: why, in words.
    Unavailable(String),
    /// Pending Workloads per ClusterQueue, in Kueue's order.
    Served(BTreeMap<String, Vec<VisiblePending>>),
}

impl ClusterSnapshot {
    pub fn empty(name: &str, context: &str, role: Role) -> Self {
        ClusterSnapshot {
            name: name.into(),
            context: context.into(),
            role,
            problems: BTreeMap::new(),
            reachable: true,
            jobs: Vec::new(),
            workloads: Vec::new(),
            local_queues: Vec::new(),
            cluster_queues: Vec::new(),
            admission_checks: Vec::new(),
            multikueue_clusters: Vec::new(),
            pods: BTreeMap::new(),
            pod_problems: BTreeMap::new(),
            provider_ids: Vec::new(),
            events: Vec::new(),
            visibility: Visibility::NotAsked,
            read_at: None,
        }
    }
}

/// Every watched cluster, the manager first.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub clusters: Vec<ClusterSnapshot>,
}

/// The label the JobSet controller puts on each pod of a JobSet (`JobSetNameKey`).
const JOBSET_NAME_LABEL: &str = "jobset.sigs.k8s.io/jobset-name";

/// The job a pod belongs to: a WrappedJob or a JobSet by the label on their pods (those are
/// owned by a component or a child Job, not by the job), otherwise its controller.
pub(super) fn pod_owner(pod: &Pod) -> Option<ObjectKey> {
    let namespace = pod.namespace().unwrap_or_default();
    if let Some(wrapper) = pod.labels().get(WRAPPED_JOB_LABEL) {
        return Some(ObjectKey::new(WrappedJob::kind(&()).as_ref(), &namespace, wrapper));
    }
    if let Some(jobset) = pod.labels().get(JOBSET_NAME_LABEL) {
        return Some(ObjectKey::new("JobSet", &namespace, jobset));
    }
    let owner = pod.owner_references().iter().find(|o| o.controller == Some(true))?;
    Some(ObjectKey::new(&owner.kind, &namespace, &owner.name))
}

/// Per owning job, the problem most of its pods share.
pub fn pod_problems<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> BTreeMap<ObjectKey, PodProblem> {
    let mut by_owner: BTreeMap<ObjectKey, Vec<PodProblem>> = BTreeMap::new();
    for pod in pods {
        if let (Some(owner), Some(problem)) = (pod_owner(pod), problem_of(pod)) {
            by_owner.entry(owner).or_default().push(problem);
        }
    }
    by_owner.into_iter().filter_map(|(owner, problems)| Some((owner, dominant(problems)?))).collect()
}

/// Pods counted by owning job and phase.
pub fn pod_counts<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> BTreeMap<ObjectKey, PodCounts> {
    let mut counts: BTreeMap<ObjectKey, PodCounts> = BTreeMap::new();
    for pod in pods {
        let Some(owner) = pod_owner(pod) else { continue };
        let entry = counts.entry(owner).or_default();
        match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
            Some("Running") => entry.running += 1,
            Some("Succeeded") => entry.succeeded += 1,
            Some("Failed") => entry.failed += 1,
            _ => entry.pending += 1,
        }
    }
    counts
}

/// The event as the detail view lists it; `None` for events about nothing.
pub fn event_line(event: &Event) -> Option<EventLine> {
    let object = &event.involved_object;
    let time = event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0));
    Some(EventLine {
        object: ObjectKey::new(
            object.kind.as_deref()?,
            object.namespace.as_deref().unwrap_or_default(),
            object.name.as_deref()?,
        ),
        type_: event.type_.clone().unwrap_or_default(),
        reason: event.reason.clone().unwrap_or_default(),
        message: event.message.clone().unwrap_or_default(),
        time: time.map(|t| t.as_second()),
        count: event.count.unwrap_or(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: serde_json::Value, owner: Option<(&str, &str)>, phase: &str) -> Pod {
        let owners = owner.map(
            |(kind, name)| json!([{"apiVersion": "x/v1", "kind": kind, "name": name, "uid": "u", "controller": true}]),
        );
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "labels": labels, "ownerReferences": owners},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn pods_count_for_their_job_by_phase() {
        let pods = [
            pod(json!({}), Some(("ExternalJob", "train")), "Running"),
            pod(json!({}), Some(("ExternalJob", "train")), "Pending"),
            pod(json!({}), Some(("ExternalJob", "train")), "Succeeded"),
            pod(json!({WRAPPED_JOB_LABEL: "wrap"}), Some(("Job", "wrap-0")), "Failed"),
            pod(json!({JOBSET_NAME_LABEL: "set"}), Some(("Job", "set-workers-0")), "Running"),
            pod(json!({}), None, "Running"),
        ];
        let counts = pod_counts(&pods);
        assert_eq!(counts.len(), 3, "{counts:?}");
        assert_eq!(counts[&ObjectKey::new("JobSet", "default", "set")].running, 1, "not its child Job's");
        let train = counts[&ObjectKey::new("ExternalJob", "default", "train")];
        assert_eq!((train.pending, train.running, train.succeeded, train.failed), (1, 1, 1, 0));
        assert_eq!(counts[&ObjectKey::new("WrappedJob", "default", "wrap")].failed, 1);
    }

    #[test]
    fn events_keep_their_object_and_latest_time() {
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Workload", "namespace": "default", "name": "wl"},
            "type": "Normal", "reason": "QuotaReserved", "message": "Quota reserved",
            "lastTimestamp": "2026-01-01T00:00:10Z", "count": 2,
        }))
        .unwrap();
        let line = event_line(&event).unwrap();
        assert_eq!(line.object, ObjectKey::new("Workload", "default", "wl"));
        assert_eq!((line.time, line.count), (Some(1_767_225_610), 2));
    }
}
