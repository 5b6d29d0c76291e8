//! End-to-end: `conformance` against real sandboxes. It passes for this project's kinds and for
//! Kueue's own batch/v1 Job (the reference), for batch/v1 Job integrated by configuration alone,
//! on one worker and through MultiKueue; and it fails, naming the check and the evidence, for an
//! integration that breaks the contract. One sandbox per configuration, shared by its kinds.

use std::process::Output;

use std::time::Duration;

use crate::common::{Sandbox, eventually, text};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

const INTEGRATIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/integrations/job-integration.yaml");

/// batch/v1 Job described with a synthetic pod set (requests from an annotation) instead of its
/// pod template: Kueue's admission never reaches the pods, so they run without the flavor's
/// node selector and without their pod-set label.
const BROKEN_INTEGRATIONS: &str = r#"
apiVersion: kueue-ext.dev/v1alpha1
kind: IntegrationConfig
integrations:
- kind: Job.v1.batch
  resource: jobs
  suspend: {path: spec.suspend}
  podSets:
  - name: main
    requests: metadata.annotations[kueue-ext.dev/pod-requests]
    count: spec.parallelism
  managedBy: spec.managedBy
  finished:
    succeeded: {condition: Complete}
    failed: {condition: Failed}
  active: {sum: [status.active], atLeast: 1}
  podsReady: {sum: [status.ready, status.succeeded], atLeast: pods}
"#;

const BROKEN_SAMPLE: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: sample
  annotations: {kueue-ext.dev/pod-requests: "cpu=100m,memory=128Mi"}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata:
      annotations: {kueue-ext.dev/run-duration: 20s}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/sample
        resources: {requests: {cpu: 100m, memory: 128Mi}}
"#;

fn report(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("conformance -o json: {e}\n{}", text(output)))
}

/// `(check, result)` of every check of a JSON report.
fn results(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["check"].as_str().unwrap().to_string(), c["result"].as_str().unwrap().to_string()))
        .collect()
}

fn all_pass(report: &Value) {
    let results = results(report);
    assert_eq!(results.len(), 11, "{report:#}");
    assert!(results.iter().all(|(_, result)| result == "pass"), "{report:#}");
    assert_eq!(report["passed"], true);
}

/// Every namespace a run made is on its way out once it returns.
async fn runs_clean_up(sandbox: &Sandbox, cluster: &str) {
    let namespaces: Api<Namespace> = Api::all(sandbox.client(cluster).await);
    let left: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|n| n.metadata.name.as_deref().unwrap_or_default().starts_with("conformance-"))
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(left.is_empty(), "namespaces of a run left on {cluster}: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn this_projects_kinds_and_kueues_job_conform_on_a_worker_and_through_multikueue() {
    let sandbox = Sandbox::up(&[]);
    for kind in ["ExternalJob.v1alpha1.kueue-ext.dev", "WrappedJob.v1alpha1.kueue-ext.dev"] {
        let output = sandbox.run("conformance", &["--kind", kind, "-o", "json"]);
        let report = report(&output);
        assert!(output.status.success(), "{kind}:\n{}", text(&output));
        all_pass(&report);
        assert_eq!((report["kind"].as_str(), report["description"].as_str()), (Some(kind), Some("built-in")));
        assert_eq!(
            (report["single_cluster"].as_str(), report["multikueue"].as_str()),
            (Some("worker1"), Some("manager"))
        );
    }

    let reference = sandbox.run("conformance", &["--kind", "Job.v1.batch"]);
    let table = String::from_utf8_lossy(&reference.stdout);
    assert!(reference.status.success(), "{}", text(&reference));
    assert!(table.contains("single-cluster checks on worker1, MultiKueue checks on manager"), "{table}");
    assert!(table.contains("\n11 checks: 11 passed, 0 failed, 0 skipped\n"), "{table}");
    for cluster in ["worker1", "worker2", "manager"] {
        runs_clean_up(&sandbox, cluster).await;
    }
}

/// Every object of run `id` (namespaces, queues, flavor, MultiKueue check and config) on `cluster`
/// that is not gone yet.
async fn left_of_run(client: &kube::Client, id: &str) -> Vec<String> {
    let selector = ListParams::default().labels(&format!("kueue-ext.dev/conformance-run={id}"));
    let mut left = Vec::new();
    for (kind, plural) in [
        ("Namespace", "namespaces"),
        ("ClusterQueue", "clusterqueues"),
        ("ResourceFlavor", "resourceflavors"),
        ("AdmissionCheck", "admissionchecks"),
        ("MultiKueueConfig", "multikueueconfigs"),
    ] {
        let (group, version) = if kind == "Namespace" { ("", "v1") } else { ("kueue.x-k8s.io", "v1beta2") };
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: if group.is_empty() { version.into() } else { format!("{group}/{version}") },
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        for object in api.list(&selector).await.unwrap().items {
            left.push(format!("{kind} {}", object.metadata.name.unwrap_or_default()));
        }
    }
    left
}

