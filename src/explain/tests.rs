//! Every "why is my job not running" answer, from fixtures joined by the real model.

mod next_steps;
mod place;
mod pods;

use serde_json::{Value, json};

use super::explain;
use crate::model::fixtures::*;
use crate::model::join;
use crate::model::snapshot::Snapshot;

fn explain_job(snapshot: &Snapshot, name: &str) -> Vec<String> {
    let model = join(snapshot);
    let row = model.jobs.iter().find(|j| j.key.name == name && j.key.cluster == "manager").expect("job row");
    explain(row, &model)
}

#[test]
fn a_job_without_queue_is_not_managed() {
    let snapshot = single(|_, job, wl| {
        job["metadata"]["labels"] = json!({});
        *wl = Value::Null;
    });
    assert!(explain_job(&snapshot, "train")[0].contains("names no queue"));
}

#[test]
fn a_missing_local_queue_and_workload_are_named() {
    let snapshot = single(|s, _, wl| {
        s.clusters[0].local_queues.clear();
        *wl = Value::Null;
    });
    let lines = explain_job(&snapshot, "train");
    assert!(lines[0].contains("LocalQueue user-queue does not exist in namespace default"), "{lines:?}");
    assert_eq!(
        lines[1],
        "next: create LocalQueue user-queue in namespace default (its spec.clusterQueue names the ClusterQueue), or \
         resubmit the job with a kueue.x-k8s.io/queue-name that exists."
    );
    assert!(lines[2].contains("has no Workload yet"), "{lines:?}");
}

#[test]
fn an_unreadable_local_queue_is_not_called_missing() {
    let snapshot = single(|s, _, _| {
        s.clusters[0].local_queues.clear();
        s.clusters[0].problems.insert("LocalQueue".into(), "forbidden".into());
    });
    let lines = explain_job(&snapshot, "train");
    assert!(!lines.iter().any(|l| l.contains("does not exist")), "{lines:?}");
}

#[test]
fn stopped_and_inactive_queues_are_named_with_kueues_reason() {
    let stopped = single(|s, _, w| {
        let mut lq = local_queue("default", "user-queue", "cluster-queue");
        lq["spec"]["stopPolicy"] = json!("Hold");
        set_condition(&mut lq, condition("Active", false, "Stopped", "LocalQueue is stopped"));
        s.clusters[0].local_queues = vec![object(lq)];
        pending(w, "Suspended", "LocalQueue user-queue is inactive", "1");
    });
    let lines = explain_job(&stopped, "train");
    assert!(lines[0].starts_with("LocalQueue user-queue is stopped (stopPolicy Hold)"), "{lines:?}");

    let inactive = single(|s, _, w| {
        let mut cq = cluster_queue("cluster-queue", "4", "16Gi", "0", Some("missing-check"));
        let why = "Can't admit new workloads: references missing AdmissionCheck(s): [missing-check]";
        set_condition(&mut cq, condition("Active", false, "AdmissionCheckNotFound", why));
        s.clusters[0].cluster_queues = vec![object(cq)];
        pending(w, "Suspended", "ClusterQueue cluster-queue is inactive", "1");
    });
    let lines = explain_job(&inactive, "train");
    assert_eq!(
        lines[0],
        "ClusterQueue cluster-queue is inactive (AdmissionCheckNotFound): Can't admit new workloads: references \
         missing AdmissionCheck(s): [missing-check]."
    );
}

#[test]
fn waiting_for_quota_quotes_kueue_and_measures_the_queue() {
    let snapshot = single(|s, _, w| {
        s.clusters[0].cluster_queues = vec![object(cluster_queue("cluster-queue", "4", "16Gi", "3", None))];
        let message = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor \
                       default-flavor, 2 more needed";
        pending(w, "Pending", message, "3");
    });
    assert_eq!(
        explain_job(&snapshot, "train"),
        [
            "Workload externaljob-train-12345 is waiting for quota in queue user-queue: couldn't assign flavors to \
             pod set main: insufficient unused quota for cpu in flavor default-flavor, 2 more needed.",
            "Kueue: cpu in flavor default-flavor is short by 2 while other Workloads hold it.",
            "ClusterQueue cluster-queue: the job asks 3 cpu; default-flavor has 1 free of 4 (3 reserved), short by 2.",
            "next: wait until other Workloads release 2 cpu in flavor default-flavor, or raise the nominalQuota of \
             ClusterQueue cluster-queue.",
        ]
    );
}

