//! Kueue's order of pending Workloads, rebuilt and as the visibility API says it.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::model::fixtures::*;
use crate::model::join::orders_of;
use crate::model::read;
use crate::model::snapshot::{ClusterSnapshot, Visibility, VisiblePending};

/// Seconds after [`CREATED`], as the API server writes times.
fn at(seconds: i64) -> String {
    let time = k8s_openapi::jiff::Timestamp::from_second(1_767_225_600 + seconds).expect("a time");
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A job's pending Workload in `default`, created `seconds` after [`CREATED`].
fn waiting(name: &str, queue: &str, priority: Option<i32>, seconds: i64) -> Value {
    let mut wl = workload_for(&job(&built_in_kind("ExternalJob"), name), &format!("externaljob-{name}-00000"));
    wl["metadata"]["creationTimestamp"] = json!(at(seconds));
    wl["metadata"]["uid"] = json!(format!("wl-{name}"));
    wl["spec"]["queueName"] = json!(queue);
    if let Some(priority) = priority {
        wl["spec"]["priority"] = json!(priority);
    }
    pending(&mut wl, "WaitingForQuota", "insufficient unused quota", "1");
    wl
}

/// One cluster whose ClusterQueue `cluster-queue` is fed by `default/user-queue` and
/// `default/other-queue`, holding `workloads`, read [`NOW`].
fn cluster(workloads: Vec<Value>) -> ClusterSnapshot {
    let mut cluster = single_cluster();
    cluster.local_queues.push(object(local_queue("default", "other-queue", "cluster-queue")));
    cluster.workloads = workloads.into_iter().map(object).collect();
    cluster.read_at = Some(NOW);
    cluster
}

fn queued(name: &str, priority: i32, order_time: i64, uid: &str) -> Queued {
    Queued { name: name.into(), priority, order_time: Some(order_time), uid: uid.into(), ..Queued::default() }
}

#[test]
fn kueue_orders_by_priority_then_queue_time_then_uid() {
    let cases = [
        ("higher priority first, though younger", queued("a", 100, 50, "x"), queued("b", 0, 10, "y"), Ordering::Less),
        ("same priority: earlier first", queued("a", 0, 10, "y"), queued("b", 0, 50, "x"), Ordering::Less),
        ("same priority and time: by UID", queued("a", 0, 10, "y"), queued("b", 0, 10, "x"), Ordering::Greater),
        ("negative priority after the default", queued("a", -1, 0, "x"), queued("b", 0, 99, "y"), Ordering::Greater),
    ];
    for (case, a, b, expected) in cases {
        assert_eq!(kueue_order(&a, &b), expected, "{case}");
    }
}

#[test]
fn only_workloads_kueue_queues_are_in_line() {
    let mut reserved_wl = waiting("r", "user-queue", None, 0);
    reserved(&mut reserved_wl);
    let mut finished = waiting("f", "user-queue", None, 0);
    set_condition(&mut finished, condition("Finished", true, "Succeeded", "done"));
    let mut inactive = waiting("i", "user-queue", None, 0);
    inactive["spec"]["active"] = json!(false);
    let mut no_queue = waiting("n", "user-queue", None, 0);
    no_queue["spec"]["queueName"] = json!("");
    for wl in [reserved_wl, finished, inactive, no_queue] {
        assert_eq!(read::queued(&object(wl.clone())), None, "{}", wl["metadata"]["name"]);
    }
    let never_evaluated = waiting("p", "user-queue", Some(5), 7);
    let mut never_evaluated = never_evaluated.clone();
    never_evaluated["status"] = json!({});
    let read = read::queued(&object(never_evaluated)).expect("queued");
    assert_eq!((read.priority, read.created, read.order_time), (5, Some(1_767_225_607), Some(1_767_225_607)));
    assert_eq!(read.job.as_deref(), Some("default/p"));
}

#[test]
fn a_workload_evicted_for_pods_not_ready_queues_from_its_eviction() {
    let mut evicted = waiting("evicted", "user-queue", None, 0);
    let mut eviction = condition("Evicted", true, "PodsReadyTimeout", "Exceeded the PodsReady timeout");
    eviction["lastTransitionTime"] = json!(at(200));
    set_condition(&mut evicted, eviction);
    let later = waiting("later", "user-queue", None, 100);
    let orders = orders_of(&cluster(vec![evicted, later]));
    let place = orders.place("default", "externaljob-evicted-00000", "user-queue").expect("in line");
    assert_eq!(place.in_cluster_queue, Place { position: 2, of: 2 });
    assert_eq!(place.ahead[0].job.as_deref(), Some("default/later"));

    let mut preempted = waiting("preempted", "user-queue", None, 0);
    let mut eviction = condition("Evicted", true, "Preempted", "Preempted to accommodate a workload");
    eviction["lastTransitionTime"] = json!(at(200));
    set_condition(&mut preempted, eviction);
    let orders = orders_of(&cluster(vec![preempted, waiting("later", "user-queue", None, 100)]));
    let place = orders.place("default", "externaljob-preempted-00000", "user-queue").expect("in line");
    assert_eq!(place.in_cluster_queue.position, 1, "a preempted Workload keeps its creation time");
}

#[test]
fn positions_are_rebuilt_per_cluster_queue_and_local_queue_and_marked_so() {
    let workloads = vec![
        waiting("third", "user-queue", None, 30),
        waiting("urgent", "other-queue", Some(100), 40),
        waiting("first", "user-queue", None, 10),
        waiting("second", "other-queue", None, 20),
    ];
    let orders = orders_of(&cluster(workloads));
    let place = orders.place("default", "externaljob-third-00000", "user-queue").expect("in line");
    assert_eq!(place.source, PositionSource::CreationOrder);
    assert_eq!(place.fallback.as_deref(), Some("not asked yet"));
    assert_eq!((place.cluster_queue.as_str(), place.local_queue.as_str()), ("cluster-queue", "default/user-queue"));
    assert_eq!(place.in_cluster_queue, Place { position: 4, of: 4 });
    assert_eq!(place.in_local_queue, Place { position: 2, of: 2 });
    let ahead: Vec<(&str, i32, Option<i64>)> =
        place.ahead.iter().map(|a| (a.job.as_deref().unwrap_or_default(), a.priority, a.age)).collect();
    assert_eq!(
        ahead,
        [("default/urgent", 100, Some(260)), ("default/first", 0, Some(290)), ("default/second", 0, Some(280))]
    );
    assert_eq!(place.ahead[1].workload, "default/externaljob-first-00000");
    assert_eq!(place.ahead[2].local_queue, "default/other-queue");

    let urgent = orders.place("default", "externaljob-urgent-00000", "other-queue").expect("in line");
    assert_eq!((urgent.in_cluster_queue.position, urgent.in_local_queue.position), (1, 1));
    assert!(urgent.ahead.is_empty());
    assert_eq!(orders.place("default", "externaljob-third-00000", "no-such-queue"), None);
}

#[test]
fn at_most_ten_ahead_are_listed() {
    let workloads = (0..15).map(|i| waiting(&format!("job-{i:02}"), "user-queue", None, i)).collect();
    let orders = orders_of(&cluster(workloads));
    let place = orders.place("default", "externaljob-job-14-00000", "user-queue").expect("in line");
    assert_eq!(place.in_cluster_queue, Place { position: 15, of: 15 });
    assert_eq!(place.ahead.len(), AHEAD_LISTED);
    assert_eq!(place.ahead[0].job.as_deref(), Some("default/job-00"));
}

fn visible(name: &str, queue: &str, priority: i32, in_cq: i32, in_lq: i32) -> VisiblePending {
    serde_json::from_value(json!({
        "metadata": {"name": format!("externaljob-{name}-00000"), "namespace": "default", "creationTimestamp": at(5),
                     "ownerReferences": [{"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
                                          "name": name, "uid": "u"}]},
        "priority": priority, "localQueueName": queue,
        "positionInClusterQueue": in_cq, "positionInLocalQueue": in_lq,
    }))
    .expect("a PendingWorkload")
}

#[test]
fn the_visibility_api_order_wins_where_it_is_served() {
    let workloads = vec![waiting("first", "user-queue", None, 10), waiting("second", "user-queue", None, 20)];
    let mut cluster = cluster(workloads);
    // Kueue knows better (a sticky preemptor, fair sharing): its order stands.
    let listed = vec![visible("first", "user-queue", 0, 1, 1), visible("second", "user-queue", 0, 0, 0)];
    cluster.visibility = Visibility::Served(BTreeMap::from([("cluster-queue".to_string(), listed)]));
    let orders = orders_of(&cluster);
    let place = orders.place("default", "externaljob-first-00000", "user-queue").expect("in line");
    assert_eq!((place.source, place.fallback.as_deref()), (PositionSource::VisibilityApi, None));
    assert_eq!(place.in_cluster_queue, Place { position: 2, of: 2 });
    assert_eq!(place.in_local_queue, Place { position: 2, of: 2 });
    assert_eq!(place.ahead[0].job.as_deref(), Some("default/second"));
    assert_eq!(place.ahead[0].age, Some(295));

    let mut unlisted = cluster.clone();
    unlisted.visibility = Visibility::Served(BTreeMap::new());
    let place = orders_of(&unlisted).place("default", "externaljob-first-00000", "user-queue").unwrap();
    assert_eq!(place.source, PositionSource::CreationOrder);
    assert_eq!(place.fallback.as_deref(), Some("the visibility API does not list it yet"));

    cluster.visibility = Visibility::Unavailable("manager does not serve it".into());
    let place = orders_of(&cluster).place("default", "externaljob-first-00000", "user-queue").unwrap();
    assert_eq!((place.source, place.in_cluster_queue.position), (PositionSource::CreationOrder, 1));
    assert_eq!(place.fallback.as_deref(), Some("manager does not serve it"));
}
