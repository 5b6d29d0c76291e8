//! The join itself: index each cluster's objects, give every manager job its Workload and its
//! copies on workers, then make rows of what is left on the workers.

use std::collections::{BTreeMap, HashMap, HashSet};

use kube::ResourceExt;
use kube::api::DynamicObject;

use super::queue_order::ClusterOrders;
use super::{
    AdmissionCheckFacts, ClusterRow, DispatchCounts, JobCopy, JobEvent, JobKey, JobRow, LocalQueueFacts, Mirror, Model,
    PendingLine, QueueRow, RowStatus, Shortfall, WorkloadFacts, WorkloadState, problems_text, read,
};
use super::{capacity, timeline};
use crate::api::condition::Condition;
use crate::api::kueue::{
    FINISHED, MULTIKUEUE_CONTROLLER, MULTIKUEUE_ORIGIN_LABEL, PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL, QUOTA_RESERVED,
};
use crate::api::wrapped_job::WRAPPED_JOB_LABEL;
use crate::model::snapshot::{ClusterSnapshot, EventLine, JobKind, JobObject, ObjectKey, Role, Snapshot};

/// Events kept per job, newest first.
const EVENTS_PER_JOB: usize = 20;

/// One cluster's Workloads, each handed out once: to its job, or to a copy on a worker.
struct Workloads {
    facts: Vec<Option<WorkloadFacts>>,
    by_name: HashMap<(String, String), usize>,
    /// `(namespace, owner kind, owner name)` → `(owner uid, index)`.
    by_owner: HashMap<(String, String, String), Vec<(String, usize)>>,
}

impl Workloads {
    fn index(cluster: &ClusterSnapshot) -> Self {
        let mut by_name = HashMap::new();
        let mut by_owner: HashMap<_, Vec<_>> = HashMap::new();
        for (i, wl) in cluster.workloads.iter().enumerate() {
            let namespace = wl.namespace().unwrap_or_default();
            by_name.insert((namespace.clone(), wl.name_any()), i);
            if let Some(owner) = wl.owner_references().iter().find(|o| o.controller == Some(true)) {
                by_owner
                    .entry((namespace, owner.kind.clone(), owner.name.clone()))
                    .or_default()
                    .push((owner.uid.clone(), i));
            }
        }
        let facts = cluster.workloads.iter().map(|wl| Some(read::workload(&cluster.name, wl))).collect();
        Workloads { facts, by_name, by_owner }
    }

    fn take_named(&mut self, namespace: &str, name: &str) -> Option<WorkloadFacts> {
        let i = *self.by_name.get(&(namespace.to_string(), name.to_string()))?;
        self.facts[i].take()
    }

    /// The job's Workload: the prebuilt one it names, else the one it owns (the newest, should
    /// a pod-set change have left an old one behind).
    fn take_for(&mut self, job: &JobObject) -> Option<WorkloadFacts> {
        let object = &job.object;
        let namespace = object.namespace().unwrap_or_default();
        if let Some(name) = prebuilt_name(object) {
            return self.take_named(&namespace, name);
        }
        let uid = object.uid().unwrap_or_default();
        let owned = self.by_owner.get(&(namespace, job.kind.name().to_string(), object.name_any()))?;
        let i = owned.iter().rev().find(|(owner_uid, i)| owner_uid == &uid && self.facts[*i].is_some())?.1;
        self.facts[i].take()
    }
}

fn prebuilt_name(object: &DynamicObject) -> Option<&str> {
    object
        .annotations()
        .get(PREBUILT_WORKLOAD_LABEL)
        .or_else(|| object.labels().get(PREBUILT_WORKLOAD_LABEL))
        .map(String::as_str)
}

/// A WrappedJob's components are part of it, not jobs of their own.
fn is_component(job: &JobObject) -> bool {
    job.object.labels().contains_key(WRAPPED_JOB_LABEL)
}

