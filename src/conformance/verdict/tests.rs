use serde_json::json;

use super::*;
use crate::api::kueue::AdmissionCheckState;
use crate::integrations::registry::KindRegistry;

fn job(spec: Value, status: Value) -> ConfiguredJob {
    let integration = KindRegistry::built_in().find("Job.v1.batch").unwrap().description().clone();
    let object = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "sample", "namespace": "ns", "uid": "uid-1"},
        "spec": spec, "status": status,
    });
    ConfiguredJob::new(object, integration).unwrap()
}

fn suspended_job() -> ConfiguredJob {
    job(json!({"suspend": true, "parallelism": 2}), json!({}))
}

fn running_job() -> ConfiguredJob {
    job(json!({"suspend": false, "parallelism": 2}), json!({"active": 2}))
}

fn workload(name: &str, owner_uid: Option<&str>, conditions: Value) -> Workload {
    let owners = owner_uid.map_or_else(
        || json!([]),
        |uid| json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "sample", "uid": uid, "controller": true}]),
    );
    serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": owners},
        "spec": {"podSets": [{"name": "main", "count": 2, "template": {"spec": {"containers": [
            {"name": "main", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
        ]}}}]},
        "status": {"conditions": conditions, "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "f"}, "count": 2}
        ]}},
    }))
    .unwrap()
}

fn condition(type_: &str, status: &str, reason: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": ""})
}

fn admitted() -> Value {
    json!([condition("QuotaReserved", "True", "QuotaReserved"), condition("Admitted", "True", "Admitted")])
}

fn pod(name: &str, pod_set: Option<&str>, cpu: &str, node_selector: Value, phase: &str) -> Pod {
    let labels = pod_set.map_or_else(|| json!({}), |p| json!({PODSET_LABEL: p}));
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"nodeSelector": node_selector, "containers": [
            {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}
        ]},
        "status": {"phase": phase},
    }))
    .unwrap()
}

fn kwok_pod(name: &str) -> Pod {
    pod(name, Some("main"), "100m", json!({"type": "kwok"}), "Running")
}

fn kueue_name() -> String {
    crate::jobframework::naming::workload_name("Job", "batch", "sample", "uid-1")
}

#[test]
fn a_job_created_running_is_named_with_its_suspend_field() {
    assert_eq!(suspended_on_create(&suspended_job()), Ok(()));
    let evidence = suspended_on_create(&job(json!({"parallelism": 2}), json!({}))).unwrap_err();
    assert_eq!(evidence.observed, "spec.suspend = (absent)");
    assert!(evidence.expected.starts_with("spec.suspend = true in the object as created"), "{}", evidence.expected);
    assert_eq!(evidence.objects, ["Job ns/sample"]);
}

#[test]
fn one_workload_wants_kueues_name_and_the_job_as_controller() {
    let job = suspended_job();
    let good = workload(&kueue_name(), Some("uid-1"), json!([]));
    assert_eq!(one_workload(&job, std::slice::from_ref(&good)), Ok(()));
    let cases: [(&str, Vec<Workload>, &str); 4] = [
        ("none", vec![], "0 Workload(s) in the namespace: none"),
        (
            "wrong name",
            vec![workload("sample", Some("uid-1"), json!([]))],
            "1 Workload(s) in the namespace: sample (controller Job sample uid uid-1)",
        ),
        (
            "not owned",
            vec![workload(&kueue_name(), None, json!([]))],
            &format!("1 Workload(s) in the namespace: {} (no controller)", kueue_name()),
        ),
        (
            "two",
            vec![good.clone(), workload("extra", Some("uid-1"), json!([]))],
            &format!(
                "2 Workload(s) in the namespace: {} (controller Job sample uid uid-1), extra (controller Job sample uid uid-1)",
                kueue_name()
            ),
        ),
    ];
    for (case, workloads, observed) in cases {
        let evidence = one_workload(&job, &workloads).unwrap_err();
        assert_eq!(evidence.observed, observed, "{case}");
        assert!(evidence.expected.contains(&kueue_name()), "{case}");
    }
}

#[test]
fn pods_match_pod_sets_by_label_count_and_requests() {
    let wl = workload("wl", Some("uid-1"), admitted());
    assert_eq!(pod_sets_match(&wl, &[kwok_pod("a"), pod("b", Some("main"), "0.1", json!({}), "Running")]), Ok(()));

    let too_few = pod_sets_match(&wl, &[kwok_pod("a")]).unwrap_err();
    assert_eq!(too_few.observed, "pod set main: 2 pod(s) admitted, 1 labelled kueue.x-k8s.io/podset=main");
    assert!(!too_few.settled, "the second pod may still come");
    assert!(too_few.expected.contains("main × 2"), "{}", too_few.expected);

    let unlabelled = pod_sets_match(&wl, &[kwok_pod("a"), pod("b", None, "100m", json!({}), "Running")]).unwrap_err();
    assert_eq!(
        unlabelled.observed,
        "pod set main: 2 pod(s) admitted, 1 labelled kueue.x-k8s.io/podset=main\nPod ns/b has no kueue.x-k8s.io/podset label"
    );
    assert!(unlabelled.settled);

    let bigger = pod_sets_match(&wl, &[kwok_pod("a"), pod("b", Some("main"), "1", json!({}), "Running")]).unwrap_err();
    assert_eq!(
        bigger.observed,
        "Pod ns/b asks main: cpu=1,memory=128Mi, pod set main asks main: cpu=100m,memory=128Mi"
    );
}

