//! A Workload that MultiKueue has left without a worker, and the nudge that brings it back.
//!
//! Kueue v0.19.2's all-at-once dispatcher can reconcile a Workload that holds quota before the
//! manager has connected to any worker, just after Kueue's manager restarted. It then
//! nominates nobody and asks for no retry, and only a change to the Workload brings it back.
//! The Workload keeps its quota meanwhile. In a soak of 2,500 jobs, one restart stranded 163
//! Workloads; they held all of the manager's quota and stopped every job behind them.
//! The same soak left one Workload nominated to both workers with no copy on either, for an
//! hour, until an update brought it back: MultiKueue creates missing copies only when it
//! reconciles the Workload.
//! When a Workload of a job dispatched by MultiKueue has been left so (no worker nominated for
//! `STRANDED_AFTER`, or nominated but placed on none for `UNPLACED_AFTER`), the reconciler
//! writes an annotation on it. The change makes MultiKueue reconcile it again, with the workers
//! connected by then. Each further nudge of the same reservation waits twice as long as the one
//! before, up to `LONGEST_WAIT`: under load MultiKueue is slow rather than stuck, and a
//! nudge there is one more reconcile in its queue, paid for in requests to every worker (its
//! clients to them are rate-limited). For the same reason a Workload with no worker nominated is
//! given the time MultiKueue's first pass over the Workloads of its ClusterQueue waiting for one
//! takes (`BACKLOG_PACE` each). Past its wait, a Workload is not nudged while MultiKueue visibly
//! works through the others of its ClusterQueue at the same `Stage` (the number past it grew
//! within `STRANDED_AFTER`, as [`MultiKueueProgress`] remembers), unless it was passed over: a Workload
//! reserved more than `STRANDED_AFTER` after it is past that stage. Eager nudges slowed a
//! 500-job MultiKueue run down (the README's Performance section has the figures).
//! While the manager reaches none of its workers (no MultiKueueCluster `Active`), a nudge
//! would find none either: the Workload waits, its nudges uncounted, and is nudged within
//! `STRANDED_AFTER` of a worker coming back, not up to `LONGEST_WAIT` later.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Mutex;
use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::api::condition;
use crate::api::kueue::{FINISHED, MultiKueueCluster, QUOTA_RESERVED, Workload, WorkloadStatus};

/// Holds the time of the last nudge.
pub const RETRY_ANNOTATION: &str = "kueue-ext.dev/multikueue-retry";

/// Holds how many nudges the reservation has had.
pub const RETRIES_ANNOTATION: &str = "kueue-ext.dev/multikueue-retries";

/// MultiKueue nominates workers within seconds of a reservation; this is many times that.
pub const STRANDED_AFTER: Duration = Duration::from_secs(30);

/// MultiKueue's first look at each Workload waiting for a worker: it reconciles one by reading
/// its copy on every worker, through clients held to client-go's default 5 requests a second
/// (Kueue v0.19.2 sets no rate on them), and a burst of new Workloads is reconciled twice, once
/// created and once reserved.
pub const BACKLOG_PACE: Duration = Duration::from_millis(400);

/// A nominated Workload may wait long for room on a worker; asking again every few minutes
/// costs little.
pub const UNPLACED_AFTER: Duration = Duration::from_secs(300);

/// The longest wait between two nudges.
pub const LONGEST_WAIT: Duration = Duration::from_secs(600);

#[derive(Debug, PartialEq)]
pub enum Dispatch {
    /// Not waiting on MultiKueue: no quota held, a worker chosen, admitted or finished.
    Moving,
    /// Holding quota, not yet on a worker, for less than the wait allowed: look again then.
    Waiting(Duration),
    /// Left so for longer than that since the reservation or the last nudge: nudge it, with
    /// these annotations.
    Stranded(Nudge),
}

/// The annotations a nudge writes: when, and the how-manieth for this reservation.
#[derive(Debug, PartialEq)]
pub struct Nudge {
    pub at: String,
    pub count: u32,
}