fn job_key_of(cluster: &str, job: &JobObject) -> JobKey {
    JobKey {
        cluster: cluster.into(),
        kind: job.kind.clone(),
        namespace: job.object.namespace().unwrap_or_default(),
        name: job.object.name_any(),
    }
}

fn owner_key(key: &JobKey) -> ObjectKey {
    ObjectKey::new(key.kind.name(), &key.namespace, &key.name)
}

/// Per cluster: its Workloads, its jobs by `(kind, namespace, name)`, its events by object.
struct ClusterIndex<'a> {
    snapshot: &'a ClusterSnapshot,
    workloads: Workloads,
    jobs: HashMap<(JobKind, String, String), &'a JobObject>,
    events: HashMap<&'a ObjectKey, Vec<&'a EventLine>>,
    orders: ClusterOrders,
    /// The AdmissionChecks MultiKueue runs here.
    multikueue_checks: Vec<String>,
}

impl<'a> ClusterIndex<'a> {
    fn new(snapshot: &'a ClusterSnapshot) -> Self {
        let jobs = snapshot
            .jobs
            .iter()
            .map(|j| ((j.kind.clone(), j.object.namespace().unwrap_or_default(), j.object.name_any()), j))
            .collect();
        let mut events: HashMap<_, Vec<_>> = HashMap::new();
        for event in &snapshot.events {
            events.entry(&event.object).or_default().push(event);
        }
        let multikueue_checks = snapshot
            .admission_checks
            .iter()
            .map(|ac| read::admission_check(&snapshot.name, ac))
            .filter(|ac| ac.controller == MULTIKUEUE_CONTROLLER)
            .map(|ac| ac.name)
            .collect();
        ClusterIndex {
            snapshot,
            workloads: Workloads::index(snapshot),
            jobs,
            events,
            orders: orders_of(snapshot),
            multikueue_checks,
        }
    }

    /// The job's copy on this cluster, with its pods.
    fn job_copy(&self, key: &JobKey, job: &JobObject) -> JobCopy {
        let owner = owner_key(key);
        let pods = self.snapshot.pods.get(&owner).copied().unwrap_or_default();
        read::job_copy(&self.snapshot.name, job, pods, self.snapshot.pod_problems.get(&owner).cloned())
    }

    fn events_of(&self, key: &ObjectKey, out: &mut Vec<JobEvent>) {
        for event in self.events.get(key).into_iter().flatten() {
            out.push(JobEvent { cluster: self.snapshot.name.clone(), event: (*event).clone() });
        }
    }
}

/// Every ClusterQueue's order of pending Workloads on one cluster.
pub(super) fn orders_of(snapshot: &ClusterSnapshot) -> ClusterOrders {
    ClusterOrders::new(
        snapshot.local_queues.iter().map(|lq| read::local_queue(&snapshot.name, lq)),
        snapshot.workloads.iter().filter_map(|wl| read::queued(wl)),
        &snapshot.visibility,
        snapshot.read_at,
    )
}

