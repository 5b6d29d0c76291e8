//! The join, state by state, over fixtures shaped like what the API server returns.

use serde_json::{Value, json};

use super::*;
use crate::model::fixtures::*;
use crate::model::snapshot::{ObjectKey, Snapshot};

fn row<'a>(model: &'a Model, cluster: &str, name: &str) -> &'a JobRow {
    model
        .jobs
        .iter()
        .find(|j| j.key.cluster == cluster && j.key.name == name)
        .unwrap_or_else(|| panic!("no row {cluster}/{name}"))
}

#[test]
fn every_row_status_from_its_job_and_workload() {
    let scene = join(&scene());
    let scene_cases = [
        ("no-queue", RowStatus::Unmanaged, "-"),
        ("queued", RowStatus::Pending, "PENDING"),
        ("too-big", RowStatus::Blocked, "PENDING"),
        ("preempted", RowStatus::Evicted, "PENDING"),
        ("dispatching", RowStatus::Reserved, "QUOTARESERVED"),
        ("training", RowStatus::Running, "ADMITTED"),
        ("done", RowStatus::Succeeded, "FINISHED"),
    ];
    for (name, status, workload) in scene_cases {
        let row = row(&scene, "manager", name);
        assert_eq!(row.status, status, "{name}");
        assert_eq!(row.workload.as_ref().map(|w| w.state().to_string()).unwrap_or("-".into()), workload, "{name}");
    }

    let too_big = "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, \
                   previously considered podsets requests (0) + current podset request (2k) > maximum capacity (4)";
    let built: [(&str, Snapshot, RowStatus); 7] = [
        (
            "never fits, said with Kueue 0.19's legacy reason",
            single(|_, _, w| pending(w, "Pending", too_big, "2000")),
            RowStatus::Blocked,
        ),
        ("no workload yet", single(|_, _, w| *w = Value::Null), RowStatus::NoWorkload),
        (
            "no LocalQueue",
            single(|_, _, w| pending(w, "Misconfigured", "LocalQueue user-queue doesn't exist", "1")),
            RowStatus::Blocked,
        ),
        (
            "check rejected",
            single(|_, _, w| {
                reserved(w);
                check(w, "prov", "Rejected", "no capacity");
            }),
            RowStatus::Blocked,
        ),
        (
            "admitted, no pod yet",
            single(|_, j, w| {
                j["spec"]["suspend"] = json!(false);
                admitted(w);
            }),
            RowStatus::Admitted,
        ),
        (
            "job failed",
            single(|_, j, _| set_condition(j, condition("Failed", true, "BackoffLimitExceeded", "too many failures"))),
            RowStatus::Failed,
        ),
        (
            "workload failed, job silent",
            single(|_, _, w| {
                admitted(w);
                set_condition(w, condition("Finished", true, "Failed", "OutOfSync"));
            }),
            RowStatus::Failed,
        ),
    ];
    for (case, snapshot, status) in built {
        assert_eq!(row(&join(&snapshot), "manager", "train").status, status, "{case}");
    }
}

#[test]
fn a_dispatched_job_carries_its_worker_copy_and_pods() {
    let model = join(&scene());
    let training = row(&model, "manager", "training");
    assert_eq!(training.workload.as_ref().and_then(|w| w.cluster_name.as_deref()), Some("worker2"));
    let mirror = training.mirror().expect("copy on worker2");
    assert_eq!((mirror.cluster.as_str(), mirror.state()), ("worker2", MirrorState::Running));
    assert_eq!(training.pods(), pods(1, 3, 0, 0), "pods are counted where the job runs");
    assert_eq!(training.job.pods, pods(0, 0, 0, 0));
    assert!(model.jobs.iter().all(|j| j.key.cluster == "manager"), "copies are not rows of their own");

    let dispatching = row(&model, "manager", "dispatching");
    let states: Vec<(&str, MirrorState)> =
        dispatching.mirrors.iter().map(|m| (m.cluster.as_str(), m.state())).collect();
    assert_eq!(states, [("worker1", MirrorState::Pending)], "a nominated worker's Workload copy is a mirror");
}

