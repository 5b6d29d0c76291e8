//! What MultiKueue did with a job, in time order: when the manager's Workload got quota, which
//! workers got a copy and when, which admitted it first (the one it runs on), which copies were
//! removed, and what made MultiKueue dispatch again or reject it. Rebuilt by the client, since
//! Kueue keeps no history of it: from the manager's Workload (conditions, the MultiKueue check's
//! state and `lastTransitionTime`, `clusterName`) and the workers' copies (same name), and from
//! the events both record, which outlive the copies MultiKueue deletes.
//!
//! Kueue v0.19.2's words (`pkg/controller/admissionchecks/multikueue/workload.go`): on the
//! manager's Workload, events of reason `MultiKueue`: `The workload was admitted on "W"` (also
//! the check's message while Ready), `Workload evicted on worker cluster: "W", resetting for
//! re-admission. …`, `Remote workload on worker cluster "W" is out of sync with its user job,
//! resetting for re-dispatch, …`; the check's `Admitting remote lost` when the chosen worker
//! stays unreachable; `AdmissionCheckRejected` (`Deactivated due to …`) from the core controller
//! when a check is Rejected. MultiKueue deletes every other copy once one worker admits, and
//! every copy once the manager's Workload finishes or loses its quota; it records no event for
//! either, so those times are the times of their causes.

use std::collections::BTreeMap;

use serde::Serialize;

use super::read::seconds;
use super::{JobEvent, Mirror, WorkloadFacts};
use crate::api::kueue::{ADMITTED, FINISHED, QUOTA_RESERVED};

/// Why MultiKueue gave up on the copy on a worker and dispatches the job again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryReason {
    /// The worker's Kueue evicted its copy (preempted there, say).
    Evicted,
    /// The worker's controller found the copy does not describe the job.
    OutOfSync,
    /// The worker that admitted it stayed unreachable past the worker-lost timeout.
    Lost,
    Other,
}

impl RetryReason {
    fn of(message: &str) -> Self {
        if message.starts_with("Workload evicted on worker cluster") {
            RetryReason::Evicted
        } else if message.contains("is out of sync with its user job") {
            RetryReason::OutOfSync
        } else if message.starts_with("Admitting remote lost") {
            RetryReason::Lost
        } else {
            RetryReason::Other
        }
    }
}

/// Why a copy was deleted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "because", content = "worker", rename_all = "kebab-case")]
pub enum Removal {
    /// Another worker admitted first.
    AnotherWon(String),
    /// The job finished.
    Finished,
    /// MultiKueue dispatches the job again.
    Retried,
    /// Gone, for a reason nothing recorded.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    QuotaReserved {
        cluster_queue: String,
    },
    /// The worker got a copy of the Workload.
    Copied,
    /// The worker's Kueue admitted its copy.
    AdmittedThere,
    /// MultiKueue chose the worker, the first to admit its copy: the job runs there.
    Won,
    Removed(Removal),
    Retried {
        reason: RetryReason,
        message: String,
    },
    /// The MultiKueue admission check rejected the Workload.
    Rejected {
        message: String,
    },
    Finished {
        reason: String,
        message: String,
    },
}

impl Step {
    /// Where a step goes among steps of the same second: the order they happen in.
    fn rank(&self) -> u8 {
        match self {
            Step::QuotaReserved { .. } => 0,
            Step::Copied => 1,
            Step::AdmittedThere => 2,
            Step::Won => 3,
            // A cause before the removal it brings.
            Step::Retried { .. } => 4,
            Step::Rejected { .. } => 5,
            Step::Finished { .. } => 6,
            Step::Removed(_) => 7,
        }
    }