/// Joins the clusters of a snapshot into rows.
pub fn join(snapshot: &Snapshot) -> Model {
    let manager_at = snapshot.clusters.iter().position(|c| c.role == Role::Manager).unwrap_or(0);
    let mut indexes: Vec<ClusterIndex> = snapshot.clusters.iter().map(ClusterIndex::new).collect();
    let mut mirrored: HashSet<(usize, JobKind, String, String)> = HashSet::new();
    let mut jobs = Vec::new();
    if let Some(manager) = snapshot.clusters.get(manager_at) {
        for job in manager.jobs.iter().filter(|j| !is_component(j)) {
            jobs.push(manager_row(&mut indexes, manager_at, job, &mut mirrored));
        }
    }
    // What is left on workers are their own jobs, or copies whose origin we do not watch.
    for (at, cluster) in snapshot.clusters.iter().enumerate().filter(|(at, _)| *at != manager_at) {
        for job in cluster.jobs.iter().filter(|j| !is_component(j)) {
            let key = job_key_of(&cluster.name, job);
            if !mirrored.contains(&(at, key.kind.clone(), key.namespace.clone(), key.name.clone())) {
                let workload = indexes[at].workloads.take_for(job);
                jobs.push(finish_row(&indexes, at, key, job, workload, Vec::new()));
            }
        }
    }
    // Rows are large: sort their positions, then move each row once.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (&jobs[i].key.namespace, &jobs[i].key.name, jobs[i].key.kind.clone()));
    let mut slots: Vec<Option<JobRow>> = jobs.into_iter().map(Some).collect();
    let jobs: Vec<JobRow> = order.into_iter().filter_map(|i| slots[i].take()).collect();
    let (queues, local_queues, admission_checks) = queues(snapshot);
    let pending = pending(&indexes, &jobs);
    let mut clusters = clusters(snapshot, manager_at, &queues);
    if let Some(manager) = snapshot.clusters.get(manager_at) {
        let mut counts = timeline::counts(&manager.name, jobs.iter().filter_map(|j| j.multikueue.as_ref()));
        for row in &mut clusters {
            row.dispatch = counts.remove(&row.name).unwrap_or_default();
        }
    }
    Model { clusters, jobs, queues, local_queues, admission_checks, pending }
}

/// Every ClusterQueue's line, each Workload with the job that owns it.
fn pending(indexes: &[ClusterIndex], jobs: &[JobRow]) -> Vec<PendingLine> {
    let owners: HashMap<(&str, &str, &str), &JobKey> = jobs
        .iter()
        .filter_map(|j| {
            Some(((j.key.cluster.as_str(), j.key.namespace.as_str(), j.workload.as_ref()?.name.as_str()), &j.key))
        })
        .collect();
    let mut lines = Vec::new();
    for index in indexes {
        let cluster = index.snapshot.name.as_str();
        for mut line in index.orders.lines(cluster) {
            for waiting in &mut line.workloads {
                let owner = owners.get(&(cluster, waiting.namespace.as_str(), waiting.workload.as_str()));
                waiting.job = owner.map(|key| (*key).clone());
            }
            lines.push(line);
        }
    }
    lines
}

fn manager_row(
    indexes: &mut [ClusterIndex],
    manager_at: usize,
    job: &JobObject,
    mirrored: &mut HashSet<(usize, JobKind, String, String)>,
) -> JobRow {
    let key = job_key_of(&indexes[manager_at].snapshot.name, job);
    let workload = indexes[manager_at].workloads.take_for(job);
    let mut mirrors = Vec::new();
    for at in (0..indexes.len()).filter(|at| *at != manager_at) {
        let worker = &mut indexes[at];
        let name = worker.snapshot.name.clone();
        let remote_workload = workload.as_ref().and_then(|wl| worker.workloads.take_named(&key.namespace, &wl.name));
        let remote_job = worker
            .jobs
            .get(&(key.kind.clone(), key.namespace.clone(), key.name.clone()))
            .filter(|j| j.object.labels().contains_key(MULTIKUEUE_ORIGIN_LABEL))
            .copied();
        // A finished job's copies are gone from its worker by design: nothing to show there.
        let chosen = workload
            .as_ref()
            .filter(|wl| wl.state() != WorkloadState::Finished)
            .and_then(|wl| wl.cluster_name.as_deref())
            == Some(name.as_str());
        if remote_job.is_none() && remote_workload.is_none() && !chosen {
            continue;
        }
        if remote_job.is_some() {
            mirrored.insert((at, key.kind.clone(), key.namespace.clone(), key.name.clone()));
        }
        let remote_key = JobKey { cluster: name.clone(), ..key.clone() };
        let mirror = Mirror {
            unreachable: (!worker.snapshot.reachable).then(|| problems_text(&worker.snapshot.problems)),
            job: remote_job.map(|j| worker.job_copy(&remote_key, j)),
            workload: remote_workload,
            cluster: name,
        };
        if chosen { mirrors.insert(0, mirror) } else { mirrors.push(mirror) }
    }
    finish_row(indexes, manager_at, key, job, workload, mirrors)
}

