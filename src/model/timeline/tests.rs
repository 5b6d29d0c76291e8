//! The timeline of a job's dispatch, from its Workloads and events, as the exact lines
//! `explain` prints.

use serde_json::{Value, json};

use super::*;
use crate::model::fixtures::*;
use crate::model::read;

/// Seconds after [`CREATED`], as the API server writes times.
fn at(seconds: i64) -> String {
    let time = k8s_openapi::jiff::Timestamp::from_second(1_767_225_600 + seconds).expect("a time");
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn timed(type_: &str, status: bool, reason: &str, message: &str, seconds: i64) -> Value {
    let mut c = condition(type_, status, reason, message);
    c["lastTransitionTime"] = json!(at(seconds));
    c
}

const WL: &str = "job-train-12345";

/// The manager's Workload: quota reserved at 1 s, then what `shape` does.
fn manager_workload(shape: impl FnOnce(&mut Value)) -> WorkloadFacts {
    let mut wl = workload_for(&job(&built_in_kind("Job"), "train"), WL);
    reserved(&mut wl);
    shape(&mut wl);
    set_condition(&mut wl, timed("QuotaReserved", true, "QuotaReserved", "Quota reserved", 1));
    read::workload("manager", &object(wl))
}

/// A check state of `multikueue` at `seconds`.
fn multikueue_check(wl: &mut Value, state: &str, message: &str, seconds: i64) {
    wl["status"]["admissionChecks"] =
        json!([{"name": "multikueue", "state": state, "message": message, "lastTransitionTime": at(seconds)}]);
}

/// The copy on `worker`, created at `created`, admitted there at `admitted`.
fn copy(worker: &str, created: i64, admitted: Option<i64>) -> Mirror {
    let mut wl = remote_workload(WL);
    wl["metadata"]["creationTimestamp"] = json!(at(created));
    if let Some(seconds) = admitted {
        admitted_at(&mut wl, seconds);
    }
    Mirror { cluster: worker.into(), unreachable: None, job: None, workload: Some(read::workload(worker, &object(wl))) }
}

fn admitted_at(wl: &mut Value, seconds: i64) {
    reserved(wl);
    set_condition(wl, timed("Admitted", true, "Admitted", "The workload is admitted", seconds));
}

fn on(cluster: &str, reason: &str, message: &str, seconds: i64) -> JobEvent {
    JobEvent { cluster: cluster.into(), event: event("Workload", WL, reason, message, seconds) }
}

fn lines(wl: &WorkloadFacts, mirrors: &[Mirror], events: &[JobEvent]) -> Vec<String> {
    of("manager", wl, Some("multikueue"), mirrors, events).map(|t| t.lines()).unwrap_or_default()
}

/// A finished job whose copies are all gone: the events alone tell who got one and who won.
fn finished_on_worker1() -> (WorkloadFacts, Vec<JobEvent>) {
    let wl = manager_workload(|wl| {
        admitted_at(wl, 3);
        multikueue_check(wl, "Ready", "The workload was admitted on \"worker1\"", 3);
        wl["status"]["clusterName"] = json!("worker1");
        set_condition(wl, timed("Finished", true, "Succeeded", "Job finished successfully", 20));
    });
    let events = vec![
        on(
            "manager",
            "QuotaReserved",
            "Quota reserved in ClusterQueue cluster-queue, wait time since queued was 1s",
            1,
        ),
        on(
            "worker1",
            "QuotaReserved",
            "Quota reserved in ClusterQueue cluster-queue, wait time since queued was 0s",
            2,
        ),
        on("worker1", "Admitted", "Admitted by ClusterQueue cluster-queue, wait time since reservation was 0s", 2),
        on("worker2", "Pending", "couldn't assign flavors to pod set main: insufficient unused quota", 2),
        on("manager", "MultiKueue", "The workload was admitted on \"worker1\"", 3),
        // Kueue records it again, as another event object a second later: one fact all the same.
        on("manager", "MultiKueue", "The workload was admitted on \"worker1\"", 4),
    ];
    (wl, events)
}

#[test]
fn a_finished_job_tells_who_got_a_copy_who_ran_it_and_when_copies_went() {
    let (wl, events) = finished_on_worker1();
    assert_eq!(
        lines(&wl, &[], &events),
        [
            "00:00:01 manager: quota reserved in ClusterQueue cluster-queue.",
            "00:00:02 worker1: got a copy of the Workload.",
            "00:00:02 worker2: got a copy of the Workload.",
            "00:00:02 worker1: admitted its copy.",
            "00:00:03 worker1: admitted first; MultiKueue runs the job there.",
            "00:00:03 worker2: its copy removed (worker1 admitted first).",
            "00:00:20 manager: finished (Succeeded): Job finished successfully.",
            "00:00:20 worker1: its copy removed (the job finished).",
        ]
    );
}

#[test]
fn without_events_the_workloads_tell_it() {
    let wl = manager_workload(|wl| {
        admitted_at(wl, 3);
        multikueue_check(wl, "Ready", "The workload was admitted on \"worker1\"", 3);
        wl["status"]["clusterName"] = json!("worker1");
    });
    // worker2's copy is still there: MultiKueue deletes it next.
    let mirrors = [copy("worker1", 2, Some(2)), copy("worker2", 2, None)];
    assert_eq!(
        lines(&wl, &mirrors, &[]),
        [
            "00:00:01 manager: quota reserved in ClusterQueue cluster-queue.",
            "00:00:02 worker1: got a copy of the Workload.",
            "00:00:02 worker2: got a copy of the Workload.",
            "00:00:02 worker1: admitted its copy.",
            "00:00:03 worker1: admitted first; MultiKueue runs the job there.",
        ]
    );
}

#[test]
fn a_copy_evicted_on_its_worker_is_dispatched_again() {
    let wl = manager_workload(|wl| {
        admitted_at(wl, 16);
        multikueue_check(wl, "Ready", "The workload was admitted on \"worker2\"", 16);
        wl["status"]["clusterName"] = json!("worker2");
    });
    let events = [
        on("manager", "MultiKueue", "The workload was admitted on \"worker1\"", 3),
        on(
            "manager",
            "MultiKueue",
            "Workload evicted on worker cluster: \"worker1\", resetting for re-admission. Previously: \"Ready\"",
            10,
        ),
        on("manager", "MultiKueue", "The workload was admitted on \"worker2\"", 16),
    ];
    let mirrors = [copy("worker2", 12, Some(15))];
    assert_eq!(
        lines(&wl, &mirrors, &events),
        [
            "00:00:01 manager: quota reserved in ClusterQueue cluster-queue.",
            "00:00:03 worker1: admitted first; MultiKueue runs the job there.",
            "00:00:10 worker1: evicted its copy; MultiKueue dispatches the job again.",
            "00:00:10 worker1: its copy removed (dispatched again).",
            "00:00:12 worker2: got a copy of the Workload.",
            "00:00:15 worker2: admitted its copy.",
            "00:00:16 worker2: admitted first; MultiKueue runs the job there.",
        ]
    );
}

#[test]
fn retries_and_rejections_are_told_in_kueues_words() {
    let cases = [
        (
            "Retry",
            "Remote workload on worker cluster \"worker1\" is out of sync with its user job, resetting for re-dispatch, \
             Previously: \"Ready\"",
            "00:00:05 worker1: its copy is out of sync with the job; MultiKueue dispatches the job again.",
        ),
        (
            "Retry",
            "Admitting remote lost, Previously: \"Ready\"",
            "00:00:05 worker1: lost past the worker-lost timeout; MultiKueue dispatches the job again.",
        ),
        (
            "Rejected",
            "The owner is not managed by Kueue: spec.managedBy is not kueue.x-k8s.io/multikueue, Previously: \"Pending\"",
            "00:00:05 manager: the MultiKueue check rejected it: The owner is not managed by Kueue: spec.managedBy is \
             not kueue.x-k8s.io/multikueue.",
        ),
    ];
    for (state, message, expected) in cases {
        let wl = manager_workload(|wl| {
            multikueue_check(wl, state, message, 5);
            if state == "Retry" {
                wl["status"]["clusterName"] = json!("worker1");
            }
        });
        let told = lines(&wl, &[], &[]);
        assert!(told.contains(&expected.to_string()), "{state} {message}: {told:#?}");
    }
}

#[test]
fn a_job_multikueue_never_touched_has_no_timeline() {
    let wl = manager_workload(|wl| admitted_at(wl, 2));
    assert_eq!(of("manager", &wl, None, &[], &[]), None);
}

#[test]
fn clusters_count_copies_dispatched_won_removed_and_rejected_by_reason() {
    let (wl, events) = finished_on_worker1();
    let finished = of("manager", &wl, Some("multikueue"), &[], &events).expect("a timeline");
    let evicted = manager_workload(|wl| {
        multikueue_check(wl, "Retry", "Workload evicted on worker cluster: \"worker1\", resetting", 5);
        wl["status"]["clusterName"] = json!("worker1");
    });
    let evicted = of("manager", &evicted, Some("multikueue"), &[], &[]).expect("a timeline");
    let rejected = manager_workload(|wl| multikueue_check(wl, "Rejected", "No multikueue adapter found", 5));
    let rejected = of("manager", &rejected, Some("multikueue"), &[], &[]).expect("a timeline");
    let counts = counts("manager", [&finished, &evicted, &rejected]);
    let row = |cluster: &str| {
        let c = counts.get(cluster).cloned().unwrap_or_default();
        (c.dispatched, c.won, c.removed, c.rejected.into_iter().collect::<Vec<_>>())
    };
    assert_eq!(row("worker1"), (2, 1, 2, vec![("evicted".to_string(), 1)]));
    assert_eq!(row("worker2"), (1, 0, 1, vec![]));
    assert_eq!(row("manager"), (0, 0, 0, vec![("rejected".to_string(), 1)]));
}

/// `explain -o json` carries each moment with its step, cluster and time.
#[test]
fn moments_serialize_with_their_step_and_time() {
    let (wl, events) = finished_on_worker1();
    let timeline = of("manager", &wl, Some("multikueue"), &[], &events).expect("a timeline");
    let json = serde_json::to_value(&timeline).expect("json");
    let moment = |i: usize| &json["moments"][i];
    assert_eq!((moment(0)["step"].as_str(), moment(0)["time"].as_i64()), (Some("quota-reserved"), Some(1_767_225_601)));
    assert_eq!(moment(0)["cluster_queue"], "cluster-queue");
    assert_eq!((moment(5)["step"].as_str(), moment(5)["because"].as_str()), (Some("removed"), Some("another-won")));
    assert_eq!(moment(5)["worker"], "worker1");
    assert_eq!(json["workers"][0]["won"], true);
}
