//! What the ExternalJob runtime does, apart from the Workload: it runs the pods of a job that is
//! unsuspended and not managed by another controller, counts them, retries failures up to the
//! backoff limit, deletes them on suspension, and writes the job's status.
//!
//! The pods are read from a cache, which may lag behind what the controller just created. Pod
//! names are therefore derived, not generated: a pod is the `attempt`-th one of `slot` in its
//! pod set, so a reconcile that plans a pod the cache has not shown yet is refused by the API
//! server (AlreadyExists) instead of running it twice.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use super::{COMPLETE, FAILED, RUNNING, SUSPENDED};
use crate::api::condition::{self, Condition};
use crate::api::external_job::{ExternalJob, ExternalJobStatus, PodSetStatus};
use crate::jobframework::workload::owner_reference;

pub const JOB_NAME_LABEL: &str = "kueue-ext.dev/job-name";
pub const JOB_UID_LABEL: &str = "kueue-ext.dev/job-uid";
pub const POD_SET_LABEL: &str = "kueue-ext.dev/pod-set";
pub const POD_INDEX_LABEL: &str = "kueue-ext.dev/pod-index";

/// What the controller sees of one pod.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedPod {
    pub name: String,
    pub pod_set: String,
    /// The slot of the pod set it fills; `None` for a pod without the label.
    pub slot: Option<i32>,
    pub phase: String,
    pub ready: bool,
    pub deleting: bool,
}

impl ObservedPod {
    pub fn from_pod(pod: &Pod) -> Self {
        let status = pod.status.clone().unwrap_or_default();
        ObservedPod {
            name: pod.name_any(),
            pod_set: pod.labels().get(POD_SET_LABEL).cloned().unwrap_or_default(),
            slot: pod.labels().get(POD_INDEX_LABEL).and_then(|i| i.parse().ok()),
            phase: status.phase.unwrap_or_else(|| "Pending".into()),
            ready: status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True"),
            deleting: pod.metadata.deletion_timestamp.is_some(),
        }
    }

    pub fn is_active(&self) -> bool {
        !self.deleting && matches!(self.phase.as_str(), "Pending" | "Running")
    }

    /// Being deleted but not ended: its containers may still run.
    pub fn is_terminating(&self) -> bool {
        self.deleting && matches!(self.phase.as_str(), "Pending" | "Running")
    }
}

/// The next step for a job's pods.
#[derive(Debug, PartialEq)]
pub struct Plan {
    /// The job's status once the creations and deletions below are done: Kueue releases the
    /// quota of an evicted job as soon as its status shows no pod, so a pod this reconcile
    /// creates or deletes must already be counted, as active or as terminating.
    pub status: ExternalJobStatus,
    /// Pods to create.
    pub create: Vec<NewPod>,
    /// Active pods to delete (suspension, failure, completion).
    pub delete: Vec<String>,
}

/// A pod to create: the `attempt`-th (from 0) for `slot` of pod set number `pod_set`.
#[derive(Clone, Debug, PartialEq)]
pub struct NewPod {
    pub pod_set: usize,
    pub slot: i32,
    pub attempt: usize,
}

/// Decides what to do from the job and its pods; pure, so every rule has a table test.
pub fn plan(job: &ExternalJob, pods: &[ObservedPod], now: &str) -> Plan {
    let previous = job.status_or_default();
    let mut status = ExternalJobStatus { conditions: previous.conditions.clone(), ..Default::default() };
    status.pod_sets = job.spec.pod_sets.iter().map(|p| observed_counts(&p.name, pods)).collect();
    status.start_time = previous.start_time.clone();
    status.completion_time = previous.completion_time.clone();

    let stop = |mut status: ExternalJobStatus| {
        for counts in &mut status.pod_sets {
            counts.terminating += counts.active;
            (counts.active, counts.ready) = (0, 0);
        }
        let delete = pods.iter().filter(|p| p.is_active()).map(|p| p.name.clone()).collect();
        Plan { status, create: Vec::new(), delete }
    };
    let finished = condition::is_true(&status.conditions, COMPLETE) || condition::is_true(&status.conditions, FAILED);
    if finished {
        return stop(status);
    }
    if job.is_suspended() {
        condition::set(&mut status.conditions, Condition::new(SUSPENDED, true, "JobSuspended", "Job suspended"), now);
        condition::set(&mut status.conditions, Condition::new(RUNNING, false, "JobSuspended", ""), now);
        return stop(status);
    }
    condition::set(&mut status.conditions, Condition::new(SUSPENDED, false, "JobResumed", "Job resumed"), now);
    status.start_time.get_or_insert_with(|| now.to_string());

    let failed: i32 = status.pod_sets.iter().map(|p| p.failed).sum();
    let done = job.spec.pod_sets.iter().zip(&status.pod_sets).all(|(want, got)| got.succeeded >= want.count);
    let outcome = if done {
        Some((COMPLETE, "Completed", "All pods succeeded".to_string()))
    } else if failed > job.backoff_limit() {
        Some((
            FAILED,
            "BackoffLimitExceeded",
            format!("{failed} pod(s) failed, more than the backoff limit {}", job.backoff_limit()),
        ))
    } else if deadline_passed(job, status.start_time.as_deref(), now) {
        Some((FAILED, "DeadlineExceeded", "Job was active longer than its activeDeadlineSeconds".to_string()))
    } else {
        None
    };
    if let Some((kind, reason, message)) = outcome {
        condition::set(&mut status.conditions, Condition::new(kind, true, reason, message.clone()), now);
        condition::set(&mut status.conditions, Condition::new(RUNNING, false, reason, message), now);
        status.completion_time = Some(now.to_string());
        return stop(status);
    }
    condition::set(&mut status.conditions, Condition::new(RUNNING, true, "PodsCreated", "Pods are running"), now);
    let mut create = Vec::new();
    for (i, (want, got)) in job.spec.pod_sets.iter().zip(&mut status.pod_sets).enumerate() {
        let missing = want.count - got.active - got.succeeded;
        if missing > 0 {
            let before = create.len();
            let slots = free_slots(&want.name, want.count, pods).take(missing as usize);
            create.extend(slots.map(|(slot, attempt)| NewPod { pod_set: i, slot, attempt }));
            got.active += (create.len() - before) as i32;
        }
    }
    Plan { status, create, delete: Vec::new() }
}

