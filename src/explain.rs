//! `explain`: why a job is (not) running, in words, from the joined model — the same rows the
//! `watch` views draw, so the detail view and `kubectl kueue-ext explain` say the same thing.
//! Sentences follow the runbook Kueue users follow by hand: queue → Workload → quota →
//! admission checks → MultiKueue worker → the copy there and its pods. A reason a user can act
//! on is followed by the next step: the command to run or the field to change.

mod checks;
mod next;
mod place;
mod pods;
mod quota;
#[cfg(test)]
mod tests;
mod workers;

use serde::Serialize;

use crate::api::condition::Condition;
use crate::api::kueue::{FINISHED, MULTIKUEUE_CONTROLLER, PODS_READY, QUOTA_RESERVED};
use crate::jobframework::managed_by::Runner;
use crate::model::snapshot::PodCounts;
use crate::model::{JobRow, Mirror, Model, PodProblem, WorkloadFacts, WorkloadState, capacity, message_or_reason};

/// How a next step reads among the reasons.
pub const NEXT: &str = "next: ";

#[derive(Clone, Debug, PartialEq)]
enum Line {
    Reason(String),
    Next(String),
}

/// What keeps a job's pods from running, and on which cluster.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodProblemAt {
    pub cluster: String,
    #[serde(flatten)]
    pub problem: PodProblem,
}

/// What `explain` says of a job, most important first: reasons, each followed by the next
/// step it calls for, if any.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explanation {
    lines: Vec<Line>,
    pub pod_problem: Option<PodProblemAt>,
}

impl Explanation {
    fn push(&mut self, reason: String) {
        self.lines.push(Line::Reason(reason));
    }

    fn extend(&mut self, reasons: impl IntoIterator<Item = String>) {
        self.lines.extend(reasons.into_iter().map(Line::Reason));
    }

    fn extend_next(&mut self, step: Option<String>) {
        if let Some(step) = step {
            self.next(step);
        }
    }

    /// A next step, said once: two reasons may call for the same.
    fn next(&mut self, step: String) {
        let step = Line::Next(step);
        if !self.lines.contains(&step) {
            self.lines.push(step);
        }
    }

    pub fn reasons(&self) -> Vec<String> {
        self.lines.iter().filter_map(|l| if let Line::Reason(r) = l { Some(r.clone()) } else { None }).collect()
    }

    pub fn next_steps(&self) -> Vec<String> {
        self.lines.iter().filter_map(|l| if let Line::Next(n) = l { Some(n.clone()) } else { None }).collect()
    }

    /// As printed: each next step as `next: …` after the reason that calls for it.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .iter()
            .map(|line| match line {
                Line::Reason(reason) => reason.clone(),
                Line::Next(step) => format!("{NEXT}{step}"),
            })
            .collect()
    }
}

/// The explanation as lines, most important first.
pub fn explain(row: &JobRow, model: &Model) -> Vec<String> {
    explanation(row, model).lines()
}

/// The explanation, with its next steps and the pods' problem apart.
pub fn explanation(row: &JobRow, model: &Model) -> Explanation {
    let mut out = Explanation::default();
    let job = row.key.to_string();
    if let Some((_, how)) = &row.job.outcome {
        out.push(format!("{job} has finished: {how}."));
        return out;
    }
    unfinished(row, model, &mut out);
    // Whatever Kueue decides, the pods are another controller's: say so, or a user waits for
    // pods the kind's own controller will never create.
    let (own_runner, _) = row.key.kind.own_runner();
    if let Runner::Other(controller) = runner(row) {
        out.push(format!("{job} is managed by {controller}: {own_runner} does not run its pods."));
    }
    out
}

/// Who runs the job's pods, as its `spec.managedBy` says.
fn runner(row: &JobRow) -> Runner<'_> {
    Runner::of(row.job.managed_by.as_deref(), row.key.kind.own_runner().1)
}

