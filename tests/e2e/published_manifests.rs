//! End-to-end: what a new user meets with manifests nobody on the team wrote (issue 29) —
//! `spec.managedBy` naming another controller, Kueue's getting-started Job with its
//! `generateName`, a WrappedJob of a kind the cluster does not serve, and templates the API
//! server would refuse as pods or components.

use std::time::Duration;

use crate::common::{Sandbox, api, apply_yaml, condition_is, eventually, text, workloads_owned_by};
use crate::fixtures::{external_job, job_component, wrapped_job};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::{Value, json};

const ELSEWHERE: &str = "example.com/some-controller";

/// An ExternalJob of two pods of 500m.
fn two_pod_job(name: &str) -> String {
    external_job(name).pods(2).requests("500m", "1Gi").yaml()
}

/// `yaml` (one object) with `spec.managedBy` naming another controller.
fn managed_elsewhere(yaml: &str) -> Value {
    let mut object: Value = serde_saphyr::from_str(yaml).expect("test YAML parses");
    object["spec"]["managedBy"] = json!(ELSEWHERE);
    object
}

fn objects(client: &Client, api_version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    api(client, api_version, kind, plural, Some("default"))
}

async fn get(api: &Api<DynamicObject>, name: &str) -> Result<Value, String> {
    Ok(serde_json::to_value(api.get(name).await.map_err(|e| e.to_string())?).unwrap())
}

async fn labelled(api: &Api<DynamicObject>, selector: &str) -> Vec<DynamicObject> {
    api.list(&ListParams::default().labels(selector)).await.unwrap().items
}

async fn pods(client: &Client, selector: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), "default").list(&ListParams::default().labels(selector)).await.unwrap().items
}