impl Nudge {
    pub fn patch(&self) -> serde_json::Value {
        serde_json::json!({"metadata": {"annotations": {
            RETRY_ANNOTATION: self.at,
            RETRIES_ANNOTATION: self.count.to_string(),
        }}})
    }
}

/// What a Workload holding quota waits for MultiKueue to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Stage {
    /// Nominate workers (and create the Workload's copies on them).
    Nominating,
    /// Choose the worker that admitted a copy.
    Placing,
}

impl Stage {
    fn of(status: &WorkloadStatus) -> Stage {
        if status.nominated_cluster_names.is_empty() { Stage::Nominating } else { Stage::Placing }
    }

    /// How long a reservation may wait at this stage before its first nudge.
    fn first_wait(self) -> Duration {
        match self {
            Stage::Nominating => STRANDED_AFTER,
            Stage::Placing => UNPLACED_AFTER,
        }
    }

    /// Whether MultiKueue has taken `wl` past this stage.
    fn is_past(self, wl: &Workload) -> bool {
        let Some(status) = &wl.status else { return false };
        match self {
            Stage::Nominating => status.cluster_name.is_some() || !status.nominated_cluster_names.is_empty(),
            Stage::Placing => status.cluster_name.is_some(),
        }
    }
}

/// What MultiKueue has shown of its progress, per ClusterQueue and stage: how many of its
/// Workloads were past the stage when last counted, and when that number last grew. Kept in
/// memory: after a restart a queue with Workloads past it counts as moving for
/// `STRANDED_AFTER`, which only delays a nudge.
#[derive(Default)]
pub struct MultiKueueProgress(Mutex<HashMap<(String, Stage), (usize, OffsetDateTime)>>);

impl MultiKueueProgress {
    /// Records that `past` Workloads of `queue` are past `stage` at `now`; returns when that
    /// number last grew.
    fn last_growth(&self, queue: &str, stage: Stage, past: usize, now: OffsetDateTime) -> OffsetDateTime {
        let mut queues = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // A queue first counted with none past has shown no progress at all.
        let first = if past > 0 { now } else { OffsetDateTime::UNIX_EPOCH };
        let (count, grew) = queues.entry((queue.to_string(), stage)).or_insert((past, first));
        if past > *count {
            *grew = now;
        }
        // Fewer after deletions: the next growth counts from there.
        *count = past;
        *grew
    }
}

/// Whether the manager reaches a worker: one of `clusters` is `Active`. With none known (not a
/// manager, or MultiKueueClusters not readable) nothing says a nudge would be wasted.
pub fn a_worker_connected<C: Deref<Target = MultiKueueCluster>>(clusters: &[C]) -> bool {
    let active = |cluster: &C| cluster.status.as_ref().is_some_and(|s| condition::is_true(&s.conditions, "Active"));
    clusters.is_empty() || clusters.iter().any(active)
}

/// Where MultiKueue stands with `wl` at `now`; `others` gives the Workloads to compare it with,
/// and `connected` whether a worker is ([`a_worker_connected`]), both read only once it has
/// waited long enough.
pub fn dispatch<W: Deref<Target = Workload>>(
    wl: &Workload,
    now: OffsetDateTime,
    others: impl FnOnce() -> Vec<W>,
    progress: &MultiKueueProgress,
    connected: impl FnOnce() -> bool,
) -> Dispatch {
    let Some(status) = wl.status.as_ref().filter(|_| waits_for_a_worker(wl)) else { return Dispatch::Moving };
    let annotation = |key| wl.metadata.annotations.as_ref().and_then(|a| a.get(key));
    let reserved = reserved_at(wl);
    let nudged = annotation(RETRY_ANNOTATION).and_then(|t| parse(t));
    // Nudges before the reservation were for an earlier one (the Workload was evicted since).
    let nudges = match (nudged, reserved) {
        (Some(nudged), Some(reserved)) if nudged < reserved => 0,
        _ => annotation(RETRIES_ANNOTATION).and_then(|n| n.parse().ok()).unwrap_or(u32::from(nudged.is_some())),
    };
    let stage = Stage::of(status);
    let allowed = stage.first_wait().saturating_mul(1 << nudges.min(16)).min(LONGEST_WAIT);
    let stranded = || match connected() {
        true => Dispatch::Stranded(Nudge { at: condition::timestamp(now), count: nudges + 1 }),
        false => Dispatch::Waiting(STRANDED_AFTER),
    };
    let Some(since) = reserved.max(nudged) else { return stranded() };
    let waited = Duration::try_from(now - since).unwrap_or_default();
    match allowed.checked_sub(waited) {
        Some(left) if !left.is_zero() => Dispatch::Waiting(left),
        _ => coming_to_it(wl, stage, &others(), progress, now, waited).map_or_else(stranded, Dispatch::Waiting),
    }
}