    /// Steps of one kind on one cluster are one fact, however many sources tell it.
    fn same_fact(&self, other: &Step) -> bool {
        match (self, other) {
            (Step::Retried { reason: a, .. }, Step::Retried { reason: b, .. }) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// One step, on one cluster, at a time (seconds since the epoch) when one is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Moment {
    pub time: Option<i64>,
    pub cluster: String,
    #[serde(flatten)]
    pub step: Step,
    pub sentence: String,
}

/// What became of one worker's copy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WorkerCopy {
    pub worker: String,
    pub copied: Option<i64>,
    pub admitted: Option<i64>,
    pub won: bool,
    pub removed: bool,
    pub retried: Vec<RetryReason>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    pub moments: Vec<Moment>,
    pub workers: Vec<WorkerCopy>,
    /// The MultiKueue check rejected the Workload.
    pub rejected: bool,
}

impl Timeline {
    /// Each moment as printed: `00:00:10 worker1: admitted its copy.`
    pub fn lines(&self) -> Vec<String> {
        self.moments.iter().map(|m| format!("{} {}", clock(m.time), m.sentence)).collect()
    }
}

/// `HH:MM:SS` in UTC; the day is the job's, which its age says.
pub fn clock(time: Option<i64>) -> String {
    let at = time.and_then(|t| k8s_openapi::jiff::Timestamp::from_second(t).ok());
    at.map_or_else(|| "--:--:--".into(), |t| t.strftime("%H:%M:%S").to_string())
}

/// The quoted worker name in one of MultiKueue's messages: `… on "worker1"`.
fn quoted(message: &str) -> Option<String> {
    let rest = message.split_once('"')?.1;
    Some(rest.split_once('"')?.0.to_string()).filter(|w| !w.is_empty())
}

/// MultiKueue's message without the state it left (`, Previously: "Ready"`).
fn without_previously(message: &str) -> &str {
    message.split(", Previously:").next().unwrap_or(message).trim_end_matches('.')
}

fn sentence(cluster: &str, step: &Step) -> String {
    match step {
        Step::QuotaReserved { cluster_queue } => {
            format!("{cluster}: quota reserved in ClusterQueue {cluster_queue}.")
        }
        Step::Copied => format!("{cluster}: got a copy of the Workload."),
        Step::AdmittedThere => format!("{cluster}: admitted its copy."),
        Step::Won => format!("{cluster}: admitted first; MultiKueue runs the job there."),
        Step::Removed(Removal::AnotherWon(winner)) => {
            format!("{cluster}: its copy removed ({winner} admitted first).")
        }
        Step::Removed(Removal::Finished) => format!("{cluster}: its copy removed (the job finished)."),
        Step::Removed(Removal::Retried) => format!("{cluster}: its copy removed (dispatched again)."),
        Step::Removed(Removal::Unknown) => format!("{cluster}: its copy is gone."),
        Step::Retried { reason: RetryReason::Evicted, .. } => {
            format!("{cluster}: evicted its copy; MultiKueue dispatches the job again.")
        }
        Step::Retried { reason: RetryReason::OutOfSync, .. } => {
            format!("{cluster}: its copy is out of sync with the job; MultiKueue dispatches the job again.")
        }
        Step::Retried { reason: RetryReason::Lost, .. } => {
            format!("{cluster}: lost past the worker-lost timeout; MultiKueue dispatches the job again.")
        }
        Step::Retried { message, .. } => format!("{cluster}: {message}; MultiKueue dispatches the job again."),
        Step::Rejected { message } => format!("{cluster}: the MultiKueue check rejected it: {message}."),
        Step::Finished { reason, message } if message.is_empty() => format!("{cluster}: finished ({reason})."),
        Step::Finished { reason, message } => format!("{cluster}: finished ({reason}): {message}."),
    }
}

struct Builder {
    moments: Vec<Moment>,
}

impl Builder {
    fn push(&mut self, time: Option<i64>, cluster: &str, step: Step) {
        let sentence = sentence(cluster, &step);
        self.moments.push(Moment { time, cluster: cluster.into(), step, sentence });
    }

    /// An event's step, unless it repeats the same fact with no retry since: Kueue records
    /// some events more than once, as separate objects a second apart.
    fn told(&mut self, time: Option<i64>, cluster: &str, step: Step) {
        let last =
            self.moments.iter().filter(|m| m.cluster == cluster && m.step.same_fact(&step)).map(|m| m.time).max();
        let retried_since =
            |since: Option<i64>| self.moments.iter().any(|m| matches!(m.step, Step::Retried { .. }) && m.time >= since);
        match last {
            Some(since) if !retried_since(since) => {}
            _ => self.push(time, cluster, step),
        }
    }

    fn has(&self, cluster: &str, step: &Step) -> bool {
        self.moments.iter().any(|m| m.cluster == cluster && m.step.same_fact(step))
    }

    /// A fact read from an object's state, unless an event told it already.
    fn fill(&mut self, time: Option<i64>, cluster: &str, step: Step) {
        if !self.has(cluster, &step) {
            self.push(time, cluster, step);
        }
    }