#[test]
fn every_mirror_state_on_the_chosen_worker() {
    let name = "externaljob-train-00000";
    let copy = |shape: fn(&mut Value)| {
        let mut copy = mirror_of(&job(&built_in_kind("ExternalJob"), "train"), name);
        shape(&mut copy);
        Some(copy)
    };
    let remote = |shape: fn(&mut Value)| {
        let mut wl = remote_workload(name);
        shape(&mut wl);
        Some(wl)
    };
    let unreachable = {
        let mut s = on_worker1(None, None, PodCounts::default());
        s.clusters[1].reachable = false;
        s
    };
    let cases = [
        ("unreachable", unreachable, MirrorState::Unreachable),
        ("nothing there", on_worker1(None, None, PodCounts::default()), MirrorState::Missing),
        (
            "Workload pending",
            on_worker1(None, remote(|w| pending(w, "Pending", "no quota", "1")), PodCounts::default()),
            MirrorState::Pending,
        ),
        ("Workload reserved", on_worker1(None, remote(reserved), PodCounts::default()), MirrorState::Reserved),
        ("Workload admitted", on_worker1(None, remote(admitted), PodCounts::default()), MirrorState::Admitted),
        ("copy suspended", on_worker1(copy(|_| {}), remote(admitted), PodCounts::default()), MirrorState::Suspended),
        (
            "copy starting",
            on_worker1(copy(|c| c["spec"]["suspend"] = json!(false)), remote(admitted), pods(2, 0, 0, 0)),
            MirrorState::Starting,
        ),
        (
            "copy running",
            on_worker1(copy(|c| c["spec"]["suspend"] = json!(false)), remote(admitted), pods(0, 2, 0, 0)),
            MirrorState::Running,
        ),
        (
            "copy complete",
            on_worker1(
                copy(|c| set_condition(c, condition("Complete", true, "Completed", ""))),
                None,
                pods(0, 0, 2, 0),
            ),
            MirrorState::Succeeded,
        ),
        (
            "copy failed",
            on_worker1(
                copy(|c| set_condition(c, condition("Failed", true, "BackoffLimitExceeded", ""))),
                None,
                pods(0, 0, 0, 2),
            ),
            MirrorState::Failed,
        ),
    ];
    for (case, snapshot, expected) in cases {
        let model = join(&snapshot);
        let train = row(&model, "manager", "train");
        assert_eq!(train.mirror().map(Mirror::state), Some(expected), "{case}");
        assert_eq!(
            train.status,
            if train.pods().running > 0 { RowStatus::Running } else { RowStatus::Admitted },
            "{case}"
        );
    }
}

#[test]
fn workloads_pair_with_their_own_job_only() {
    let mut snapshot = single(|_, _, _| {});
    let cluster = &mut snapshot.clusters[0];
    // A Workload left by an earlier job of the same name (another uid), and an older one of this job.
    let mut stale_owner = job(&built_in_kind("ExternalJob"), "train");
    stale_owner["metadata"]["uid"] = json!("uid-before");
    cluster.workloads.insert(0, object(workload_for(&stale_owner, "externaljob-train-stale")));
    let mut older = workload_for(&job(&built_in_kind("ExternalJob"), "train"), "externaljob-train-older");
    pending(&mut older, "Pending", "old", "1");
    cluster.workloads.insert(0, object(older));
    let model = join(&snapshot);
    assert_eq!(
        row(&model, "manager", "train").workload.as_ref().map(|w| w.name.as_str()),
        Some("externaljob-train-12345")
    );
}

#[test]
fn worker_jobs_without_a_watched_origin_are_rows_of_their_own() {
    let mut snapshot = sandbox();
    let name = "job-orphan-00000";
    let copy = mirror_of(&job(&built_in_kind("Job"), "orphan"), name);
    let mut remote = remote_workload(name);
    admitted(&mut remote);
    snapshot.clusters[1].jobs.push(job_object(&built_in_kind("Job"), copy));
    snapshot.clusters[1].workloads.push(object(remote));
    let mut component = job(&built_in_kind("Job"), "wrapped-0");
    component["metadata"]["labels"]["kueue-ext.dev/wrapped-job"] = json!("wrapped");
    snapshot.clusters[0].jobs.push(job_object(&built_in_kind("Job"), component));
    let model = join(&snapshot);
    let orphan = row(&model, "worker1", "orphan");
    assert_eq!(orphan.workload.as_ref().map(|w| w.name.as_str()), Some(name), "paired by the prebuilt name");
    assert_eq!(orphan.status, RowStatus::Admitted);
    assert_eq!(crate::tui::columns::cluster(orphan, "manager"), "worker1");
    assert!(!model.jobs.iter().any(|j| j.key.name == "wrapped-0"), "a WrappedJob's component is part of it");
}

#[test]
fn events_of_the_job_its_workload_and_copies_newest_first() {
    let mut snapshot = scene();
    snapshot.clusters[2].events.push(event("Workload", "wrappedjob-training-00000", "Admitted", "on worker2", 40));
    let model = join(&snapshot);
    let reasons: Vec<(&str, &str)> = row(&model, "manager", "training")
        .events
        .iter()
        .map(|e| (e.cluster.as_str(), e.event.reason.as_str()))
        .collect();
    assert_eq!(reasons, [("worker2", "Admitted"), ("manager", "Started"), ("manager", "QuotaReserved")]);
}

