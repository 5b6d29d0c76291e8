//! Reading the facts the model needs out of untyped objects. Untyped, so that one odd object
//! (an older Kueue, a field we do not know) costs a blank cell, never the whole view.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::Value;

use super::queue_order::Queued;
use super::{
    AdmissionCheckFacts, FlavorQuota, JobCopy, LocalQueueFacts, PodProblem, QueueRow, WorkloadFacts, shortfall,
};
use crate::api::condition::{self, Condition};
use crate::api::kueue::{Admission, AdmissionCheckState, EVICTED, FINISHED, QUOTA_RESERVED};
use crate::jobframework::generic_job::Finished;
use crate::model::snapshot::{JobObject, PodCounts};
use crate::quantity;

fn created(object: &DynamicObject) -> Option<i64> {
    object.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second())
}

fn conditions(status: &Value) -> Vec<Condition> {
    Vec::<Condition>::deserialize(&status["conditions"]).unwrap_or_default()
}

fn string(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(String::from)
}

fn count(value: &Value) -> i64 {
    value.as_i64().unwrap_or_default()
}

/// The status fields of a Workload the model reads (its pod templates are left alone).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct WorkloadStatusFields {
    conditions: Vec<Condition>,
    admission: Option<Admission>,
    admission_checks: Vec<AdmissionCheckState>,
    cluster_name: Option<String>,
    nominated_cluster_names: Vec<String>,
    resource_requests: Vec<PodSetRequest>,
    requeue_state: Option<RequeueState>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PodSetRequest {
    resources: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RequeueState {
    count: Option<i32>,
    requeue_at: Option<String>,
}

pub fn workload(cluster: &str, object: &DynamicObject) -> WorkloadFacts {
    let status = WorkloadStatusFields::deserialize(&object.data["status"]).unwrap_or_default();
    // Kueue empties resourceRequests once it reserves quota: the admission then says the same.
    let asked = status.resource_requests.iter().map(|p| &p.resources);
    let held = status.admission.iter().flat_map(|a| &a.pod_set_assignments).map(|p| &p.resource_usage);
    let requests = summed(asked.chain(held));
    let shortfalls = condition::find(&status.conditions, QUOTA_RESERVED)
        .filter(|c| !c.is_true())
        .map(|c| shortfall::parse(&c.message))
        .unwrap_or_default();
    WorkloadFacts {
        shortfalls,
        name: object.name_any(),
        created: created(object),
        cluster: cluster.into(),
        queue_name: string(&object.data["spec"]["queueName"]),
        active: object.data["spec"]["active"].as_bool().unwrap_or(true),
        conditions: status.conditions,
        admission: status.admission,
        checks: status.admission_checks,
        cluster_name: status.cluster_name,
        nominated: status.nominated_cluster_names,
        requests,
        requeue_count: status.requeue_state.as_ref().and_then(|r| r.count),
        requeue_at: status.requeue_state.and_then(|r| r.requeue_at),
    }
}

/// Amounts by resource, summed over pod sets.
fn summed<'a>(pod_sets: impl Iterator<Item = &'a BTreeMap<String, String>>) -> BTreeMap<String, f64> {
    let mut sums = BTreeMap::new();
    for (resource, amount) in pod_sets.flatten() {
        *sums.entry(resource.clone()).or_insert(0.0) += quantity::parse(amount).unwrap_or_default();
    }
    sums
}

/// Evictions after which Kueue queues a Workload by when it was evicted, not when it was
/// created (`workload.Ordering.GetQueueOrderTimestamp`; PodsReadyTimeout under the default
/// `requeuingStrategy.timestamp: Eviction`).
const REQUEUED_AT_EVICTION: [&str; 2] = ["PodsReadyTimeout", "AdmissionCheck"];