/// kube-controller-manager's Job controller leaves a batch Job whose `managedBy` names another
/// controller to it; so must our runtime for our kinds, or two controllers run one job's pods.
/// Kueue's side is unchanged: the job keeps its Workload and is started on admission.
#[tokio::test(flavor = "multi_thread")]
async fn jobs_managed_by_another_controller_keep_their_workload_and_get_no_pods_from_kueue_ext() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let external_jobs = objects(&client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs");
    let wrapped_jobs = objects(&client, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs");
    let batch_jobs = objects(&client, "batch/v1", "Job", "jobs");

    let apply = |object: Value| {
        let client = client.clone();
        async move { serde_json::to_value(kueue_ext::kube_util::apply(&client, &object).await.unwrap()).unwrap() }
    };
    let external = apply(managed_elsewhere(&two_pod_job("elsewhere"))).await;
    let components = [job_component("wrapped-elsewhere-work", 2, "500m", "2s", "")];
    let wrapped = apply(managed_elsewhere(&wrapped_job("wrapped-elsewhere", "user-queue", "", "", &components))).await;
    // Ours, beside them: by the time it has run to completion, the runtime has had every
    // chance to run the others too.
    apply_yaml(&client, &two_pod_job("here")).await;

    for (api, job) in [(&external_jobs, &external), (&wrapped_jobs, &wrapped)] {
        let name = job["metadata"]["name"].as_str().unwrap();
        let uid = job["metadata"]["uid"].as_str().unwrap();
        assert_eq!(job["spec"]["managedBy"], ELSEWHERE, "{name}: the webhook keeps the controller it names");
        eventually(&format!("{name}: one admitted Workload, the job started"), Duration::from_secs(60), || async {
            let workloads = workloads_owned_by(&client, "default", uid).await?;
            let job = get(api, name).await?;
            match workloads.as_slice() {
                [wl] if condition_is(wl, "Admitted", "True") && job["spec"]["suspend"] == false => Ok(()),
                other => Err(format!("suspend {}, workloads {other:?}", job["spec"]["suspend"])),
            }
        })
        .await;
    }
    eventually("our own ExternalJob to complete", Duration::from_secs(60), || async {
        let job = get(&external_jobs, "here").await?;
        if condition_is(&job, "Complete", "True") { Ok(()) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;

    let external_uid = external["metadata"]["uid"].as_str().unwrap();
    let ran = pods(&client, &format!("kueue-ext.dev/job-uid={external_uid}")).await;
    assert_eq!(ran.len(), 0, "kueue-ext ran pods of an ExternalJob managed by {ELSEWHERE}");
    let job = get(&external_jobs, "elsewhere").await.unwrap();
    assert!(job.get("status").is_none_or(Value::is_null), "its status is the other controller's: {job:#}");

    let selector = "kueue-ext.dev/wrapped-job=wrapped-elsewhere";
    assert_eq!(labelled(&batch_jobs, selector).await.len(), 0, "kueue-ext created a component");
    assert_eq!(pods(&client, selector).await.len(), 0);
    let job = get(&wrapped_jobs, "wrapped-elsewhere").await.unwrap();
    assert!(job.get("status").is_none_or(Value::is_null), "its status is the other controller's: {job:#}");
    assert!(job["metadata"].get("finalizers").is_none(), "no clean-up of ours to wait for: {job:#}");

    for (reference, kind, name) in [
        ("externaljob/elsewhere", "ExternalJob", "elsewhere"),
        ("wj/wrapped-elsewhere", "WrappedJob", "wrapped-elsewhere"),
    ] {
        let explained = sandbox.run("explain", &[reference]);
        let said = format!("{kind} default/{name} is managed by {ELSEWHERE}: kueue-ext does not run its pods.");
        assert!(text(&explained).contains(&said), "{reference}: {}", text(&explained));
    }
}

/// Kueue's getting-started Job (site/static/examples/jobs/sample-job.yaml), which its docs
/// create with `kubectl create -f`, in this test's words.
const SAMPLE_JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  parallelism: 3
  completions: 3
  suspend: true
  template:
    spec:
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        command: ["/bin/sh"]
        args: ["-c", "sleep 30"]
        resources:
          requests:
            cpu: 1
            memory: "200Mi"
      restartPolicy: Never
"#;

/// The names in lines `job.batch/<name> <verb>` of `submit`'s output.
fn names(output: &str, verb: &str) -> Vec<String> {
    let suffix = format!(" {verb}");
    output.lines().filter_map(|l| l.strip_prefix("job.batch/")?.strip_suffix(&suffix).map(String::from)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_with_generate_name_is_created_anew_by_each_submit() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let batch_jobs = objects(&client, "batch/v1", "Job", "jobs");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sample-job.yaml");
    std::fs::write(&file, SAMPLE_JOB).unwrap();
    let file = file.to_str().unwrap();

    let checked = sandbox.run("submit", &[file, "--dry-run=server"]);
    assert!(checked.status.success(), "{}", text(&checked));
    assert_eq!(batch_jobs.list(&Default::default()).await.unwrap().items.len(), 0, "a dry run creates nothing");

    let mut created = Vec::new();
    for _ in 0..2 {
        let submitted = sandbox.run("submit", &[file, "--wait=2m"]);
        let out = text(&submitted);
        assert!(submitted.status.success(), "{out}");
        let [name] = names(&out, "created").try_into().unwrap_or_else(|n| panic!("one created job in {n:?}:\n{out}"));
        assert!(name.starts_with("sample-job-") && name.len() > "sample-job-".len(), "{out}");
        assert_eq!(names(&out, "succeeded"), std::slice::from_ref(&name), "--wait follows the generated name:\n{out}");
        created.push(name);
    }
    assert_ne!(created[0], created[1], "each submit is a new Job, as with kubectl create");
    for name in &created {
        let job = get(&batch_jobs, name).await.unwrap();
        assert!(condition_is(&job, "Complete", "True"), "{job:#}");
    }

    // All or nothing still: a Job the API server refuses keeps the good one from being created.
    let refused_file = dir.path().join("batch.yaml");
    let broken = SAMPLE_JOB.replace("parallelism: 3", "parallelism: -1");
    std::fs::write(&refused_file, format!("{SAMPLE_JOB}---\n{broken}")).unwrap();
    let refused = sandbox.run("submit", &[refused_file.to_str().unwrap()]);
    let out = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{out}");
    assert!(out.contains("(document 2)") && out.contains("spec.parallelism"), "{out}");
    assert!(out.contains("nothing was applied"), "{out}");
    assert_eq!(batch_jobs.list(&Default::default()).await.unwrap().items.len(), 2, "nothing new was created");
}

/// A LeaderWorkerSet with its pod sets declared, as a WrappedJob component.
const LEADER_WORKER_SET: &str = r#"
  - podSets: [{path: template.spec.leaderWorkerTemplate.workerTemplate, replicas: 2}]
    template:
      apiVersion: leaderworkerset.x-k8s.io/v1
      kind: LeaderWorkerSet
      metadata: {name: lws}
      spec:
        replicas: 1
        leaderWorkerTemplate:
          size: 2
          workerTemplate:
            spec:
              containers:
              - name: worker
                image: registry.invalid/work
                resources: {requests: {cpu: 500m}}"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_wrapped_kind_the_cluster_does_not_serve_is_named_as_submit_names_it() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let said = r#"spec.components[0].template.kind: Invalid value: "LeaderWorkerSet": the cluster does not serve LeaderWorkerSet in leaderworkerset.x-k8s.io/v1: is its CRD installed (kubectl get crds)?"#;
    let yaml = wrapped_job("lws-wrapper", "user-queue", "", "", &[LEADER_WORKER_SET.to_string()]);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lws.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let refused = sandbox.run("submit", &[file.to_str().unwrap()]);
    let out = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{out}");
    assert!(out.contains(said), "{out}");
    assert!(out.contains("nothing was applied"), "{out}");
    for raw in ["ApiError", "Status {", "Internal error", "Failed to parse"] {
        assert!(!out.contains(raw), "{raw:?} reaches the user:\n{out}");
    }

    // Applied without submit, the API server answers with the webhook's words.
    let object: Value = serde_saphyr::from_str(&yaml).unwrap();
    let denied = kueue_ext::kube_util::apply(&client, &object).await.expect_err("refused").to_string();
    assert!(denied.contains(said) && !denied.contains("Internal error"), "{denied}");
    let wrapped_jobs = objects(&client, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs");
    assert!(wrapped_jobs.get_opt("lws-wrapper").await.unwrap().is_none());
}

/// An ExternalJob whose container asks for more CPU than its limit: no pod of it could exist.
const REQUESTS_OVER_LIMITS: &str = r#"
apiVersion: kueue-ext.dev/v1alpha1
kind: ExternalJob
metadata:
  name: over-limit
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: main
          image: registry.invalid/work
          resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}
"#;

/// A WrappedJob of a Job whose 64-character name its pods could not carry as a label.
fn long_named_component() -> String {
    let name = "a".repeat(64);
    wrapped_job("long-name", "user-queue", "", "", &[job_component(&name, 1, "100m", "5s", "")])
}

#[tokio::test(flavor = "multi_thread")]
async fn templates_the_api_server_would_refuse_are_refused_at_admission_by_their_field() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "over-limit",
            REQUESTS_OVER_LIMITS.to_string(),
            "ExternalJob",
            "externaljobs",
            "spec.podSets[0].template.spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit",
        ),
        ("long-name", long_named_component(), "WrappedJob", "wrappedjobs", "spec.components[0].template."),
    ];
    for (name, yaml, kind, plural, said) in cases {
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, &yaml).unwrap();
        let refused = sandbox.run("submit", &[file.to_str().unwrap()]);
        let out = text(&refused);
        assert_eq!(refused.status.code(), Some(1), "{name}: {out}");
        assert!(out.contains(said), "{name}: {out}");
        assert!(out.contains("nothing was applied"), "{name}: {out}");

        let object: Value = serde_saphyr::from_str(&yaml).unwrap();
        let denied = kueue_ext::kube_util::apply(&client, &object).await.expect_err("refused").to_string();
        assert!(denied.contains(said), "{name}: {denied}");
        let jobs = objects(&client, "kueue-ext.dev/v1alpha1", kind, plural);
        assert!(jobs.get_opt(name).await.unwrap().is_none(), "{name} was created");
    }
    let long = text(&sandbox.run("submit", &[dir.path().join("long-name.yaml").to_str().unwrap()]));
    assert!(long.contains("63"), "the label limit is named: {long}");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    assert!(pods.list(&ListParams::default()).await.unwrap().items.is_empty(), "a dry run leaves no pod");
}