/// Why a job that has not finished is where it is: queue, Workload, quota, checks, worker.
fn unfinished(row: &JobRow, model: &Model, out: &mut Explanation) {
    let job = row.key.to_string();
    let Some(queue) = row.queue.as_deref() else {
        out.push(format!("{job} names no queue (label kueue.x-k8s.io/queue-name), so Kueue does not manage it."));
        out.next(next::label_a_queue(&row.key.namespace));
        return;
    };
    queues(row, queue, model, out);
    let Some(wl) = &row.workload else {
        out.push(format!(
            "{job} has no Workload yet: the integration's controller creates one; if this lasts, check that it runs \
             (kubectl kueue-ext status)."
        ));
        return;
    };
    let name = &wl.name;
    if let Some(finished) = wl.condition(FINISHED).filter(|c| c.is_true()) {
        out.push(format!("Workload {name} is finished: {}.", message_or_reason(finished)));
        return;
    }
    if !wl.active {
        out.push(format!(
            "Workload {name} is deactivated (spec.active: false): Kueue admits it only once reactivated."
        ));
        out.next(next::reactivate(name, &row.key.namespace));
    }
    if let Some(evicted) = wl.eviction() {
        eviction(row, wl, evicted, out);
    }
    out_of_sync(wl, out);
    reservation(row, wl, queue, model, out);
    // Admission checks start once quota is reserved; before that their state says nothing.
    if wl.is(QUOTA_RESERVED) {
        checks::states(row, wl, model, out);
    }
    if wl.state() == WorkloadState::Admitted {
        admitted(row, wl, model, out);
    } else {
        // Kueue writes what the pod sets ask (`status.resourceRequests`) until it admits them.
        if !wl.requests.is_empty() && through_multikueue(wl, queue, row, model) {
            let fits = capacity::on_workers(model, &row.key.namespace, queue, &wl.requests);
            let (sentence, step) = workers::sentences(&fits);
            out.extend(sentence);
            out.extend_next(step);
        }
        for mirror in &row.mirrors {
            mirror_waiting(row, mirror, model, out);
        }
        if !row.job.suspended {
            out.push(
                "The job is not suspended although Kueue has not admitted it: the controller will stop it.".into(),
            );
        }
    }
}

/// Whether the job's ClusterQueue on its cluster sends it to workers (a MultiKueue check).
fn through_multikueue(wl: &WorkloadFacts, queue: &str, row: &JobRow, model: &Model) -> bool {
    let cluster = &row.key.cluster;
    let cq = match wl.cluster_queue() {
        Some(name) => Some(name.to_string()),
        None => model.local_queue(cluster, &row.key.namespace, queue).map(|lq| lq.cluster_queue.clone()),
    };
    let Some(cq) = cq.and_then(|name| model.cluster_queue(cluster, &name)) else { return false };
    cq.admission_checks
        .iter()
        .any(|check| model.admission_check(cluster, check).is_some_and(|ac| ac.controller == MULTIKUEUE_CONTROLLER))
}

/// The LocalQueue the job names and the ClusterQueue behind it, when either keeps it out.
fn queues(row: &JobRow, queue: &str, model: &Model, out: &mut Explanation) {
    let cluster = &row.key.cluster;
    let namespace = &row.key.namespace;
    let readable = |kind: &str| model.cluster(cluster).is_none_or(|c| !c.problems.contains_key(kind));
    let Some(lq) = model.local_queue(cluster, namespace, queue) else {
        if readable("LocalQueue") {
            out.push(format!(
                "LocalQueue {queue} does not exist in namespace {namespace}: Kueue cannot admit the job until it does \
                 (kubectl get localqueues -n {namespace})."
            ));
            out.next(next::create_local_queue(queue, namespace));
        }
        return;
    };
    if let Some(policy) = &lq.stop_policy {
        out.push(format!("LocalQueue {queue} is stopped (stopPolicy {policy}): it admits nothing new until resumed."));
        out.next(next::resume_local_queue(queue, namespace));
    } else if let Some(active) = lq.active.as_ref().filter(|c| !c.is_true()) {
        // Kueue's only other reason is its ClusterQueue's, which is told next with its own step.
        out.push(format!("LocalQueue {queue} is inactive ({}): {}.", active.reason, active.message));
    }
    let cq_name = row.workload.as_ref().and_then(WorkloadFacts::cluster_queue).unwrap_or(&lq.cluster_queue);
    match model.cluster_queue(cluster, cq_name) {
        None if readable("ClusterQueue") => {
            out.push(format!("ClusterQueue {cq_name}, which LocalQueue {queue} feeds, does not exist."));
            out.next(next::create_cluster_queue(cq_name, queue, namespace));
        }
        None => {}
        Some(cq) => {
            if let Some(policy) = &cq.stop_policy {
                out.push(format!("ClusterQueue {cq_name} is stopped (stopPolicy {policy}): it admits nothing new."));
                out.next(next::resume_cluster_queue(cq_name));
            } else if let Some(active) = cq.active.as_ref().filter(|c| !c.is_true()) {
                out.push(format!("ClusterQueue {cq_name} is inactive ({}): {}.", active.reason, active.message));
                out.next(next::activate_cluster_queue(cq_name, &active.reason));
            }
        }
    }
}

