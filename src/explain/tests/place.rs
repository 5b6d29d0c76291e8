//! A pending job's place in its queues, as `explain` says it and as `-o json` carries it.

use std::collections::BTreeMap;

use serde_json::json;

use super::explain_job;
use crate::model::fixtures::*;
use crate::model::join;
use crate::model::snapshot::{Snapshot, Visibility, VisiblePending};

const SHORT: &str = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor \
                     default-flavor, 1 more needed";

/// `train` waiting for quota, created 100 s after [`CREATED`], behind `ahead` (name, priority,
/// seconds after [`CREATED`]), all in `user-queue`; read at [`NOW`].
fn behind(ahead: &[(&str, i32, i64)]) -> Snapshot {
    let mut snapshot = single(|_, _, w| {
        pending(w, "WaitingForQuota", SHORT, "1");
        w["metadata"]["creationTimestamp"] = json!("2026-01-01T00:01:40Z");
    });
    let kind = built_in_kind("ExternalJob");
    for (name, priority, seconds) in ahead {
        let job = job(&kind, name);
        let mut wl = workload_for(&job, &format!("externaljob-{name}-00000"));
        wl["metadata"]["creationTimestamp"] = json!(format!("2026-01-01T00:{:02}:{:02}Z", seconds / 60, seconds % 60));
        wl["spec"]["priority"] = json!(priority);
        pending(&mut wl, "WaitingForQuota", SHORT, "1");
        snapshot.clusters[0].jobs.push(job_object(&kind, job));
        snapshot.clusters[0].workloads.push(object(wl));
    }
    snapshot.clusters[0].read_at = Some(NOW);
    snapshot
}

fn queue_line(snapshot: &Snapshot) -> String {
    let lines = explain_job(snapshot, "train");
    lines.iter().find(|l| l.starts_with("queue: ")).cloned().unwrap_or_else(|| panic!("no queue line in {lines:?}"))
}

#[test]
fn a_pending_job_is_told_its_place_and_who_is_ahead_in_creation_order() {
    let ahead = [("second", 0, 20), ("urgent", 100, 50), ("first", 0, 10), ("fourth", 0, 40), ("third", 0, 30)];
    let snapshot = behind(&ahead);
    assert_eq!(
        queue_line(&snapshot),
        "queue: position 6 of 6 in ClusterQueue cluster-queue (6 of 6 in LocalQueue default/user-queue), behind \
         default/urgent (priority 100, 4m), default/first (priority 0, 4m), default/second (priority 0, 4m) and 2 \
         more; creation order: positions need the visibility API (not asked yet)."
    );
    let lines = explain_job(&snapshot, "train");
    let waiting = lines.iter().position(|l| l.contains("is waiting for quota")).expect("waiting line");
    let queue = lines.iter().position(|l| l.starts_with("queue: ")).expect("queue line");
    let next = lines.iter().position(|l| l.starts_with("next: ")).expect("next step");
    assert!(waiting < queue && queue < next, "the place follows the reason, before its step: {lines:?}");
}

#[test]
fn the_first_in_line_is_told_so() {
    let mut snapshot = behind(&[("later", 0, 150)]);
    snapshot.clusters[0].visibility = Visibility::Unavailable(
        "manager does not serve it: Kueue's VisibilityOnDemand feature gate is off, or its APIService is not \
         registered"
            .into(),
    );
    assert_eq!(
        queue_line(&snapshot),
        "queue: position 1 of 2 in ClusterQueue cluster-queue (1 of 2 in LocalQueue default/user-queue), first in \
         line; creation order: positions need the visibility API (manager does not serve it: Kueue's \
         VisibilityOnDemand feature gate is off, or its APIService is not registered)."
    );
}

fn listed(name: &str, priority: i32, position: i32) -> VisiblePending {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "v1", "kind": "ExternalJob", "name": name.split('-').nth(1), "uid": "u"}]},
        "priority": priority, "localQueueName": "user-queue",
        "positionInClusterQueue": position, "positionInLocalQueue": position,
    }))
    .expect("a PendingWorkload")
}

#[test]
fn kueues_order_is_said_as_kueues_and_carried_in_json() {
    let mut snapshot = behind(&[("first", 0, 10)]);
    let items = vec![listed("externaljob-train-12345", 0, 0), listed("externaljob-first-00000", 0, 1)];
    snapshot.clusters[0].visibility = Visibility::Served(BTreeMap::from([("cluster-queue".into(), items)]));
    assert_eq!(
        queue_line(&snapshot),
        "queue: position 1 of 2 in ClusterQueue cluster-queue (1 of 2 in LocalQueue default/user-queue), first in \
         line (Kueue's visibility API)."
    );
    let model = join(&snapshot);
    let first = model.jobs.iter().find(|j| j.key.name == "first").expect("first");
    assert_eq!(
        serde_json::to_value(&first.queue_position).unwrap(),
        json!({
            "source": "visibility-api", "fallback": null,
            "cluster_queue": "cluster-queue", "local_queue": "default/user-queue",
            "in_cluster_queue": {"position": 2, "of": 2}, "in_local_queue": {"position": 2, "of": 2},
            "ahead": [{"workload": "default/externaljob-train-12345", "job": "default/train",
                       "local_queue": "default/user-queue", "priority": 0, "created": 1_767_225_600, "age": 300}],
        })
    );
}

#[test]
fn a_job_alone_in_line_is_not_told_its_place_but_json_carries_it() {
    let snapshot = behind(&[]);
    assert!(!explain_job(&snapshot, "train").iter().any(|l| l.starts_with("queue: ")));
    let place = join(&snapshot).jobs[0].queue_position.clone().expect("in line");
    assert_eq!((place.in_cluster_queue.position, place.in_cluster_queue.of), (1, 1));
}

#[test]
fn a_job_with_quota_has_no_place_in_line() {
    let snapshot = single(|_, _, w| reserved(w));
    let model = join(&snapshot);
    assert_eq!(model.jobs[0].queue_position, None);
    assert!(!explain_job(&snapshot, "train").iter().any(|l| l.starts_with("queue: ")));
}