#[tokio::test(flavor = "multi_thread")]
async fn conformance_runs_on_clusters_named_by_kubeconfig_alone_and_leaves_nothing_there() {
    let sandbox = Sandbox::up(&[]);
    // Someone else's clusters: a kubeconfig of their own, no state dir of this tool.
    let theirs = tempfile::tempdir().unwrap();
    let kubeconfig = theirs.path().join("config");
    std::fs::copy(sandbox.kubeconfig(), &kubeconfig).unwrap();
    let stranger = sandbox.beside();
    let contexts = [
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--context",
        "kueue-ext-manager",
        "--worker-context",
        "worker1=kueue-ext-worker1",
        "--worker-context",
        "kueue-ext-worker2",
    ];
    let run = |extra: &[&str]| stranger.run("conformance", &[&contexts[..], extra].concat());

    let output = run(&["--kind", "ExternalJob.v1alpha1.kueue-ext.dev", "-o", "json"]);
    assert!(output.status.success(), "{}", text(&output));
    let report = report(&output);
    all_pass(&report);
    assert_eq!((report["single_cluster"].as_str(), report["multikueue"].as_str()), (Some("worker1"), Some("manager")));
    let id = report["checks"][0]["namespace"].as_str().unwrap().split('-').nth(1).unwrap().to_string();
    for cluster in ["manager", "worker1", "worker2"] {
        let client = sandbox.client(cluster).await;
        eventually(&format!("run {id} gone from {cluster}"), Duration::from_secs(90), || async {
            let left = left_of_run(&client, &id).await;
            if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
        })
        .await;
    }

    let unknown_worker = stranger.run(
        "conformance",
        &["--kubeconfig", kubeconfig.to_str().unwrap(), "--context", "kueue-ext-manager"][..]
            .iter()
            .chain(&["--worker-context", "elsewhere=kueue-ext-worker1", "--kind", "Job.v1.batch"])
            .copied()
            .collect::<Vec<_>>(),
    );
    assert_eq!(unknown_worker.status.code(), Some(1));
    assert!(
        text(&unknown_worker).contains("the manager (manager) has no MultiKueueCluster \"elsewhere\""),
        "{}",
        text(&unknown_worker)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_job_integrated_by_configuration_conforms_on_a_worker_and_through_multikueue() {
    let sandbox = Sandbox::up(&["--integrations", INTEGRATIONS]);
    let output = sandbox.run("conformance", &["--kind", "Job.v1.batch", "-o", "json"]);
    let report = report(&output);
    assert!(output.status.success(), "{}", text(&output));
    all_pass(&report);
    let description = report["description"].as_str().unwrap();
    assert_eq!(description, "ConfigMap kueue-ext-system/kueue-ext-integrations", "the cluster's file wins");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_integration_fails_naming_the_checks_and_the_evidence() {
    let files = tempfile::tempdir().unwrap();
    let (integrations, sample) = (files.path().join("broken.yaml"), files.path().join("sample.yaml"));
    std::fs::write(&integrations, BROKEN_INTEGRATIONS).unwrap();
    std::fs::write(&sample, BROKEN_SAMPLE).unwrap();
    let sandbox = Sandbox::up(&["--workers", "0", "--integrations", integrations.to_str().unwrap()]);

    let unknown = sandbox.run("conformance", &["--kind", "RayJob.v1.ray.io"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(text(&unknown).contains("--kind RayJob.v1.ray.io: not integrated on this cluster"), "{}", text(&unknown));

    let output =
        sandbox.run("conformance", &["--kind", "Job.v1.batch", "--sample", sample.to_str().unwrap(), "-o", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let report = report(&output);
    let failed: Vec<String> =
        results(&report).into_iter().filter(|(_, result)| result == "fail").map(|(check, _)| check).collect();
    assert_eq!(failed, ["pod-sets-match", "started-with-flavor"], "{report:#}");
    let checks = report["checks"].as_array().unwrap();
    let check = |id: &str| checks.iter().find(|c| c["check"] == id).unwrap();

    let started = &check("started-with-flavor")["evidence"];
    let expected = started["expected"].as_str().unwrap();
    assert!(
        expected.contains(
            "each of its pods running with nodeSelector kueue-ext.dev/sandbox-node=true (nodeLabels of ResourceFlavor conformance-"
        ),
        "{expected}"
    );
    // Judged as soon as one pod shows it: a pod's node selector never changes.
    let observed = started["observed"].as_str().unwrap();
    assert!(
        observed.lines().all(|l| l.contains("-started-with-flavor/sample-") && l.ends_with("has nodeSelector {}")),
        "{observed}"
    );
    let pod_sets = check("pod-sets-match")["evidence"]["observed"].as_str().unwrap();
    assert!(pod_sets.contains("has no kueue.x-k8s.io/podset label"), "{pod_sets}");
    for id in ["managed-by-multikueue", "status-from-worker"] {
        assert_eq!(
            (check(id)["result"].as_str(), check(id)["reason"].as_str()),
            (Some("skipped"), Some("no MultiKueue workers"))
        );
    }
    runs_clean_up(&sandbox, "manager").await;
}