/// How much longer MultiKueue may take to take `wl` past `stage`, where it has waited `waited`:
/// while the number of Workloads of `wl`'s ClusterQueue past that stage grows, and with no
/// worker nominated, first as long as MultiKueue's first pass over those waiting for one takes
/// at [`BACKLOG_PACE`]. `None` once it has passed `wl` over or shown no progress for
/// `STRANDED_AFTER`.
fn coming_to_it<W: Deref<Target = Workload>>(
    wl: &Workload,
    stage: Stage,
    others: &[W],
    progress: &MultiKueueProgress,
    now: OffsetDateTime,
    waited: Duration,
) -> Option<Duration> {
    let (reserved, queue) = (reserved_at(wl)?, cluster_queue(wl)?);
    let longer_than_stranded = |later: OffsetDateTime, earlier: OffsetDateTime| {
        Duration::try_from(later - earlier).is_ok_and(|d| d > STRANDED_AFTER)
    };
    let of_queue: Vec<&Workload> = others.iter().map(|o| &**o).filter(|o| cluster_queue(o) == Some(queue)).collect();
    let past: Vec<&Workload> = of_queue.iter().copied().filter(|o| stage.is_past(o)).collect();
    if past.iter().any(|o| reserved_at(o).is_some_and(|t| longer_than_stranded(t, reserved))) {
        return None;
    }
    if stage == Stage::Nominating {
        let backlog = of_queue.iter().filter(|o| waits_for_a_worker(o) && !stage.is_past(o)).count();
        let first_pass = BACKLOG_PACE.saturating_mul(u32::try_from(backlog).unwrap_or(u32::MAX));
        if let Some(left) = first_pass.checked_sub(waited).filter(|left| !left.is_zero()) {
            return Some(left);
        }
    }
    let grew = progress.last_growth(queue, stage, past.len(), now);
    (!longer_than_stranded(now, grew)).then_some(STRANDED_AFTER)
}

/// Holding quota with a check pending and no worker chosen: not admitted, decided or finished.
fn waits_for_a_worker(wl: &Workload) -> bool {
    let Some(status) = &wl.status else { return false };
    let pending = status.admission_checks.iter().any(|c| c.state == "Pending");
    wl.is(QUOTA_RESERVED) && !wl.is_admitted() && !wl.is(FINISHED) && pending && status.cluster_name.is_none()
}

fn cluster_queue(wl: &Workload) -> Option<&str> {
    Some(wl.status.as_ref()?.admission.as_ref()?.cluster_queue.as_str())
}

/// When the Workload's current reservation was made.
fn reserved_at(wl: &Workload) -> Option<OffsetDateTime> {
    let reserved = condition::find(wl.conditions(), QUOTA_RESERVED).filter(|c| c.is_true())?;
    parse(reserved.last_transition_time.as_deref()?)
}