fn finish_row(
    indexes: &[ClusterIndex],
    at: usize,
    key: JobKey,
    job: &JobObject,
    workload: Option<WorkloadFacts>,
    mirrors: Vec<Mirror>,
) -> JobRow {
    let copy = indexes[at].job_copy(&key, job);
    let mut events = Vec::new();
    let mut collect = |cluster: &str, kind: &str, name: &str| {
        if let Some(index) = indexes.iter().find(|i| i.snapshot.name == cluster) {
            index.events_of(&ObjectKey::new(kind, &key.namespace, name), &mut events);
        }
    };
    collect(&key.cluster, key.kind.name(), &key.name);
    for mirror in mirrors.iter().filter(|m| m.job.is_some()) {
        collect(&mirror.cluster, key.kind.name(), &key.name);
    }
    let manager_row = !mirrors.is_empty() || indexes[at].snapshot.role == Role::Manager;
    if let Some(wl) = &workload {
        collect(&key.cluster, "Workload", &wl.name);
        // MultiKueue's copies bear the Workload's name; their events outlive them.
        if manager_row {
            for other in indexes.iter().filter(|i| i.snapshot.name != key.cluster) {
                other.events_of(&ObjectKey::new("Workload", &key.namespace, &wl.name), &mut events);
            }
        }
    }
    let multikueue = workload.as_ref().filter(|_| manager_row).and_then(|wl| {
        let checks = &indexes[at].multikueue_checks;
        let check = wl.checks.iter().find(|c| checks.contains(&c.name)).map(|c| c.name.as_str());
        timeline::of(&key.cluster, wl, check, &mirrors, &events)
    });
    events.sort_by_key(|e| std::cmp::Reverse(e.event.time));
    // Kueue records some events more than once (as separate objects): each is shown once, newest.
    let mut shown: Vec<JobEvent> = Vec::with_capacity(events.len().min(EVENTS_PER_JOB));
    for e in events {
        let same = |s: &JobEvent| {
            s.cluster == e.cluster
                && s.event.object == e.event.object
                && s.event.reason == e.event.reason
                && s.event.message == e.event.message
        };
        if shown.len() < EVENTS_PER_JOB && !shown.iter().any(same) {
            shown.push(e);
        }
    }
    let queue_position = workload.as_ref().and_then(|wl| {
        let queue = wl.queue_name.as_deref()?;
        indexes[at].orders.place(&key.namespace, &wl.name, queue)
    });
    let mut row = JobRow {
        multikueue,
        queue_position,
        queue: job.object.labels().get(QUEUE_NAME_LABEL).cloned(),
        job: copy,
        workload,
        mirrors,
        events: shown,
        key,
        status: RowStatus::Pending,
    };
    row.status = status_of(&row);
    row
}

/// Kueue's reasons for not reserving quota that waiting does not cure.
const BLOCKING_REASONS: [&str; 7] = [
    "Misconfigured",
    "Inadmissible",
    "ExceedsMaxQuota",
    "NoMatchingFlavor",
    "TopologyPlacementFailed",
    "Suspended",
    "OnHold",
];