pub(super) fn seconds(rfc3339: &str) -> Option<i64> {
    rfc3339.parse::<k8s_openapi::jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// A Workload as it waits in Kueue's queues: `None` unless Kueue queues it (it names a queue, is
/// active, has no quota and has not finished).
pub fn queued(object: &DynamicObject) -> Option<Queued> {
    let spec = &object.data["spec"];
    let local_queue = string(&spec["queueName"])?;
    let conditions = conditions(&object.data["status"]);
    let holds = |type_: &str| condition::is_true(&conditions, type_);
    if !spec["active"].as_bool().unwrap_or(true) || holds(QUOTA_RESERVED) || holds(FINISHED) {
        return None;
    }
    let created = created(object);
    let requeued = condition::find(&conditions, EVICTED)
        .filter(|c| c.is_true() && REQUEUED_AT_EVICTION.contains(&c.reason.as_str()))
        .and_then(|c| c.last_transition_time.as_deref())
        .and_then(seconds);
    let namespace = object.namespace().unwrap_or_default();
    let owner = object.owner_references().iter().find(|o| o.controller == Some(true));
    let asked = Vec::<PodSetRequest>::deserialize(&object.data["status"]["resourceRequests"]).unwrap_or_default();
    Some(Queued {
        requests: summed(asked.iter().map(|p| &p.resources)),
        job: owner.map(|o| format!("{namespace}/{}", o.name)),
        name: object.name_any(),
        local_queue,
        priority: spec["priority"].as_i64().and_then(|p| i32::try_from(p).ok()).unwrap_or_default(),
        order_time: requeued.or(created),
        created,
        uid: object.uid().unwrap_or_default(),
        namespace,
    })
}

/// How a job ended, by its kind's rule: `(true, "Succeeded (All pods succeeded)")`.
fn outcome(finished: Finished) -> (bool, String) {
    let word = if finished.success { "Succeeded" } else { "Failed" };
    match finished.message.as_str() {
        "" => (finished.success, word.into()),
        message => (finished.success, format!("{word} ({message})")),
    }
}

pub fn message_or_reason(c: &Condition) -> &str {
    if c.message.is_empty() { &c.reason } else { &c.message }
}

pub fn job_copy(cluster: &str, job: &JobObject, pods: PodCounts, pod_problem: Option<PodProblem>) -> JobCopy {
    let object = &job.object;
    let status = &object.data["status"];
    let reading =
        serde_json::to_value(object.as_ref()).ok().and_then(|value| job.kind.read(&value)).unwrap_or_default();
    JobCopy {
        cluster: cluster.into(),
        uid: object.uid().unwrap_or_default(),
        created: created(object),
        suspended: reading.suspended,
        managed_by: reading.managed_by,
        phase: string(&status["phase"]),
        outcome: reading.finished.map(outcome),
        conditions: conditions(status),
        pods,
        pod_problem,
        object: Arc::clone(object),
    }
}

fn stop_policy(spec: &Value) -> Option<String> {
    string(&spec["stopPolicy"]).filter(|p| p != "None")
}

pub fn local_queue(cluster: &str, object: &DynamicObject) -> LocalQueueFacts {
    let status = &object.data["status"];
    LocalQueueFacts {
        cluster: cluster.into(),
        namespace: object.namespace().unwrap_or_default(),
        name: object.name_any(),
        cluster_queue: string(&object.data["spec"]["clusterQueue"]).unwrap_or_default(),
        stop_policy: stop_policy(&object.data["spec"]),
        active: condition::find(&conditions(status), "Active").cloned(),
        pending: count(&status["pendingWorkloads"]),
        admitted: count(&status["admittedWorkloads"]),
    }
}

pub fn admission_check(cluster: &str, object: &DynamicObject) -> AdmissionCheckFacts {
    AdmissionCheckFacts {
        cluster: cluster.into(),
        name: object.name_any(),
        controller: string(&object.data["spec"]["controllerName"]).unwrap_or_default(),
        active: condition::find(&conditions(&object.data["status"]), "Active").cloned(),
    }
}

/// `flavor → resource → total` of a ClusterQueue's `flavorsReservation` or `flavorsUsage`.
fn flavor_totals(list: &Value) -> BTreeMap<(String, String), f64> {
    let mut totals = BTreeMap::new();
    for flavor in list.as_array().into_iter().flatten() {
        let name = flavor["name"].as_str().unwrap_or_default();
        for resource in flavor["resources"].as_array().into_iter().flatten() {
            let amount = resource["total"].as_str().and_then(quantity::parse).unwrap_or_default();
            totals.insert((name.to_string(), resource["name"].as_str().unwrap_or_default().to_string()), amount);
        }
    }
    totals
}

pub fn cluster_queue(cluster: &str, object: &DynamicObject) -> QueueRow {
    let spec = &object.data["spec"];
    let status = &object.data["status"];
    let reserved = flavor_totals(&status["flavorsReservation"]);
    let used = flavor_totals(&status["flavorsUsage"]);
    let mut quotas = Vec::new();
    for group in spec["resourceGroups"].as_array().into_iter().flatten() {
        for flavor in group["flavors"].as_array().into_iter().flatten() {
            let flavor_name = flavor["name"].as_str().unwrap_or_default().to_string();
            for resource in flavor["resources"].as_array().into_iter().flatten() {
                let resource_name = resource["name"].as_str().unwrap_or_default().to_string();
                let key = (flavor_name.clone(), resource_name.clone());
                quotas.push(FlavorQuota {
                    nominal: resource["nominalQuota"].as_str().and_then(quantity::parse).unwrap_or_default(),
                    borrowing_limit: resource["borrowingLimit"].as_str().and_then(quantity::parse),
                    reserved: reserved.get(&key).copied().unwrap_or_default(),
                    used: used.get(&key).copied().unwrap_or_default(),
                    flavor: flavor_name.clone(),
                    resource: resource_name,
                });
            }
        }
    }
    let checks = spec["admissionChecksStrategy"]["admissionChecks"].as_array().into_iter().flatten();
    QueueRow {
        cluster: cluster.into(),
        name: object.name_any(),
        cohort: string(&spec["cohortName"]),
        active: condition::find(&conditions(status), "Active").cloned(),
        stop_policy: stop_policy(spec),
        pending: count(&status["pendingWorkloads"]),
        reserving: count(&status["reservingWorkloads"]),
        admitted: count(&status["admittedWorkloads"]),
        admission_checks: checks.filter_map(|c| string(&c["name"])).collect(),
        quotas,
        local_queues: Vec::new(),
    }
}

/// The `Active` condition of a MultiKueueCluster: whether the manager reaches that worker.
pub fn connection(object: &DynamicObject) -> Option<Condition> {
    condition::find(&conditions(&object.data["status"]), "Active").cloned()
}
