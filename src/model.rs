//! The joined view of every cluster: each job on the manager with its Workload and, through
//! MultiKueue, its copy on a worker with that copy's Workload and pods; the ClusterQueues with
//! usage against quota; the clusters and whether MultiKueue reaches them. A pure function of a
//! [`Snapshot`], so every state has a fixture test and the TUI, `watch --once` and `explain`
//! agree by construction.

pub mod capacity;
#[cfg(test)]
pub mod fixtures;
mod join;
pub mod pods;
pub mod queue_order;
pub mod read;
mod shortfall;
pub mod snapshot;
pub mod source;
#[cfg(test)]
mod tests;
pub mod timeline;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kube::api::DynamicObject;
use serde::Serialize;

pub use join::join;
pub use pods::{PodProblem, PodReason};
pub use queue_order::{PendingLine, PositionSource, QueuePosition, Waiting};
pub use read::message_or_reason;
pub use shortfall::Shortfall;
pub use timeline::{DispatchCounts, Timeline};

use crate::api::condition::{self, Condition};
use crate::api::kueue::{ADMITTED, Admission, AdmissionCheckState, EVICTED, FINISHED, QUOTA_RESERVED};
use crate::model::snapshot::{EventLine, JobKind, PodCounts, Role};

/// A job by where it lives.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct JobKey {
    pub cluster: String,
    pub kind: JobKind,
    pub namespace: String,
    pub name: String,
}

impl JobKey {
    /// The job as `kubectl get -o name` names it: `externaljob.kueue-ext.dev/train`, `job.batch/pi`.
    pub fn object_name(&self) -> String {
        let resource = self.kind.api_resource();
        let kind = resource.kind.to_lowercase();
        match resource.group.as_str() {
            "" => format!("{kind}/{}", self.name),
            group => format!("{kind}.{group}/{}", self.name),
        }
    }
}

impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind.name(), self.namespace, self.name)
    }
}

/// One copy of a job on one cluster: the user's on the manager, or MultiKueue's on a worker.
#[derive(Clone, Debug, Serialize)]
pub struct JobCopy {
    pub cluster: String,
    pub uid: String,
    pub created: Option<i64>,
    pub suspended: bool,
    pub managed_by: Option<String>,
    pub conditions: Vec<Condition>,
    pub phase: Option<String>,
    /// `(succeeded, how)` once it has ended: `(true, "Succeeded (All pods succeeded)")`.
    pub outcome: Option<(bool, String)>,
    pub pods: PodCounts,
    /// What keeps most of its pods from running, if something does.
    pub pod_problem: Option<PodProblem>,
    #[serde(skip)]
    pub object: Arc<DynamicObject>,
}

/// kueuectl's status words, with its precedence: Finished > Admitted > QuotaReserved > Pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WorkloadState {
    Pending,
    QuotaReserved,
    Admitted,
    Finished,
}

impl fmt::Display for WorkloadState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkloadState::Pending => "PENDING",
            WorkloadState::QuotaReserved => "QUOTARESERVED",
            WorkloadState::Admitted => "ADMITTED",
            WorkloadState::Finished => "FINISHED",
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkloadFacts {
    pub name: String,
    /// Seconds since the epoch.
    pub created: Option<i64>,
    pub cluster: String,
    pub queue_name: Option<String>,
    /// `spec.active`: false once deactivated.
    pub active: bool,
    pub conditions: Vec<Condition>,
    pub admission: Option<Admission>,
    pub checks: Vec<AdmissionCheckState>,
    /// The worker MultiKueue chose (`status.clusterName`).
    pub cluster_name: Option<String>,
    pub nominated: Vec<String>,
    /// What the pod sets ask in total, by resource: `status.resourceRequests` until quota is
    /// reserved, then the admission's `resourceUsage`.
    pub requests: BTreeMap<String, f64>,
    pub requeue_count: Option<i32>,
    pub requeue_at: Option<String>,
    /// What Kueue's QuotaReserved message says is short, while it has no quota.
    pub shortfalls: Vec<Shortfall>,
}