fn status_of(row: &JobRow) -> RowStatus {
    if let Some((succeeded, _)) = &row.job.outcome {
        return if *succeeded { RowStatus::Succeeded } else { RowStatus::Failed };
    }
    if row.queue.is_none() {
        return RowStatus::Unmanaged;
    }
    let Some(wl) = &row.workload else { return RowStatus::NoWorkload };
    if wl.state() == WorkloadState::Finished {
        let failed = wl.condition(FINISHED).is_some_and(|c| c.reason == "Failed");
        return if failed { RowStatus::Failed } else { RowStatus::Succeeded };
    }
    if wl.eviction().is_some() {
        return RowStatus::Evicted;
    }
    if wl.state() == WorkloadState::Admitted {
        return if row.pods().running > 0 { RowStatus::Running } else { RowStatus::Admitted };
    }
    if wl.checks.iter().any(|c| c.state == "Rejected") {
        return RowStatus::Blocked;
    }
    // Kueue 0.19 still says `Pending` for a job larger than the queue can ever give; its message
    // tells.
    let never_fits = wl.shortfalls.iter().any(|s| matches!(s, Shortfall::Capacity { .. }));
    match wl.condition(QUOTA_RESERVED) {
        Some(c) if c.is_true() => RowStatus::Reserved,
        Some(c) if never_fits || BLOCKING_REASONS.contains(&c.reason.as_str()) => RowStatus::Blocked,
        _ => RowStatus::Pending,
    }
}

fn queues(snapshot: &Snapshot) -> (Vec<QueueRow>, Vec<LocalQueueFacts>, Vec<AdmissionCheckFacts>) {
    let mut queues = Vec::new();
    let mut local_queues = Vec::new();
    let mut checks = Vec::new();
    for cluster in &snapshot.clusters {
        let first = queues.len();
        queues.extend(cluster.cluster_queues.iter().map(|cq| read::cluster_queue(&cluster.name, cq)));
        for lq in cluster.local_queues.iter().map(|lq| read::local_queue(&cluster.name, lq)) {
            if let Some(cq) = queues[first..].iter_mut().find(|q| q.name == lq.cluster_queue) {
                cq.local_queues.push(format!("{}/{}", lq.namespace, lq.name));
            }
            local_queues.push(lq);
        }
        checks.extend(cluster.admission_checks.iter().map(|ac| read::admission_check(&cluster.name, ac)));
    }
    (queues, local_queues, checks)
}

/// The kind cluster of nodes whose provider IDs (`kind://PROVIDER/CLUSTER/NODE`) all name it.
fn kind_cluster(provider_ids: &[String]) -> Option<String> {
    let mut names = provider_ids.iter().map(|id| crate::kube_util::kind_cluster_in(id));
    let first = names.next()??;
    names.all(|name| name == Some(first)).then(|| first.to_string())
}

fn clusters(snapshot: &Snapshot, manager_at: usize, queues: &[QueueRow]) -> Vec<ClusterRow> {
    let connections: BTreeMap<String, Option<Condition>> = snapshot
        .clusters
        .get(manager_at)
        .map(|m| m.multikueue_clusters.iter().map(|c| (c.name_any(), read::connection(c))).collect())
        .unwrap_or_default();
    let mut rows: Vec<ClusterRow> = snapshot
        .clusters
        .iter()
        .map(|c| ClusterRow {
            name: c.name.clone(),
            context: Some(c.context.clone()),
            role: c.role,
            reachable: c.reachable,
            problems: c.problems.clone(),
            connection: connections.get(&c.name).cloned().flatten(),
            kind_cluster: kind_cluster(&c.provider_ids),
            jobs: c.jobs.iter().filter(|j| !is_component(j)).count(),
            workloads: c.workloads.len(),
            quota: capacity::of_cluster(queues.iter().filter(|q| q.cluster == c.name)),
            dispatch: DispatchCounts::default(),
        })
        .collect();
    for (name, connection) in connections {
        if !rows.iter().any(|r| r.name == name) {
            rows.push(ClusterRow {
                name,
                context: None,
                role: Role::Worker,
                reachable: false,
                problems: BTreeMap::from([(
                    "watch".to_string(),
                    "not watched: pass --worker-context to see its jobs".to_string(),
                )]),
                connection,
                kind_cluster: None,
                jobs: 0,
                workloads: 0,
                quota: Vec::new(),
                dispatch: DispatchCounts::default(),
            });
        }
    }
    rows
}