fn eviction(row: &JobRow, wl: &WorkloadFacts, evicted: &Condition, out: &mut Explanation) {
    out.push(format!("Workload {} was evicted ({}): {}.", wl.name, evicted.reason, evicted.message));
    let requeue = match (wl.requeue_count, wl.requeue_at.as_deref()) {
        (Some(n), Some(at)) => format!(" (requeue {n}, at {at})"),
        (Some(n), None) => format!(" (requeue {n})"),
        _ => String::new(),
    };
    match evicted.reason.as_str() {
        "PodsReadyTimeout" => {
            out.push(format!(
                "Its pods were not all ready within the waitForPodsReady timeout; Kueue released its quota and \
                 requeues it{requeue}."
            ));
            out.next(next::pods_not_ready_in_time(&row.key.namespace));
        }
        "Preempted" => {
            if let Some(preempted) = wl.condition("Preempted").filter(|c| c.is_true()) {
                out.push(format!("Preempted {}: {}.", preempted.reason, preempted.message));
            }
            out.next(next::preempted());
        }
        _ if !requeue.is_empty() => out.push(format!("Kueue requeues it{requeue}.")),
        _ => {}
    }
}

/// MultiKueue's words for a copy whose prebuilt Workload the worker's controller found to
/// describe another job (its Workload `Finished` with reason `OutOfSync`).
const OUT_OF_SYNC: &str = "is out of sync with its user job";