impl WorkloadFacts {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        condition::find(&self.conditions, type_)
    }

    pub fn is(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(Condition::is_true)
    }

    pub fn state(&self) -> WorkloadState {
        if self.is(FINISHED) {
            WorkloadState::Finished
        } else if self.is(ADMITTED) {
            WorkloadState::Admitted
        } else if self.is(QUOTA_RESERVED) {
            WorkloadState::QuotaReserved
        } else {
            WorkloadState::Pending
        }
    }

    /// The Evicted condition while it holds.
    pub fn eviction(&self) -> Option<&Condition> {
        self.condition(EVICTED).filter(|c| c.is_true())
    }

    pub fn cluster_queue(&self) -> Option<&str> {
        self.admission.as_ref().map(|a| a.cluster_queue.as_str())
    }
}

/// The state of a job's copy on a worker, as the MIRROR column shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MirrorState {
    Unreachable,
    /// The chosen worker holds neither the job nor its Workload.
    Missing,
    Pending,
    Reserved,
    /// The copy's Workload is admitted; MultiKueue has not created the job copy yet.
    Admitted,
    Suspended,
    Starting,
    Running,
    Succeeded,
    Failed,
}

impl fmt::Display for MirrorState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What one worker holds of a manager job.
#[derive(Clone, Debug, Serialize)]
pub struct Mirror {
    pub cluster: String,
    /// Why the worker could not be read, when it could not.
    pub unreachable: Option<String>,
    pub job: Option<JobCopy>,
    pub workload: Option<WorkloadFacts>,
}

impl Mirror {
    pub fn state(&self) -> MirrorState {
        if self.unreachable.is_some() {
            return MirrorState::Unreachable;
        }
        match (&self.job, &self.workload) {
            (Some(job), _) => match &job.outcome {
                Some((true, _)) => MirrorState::Succeeded,
                Some((false, _)) => MirrorState::Failed,
                None if job.suspended => MirrorState::Suspended,
                None if job.pods.running > 0 => MirrorState::Running,
                None => MirrorState::Starting,
            },
            (None, Some(wl)) => match wl.state() {
                WorkloadState::Pending => MirrorState::Pending,
                WorkloadState::QuotaReserved => MirrorState::Reserved,
                WorkloadState::Admitted => MirrorState::Admitted,
                WorkloadState::Finished => MirrorState::Succeeded,
            },
            (None, None) => MirrorState::Missing,
        }
    }
}

/// One line of the jobs table: where the job is in its life, coloured by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum RowStatus {
    /// Kueue cannot admit it as things are configured (no queue, stopped queue, never fits…).
    Blocked,
    Failed,
    Evicted,
    Pending,
    /// Quota reserved, admission checks not all Ready.
    Reserved,
    Admitted,
    Running,
    Succeeded,
    /// Queued, but its Workload does not exist yet.
    NoWorkload,
    /// No queue name: Kueue does not manage it.
    Unmanaged,
}

impl fmt::Display for RowStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// An event of a job, its Workload or their copies, with the cluster it happened on.
#[derive(Clone, Debug, Serialize)]
pub struct JobEvent {
    pub cluster: String,
    #[serde(flatten)]
    pub event: EventLine,
}

#[derive(Clone, Debug, Serialize)]
pub struct JobRow {
    pub key: JobKey,
    pub queue: Option<String>,
    pub job: JobCopy,
    pub workload: Option<WorkloadFacts>,
    /// The chosen worker's copy first, then copies still on nominated workers.
    pub mirrors: Vec<Mirror>,
    pub events: Vec<JobEvent>,
    pub status: RowStatus,
    /// While its Workload waits in a queue: where, and behind whom.
    pub queue_position: Option<QueuePosition>,
    /// What MultiKueue did with it, once it sent it to a worker.
    pub multikueue: Option<Timeline>,
}

impl JobRow {
    /// The copy that runs (or will run) the job: on the worker MultiKueue chose.
    pub fn mirror(&self) -> Option<&Mirror> {
        self.mirrors.first()
    }