#[test]
fn a_job_larger_than_the_queue_can_never_fit() {
    let snapshot = single(|_, _, w| {
        let message = "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, \
                       previously considered podsets requests (0) + current podset request (2k) > maximum capacity (4)";
        pending(w, "ExceedsMaxQuota", message, "2000");
    });
    let lines = explain_job(&snapshot, "train");
    assert!(lines[0].contains("is waiting for quota in queue user-queue"), "{lines:?}");
    assert!(
        lines.contains(
            &"Kueue: cpu in flavor default-flavor can never fit: the most the ClusterQueue can give is 4.".to_string()
        ),
        "{lines:?}"
    );
    assert!(
        lines.contains(
            &"ClusterQueue cluster-queue: the job asks 2000 cpu; default-flavor has 4 in all, less than asked."
                .to_string()
        ),
        "{lines:?}"
    );
}

#[test]
fn pending_admission_checks_name_inactive_multikueue_workers() {
    let mut snapshot = sandbox();
    snapshot.clusters[0].multikueue_clusters[1] = object(multikueue_cluster(
        "worker2",
        false,
        "ClientConnectionFailed",
        "dial tcp 127.0.0.1:1: connect: connection refused",
    ));
    dispatched(
        &mut snapshot,
        &built_in_kind("Job"),
        "train",
        |_, w| {
            reserved(w);
            check(w, "multikueue", "Pending", "");
        },
        None,
    );
    let lines = explain_job(&snapshot, "train");
    assert_eq!(
        lines,
        [
            "Quota is reserved in ClusterQueue cluster-queue.",
            "Admission check multikueue is Pending.",
            "MultiKueue cannot use worker worker2 (ClientConnectionFailed): dial tcp 127.0.0.1:1: connect: connection refused.",
            "next: fix MultiKueue's connection to worker2: the kubeconfig Secret of its MultiKueueCluster must reach \
             that cluster's API server (kubectl describe multikueuecluster worker2).",
        ]
    );

    let mut inactive = admission_check("multikueue", "kueue.x-k8s.io/multikueue");
    set_condition(&mut inactive, condition("Active", false, "NoUsableClusters", "No usable clusters"));
    snapshot.clusters[0].admission_checks = vec![object(inactive)];
    let lines = explain_job(&snapshot, "train");
    assert!(
        lines.contains(&"AdmissionCheck multikueue is not active (NoUsableClusters): No usable clusters.".to_string()),
        "{lines:?}"
    );
}

#[test]
fn the_copy_on_a_nominated_worker_says_why_it_waits_there() {
    let lines = explain_job(&scene(), "dispatching");
    assert!(lines.contains(&"Admission check multikueue is Pending.".to_string()), "{lines:?}");
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "On worker1 its copy waits for quota: couldn't assign flavors to pod set main: insufficient unused quota \
             for cpu in flavor default-flavor, 8 more needed.",
            "next: wait until other Workloads release 8 cpu in flavor default-flavor, or raise the nominalQuota of \
             ClusterQueue cluster-queue on worker1.",
        ]
    );
}

#[test]
fn an_admitted_job_is_followed_to_its_worker_and_pods() {
    let lines = explain_job(&scene(), "training");
    assert_eq!(
        lines,
        ["Admitted; MultiKueue runs it on worker cluster worker2.", "On worker2, pods: 1 pending, 3 running."]
    );
}

#[test]
fn the_copy_on_the_chosen_worker_tells_its_own_state() {
    let name = "externaljob-train-00000";
    let unreachable = {
        let mut s = on_worker1(None, None, pods(0, 0, 0, 0));
        s.clusters[1].reachable = false;
        s.clusters[1].problems.insert("Workload".into(), "connection refused".into());
        s
    };
    let suspended_copy = {
        let job = job(&built_in_kind("ExternalJob"), "train");
        let mut remote = remote_workload(name);
        pending(
            &mut remote,
            "Pending",
            "insufficient unused quota for cpu in flavor default-flavor, 1 more needed",
            "1",
        );
        on_worker1(Some(mirror_of(&job, name)), Some(remote), pods(0, 0, 0, 0))
    };
    let remote_admitted = {
        let mut remote = remote_workload(name);
        admitted(&mut remote);
        on_worker1(None, Some(remote), pods(0, 0, 0, 0))
    };
    let cases = [
        (unreachable, vec!["Worker worker1 cannot be read from here (connection refused), so its copy is not shown."]),
        (
            suspended_copy,
            vec![
                "The copy on worker1 is still suspended.",
                "On worker1 its copy waits for quota: insufficient unused quota for cpu in flavor default-flavor, 1 more needed.",
                "next: wait until other Workloads release 1 cpu in flavor default-flavor, or raise the nominalQuota of \
                 ClusterQueue cluster-queue on worker1.",
            ],
        ),
        (remote_admitted, vec!["Its Workload is admitted on worker1; MultiKueue creates the job copy there next."]),
        (on_worker1(None, None, pods(0, 0, 0, 0)), vec!["Its copy on worker1 does not exist yet."]),
    ];
    for (snapshot, expected) in cases {
        let lines = explain_job(&snapshot, "train");
        assert_eq!(lines[0], "Admitted; MultiKueue runs it on worker cluster worker1.");
        assert_eq!(lines[1..], expected, "{lines:?}");
    }
}