/// Slots of a pod set that no pending, running or succeeded pod fills, each with the number of
/// pods that filled it before (failed, or deleted while the job ran): the next attempt.
fn free_slots<'a>(pod_set: &'a str, count: i32, pods: &'a [ObservedPod]) -> impl Iterator<Item = (i32, usize)> + 'a {
    (0..count).filter_map(move |slot| {
        let of_slot: Vec<&ObservedPod> = pods.iter().filter(|p| p.pod_set == pod_set && p.slot == Some(slot)).collect();
        let taken = of_slot.iter().any(|p| p.is_active() || p.phase == "Succeeded");
        (!taken).then_some((slot, of_slot.len()))
    })
}

fn observed_counts(pod_set: &str, pods: &[ObservedPod]) -> PodSetStatus {
    let of_set: Vec<&ObservedPod> = pods.iter().filter(|p| p.pod_set == pod_set).collect();
    let count = |f: &dyn Fn(&ObservedPod) -> bool| of_set.iter().filter(|p| f(p)).count() as i32;
    PodSetStatus {
        name: pod_set.to_string(),
        active: count(&|p| p.is_active()),
        ready: count(&|p| p.is_active() && p.ready),
        succeeded: count(&|p| p.phase == "Succeeded"),
        failed: count(&|p| p.phase == "Failed"),
        terminating: count(&|p| p.is_terminating()),
    }
}

fn deadline_passed(job: &ExternalJob, start: Option<&str>, now: &str) -> bool {
    seconds_left(job, start, now).is_some_and(|left| left < 0)
}

/// Seconds until the job has been active longer than `activeDeadlineSeconds` (negative once it has).
fn seconds_left(job: &ExternalJob, start: Option<&str>, now: &str) -> Option<i64> {
    let (limit, start) = (job.spec.active_deadline_seconds?, start?);
    let parse = |t: &str| time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok();
    Some(limit - (parse(now)? - parse(start)?).whole_seconds())
}

/// When to look at a running job again although none of its pods changed: just past its
/// deadline. `None` for a job without one, suspended, or ended (`status` as planned).
pub fn until_deadline(job: &ExternalJob, status: &ExternalJobStatus, now: &str) -> Option<std::time::Duration> {
    let ended = condition::is_true(&status.conditions, COMPLETE) || condition::is_true(&status.conditions, FAILED);
    if job.is_suspended() || ended {
        return None;
    }
    let left = seconds_left(job, status.start_time.as_deref(), now)?;
    Some(std::time::Duration::from_secs(left.max(0) as u64 + 1))
}

/// The pod `new` names, owned by the job, from its pod set's (admission-injected) template.
pub fn new_pod(job: &ExternalJob, new: &NewPod) -> Pod {
    let pod_set = &job.spec.pod_sets[new.pod_set];
    let PodTemplateSpec { metadata, spec } = pod_set.template.clone();
    let metadata = metadata.unwrap_or_default();
    let mut labels: BTreeMap<String, String> = metadata.labels.unwrap_or_default();
    labels.insert(JOB_NAME_LABEL.into(), job.name_any());
    labels.insert(JOB_UID_LABEL.into(), job.uid().unwrap_or_default());
    labels.insert(POD_SET_LABEL.into(), pod_set.name.clone());
    labels.insert(POD_INDEX_LABEL.into(), new.slot.to_string());
    let mut spec = spec.unwrap_or_default();
    // The job counts failures and retries with new pods; a pod never restarts in place.
    spec.restart_policy = Some("Never".into());
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{}-{}-{}-{}", job.name_any(), pod_set.name, new.slot, new.attempt)),
            namespace: job.namespace(),
            labels: Some(labels),
            annotations: metadata.annotations,
            owner_references: Some(vec![owner_reference(job)]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}