/// A copy MultiKueue gave up on because it was out of sync: the job then waits on the manager
/// with its quota reserved while MultiKueue dispatches it again, and again.
fn out_of_sync(wl: &WorkloadFacts, out: &mut Explanation) {
    let Some(said) = wl.conditions.iter().find(|c| c.type_ == "Evicted" && c.message.contains(OUT_OF_SYNC)) else {
        return;
    };
    let worker = said.message.split("cluster \"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or("a worker");
    out.push(format!(
        "Its copy on {worker} was out of sync: the worker's controller found that the prebuilt Workload MultiKueue \
         sent does not describe the job's pod templates, marked it Finished (reason OutOfSync), and MultiKueue \
         dispatches the job again. Compare the job's templates with the Workload's on {worker} \
         (kubectl get workload {} -o yaml); a controller that compares them differently from Kueue keeps it stuck.",
        wl.name
    ));
}

fn reservation(row: &JobRow, wl: &WorkloadFacts, queue: &str, model: &Model, out: &mut Explanation) {
    let name = &wl.name;
    match wl.condition(QUOTA_RESERVED) {
        // Once admitted, where it runs says more than where its quota is.
        Some(c) if c.is_true() && wl.state() == WorkloadState::Admitted => {}
        Some(c) if c.is_true() => {
            out.push(format!("Quota is reserved in ClusterQueue {}.", wl.cluster_queue().unwrap_or_default()))
        }
        Some(c) => {
            out.push(format!("Workload {name} is waiting for quota in queue {queue}: {}.", message_or_reason(c)));
            out.extend(quota::kueue_sentences(wl));
            let cq = model
                .local_queue(&row.key.cluster, &row.key.namespace, queue)
                .and_then(|lq| model.cluster_queue(&row.key.cluster, &lq.cluster_queue));
            if let Some(cq) = cq {
                out.extend(quota::queue_sentences(wl, cq));
            }
            out.extend(row.queue_position.as_ref().and_then(place::sentence));
            let place = next::Place { cluster_queue: cq.map(|q| q.name.as_str()), on: None };
            if let Some(step) = next::quota(wl, &place, &row.key.namespace) {
                out.next(step);
            }
        }
        None => {
            out.push(format!("Workload {name} has not been evaluated by Kueue yet (is Kueue running?)."));
            out.extend(row.queue_position.as_ref().and_then(place::sentence));
            out.next(next::not_evaluated());
        }
    }
}

/// `2 running, 1 pending` (pods of one copy), or `None` when it has none.
fn pods_in_words(pods: PodCounts) -> Option<String> {
    let parts: Vec<String> =
        [("pending", pods.pending), ("running", pods.running), ("succeeded", pods.succeeded), ("failed", pods.failed)]
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(word, n)| format!("{n} {word}"))
            .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn pods_ready(wl: &WorkloadFacts, where_: &str, out: &mut Explanation) {
    if let Some(ready) = wl.condition(PODS_READY).filter(|c| !c.is_true()) {
        out.push(format!(
            "Pods{where_} are not ready yet ({}): {}; Kueue evicts the job if they are not ready within the \
             waitForPodsReady timeout.",
            ready.reason,
            message_or_reason(ready)
        ));
    }
}

fn admitted(row: &JobRow, wl: &WorkloadFacts, model: &Model, out: &mut Explanation) {
    if checks::admitted_around_multikueue(row, wl, model, out) {
        return;
    }
    match (wl.cluster_name.as_deref(), runner(row)) {
        (Some(worker), _) => {
            out.push(format!("Admitted; MultiKueue runs it on worker cluster {worker}."));
            match row.mirror().filter(|m| m.cluster == worker) {
                Some(mirror) => mirror_running(row, mirror, model, out),
                None => {
                    out.push(format!("Worker {worker} is not watched here, so its copy is not shown."));
                    out.next(next::watch_worker(worker));
                }
            }
        }
        (None, Runner::MultiKueue) => out.push(format!("Admitted; {MULTIKUEUE_CONTROLLER} is to run it.")),
        (None, Runner::Other(controller)) => out.push(format!("Admitted; {controller} is to run it.")),
        (None, Runner::Own) if row.job.suspended => {
            out.push("Admitted, but the job is still suspended: the integration's controller starts it next.".into())
        }
        (None, Runner::Own) => {
            match pods_in_words(row.job.pods) {
                Some(pods) => out.push(format!("Admitted and running; pods: {pods}.")),
                None => out.push("Admitted and running.".into()),
            }
            pods_ready(wl, "", out);
            pods::problem(row, &row.job, wl.cluster_queue(), model, out);
        }
    }
}

/// The copy on the worker MultiKueue chose, once the manager's Workload is admitted.
fn mirror_running(row: &JobRow, mirror: &Mirror, model: &Model, out: &mut Explanation) {
    let worker = &mirror.cluster;
    if let Some(why) = &mirror.unreachable {
        out.push(format!("Worker {worker} cannot be read from here ({why}), so its copy is not shown."));
        return;
    }
    let Some(copy) = &mirror.job else {
        out.push(match mirror.workload.as_ref().map(WorkloadFacts::state) {
            Some(WorkloadState::Admitted) => {
                format!("Its Workload is admitted on {worker}; MultiKueue creates the job copy there next.")
            }
            _ => format!("Its copy on {worker} does not exist yet."),
        });
        return;
    };
    if let Some((_, how)) = &copy.outcome {
        out.push(format!("The copy on {worker} has finished: {how}; MultiKueue copies the result back."));
    } else if copy.suspended {
        out.push(format!("The copy on {worker} is still suspended."));
        if let Some(remote) = &mirror.workload {
            remote_reason(row, worker, remote, model, out);
        }
    } else {
        match pods_in_words(copy.pods) {
            Some(pods) => out.push(format!("On {worker}, pods: {pods}.")),
            None => out.push(format!("The copy on {worker} runs; no pod yet.")),
        }
        if let Some(remote) = &mirror.workload {
            pods_ready(remote, &format!(" on {worker}"), out);
        }
        let cluster_queue = mirror.workload.as_ref().and_then(WorkloadFacts::cluster_queue);
        pods::problem(row, copy, cluster_queue, model, out);
    }
}

/// A copy on a nominated worker, while the manager waits for one worker to admit it.
fn mirror_waiting(row: &JobRow, mirror: &Mirror, model: &Model, out: &mut Explanation) {
    match (&mirror.unreachable, &mirror.workload) {
        (Some(why), _) => out.push(format!("Worker {} cannot be read from here ({why}).", mirror.cluster)),
        (None, Some(remote)) => remote_reason(row, &mirror.cluster, remote, model, out),
        (None, None) => {}
    }
}

/// Why the Workload copy on a worker is not admitted there, in that Kueue's words.
fn remote_reason(row: &JobRow, worker: &str, remote: &WorkloadFacts, model: &Model, out: &mut Explanation) {
    if let Some(evicted) = remote.eviction() {
        out.push(format!("On {worker} its copy was evicted ({}): {}.", evicted.reason, evicted.message));
    }
    match remote.condition(QUOTA_RESERVED) {
        Some(c) if c.is_true() => {
            let waiting: Vec<_> =
                remote.checks.iter().filter(|c| c.state != "Ready").map(|c| c.name.as_str()).collect();
            if !waiting.is_empty() {
                out.push(format!("On {worker} its copy waits for admission checks {}.", waiting.join(", ")));
            }
        }
        Some(c) => {
            out.push(format!("On {worker} its copy waits for quota: {}.", message_or_reason(c)));
            let queue = remote.queue_name.as_deref().unwrap_or_default();
            let cluster_queue =
                model.local_queue(worker, &row.key.namespace, queue).map(|lq| lq.cluster_queue.as_str());
            let place = next::Place { cluster_queue, on: Some(worker) };
            if let Some(step) = next::quota(remote, &place, &row.key.namespace) {
                out.next(step);
            }
        }
        None => out.push(format!("On {worker} its copy has not been evaluated by Kueue yet.")),
    }
}