#[test]
fn a_copy_out_of_sync_on_its_worker_is_named_as_why_the_job_waits() {
    let stuck = single(|_, _, w| {
        let message = "Previously: Evicted due to AdmissionCheck in Retry state: \"multikueue\" (Remote workload on \
                       worker cluster \"worker1\" is out of sync with its user job, resetting for re-dispatch)";
        set_condition(w, condition("Evicted", false, "QuotaReserved", message));
    });
    let lines = explain_job(&stuck, "train");
    let said = lines
        .iter()
        .find(|l| l.starts_with("Its copy on worker1 was out of sync"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(said.contains("marked it Finished (reason OutOfSync)"), "{said}");
    assert!(said.contains("kubectl get workload externaljob-train-12345 -o yaml"), "{said}");
    let fine = explain_job(&single(|_, _, _| {}), "train");
    assert!(!fine.iter().any(|l| l.contains("out of sync")), "{fine:?}");
}

#[test]
fn evictions_say_why_and_when_the_job_returns() {
    let timeout = single(|_, _, w| {
        set_condition(
            w,
            condition(
                "Evicted",
                true,
                "PodsReadyTimeout",
                "Exceeded the PodsReady timeout default/externaljob-train-12345",
            ),
        );
        set_condition(w, condition("QuotaReserved", false, "Pending", "Evicted by PodsReadyTimeout"));
        w["status"]["requeueState"] = json!({"count": 2, "requeueAt": "2026-01-01T00:10:00Z"});
    });
    let lines = explain_job(&timeout, "train");
    assert_eq!(
        lines[0],
        "Workload externaljob-train-12345 was evicted (PodsReadyTimeout): Exceeded the PodsReady timeout default/externaljob-train-12345."
    );
    assert_eq!(
        lines[1],
        "Its pods were not all ready within the waitForPodsReady timeout; Kueue released its quota and requeues it (requeue 2, at 2026-01-01T00:10:00Z)."
    );

    let preempted = single(|_, _, w| {
        set_condition(
            w,
            condition("Evicted", true, "Preempted", "Preempted to accommodate a higher priority Workload"),
        );
        set_condition(
            w,
            condition(
                "Preempted",
                true,
                "InClusterQueue",
                "Preempted to accommodate a workload (UID: u) due to prioritization in the ClusterQueue",
            ),
        );
    });
    let lines = explain_job(&preempted, "train");
    assert!(lines[0].contains("was evicted (Preempted)"), "{lines:?}");
    assert!(lines[1].starts_with("Preempted InClusterQueue: Preempted to accommodate"), "{lines:?}");
}

#[test]
fn admitted_jobs_on_one_cluster_report_pods_and_readiness() {
    let snapshot = single(|s, j, w| {
        j["spec"]["suspend"] = json!(false);
        admitted(w);
        set_condition(w, condition("PodsReady", false, "WaitForStart", "Not all pods are ready or succeeded"));
        s.clusters[0]
            .pods
            .insert(crate::model::snapshot::ObjectKey::new("ExternalJob", "default", "train"), pods(1, 1, 0, 0));
    });
    assert_eq!(
        explain_job(&snapshot, "train"),
        [
            "Admitted and running; pods: 1 pending, 1 running.",
            "Pods are not ready yet (WaitForStart): Not all pods are ready or succeeded; Kueue evicts the job if they are not ready within the waitForPodsReady timeout.",
        ]
    );
    let suspended = single(|_, _, w| admitted(w));
    assert_eq!(
        explain_job(&suspended, "train").last().map(String::as_str),
        Some("Admitted, but the job is still suspended: the integration's controller starts it next.")
    );
    let unevaluated = single(|_, _, _| {});
    assert_eq!(
        explain_job(&unevaluated, "train"),
        [
            "Workload externaljob-train-12345 has not been evaluated by Kueue yet (is Kueue running?).",
            "next: wait for Kueue's scheduler; if this lasts, check Kueue (kubectl kueue-ext doctor).",
        ]
    );
}

#[test]
fn endings_are_reported_with_the_jobs_message() {
    let done = single(|_, j, _| set_condition(j, condition("Complete", true, "Completed", "All pods succeeded")));
    assert_eq!(
        explain_job(&done, "train"),
        ["ExternalJob default/train has finished: Succeeded (All pods succeeded)."]
    );
}

#[test]
fn a_wrapped_job_ends_by_its_phase() {
    let unhealthy = condition("Unhealthy", true, "FailedComponent", "component 0 (Job train-0) failed");
    let cases = [
        (
            "Succeeded",
            None,
            Some("WrappedJob default/train has finished: Succeeded (WrappedJob finished successfully)."),
        ),
        (
            "Failed",
            Some(unhealthy.clone()),
            Some("WrappedJob default/train has finished: Failed (component 0 (Job train-0) failed)."),
        ),
        ("Failed", None, Some("WrappedJob default/train has finished: Failed (WrappedJob failed).")),
        ("Resetting", Some(unhealthy), None),
    ];
    for (phase, condition, expected) in cases {
        let mut snapshot = Snapshot { clusters: vec![single_cluster()] };
        let mut job = job(&built_in_kind("WrappedJob"), "train");
        job["spec"]["components"] = json!([]);
        job["status"]["phase"] = json!(phase);
        if let Some(c) = condition {
            set_condition(&mut job, c);
        }
        snapshot.clusters[0].jobs.push(job_object(&built_in_kind("WrappedJob"), job));
        let first = explain_job(&snapshot, "train").into_iter().next();
        match expected {
            Some(line) => assert_eq!(first.as_deref(), Some(line), "{phase}"),
            None => assert!(!first.unwrap_or_default().contains("has finished"), "{phase}"),
        }
    }
}

#[test]
fn a_job_another_controller_manages_is_said_to_be_run_by_it() {
    let by = "example.com/some-controller";
    let managed = |shape: fn(&mut Value)| {
        single(move |_, j, w| {
            j["spec"]["managedBy"] = json!(by);
            shape(w);
        })
    };
    let not_ours =
        "ExternalJob default/train is managed by example.com/some-controller: kueue-ext does not run its pods.";
    assert_eq!(
        explain_job(&managed(admitted), "train"),
        ["Admitted; example.com/some-controller is to run it.", not_ours]
    );
    let waiting = managed(|w| pending(w, "Pending", "insufficient unused quota for cpu in flavor default-flavor", "1"));
    let lines = explain_job(&waiting, "train");
    assert!(lines[0].contains("is waiting for quota"), "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some(not_ours), "{lines:?}");

    let own = single(|_, j, w| {
        j["spec"]["managedBy"] = json!("kueue-ext.dev/controller");
        admitted(w);
    });
    assert_eq!(
        explain_job(&own, "train"),
        ["Admitted, but the job is still suspended: the integration's controller starts it next."],
        "the kind's own controller is as unset"
    );

    let mut batch = Snapshot { clusters: vec![single_cluster()] };
    let mut job = job(&built_in_kind("Job"), "train");
    job["spec"]["managedBy"] = json!(by);
    batch.clusters[0].jobs.push(job_object(&built_in_kind("Job"), job));
    assert_eq!(
        explain_job(&batch, "train").last().map(String::as_str),
        Some(
            "Job default/train is managed by example.com/some-controller: kube-controller-manager does not run its pods."
        )
    );
}

#[test]
fn a_waiting_multikueue_job_names_the_workers_that_could_take_it() {
    let mut snapshot = sandbox();
    snapshot.clusters[1].cluster_queues = vec![object(cluster_queue("cluster-queue", "32", "128Gi", "30", None))];
    for (name, cpu) in [("fits-one", "8"), ("fits-none", "100")] {
        dispatched(
            &mut snapshot,
            &built_in_kind("ExternalJob"),
            name,
            |_, w| pending(w, "Pending", "couldn't assign flavors to pod set main", cpu),
            None,
        );
    }
    let lines = explain_job(&snapshot, "fits-one");
    assert!(
        lines.contains(
            &"Workers: worker1 cannot now (8 cpu asked, 2 free in ClusterQueue cluster-queue); worker2 can fit it now \
              (ClusterQueue cluster-queue)."
                .to_string()
        ),
        "{lines:?}"
    );
    // Once the manager reserves quota, the admission says what the job holds.
    dispatched(
        &mut snapshot,
        &built_in_kind("ExternalJob"),
        "dispatching",
        |_, w| {
            reserved(w);
            w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = json!({"cpu": "8"});
            check(w, "multikueue", "Pending", "");
        },
        None,
    );
    let lines = explain_job(&snapshot, "dispatching");
    assert!(lines.iter().any(|l| l.starts_with("Workers: worker1 cannot now (8 cpu asked")), "{lines:?}");
    let lines = explain_job(&snapshot, "fits-none");
    assert!(lines.iter().any(|l| l.starts_with("No worker can ever admit it: it asks 100 cpu")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("next: ask for at most 32 cpu")), "{lines:?}");
}
