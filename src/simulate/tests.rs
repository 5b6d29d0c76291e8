use serde_json::{Value, json};

use super::*;

fn workload(name: &str, conditions: Value, status: Value) -> Value {
    let mut status = status;
    status["conditions"] = conditions;
    json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "ownerReferences": [{"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
                                          "name": name, "controller": true}]},
        "status": status,
    })
}

fn cond(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message})
}

#[test]
fn replayed_jobs_settle_once_kueue_decided_on_each() {
    let reserved = workload("a", json!([cond("QuotaReserved", "True", "QuotaReserved", "")]), json!({}));
    let waiting = workload("b", json!([cond("QuotaReserved", "False", "Pending", "insufficient quota")]), json!({}));
    let fresh = workload("c", json!([]), json!({}));
    for (expected, workloads, want) in [
        (0, vec![], true),
        (2, vec![reserved.clone(), waiting.clone()], true),
        (3, vec![reserved.clone(), waiting.clone()], false),
        (2, vec![reserved.clone(), fresh.clone()], false),
    ] {
        assert_eq!(settled(expected, &workloads), want, "{expected} of {workloads:?}");
    }
}

#[test]
fn a_job_is_decided_once_admitted_or_held_for_a_reason_other_than_preemption_under_way() {
    let case = |conditions: Value| decided(&workload("x", conditions, json!({})));
    assert!(case(json!([cond("QuotaReserved", "True", "", ""), cond("Admitted", "True", "Admitted", "")])));
    assert!(case(json!([cond("QuotaReserved", "False", "Pending", "couldn't assign flavors")])));
    let preempting =
        "insufficient unused quota for cpu in flavor f, 1 more needed. Pending the preemption of 1 workload(s)";
    assert!(!case(json!([cond("QuotaReserved", "False", "Pending", preempting)])));
    assert!(!case(json!([cond("QuotaReserved", "False", "WaitingForPreemptedWorkloads", "")])));
    assert!(!case(json!([cond("QuotaReserved", "True", "", "")])), "MultiKueue's check still pending");
    assert!(!case(json!([])));
}

#[test]
fn preemptions_are_named_by_the_jobs_preempted_for_this_job_only() {
    let evicted =
        |name: &str, message: &str| workload(name, json!([cond("Evicted", "True", "Preempted", message)]), json!({}));
    let ours =
        "Preempted to accommodate a workload (UID: wl-1, JobUID: job-1) due to prioritization in the ClusterQueue";
    let theirs =
        "Preempted to accommodate a workload (UID: wl-2, JobUID: job-2) due to prioritization in the ClusterQueue";
    assert_eq!(preemptor(&evicted("low", ours)), Some(("wl-1".into(), "job-1".into())));
    let all = vec![
        ("manager".to_string(), evicted("low", ours)),
        ("worker1".to_string(), evicted("remote", ours)),
        ("manager".to_string(), evicted("other", theirs)),
        ("manager".to_string(), evicted("old", ours)),
        ("manager".to_string(), workload("fine", json!([]), json!({}))),
    ];
    assert_eq!(
        preempted_by("job-1", "wl-1", &all, &["uid-old".into()]),
        ["externaljob.kueue-ext.dev/default/low", "externaljob.kueue-ext.dev/default/remote on worker1"]
    );
    assert_eq!(preempted_by("", "wl-2", &all, &[]), ["externaljob.kueue-ext.dev/default/other"]);
}

#[test]
fn an_outcome_reads_as_one_sentence() {
    let admitted = workload(
        "a",
        json!([cond("QuotaReserved", "True", "", ""), cond("Admitted", "True", "Admitted", "")]),
        json!({"clusterName": "worker2", "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "f", "memory": "f"}}]}}),
    );
    let out =
        outcome("externaljob.kueue-ext.dev/a", "default", "a.yaml", Some(&admitted), vec!["job/default/low".into()]);
    assert_eq!(out.flavors, BTreeMap::from([("main".to_string(), vec!["f".to_string()])]));
    assert_eq!(out.sentence(), "admitted on worker2 with flavor f; preempts job/default/low");

    let two = workload(
        "b",
        json!([cond("Admitted", "True", "Admitted", "")]),
        json!({"admission": {"podSetAssignments": [
            {"name": "driver", "flavors": {"cpu": "on-demand"}}, {"name": "workers", "flavors": {"cpu": "spot"}}]}}),
    );
    assert_eq!(
        outcome("j", "default", "", Some(&two), vec![]).sentence(),
        "admitted with flavors driver: on-demand, workers: spot"
    );

    let held =
        workload("c", json!([cond("QuotaReserved", "False", "Pending", "insufficient quota for cpu")]), json!({}));
    let out = outcome("j", "default", "", Some(&held), vec![]);
    assert!(!out.admitted);
    assert_eq!(out.sentence(), "not admitted: Pending: insufficient quota for cpu");

    let checking = workload(
        "d",
        json!([cond("QuotaReserved", "True", "", ""), cond("Admitted", "False", "NoChecks", "waiting for checks")]),
        json!({}),
    );
    assert_eq!(
        outcome("j", "default", "", Some(&checking), vec![]).sentence(),
        "not admitted: NoChecks: waiting for checks"
    );
    assert_eq!(outcome("j", "default", "", None, vec![]).reason.as_deref(), Some("NoWorkload"));
}

#[test]
fn the_report_is_admitted_only_when_every_job_is() {
    let admitted = Outcome { admitted: true, ..Outcome::default() };
    let mut report = Report { jobs: vec![admitted.clone(), admitted], ..Report::default() };
    assert!(report.all_admitted());
    report.jobs.push(Outcome::default());
    assert!(!report.all_admitted());
}