    fn first(&self, cluster: &str, step: impl Fn(&Step) -> bool) -> Option<&Moment> {
        self.moments.iter().filter(|m| m.cluster == cluster && step(&m.step)).min_by_key(|m| m.time)
    }
}

/// What one job's MultiKueue dispatch looks like, from its manager Workload `wl` (whose
/// MultiKueue check is named `check`, when the manager has one), its copies on the workers
/// and the events of all of them; `None` when MultiKueue never sent it anywhere.
pub fn of(
    manager: &str,
    wl: &WorkloadFacts,
    check: Option<&str>,
    mirrors: &[Mirror],
    events: &[JobEvent],
) -> Option<Timeline> {
    let mut b = Builder { moments: Vec::new() };
    let mut of_workload: Vec<&JobEvent> =
        events.iter().filter(|e| e.event.object.kind == "Workload" && e.event.object.name == wl.name).collect();
    of_workload.sort_by_key(|e| e.event.time);
    for e in &of_workload {
        let (time, message) = (e.event.time, e.event.message.as_str());
        match (e.cluster == manager, e.event.reason.as_str()) {
            (true, "QuotaReserved") => {
                let cq = message.strip_prefix("Quota reserved in ClusterQueue ").and_then(|r| r.split(',').next());
                let step = Step::QuotaReserved { cluster_queue: cq.unwrap_or_default().to_string() };
                b.told(time, manager, step);
            }
            (true, "MultiKueue") => match quoted(without_previously(message)) {
                Some(worker) if message.starts_with("The workload was admitted on") => b.told(time, &worker, Step::Won),
                worker => {
                    let step = Step::Retried {
                        reason: RetryReason::of(message),
                        message: without_previously(message).to_string(),
                    };
                    b.told(time, worker.as_deref().unwrap_or(manager), step)
                }
            },
            (true, "AdmissionCheckRejected") => {
                let message = message.strip_prefix("Deactivated due to ").unwrap_or(message);
                b.told(time, manager, Step::Rejected { message: message.trim_end_matches('.').to_string() });
            }
            (false, reason) => {
                b.told(time, &e.cluster, Step::Copied);
                if reason == ADMITTED {
                    b.told(time, &e.cluster, Step::AdmittedThere);
                }
            }
            _ => {}
        }
    }
    state(&mut b, manager, wl, check, mirrors);
    removals(&mut b, manager, mirrors);
    let workers = workers(&b, manager);
    let rejected = b.moments.iter().any(|m| matches!(m.step, Step::Rejected { .. }));
    if workers.is_empty() && !rejected {
        return None;
    }
    // Within one second, in the order things happen; stable for the rest.
    b.moments.sort_by_key(|m| (m.time.unwrap_or(i64::MAX), m.step.rank()));
    Some(Timeline { moments: b.moments, workers, rejected })
}

/// What the objects say now, where the events did not say it.
fn state(b: &mut Builder, manager: &str, wl: &WorkloadFacts, check: Option<&str>, mirrors: &[Mirror]) {
    let time = |t: &Option<String>| t.as_deref().and_then(seconds);
    if let (Some(reserved), Some(cq)) = (wl.condition(QUOTA_RESERVED).filter(|c| c.is_true()), wl.cluster_queue()) {
        let step = Step::QuotaReserved { cluster_queue: cq.to_string() };
        b.fill(time(&reserved.last_transition_time), manager, step);
    }
    for mirror in mirrors {
        let Some(copy) = &mirror.workload else { continue };
        // The copy's creation is exact where an event's time is only near it.
        b.moments.retain(|m| !(m.cluster == mirror.cluster && m.step == Step::Copied));
        b.push(copy.created, &mirror.cluster, Step::Copied);
        if let Some(admitted) = copy.condition(ADMITTED).filter(|c| c.is_true()) {
            b.fill(time(&admitted.last_transition_time), &mirror.cluster, Step::AdmittedThere);
        }
    }
    let check = check.and_then(|name| wl.checks.iter().find(|c| c.name == name));
    // A check in Retry or Rejected has taken the job back from the worker `clusterName` names.
    let given_back = check.is_some_and(|c| c.state == "Retry" || c.state == "Rejected");
    if let Some(winner) = wl.cluster_name.as_ref().filter(|_| !given_back) {
        let ready = check.filter(|c| c.state == "Ready");
        b.fill(ready.and_then(|c| time(&c.last_transition_time)), winner, Step::Won);
    }
    if let Some(check) = check {
        let at = time(&check.last_transition_time);
        let message = without_previously(&check.message).to_string();
        match check.state.as_str() {
            "Rejected" => b.fill(at, manager, Step::Rejected { message }),
            "Retry" => {
                let worker = quoted(&message).or_else(|| wl.cluster_name.clone());
                let step = Step::Retried { reason: RetryReason::of(&check.message), message };
                b.fill(at, worker.as_deref().unwrap_or(manager), step);
            }
            _ => {}
        }
    }
    if let Some(finished) = wl.condition(FINISHED).filter(|c| c.is_true()) {
        let step = Step::Finished { reason: finished.reason.clone(), message: finished.message.clone() };
        b.fill(time(&finished.last_transition_time), manager, step);
    }
}

/// Workers that held a copy and hold none now: removed, for the cause that came last before.
fn removals(b: &mut Builder, manager: &str, mirrors: &[Mirror]) {
    let holding = |worker: &str| mirrors.iter().any(|m| m.cluster == worker && m.workload.is_some());
    let mut had: Vec<String> = Vec::new();
    // A worker that evicted or lost its copy held one.
    let held = |s: &Step| matches!(s, Step::Copied | Step::Won | Step::Retried { .. });
    for m in b.moments.iter().filter(|m| m.cluster != manager && held(&m.step)) {
        if !had.contains(&m.cluster) {
            had.push(m.cluster.clone());
        }
    }
    let finished = b.first(manager, |s| matches!(s, Step::Finished { .. })).map(|m| m.time);
    for worker in had.into_iter().filter(|w| !holding(w)) {
        let won = b.first(&worker, |s| *s == Step::Won).map(|m| m.time);
        let retried = b.moments.iter().find(|m| m.cluster == worker && matches!(m.step, Step::Retried { .. }));
        let other_won = b.moments.iter().find(|m| m.cluster != worker && m.step == Step::Won);
        let (time, why) = match (won, finished, retried, other_won) {
            (Some(_), Some(at), _, _) => (at, Removal::Finished),
            (_, _, Some(r), _) => (r.time, Removal::Retried),
            (None, _, _, Some(w)) => (w.time, Removal::AnotherWon(w.cluster.clone())),
            // Kueue deletes every copy once the manager's Workload has finished.
            (None, Some(at), None, None) => (at, Removal::Finished),
            _ => (None, Removal::Unknown),
        };
        b.push(time, &worker, Step::Removed(why));
    }
}

fn workers(b: &Builder, manager: &str) -> Vec<WorkerCopy> {
    let mut out: BTreeMap<&str, WorkerCopy> = BTreeMap::new();
    for m in b.moments.iter().filter(|m| m.cluster != manager) {
        let copy =
            out.entry(&m.cluster).or_insert_with(|| WorkerCopy { worker: m.cluster.clone(), ..Default::default() });
        match &m.step {
            Step::Copied => copy.copied = copy.copied.or(m.time),
            Step::AdmittedThere => copy.admitted = copy.admitted.or(m.time),
            Step::Won => copy.won = true,
            Step::Removed(_) => copy.removed = true,
            Step::Retried { reason, .. } => copy.retried.push(*reason),
            _ => {}
        }
    }
    out.into_values().collect()
}

/// Per cluster, over many jobs: copies dispatched there, won, removed, and given up on by
/// reason (a rejection by the check counts on the manager, as `rejected`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DispatchCounts {
    pub dispatched: usize,
    pub won: usize,
    pub removed: usize,
    pub rejected: BTreeMap<String, usize>,
}

impl DispatchCounts {
    pub fn rejections(&self) -> usize {
        self.rejected.values().sum()
    }
}

pub fn counts<'a>(
    manager: &str,
    timelines: impl IntoIterator<Item = &'a Timeline>,
) -> BTreeMap<String, DispatchCounts> {
    let mut out: BTreeMap<String, DispatchCounts> = BTreeMap::new();
    for timeline in timelines {
        for w in &timeline.workers {
            let counts = out.entry(w.worker.clone()).or_default();
            counts.dispatched += 1;
            counts.won += usize::from(w.won);
            counts.removed += usize::from(w.removed);
            for reason in &w.retried {
                let word = serde_json::to_value(reason).ok().and_then(|v| v.as_str().map(String::from));
                *counts.rejected.entry(word.unwrap_or_default()).or_default() += 1;
            }
        }
        if timeline.rejected {
            *out.entry(manager.to_string()).or_default().rejected.entry("rejected".into()).or_default() += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests;