fn parse(t: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(t, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::condition::Condition;
    use crate::api::kueue::{ADMITTED, Admission, AdmissionCheckState};

    const RESERVED_AT: &str = "2026-11-24T01:00:00Z";

    fn at(t: &str) -> OffsetDateTime {
        OffsetDateTime::parse(t, &Rfc3339).unwrap()
    }

    /// Quota reserved at `RESERVED_AT`, the MultiKueue check Pending, no worker nominated.
    fn left_without_a_worker() -> Workload {
        let mut wl = Workload::new("w", Default::default());
        let mut reserved = Condition::new(QUOTA_RESERVED, true, "QuotaReserved", "");
        reserved.last_transition_time = Some(RESERVED_AT.into());
        wl.status = Some(WorkloadStatus {
            conditions: vec![reserved],
            admission: Some(Admission { cluster_queue: "cq".into(), pod_set_assignments: Vec::new() }),
            admission_checks: vec![AdmissionCheckState {
                name: "multikueue".into(),
                state: "Pending".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        wl
    }

    /// `dispatch` for a Workload with no other in its ClusterQueue.
    fn alone(wl: &Workload, now: OffsetDateTime) -> Dispatch {
        dispatch(wl, now, Vec::<&Workload>::new, &MultiKueueProgress::default(), || true)
    }

    fn stranded(t: &str, count: u32) -> Dispatch {
        Dispatch::Stranded(Nudge { at: t.into(), count })
    }

    /// `wl` as the nudge `dispatch` asked for at `t` leaves it.
    fn nudged(mut wl: Workload, t: &str) -> Workload {
        let Dispatch::Stranded(nudge) = alone(&wl, at(t)) else { panic!("not stranded at {t}") };
        let annotations = nudge.patch()["metadata"]["annotations"].clone();
        wl.metadata.annotations = Some(serde_json::from_value(annotations).unwrap());
        wl
    }

    fn secs(s: u64) -> Dispatch {
        Dispatch::Waiting(Duration::from_secs(s))
    }

    #[test]
    fn a_reservation_with_no_worker_nominated_is_stranded_after_thirty_seconds() {
        let wl = left_without_a_worker();
        assert_eq!(alone(&wl, at("2026-11-24T01:00:10Z")), secs(20));
        assert_eq!(alone(&wl, at("2026-11-24T01:00:30Z")), stranded("2026-11-24T01:00:30Z", 1));
        assert_eq!(alone(&wl, at("2026-11-24T01:07:00Z")), stranded("2026-11-24T01:07:00Z", 1));
    }

    #[test]
    fn each_nudge_of_a_reservation_waits_twice_as_long_up_to_ten_minutes() {
        let wl = nudged(left_without_a_worker(), "2026-11-24T01:00:30Z");
        assert_eq!(alone(&wl, at("2026-11-24T01:00:35Z")), secs(55));
        assert_eq!(alone(&wl, at("2026-11-24T01:01:30Z")), stranded("2026-11-24T01:01:30Z", 2));
        let wl = nudged(wl, "2026-11-24T01:01:30Z");
        assert_eq!(alone(&wl, at("2026-11-24T01:01:30Z")), secs(120));
        let wl = nudged(nudged(nudged(wl, "2026-11-24T01:03:30Z"), "2026-11-24T01:07:30Z"), "2026-11-24T01:15:30Z");
        assert_eq!(wl.metadata.annotations.as_ref().unwrap()[RETRIES_ANNOTATION], "5");
        assert_eq!(alone(&wl, at("2026-11-24T01:15:30Z")), secs(600), "30 s × 2⁵, held to ten minutes");
    }

    #[test]
    fn a_new_reservation_starts_the_count_again() {
        let mut wl = nudged(nudged(left_without_a_worker(), "2026-11-24T01:00:30Z"), "2026-11-24T01:01:30Z");
        // Evicted, then reserved again later: the earlier nudges were for the earlier reservation.
        wl.status.as_mut().unwrap().conditions[0].last_transition_time = Some("2026-11-24T02:00:00Z".into());
        assert_eq!(alone(&wl, at("2026-11-24T02:00:10Z")), secs(20));
        assert_eq!(alone(&wl, at("2026-11-24T02:00:30Z")), stranded("2026-11-24T02:00:30Z", 1));
    }

    #[test]
    fn a_nudge_written_before_the_count_was_kept_counts_as_one() {
        let mut wl = left_without_a_worker();
        wl.metadata.annotations = Some([(RETRY_ANNOTATION.to_string(), "2026-11-24T01:05:00Z".to_string())].into());
        assert_eq!(alone(&wl, at("2026-11-24T01:05:05Z")), secs(55));
        assert_eq!(alone(&wl, at("2026-11-24T01:06:00Z")), stranded("2026-11-24T01:06:00Z", 2));
    }

    #[test]
    fn a_workload_nominated_but_placed_nowhere_is_stranded_after_five_minutes() {
        let mut wl = left_without_a_worker();
        wl.status.as_mut().unwrap().nominated_cluster_names = vec!["worker1".into(), "worker2".into()];
        assert_eq!(alone(&wl, at("2026-11-24T01:01:00Z")), secs(240));
        assert_eq!(alone(&wl, at("2026-11-24T01:05:00Z")), stranded("2026-11-24T01:05:00Z", 1));
        let wl = nudged(wl, "2026-11-24T01:05:00Z");
        assert_eq!(alone(&wl, at("2026-11-24T01:05:00Z")), secs(600));
    }

    #[test]
    fn a_workload_placed_decided_or_not_reserved_is_not_waiting_on_multikueue() {
        let late = at("2026-11-24T02:00:00Z");
        let mut chosen = left_without_a_worker();
        chosen.status.as_mut().unwrap().cluster_name = Some("worker2".into());
        let mut decided = left_without_a_worker();
        decided.status.as_mut().unwrap().admission_checks[0].state = "Retry".into();
        let mut admitted = left_without_a_worker();
        let status = admitted.status.as_mut().unwrap();
        status.conditions.push(Condition::new(ADMITTED, true, "Admitted", ""));
        status.admission_checks[0].state = "Ready".into();
        let mut queued = left_without_a_worker();
        queued.status.as_mut().unwrap().conditions[0].status = "False".into();
        let mut finished = left_without_a_worker();
        finished.status.as_mut().unwrap().conditions.push(Condition::new(FINISHED, true, "Succeeded", ""));
        for wl in [chosen, decided, admitted, queued, finished, Workload::new("w", Default::default())] {
            assert_eq!(alone(&wl, late), Dispatch::Moving, "{:?}", wl.status);
        }
    }

    fn worker(active: bool) -> MultiKueueCluster {
        let mut cluster = MultiKueueCluster::new("worker1", Default::default());
        let active = Condition::new("Active", active, if active { "Active" } else { "ClientConnectionFailed" }, "");
        cluster.status = Some(crate::api::kueue::MultiKueueClusterStatus { conditions: vec![active] });
        cluster
    }

    #[test]
    fn a_worker_is_connected_when_one_multikueuecluster_is_active_or_none_is_known() {
        let (up, down) = (worker(true), worker(false));
        assert!(a_worker_connected(&[&down, &up]));
        assert!(!a_worker_connected(&[&down]));
        assert!(!a_worker_connected(&[&MultiKueueCluster::new("new", Default::default())]), "no status yet");
        assert!(a_worker_connected::<&MultiKueueCluster>(&[]), "nothing says a nudge would be wasted");
    }

    #[test]
    fn with_no_worker_connected_a_stranded_workload_waits_uncounted_and_is_nudged_once_one_is() {
        let wl = nudged(left_without_a_worker(), "2026-11-24T01:00:30Z");
        let look =
            |t: &str, connected: bool| dispatch(&wl, at(t), Vec::<&Workload>::new, &Default::default(), || connected);
        let due = "2026-11-24T01:01:30Z";
        assert_eq!(look(due, false), secs(30), "no worker to find: no nudge");
        assert_eq!(look("2026-11-24T01:20:00Z", false), secs(30), "still none, however long");
        let back = "2026-11-24T01:20:30Z";
        assert_eq!(look(back, true), stranded(back, 2), "the nudges not made were not counted");
    }

    /// A Workload of the same ClusterQueue reserved `secs` seconds after `RESERVED_AT`, with a
    /// worker nominated or not.
    fn reserved_later(secs: i64, worker: bool) -> Workload {
        let mut wl = left_without_a_worker();
        let status = wl.status.as_mut().unwrap();
        let reserved = at(RESERVED_AT) + time::Duration::seconds(secs);
        status.conditions[0].last_transition_time = Some(condition::timestamp(reserved));
        if worker {
            status.nominated_cluster_names = vec!["worker1".into()];
        }
        wl
    }

    #[test]
    fn a_workload_waits_while_more_workloads_of_its_queue_get_a_worker() {
        let wl = left_without_a_worker();
        let progress = MultiKueueProgress::default();
        let placed: Vec<Workload> = (1..=3).map(|i| reserved_later(i, true)).collect();
        // Looks at `t`, when the first `n` of them have a worker.
        let look = |t: &str, n: usize| dispatch(&wl, at(t), || placed.iter().take(n).collect(), &progress, || true);
        assert_eq!(look("2026-11-24T01:00:30Z", 1), secs(30), "first counted: moving");
        assert_eq!(look("2026-11-24T01:00:55Z", 2), secs(30), "one more placed");
        assert_eq!(look("2026-11-24T01:01:25Z", 3), secs(30), "and one more");
        let quiet = "2026-11-24T01:01:56Z";
        assert_eq!(look(quiet, 3), stranded(quiet, 1), "none placed for over 30 s");

        let mut nominated = wl.clone();
        nominated.status.as_mut().unwrap().nominated_cluster_names = vec!["worker1".into()];
        let now = "2026-11-24T01:05:00Z";
        let progress = MultiKueueProgress::default();
        assert_eq!(
            dispatch(&nominated, at(now), || placed.iter().collect(), &progress, || true),
            stranded(now, 1),
            "placed nowhere"
        );
    }

    #[test]
    fn a_workload_passed_over_by_one_reserved_well_after_it_is_nudged() {
        let wl = left_without_a_worker();
        let (soon_after, well_after) = (reserved_later(10, true), reserved_later(31, true));
        let now = "2026-11-24T01:01:00Z";
        assert_eq!(dispatch(&wl, at(now), || vec![&soon_after], &MultiKueueProgress::default(), || true), secs(30));
        let others = || vec![&soon_after, &well_after];
        assert_eq!(dispatch(&wl, at(now), others, &MultiKueueProgress::default(), || true), stranded(now, 1));
    }

    #[test]
    fn workloads_placed_in_other_cluster_queues_show_no_progress_for_this_one() {
        let wl = left_without_a_worker();
        let progress = MultiKueueProgress::default();
        let mut elsewhere = reserved_later(5, true);
        elsewhere.status.as_mut().unwrap().admission.as_mut().unwrap().cluster_queue = "other".into();
        let placed = reserved_later(5, true);
        assert_eq!(dispatch(&wl, at("2026-11-24T01:00:30Z"), || vec![&placed], &progress, || true), secs(30));
        let now = "2026-11-24T01:01:01Z";
        assert_eq!(dispatch(&wl, at(now), || vec![&elsewhere], &progress, || true), stranded(now, 1));
    }

    #[test]
    fn progress_counts_growth_only() {
        let progress = MultiKueueProgress::default();
        let t = |s: i64| at(RESERVED_AT) + time::Duration::seconds(s);
        let nominated = |queue, count, now| progress.last_growth(queue, Stage::Nominating, count, now);
        assert_eq!(nominated("cq", 5, t(0)), t(0));
        assert_eq!(nominated("cq", 5, t(10)), t(0), "no change");
        assert_eq!(nominated("cq", 2, t(20)), t(0), "Workloads deleted");
        assert_eq!(nominated("cq", 3, t(30)), t(30), "grew from the lower count");
        assert_eq!(nominated("other", 1, t(40)), t(40), "each queue on its own");
        assert_eq!(progress.last_growth("cq", Stage::Placing, 1, t(45)), t(45), "each stage on its own");
        let never = OffsetDateTime::UNIX_EPOCH;
        assert_eq!(nominated("empty", 0, t(50)), never, "none placed: no progress shown");
    }

    #[test]
    fn a_burst_of_reservations_is_given_the_time_of_multikueues_first_pass_over_it() {
        let wl = left_without_a_worker();
        let burst: Vec<Workload> = (0..200).map(|_| left_without_a_worker()).collect();
        let progress = MultiKueueProgress::default();
        let look = |t: &str| dispatch(&wl, at(t), || burst.iter().collect(), &progress, || true);
        assert_eq!(look("2026-11-24T01:00:30Z"), secs(50), "200 waiting × 400 ms: 80 s");
        let passed = "2026-11-24T01:01:20Z";
        assert_eq!(look(passed), stranded(passed, 1), "then progress counts, and none was shown");
    }

    /// A Workload nominated to both workers at `RESERVED_AT + secs`, placed on worker1 or not.
    fn nominated_at(secs: i64, placed: bool) -> Workload {
        let mut wl = reserved_later(secs, false);
        let status = wl.status.as_mut().unwrap();
        status.nominated_cluster_names = vec!["worker1".into(), "worker2".into()];
        if placed {
            status.cluster_name = Some("worker1".into());
        }
        wl
    }

    #[test]
    fn a_nominated_workload_waits_while_more_of_its_queue_are_placed() {
        let wl = nominated_at(0, false);
        let progress = MultiKueueProgress::default();
        let placed: Vec<Workload> = (1..=3).map(|i| nominated_at(i, true)).collect();
        // Looks at `t`, when the first `n` of them have been placed.
        let look = |t: &str, n: usize| dispatch(&wl, at(t), || placed.iter().take(n).collect(), &progress, || true);
        assert_eq!(look("2026-11-24T01:04:00Z", 1), secs(60), "its first wait of five minutes");
        assert_eq!(look("2026-11-24T01:05:00Z", 1), secs(30), "past it, one placed: moving");
        assert_eq!(look("2026-11-24T01:05:25Z", 2), secs(30), "one more placed");
        assert_eq!(look("2026-11-24T01:05:50Z", 3), secs(30), "and one more");
        let quiet = "2026-11-24T01:06:21Z";
        assert_eq!(look(quiet, 3), stranded(quiet, 1), "none placed for over 30 s");
    }

    #[test]
    fn a_nominated_workload_is_not_moving_for_others_nominated_only() {
        let wl = nominated_at(0, false);
        let nominated: Vec<Workload> = (1..=3).map(|i| nominated_at(i, false)).collect();
        let now = "2026-11-24T01:05:00Z";
        assert_eq!(
            dispatch(&wl, at(now), || nominated.iter().collect(), &MultiKueueProgress::default(), || true),
            stranded(now, 1)
        );
    }

    #[test]
    fn a_nominated_workload_passed_over_by_one_reserved_well_after_it_is_nudged() {
        let wl = nominated_at(0, false);
        let (soon_after, well_after) = (nominated_at(10, true), nominated_at(31, true));
        let now = "2026-11-24T01:05:00Z";
        assert_eq!(dispatch(&wl, at(now), || vec![&soon_after], &MultiKueueProgress::default(), || true), secs(30));
        let others = || vec![&soon_after, &well_after];
        assert_eq!(dispatch(&wl, at(now), others, &MultiKueueProgress::default(), || true), stranded(now, 1));
    }
}