#[test]
fn started_wants_the_flavors_labels_on_every_running_pod() {
    let labels = BTreeMap::from([("type".to_string(), "kwok".to_string())]);
    let job = running_job();
    assert_eq!(started_with_flavor(&job, "f", &labels, &[kwok_pod("a"), kwok_pod("b")]), Ok(()));

    let evidence =
        started_with_flavor(&job, "f", &labels, &[kwok_pod("a"), pod("b", Some("main"), "100m", json!({}), "Running")])
            .unwrap_err();
    assert_eq!(evidence.observed, "Pod ns/b has nodeSelector {}");
    assert!(evidence.settled);
    assert!(evidence.expected.contains("nodeSelector type=kwok (nodeLabels of ResourceFlavor f)"));

    let pending = pod("c", Some("main"), "100m", json!({"type": "kwok"}), "Pending");
    let pending = started_with_flavor(&job, "f", &labels, &[pending]).unwrap_err();
    assert_eq!((pending.observed.as_str(), pending.settled), ("Pod ns/c is Pending", false));
    assert_eq!(
        started_with_flavor(&suspended_job(), "f", &labels, &[]).unwrap_err().observed,
        "the job is still suspended\nno pod created"
    );
}

#[test]
fn pods_ready_shows_the_condition_it_found() {
    let ready = workload("wl", Some("uid-1"), json!([condition("PodsReady", "True", "Started")]));
    assert_eq!(pods_ready(&ready, &[]), Ok(()));
    let waiting = workload("wl", Some("uid-1"), json!([condition("PodsReady", "False", "WaitForStart")]));
    assert_eq!(pods_ready(&waiting, &[]).unwrap_err().observed, "PodsReady=False reason \"WaitForStart\" message \"\"");
    assert_eq!(pods_ready(&workload("wl", None, json!([])), &[]).unwrap_err().observed, "no PodsReady condition");
}

#[test]
fn pods_the_scheduler_could_not_place_are_named_with_its_reason() {
    let waiting = workload("wl", Some("uid-1"), json!([condition("PodsReady", "False", "WaitForStart")]));
    let mut unplaced = pod("b", Some("main"), "100m", json!({}), "Pending");
    unplaced.status.as_mut().unwrap().conditions = Some(vec![
        serde_json::from_value(json!({
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
        }))
        .unwrap(),
    ]);
    let pods = [kwok_pod("a"), unplaced];
    assert_eq!(
        pods_ready(&waiting, &pods).unwrap_err().observed,
        "PodsReady=False reason \"WaitForStart\" message \"\"; 1 pod(s) not scheduled: \
         b (0/1 nodes are available: 1 Insufficient cpu.)"
    );
}