#[test]
fn queues_show_quota_usage_and_who_feeds_them() {
    let mut snapshot = sandbox();
    let mut cq = cluster_queue("cluster-queue", "64", "256Gi", "12", Some("multikueue"));
    cq["spec"]["stopPolicy"] = json!("HoldAndDrain");
    cq["status"]["pendingWorkloads"] = json!(3);
    snapshot.clusters[0].cluster_queues = vec![object(cq)];
    let model = join(&snapshot);
    let manager = model.cluster_queue("manager", "cluster-queue").expect("manager queue");
    assert_eq!((manager.pending, manager.stop_policy.as_deref()), (3, Some("HoldAndDrain")));
    assert_eq!(manager.admission_checks, ["multikueue"]);
    assert_eq!(manager.local_queues, ["default/user-queue"]);
    let cpu = manager.quotas.iter().find(|q| q.resource == "cpu").expect("cpu quota");
    assert_eq!((cpu.flavor.as_str(), cpu.nominal, cpu.reserved), ("default-flavor", 64.0, 12.0));
    let memory = manager.quotas.iter().find(|q| q.resource == "memory").expect("memory quota");
    assert_eq!(memory.nominal, 256.0 * 1024f64.powi(3));
    assert_eq!(model.queues.len(), 3, "one per cluster");
    assert!(model.local_queue("worker2", "default", "user-queue").is_some());
}

#[test]
fn clusters_join_watch_health_and_multikueue_connection() {
    let mut snapshot = sandbox();
    snapshot.clusters[0].multikueue_clusters.push(object(multikueue_cluster(
        "worker3",
        false,
        "ClientConnectionFailed",
        "refused",
    )));
    snapshot.clusters[2].reachable = false;
    snapshot.clusters[2].problems.insert("Workload".into(), "connection refused".into());
    snapshot.clusters[0].jobs.push(job_object(&built_in_kind("Job"), job(&built_in_kind("Job"), "a")));
    let model = join(&snapshot);
    let seen: Vec<(&str, bool, Option<bool>, usize)> = model
        .clusters
        .iter()
        .map(|c| (c.name.as_str(), c.reachable, c.connection.as_ref().map(|a| a.is_true()), c.jobs))
        .collect();
    assert_eq!(
        seen,
        [
            ("manager", true, None, 1),
            ("worker1", true, Some(true), 0),
            ("worker2", false, Some(true), 0),
            ("worker3", false, Some(false), 0)
        ]
    );
    assert_eq!(model.cluster("worker3").and_then(|c| c.context.clone()), None, "known only to MultiKueue");
}

#[test]
fn pods_of_a_job_on_one_cluster_are_its_own() {
    let snapshot = single(|s, j, w| {
        j["spec"]["suspend"] = json!(false);
        admitted(w);
        s.clusters[0].pods.insert(ObjectKey::new("ExternalJob", "default", "train"), pods(0, 2, 1, 0));
    });
    let model = join(&snapshot);
    let train = row(&model, "manager", "train");
    assert_eq!((train.status, train.pods()), (RowStatus::Running, pods(0, 2, 1, 0)));
    assert!(train.mirrors.is_empty());
}

#[test]
fn problems_read_as_one_reason_when_all_kinds_agree() {
    let same = BTreeMap::from([("Job".to_string(), "refused".to_string()), ("Pod".to_string(), "refused".to_string())]);
    assert_eq!(problems_text(&same), "refused");
    let mixed =
        BTreeMap::from([("ExternalJob".to_string(), "404".to_string()), ("Pod".to_string(), "forbidden".to_string())]);
    assert_eq!(problems_text(&mixed), "ExternalJob: 404; Pod: forbidden");
}

#[test]
fn a_copys_pod_problem_and_its_clusters_kind_nodes_are_joined() {
    let mut copy = mirror_of(&job(&built_in_kind("ExternalJob"), "train"), "externaljob-train-00000");
    copy["spec"]["suspend"] = json!(false);
    let mut snapshot = on_worker1(Some(copy), None, pods(2, 0, 0, 0));
    let problem = pod_problem(PodReason::ImagePullBackOff, "train-a", Some("main"), "Back-off pulling image");
    snapshot.clusters[1].pod_problems.insert(ObjectKey::new("ExternalJob", "default", "train"), problem.clone());
    snapshot.clusters[0].provider_ids = vec!["gce://project/zone/node".into()];
    snapshot.clusters[1].provider_ids = kind_nodes("kueue-ext-worker1");
    snapshot.clusters[2].provider_ids = [kind_nodes("a"), kind_nodes("b")].concat();
    let model = join(&snapshot);
    let train = row(&model, "manager", "train");
    let copy = train.mirror().and_then(|m| m.job.as_ref()).expect("copy on worker1");
    assert_eq!(copy.pod_problem.as_ref(), Some(&problem), "the problem of the pods where they run");
    assert_eq!(train.job.pod_problem, None, "the manager's copy runs no pod");
    let kinds: Vec<Option<&str>> = model.clusters.iter().map(|c| c.kind_cluster.as_deref()).collect();
    assert_eq!(kinds, [None, Some("kueue-ext-worker1"), None], "nodes of one kind cluster only");
}