    /// Pods of the copy that runs the job.
    pub fn pods(&self) -> PodCounts {
        match self.mirror().and_then(|m| m.job.as_ref()) {
            Some(copy) => copy.pods,
            None => self.job.pods,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FlavorQuota {
    pub flavor: String,
    pub resource: String,
    pub nominal: f64,
    pub borrowing_limit: Option<f64>,
    /// Held by Workloads with quota reserved (what admission compares against).
    pub reserved: f64,
    /// Held by admitted Workloads.
    pub used: f64,
}

/// A ClusterQueue and its quota.
#[derive(Clone, Debug, Serialize)]
pub struct QueueRow {
    pub cluster: String,
    pub name: String,
    pub cohort: Option<String>,
    pub active: Option<Condition>,
    /// `Hold` or `HoldAndDrain` while stopped.
    pub stop_policy: Option<String>,
    pub pending: i64,
    pub reserving: i64,
    pub admitted: i64,
    pub admission_checks: Vec<String>,
    pub quotas: Vec<FlavorQuota>,
    /// `namespace/name` of the LocalQueues that feed it.
    pub local_queues: Vec<String>,
}

impl QueueRow {
    pub fn is_active(&self) -> bool {
        self.active.as_ref().is_some_and(Condition::is_true)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LocalQueueFacts {
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub cluster_queue: String,
    pub stop_policy: Option<String>,
    pub active: Option<Condition>,
    pub pending: i64,
    pub admitted: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AdmissionCheckFacts {
    pub cluster: String,
    pub name: String,
    pub controller: String,
    pub active: Option<Condition>,
}

/// A cluster we watch, a MultiKueueCluster the manager knows, or both.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterRow {
    pub name: String,
    /// The kubeconfig context we watch it through; `None` when only MultiKueue knows it.
    pub context: Option<String>,
    pub role: Role,
    pub reachable: bool,
    /// Kinds that could not be read there, and why.
    pub problems: BTreeMap<String, String>,
    /// The `Active` condition of its MultiKueueCluster on the manager.
    pub connection: Option<Condition>,
    /// The kind cluster its nodes make, when their provider IDs say so (`kind://docker/NAME/…`).
    pub kind_cluster: Option<String>,
    pub jobs: usize,
    pub workloads: usize,
    /// Its ClusterQueues' quota and reservations, summed per flavor and resource.
    pub quota: Vec<FlavorQuota>,
    /// MultiKueue's copies sent there (for the manager: its check's rejections), over the
    /// jobs watched.
    pub dispatch: DispatchCounts,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Model {
    pub clusters: Vec<ClusterRow>,
    pub jobs: Vec<JobRow>,
    pub queues: Vec<QueueRow>,
    pub local_queues: Vec<LocalQueueFacts>,
    pub admission_checks: Vec<AdmissionCheckFacts>,
    /// Each ClusterQueue's pending Workloads, in order.
    pub pending: Vec<PendingLine>,
}

impl Model {
    pub fn job(&self, key: &JobKey) -> Option<&JobRow> {
        self.jobs.iter().find(|j| &j.key == key)
    }

    pub fn local_queue(&self, cluster: &str, namespace: &str, name: &str) -> Option<&LocalQueueFacts> {
        self.local_queues.iter().find(|q| q.cluster == cluster && q.namespace == namespace && q.name == name)
    }

    pub fn cluster_queue(&self, cluster: &str, name: &str) -> Option<&QueueRow> {
        self.queues.iter().find(|q| q.cluster == cluster && q.name == name)
    }

    pub fn admission_check(&self, cluster: &str, name: &str) -> Option<&AdmissionCheckFacts> {
        self.admission_checks.iter().find(|c| c.cluster == cluster && c.name == name)
    }

    pub fn pending_line(&self, cluster: &str, cluster_queue: &str) -> Option<&PendingLine> {
        self.pending.iter().find(|l| l.cluster == cluster && l.cluster_queue == cluster_queue)
    }

    pub fn cluster(&self, name: &str) -> Option<&ClusterRow> {
        self.clusters.iter().find(|c| c.name == name)
    }

    /// Jobs per status, for the header.
    pub fn counts(&self) -> BTreeMap<RowStatus, usize> {
        let mut counts = BTreeMap::new();
        for job in &self.jobs {
            *counts.entry(job.status).or_insert(0) += 1;
        }
        counts
    }
}

/// A duration in seconds as kubectl prints an age: `45s`, `12m`, `5h`, `3d`.
pub fn age(seconds: i64) -> String {
    match seconds.max(0) {
        s if s < 120 => format!("{s}s"),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// `LocalQueue: forbidden; Workload: forbidden`, or the one reason when every kind failed alike.
pub fn problems_text(problems: &BTreeMap<String, String>) -> String {
    let mut reasons: Vec<&String> = problems.values().collect();
    reasons.sort();
    reasons.dedup();
    match reasons.as_slice() {
        [only] => only.to_string(),
        _ => problems.iter().map(|(kind, why)| format!("{kind}: {why}")).collect::<Vec<_>>().join("; "),
    }
}
