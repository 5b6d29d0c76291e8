//! What the ExternalJob runtime does, apart from the Workload: it runs the pods of a job that is
//! unsuspended and not managed by another controller, counts them, retries failures up to the
//! backoff limit, deletes them on suspension, and writes the job's status.
//!
//! The pods are read from a cache, which may lag behind what the controller just created. Pod
//! names are therefore derived, not generated: a pod is the `attempt`-th one of `slot` in its
//! pod set, so a reconcile that plans a pod the cache has not shown yet is refused by the API
//! server (AlreadyExists) instead of running it twice.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodTemplateSpec};
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
    /// Since when its node has held it with no sandbox, its containers created and never
    /// started ([`stranded_since`]).
    pub stranded_since: Option<String>,
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
            stranded_since: stranded_since(pod),
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

/// How long a pod may sit with its sandbox lost and its containers never started before it is
/// replaced: a kubelet makes a new sandbox within seconds when it will make one at all.
pub const STRANDED_AFTER: Duration = Duration::from_secs(60);

/// When a pod's node lost its sandbox after creating its containers and before starting them
/// (a node restarted at that moment): the pod stays Pending with `PodReadyToStartContainers`
/// False and every container waiting for no reason. For a pod of `restartPolicy: Never` the
/// kubelet makes no new sandbox then, so the pod would wait for ever; its work never began, so
/// replacing it runs nothing twice.
fn stranded_since(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Pending") {
        return None;
    }
    let conditions = status.conditions.iter().flatten();
    let lost = conditions.into_iter().find(|c| c.type_ == "PodReadyToStartContainers" && c.status == "False")?;
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    let never_started = |c: &ContainerStatus| {
        let waiting_for_nothing = c.state.as_ref().and_then(|s| s.waiting.as_ref()).is_some_and(|w| w.reason.is_none());
        let ran_before = c.last_state.as_ref().is_some_and(|s| s.running.is_some() || s.terminated.is_some());
        c.container_id.is_some() && waiting_for_nothing && !ran_before
    };
    if containers.is_empty() || !containers.iter().all(never_started) {
        return None;
    }
    Some(lost.last_transition_time.as_ref()?.0.to_string())
}

/// Seconds from `since` to `now` (RFC 3339 both), if both parse.
fn seconds_between(since: &str, now: &str) -> Option<i64> {
    let parse = |t: &str| time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok();
    Some((parse(now)? - parse(since)?).whole_seconds())
}

/// Seconds a pod not yet being deleted has been stranded, at `now`.
fn stranded_for(pod: &ObservedPod, now: &str) -> Option<i64> {
    if pod.deleting {
        return None;
    }
    seconds_between(pod.stranded_since.as_deref()?, now)
}

fn stranded_long_enough(pod: &ObservedPod, now: &str) -> bool {
    stranded_for(pod, now).is_some_and(|waited| waited >= STRANDED_AFTER.as_secs() as i64)
}

/// When to look again at a pod stranded for less than [`STRANDED_AFTER`]: nothing about it
/// changes meanwhile.
pub fn until_stranded(pods: &[ObservedPod], now: &str) -> Option<Duration> {
    let limit = STRANDED_AFTER.as_secs() as i64;
    let waits = pods.iter().filter_map(|p| stranded_for(p, now)).filter(|waited| *waited < limit);
    waits.map(|waited| Duration::from_secs((limit - waited) as u64 + 1)).min()
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

/// Decides what to do from the job and its pods; pure, so every rule has a table test. A pod
/// stranded for [`STRANDED_AFTER`] is deleted and counted as leaving, so its slot gets a new one.
pub fn plan(job: &ExternalJob, pods: &[ObservedPod], now: &str) -> Plan {
    let stranded: Vec<String> = pods.iter().filter(|p| stranded_long_enough(p, now)).map(|p| p.name.clone()).collect();
    let leaving = |p: &ObservedPod| ObservedPod { deleting: p.deleting || stranded.contains(&p.name), ..p.clone() };
    let pods: Vec<ObservedPod> = pods.iter().map(leaving).collect();
    let mut plan = plan_for(job, &pods, now);
    plan.delete.extend(stranded);
    plan
}

fn plan_for(job: &ExternalJob, pods: &[ObservedPod], now: &str) -> Plan {
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
    Some(limit - seconds_between(start, now)?)
}

/// When to look at a running job again although none of its pods changed: just past its
/// deadline. `None` for a job without one, suspended, or ended (`status` as planned).
pub fn until_deadline(job: &ExternalJob, status: &ExternalJobStatus, now: &str) -> Option<Duration> {
    let ended = condition::is_true(&status.conditions, COMPLETE) || condition::is_true(&status.conditions, FAILED);
    if job.is_suspended() || ended {
        return None;
    }
    let left = seconds_left(job, status.start_time.as_deref(), now)?;
    Some(Duration::from_secs(left.max(0) as u64 + 1))
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