#[test]
fn a_stop_that_leaves_the_node_selector_shows_it_in_the_diff() {
    let before = json!({"suspend": true, "template": {"spec": {"containers": []}}});
    let restored = job(before.clone(), json!({}));
    assert_eq!(stopped_and_restored(&restored, &before), Ok(()));

    let kept = job(
        json!({"suspend": true, "template": {"spec": {"containers": [], "nodeSelector": {"type": "kwok"}}}}),
        json!({}),
    );
    let evidence = stopped_and_restored(&kept, &before).unwrap_err();
    assert_eq!(evidence.observed, "suspended, but 1 field(s) of its spec differ from before admission");
    assert_eq!(
        evidence.diff.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [r#"spec.template.spec.nodeSelector: (absent) → {"type":"kwok"}"#]
    );

    let running = job(json!({"suspend": false, "template": {"spec": {"containers": []}}}), json!({}));
    assert_eq!(stopped_and_restored(&running, &before).unwrap_err().observed, "the job still runs (not suspended)");
}

#[test]
fn quota_given_back_while_pods_run_names_the_pods() {
    let released = workload("wl", Some("uid-1"), json!([condition("QuotaReserved", "False", "Pending")]));
    assert!(!holds_quota(&released));
    let done = pod("a", Some("main"), "100m", json!({}), "Succeeded");
    assert_eq!(quota_released_after_pods(&released, &[done]), Ok(()));
    let mut deleting = kwok_pod("b");
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
    let evidence = quota_released_after_pods(&released, &[kwok_pod("a"), deleting]).unwrap_err();
    assert_eq!(
        evidence.observed,
        "quota released while 2 pod(s) remained: Pod ns/a (Running), Pod ns/b (Running, being deleted)"
    );
    assert_eq!(evidence.objects, ["Workload ns/wl"]);
}

#[test]
fn finished_wants_the_workload_to_agree_with_the_job() {
    let complete = job(
        json!({"suspend": false}),
        json!({"conditions": [{"type": "Complete", "status": "True", "message": "done"}]}),
    );
    let finished_wl = workload("wl", Some("uid-1"), json!([condition("Finished", "True", "Succeeded")]));
    assert_eq!(finished(&complete, &finished_wl), Ok(()));

    let evidence = finished(&complete, &workload("wl", Some("uid-1"), admitted())).unwrap_err();
    assert_eq!(evidence.expected, "Workload ns/wl: Finished=True reason Succeeded, as the job succeeded (\"done\")");
    assert_eq!(evidence.observed, "no Finished condition");

    let failed_reason = workload("wl", Some("uid-1"), json!([condition("Finished", "True", "Failed")]));
    assert!(finished(&complete, &failed_reason).is_err());
    assert_eq!(
        finished(&running_job(), &finished_wl).unwrap_err().observed,
        "not finished by its description; status: {\"active\":2}"
    );
}

#[test]
fn a_prebuilt_workload_must_be_the_only_one_adopted_and_admitted() {
    let job = running_job();
    let adopted = workload("prebuilt", Some("uid-1"), admitted());
    assert_eq!(prebuilt_adopted(&job, "prebuilt", std::slice::from_ref(&adopted)), Ok(()));

    let duplicated = prebuilt_adopted(
        &job,
        "prebuilt",
        &[workload("prebuilt", None, json!([])), workload(&kueue_name(), Some("uid-1"), admitted())],
    )
    .unwrap_err();
    assert_eq!(
        duplicated.observed,
        format!(
            "Workload prebuilt not adopted: no controller\nnot running yet: Workload prebuilt admitted: false, job \
             suspended: false\na second Workload {} (controller Job sample uid uid-1)",
            kueue_name()
        )
    );

    let out_of_sync = workload("prebuilt", Some("uid-1"), json!([condition("Finished", "True", "OutOfSync")]));
    assert_eq!(
        prebuilt_adopted(&job, "prebuilt", &[out_of_sync]).unwrap_err().observed,
        "Workload prebuilt: Finished=True reason \"OutOfSync\" message \"\""
    );
    assert_eq!(prebuilt_adopted(&job, "prebuilt", &[]).unwrap_err().observed, "Workload prebuilt is gone");
}

#[test]
fn managed_by_must_name_multikueue() {
    let handed = job(json!({"suspend": true, "managedBy": MULTIKUEUE_CONTROLLER}), json!({}));
    assert_eq!(managed_by_multikueue(&handed), Ok(()));
    assert_eq!(managed_by_multikueue(&suspended_job()).unwrap_err().observed, "spec.managedBy = (absent)");
}

#[test]
fn the_managers_job_must_end_successfully_and_says_where_it_ran() {
    let complete = job(json!({}), json!({"conditions": [{"type": "Complete", "status": "True"}]}));
    assert_eq!(finished_from_worker(&complete, None), Ok(()));
    let mut wl = workload("wl", Some("uid-1"), admitted());
    wl.status.as_mut().unwrap().cluster_name = Some("worker2".into());
    let evidence = finished_from_worker(&running_job(), Some(&wl)).unwrap_err();
    assert_eq!(evidence.observed, "job status: {\"active\":2}; Workload ns/wl runs on worker2");
    let failed = job(json!({}), json!({"conditions": [{"type": "Failed", "status": "True"}]}));
    assert_eq!(finished_from_worker(&failed, None).unwrap_err().observed, "job status: Failed=True; no Workload");
}

#[test]
fn a_workload_never_dispatched_quotes_its_admission_checks() {
    let mut wl = workload("wl", Some("uid-1"), admitted());
    wl.status.as_mut().unwrap().admission_checks = vec![
        AdmissionCheckState {
            name: "multikueue".into(),
            state: "Rejected".into(),
            message: "Expecting .spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"\"".into(),
            ..Default::default()
        },
        AdmissionCheckState { name: "other".into(), state: "Ready".into(), ..Default::default() },
    ];
    let evidence = finished_from_worker(&running_job(), Some(&wl)).unwrap_err();
    assert_eq!(
        evidence.observed,
        "job status: {\"active\":2}; Workload ns/wl not dispatched to a worker (admission check multikueue is \
         Rejected: \"Expecting .spec.managedBy to be \\\"kueue.x-k8s.io/multikueue\\\" not \\\"\\\"\")"
    );
}
