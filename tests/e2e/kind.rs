//! End-to-end on the kind runtime: a manager and a worker as kind clusters in Docker, from the
//! node image built on this machine (no registry), with Kueue, MultiKueue and our controller
//! in-cluster. Pods really run here (busybox, real exit codes), where the process runtime fakes
//! them with kwok. Needs a Docker daemon: `hack/docker.sh up` starts one, as hack/test.sh does.

use std::process::Command;
use std::time::Duration;

use crate::common::{
    Sandbox, api, apply_yaml, condition_is, eventually, kind_images_built, pod_sets, text, workload_with,
    workloads_owned_by,
};
use crate::condition_timeline::{ConditionTimeline, Conditions, show};
use crate::fixtures::{self, BUSYBOX, ExternalJob};
use kube::api::{Api, DynamicObject};
use serde_json::Value;

/// An ExternalJob of two busybox pods that really run, two seconds each.
fn external_job(name: &str) -> ExternalJob {
    fixtures::external_job(name)
        .pod_set("workers")
        .pods(2)
        .image(BUSYBOX)
        .command("echo working on $HOSTNAME; sleep 2")
        .requests("100m", "32Mi")
}

/// A JobSet of a leader and two workers, each pod a real busybox that exits 0.
fn jobset(name: &str) -> String {
    let replicated = |job: &str, replicas: u32| {
        format!(
            r#"
  - name: {job}
    replicas: {replicas}
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: {job}
              image: {BUSYBOX}
              command: [sh, -c, "echo {job} $HOSTNAME; sleep 2"]
              resources: {{requests: {{cpu: 100m, memory: 32Mi}}}}"#
        )
    };
    format!(
        r#"
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue}}
spec:
  replicatedJobs:{}{}
"#,
        replicated("leader", 1),
        replicated("workers", 2)
    )
}

/// A PyTorchJob of a Master and a Worker that really run and exit 0, run by the training
/// operator. The Worker's init container waits until the cluster's DNS resolves the Master's
/// Service (`<name>-master-0`); the Master outlives that wait.
fn pytorch_job(name: &str) -> String {
    let replica = |kind: &str, run: &str| {
        format!(
            r#"
    {kind}:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: {BUSYBOX}
            command: [sh, -c, "{run}"]
            resources: {{requests: {{cpu: 20m, memory: 32Mi}}}}"#
        )
    };
    format!(
        r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue}}
spec:
  pytorchReplicaSpecs:{}{}
"#,
        replica("Master", "echo master of $WORLD_SIZE; sleep 20"),
        replica("Worker", "echo rank $RANK of $WORLD_SIZE, master $MASTER_ADDR")
    )
}

/// A PipelineRun of two Tasks, one after the other, run by Tekton's controller: queued by the
/// integrations file as one synthetic pod set its annotations describe.
fn pipeline_run(name: &str) -> String {
    let task = |task: &str, after: &str| {
        format!(
            r#"
    - name: {task}{after}
      taskSpec:
        steps:
        - name: {task}
          image: {BUSYBOX}
          command: [sh, -c, "echo {task} done"]"#
        )
    };
    format!(
        r#"
apiVersion: tekton.dev/v1
kind: PipelineRun
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue}}
  annotations: {{kueue-ext.dev/pod-requests: "cpu=100m,memory=64Mi", kueue-ext.dev/pod-count: "1"}}
spec:
  pipelineSpec:
    tasks:{}{}
"#,
        task("build", ""),
        task("test", "\n      runAfter: [build]")
    )
}

/// A WrappedJob of a PyTorchJob, as AppWrapper's samples wrap one.
fn wrapped_pytorch_job(name: &str) -> String {
    let job = pytorch_job(&format!("{name}-run"));
    let template: String = job
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.contains("namespace:") && !line.contains("queue-name"))
        .map(|line| format!("\n      {line}"))
        .collect();
    crate::fixtures::wrapped_job(name, "user-queue", "", "", &[format!("\n  - template:{template}")])
}

/// A wrapper (`kind` of `api_version`: AppWrapper or WrappedJob) of a Job whose two pods really
/// run to completion, followed by `more` components.
fn wrapper_of_a_job(api_version: &str, kind: &str, name: &str, more: &str) -> String {
    format!(
        r#"
apiVersion: {api_version}
kind: {kind}
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue}}
spec:
  components:
  - template:
      apiVersion: batch/v1
      kind: Job
      metadata: {{name: {name}-work}}
      spec:
        parallelism: 2
        completions: 2
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: {BUSYBOX}
              command: [sh, -c, "echo wrapped $HOSTNAME; sleep 3"]
              resources: {{requests: {{cpu: 100m, memory: 32Mi}}}}
{more}"#
    )
}

/// An AppWrapper of a batch Job, as AppWrapper's own samples wrap one: run by AppWrapper's
/// controller under Kueue's built-in AppWrapper integration.
fn appwrapper(name: &str) -> String {
    wrapper_of_a_job("workload.codeflare.dev/v1beta2", "AppWrapper", name, "")
}

/// A WrappedJob of the same Job and a Deployment that serves meanwhile.
fn wrapped_job(name: &str) -> String {
    let server = format!(
        r#"  - template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: {name}-server}}
      spec:
        replicas: 1
        selector: {{matchLabels: {{app: {name}-server}}}}
        template:
          metadata: {{labels: {{app: {name}-server}}}}
          spec:
            containers:
            - name: server
              image: {BUSYBOX}
              command: [sleep, "3600"]
              resources: {{requests: {{cpu: 100m, memory: 32Mi}}}}
"#
    );
    wrapper_of_a_job("kueue-ext.dev/v1alpha1", "WrappedJob", name, &server)
}

/// Names of the containers Docker runs for kind clusters of this sandbox.
fn sandbox_containers() -> Vec<String> {
    let output = Command::new("docker")
        .args(["ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}}"])
        .output()
        .expect("docker runs");
    let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        // The plain clusters of tests/e2e/own_cluster (kueue-ext-e2e-*) are not a sandbox's: one
        // left by a killed run is no sandbox leftover.
        .filter(|n| n.starts_with("kueue-ext-") && !n.starts_with("kueue-ext-e2e-"))
        .map(String::from)
        .collect();
    names.sort();
    names
}

/// Submits a wrapper (`yaml`) on the manager and waits until it reports Succeeded and its Workload
/// is Finished, having run on worker1.
async fn wrapper_succeeds_on_worker1(manager: &kube::Client, wrappers: &Api<DynamicObject>, yaml: &str) {
    let wrapper = apply_yaml(manager, yaml).await.remove(0);
    wrapper_succeeded_on_worker1(manager, wrappers, wrapper["metadata"]["name"].as_str().unwrap()).await;
}

/// Waits until the wrapper `name` on the manager reports Succeeded and its Workload is Finished,
/// having run on worker1.
async fn wrapper_succeeded_on_worker1(manager: &kube::Client, wrappers: &Api<DynamicObject>, name: &str) {
    let found = eventually(&format!("the manager's {name} to report Succeeded"), Duration::from_secs(180), || async {
        let found = serde_json::to_value(wrappers.get(name).await.map_err(|e| e.to_string())?).unwrap();
        if found["status"]["phase"] == "Succeeded" { Ok(found) } else { Err(format!("{:#}", found["status"])) }
    })
    .await;
    finished_on_worker1(manager, found["metadata"]["uid"].as_str().unwrap()).await;
}

/// Waits until the manager's Workload of the job `uid` is Finished, having run on worker1.
async fn finished_on_worker1(manager: &kube::Client, uid: &str) {
    eventually("the job's manager Workload to be Finished on worker1", Duration::from_secs(60), || async {
        match workloads_owned_by(manager, "default", uid).await?.as_slice() {
            [w] if condition_is(w, "Finished", "True") && w["status"]["clusterName"] == "worker1" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// The tests' kind clusters share names and kind's network: one test at a time.
static KIND_CLUSTERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_sandbox_runs_jobs_through_multikueue_and_down_leaves_nothing() {
    kind_images_built("jobset,appwrapper,kubeflow,tekton");
    let _alone = KIND_CLUSTERS.lock().await;
    // Whether kind's network is there is asked in this test's turn: a plain kind cluster of
    // another test makes it and leaves it.
    let sandbox = Sandbox::unstarted_on_kind_alone();
    let network_was_there = kind_network_exists();
    // JobSet's, AppWrapper's, Kubeflow's training operator's and Tekton's releases run on both
    // clusters (their own images, built here); Kueue's built-in integrations queue the first
    // three kinds, and the integrations file PipelineRuns.
    let pipelineruns = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/addons/tekton/pipelinerun-integration.yaml");
    let up = sandbox.run(
        "up",
        &["--workers", "1", "--addons", "jobset,appwrapper,kubeflow,tekton", "--integrations", pipelineruns],
    );
    assert!(up.status.success(), "up failed:\n{}", text(&up));
    let status = sandbox.status_json();
    assert_eq!(status["ready"], true, "{status:#}");
    assert_eq!(status["runtime"], "kind", "{status:#}");
    let multikueue = &status["clusters"][0]["multikueue"];
    assert_eq!(multikueue["admission_check_active"], true, "{status:#}");
    assert_eq!(sandbox_containers(), ["kueue-ext-manager-control-plane", "kueue-ext-worker1-control-plane"]);

    let manager = sandbox.client("manager").await;
    let worker = sandbox.client("worker1").await;

    // With no node flag, the default queues hold what the worker's node can still give job pods
    // (its 2 cores less what runs there), not a kwok pool's 32 CPU; the manager holds as much.
    let quota_cpu = |client: kube::Client| async move {
        let queues = api(&client, "kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", None);
        let queue = queues.get("cluster-queue").await.expect("the default ClusterQueue");
        let quota = &queue.data["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
        assert_eq!(quota["name"], "cpu", "{quota}");
        kueue_ext::quantity::parse(quota["nominalQuota"].as_str().unwrap()).unwrap()
    };
    let on_worker = quota_cpu(worker.clone()).await;
    assert!(on_worker > 0.0 && on_worker < 2.0, "the worker's queue holds {on_worker} CPU of its node's 2");
    assert_eq!(quota_cpu(manager.clone()).await, on_worker, "the manager's queue holds its one worker's");

    let job = apply_yaml(&manager, &external_job("kind-external").yaml()).await.remove(0);
    assert_eq!(job["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "our webhook hands it to MultiKueue");
    let externals = api(&manager, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    // Its pods run for real on the worker's node and exit 0; MultiKueue removes the worker's copy
    // (and so its pods) soon after the manager's job completes, so they are watched meanwhile.
    let pods = api(&worker, "v1", "Pod", "pods", Some("default"));
    let exited = std::sync::Mutex::new(std::collections::BTreeMap::<String, i64>::new());
    eventually("the manager's ExternalJob to complete on the worker", Duration::from_secs(180), || async {
        for pod in pods.list(&Default::default()).await.map_err(|e| e.to_string())?.items {
            let pod = serde_json::to_value(pod).unwrap();
            let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
            if let Some(code) = pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"].as_i64() {
                exited.lock().unwrap().insert(name, code);
            }
        }
        let job = serde_json::to_value(externals.get("kind-external").await.map_err(|e| e.to_string())?).unwrap();
        if condition_is(&job, "Complete", "True") { Ok(()) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;
    let exited = exited.into_inner().unwrap();
    let ran: Vec<(&str, i64)> =
        exited.iter().filter(|(name, _)| name.starts_with("kind-external-")).map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(ran.len(), 2, "both pods ran to their end on the worker: {exited:?}");
    assert!(ran.iter().all(|(_, code)| *code == 0), "{ran:?}");

    // An image no registry serves (none answers here): explain names the pull on the worker, the
    // image, and how to load it into a kind cluster.
    let unpullable = "registry.invalid/nothing:1";
    apply_yaml(&manager, &external_job("kind-unpullable").image(unpullable).yaml()).await;
    eventually("explain to name the image pull", Duration::from_secs(180), || async {
        let said = text(&sandbox.run("explain", &["externaljob/kind-unpullable"]));
        let named = said.contains(&format!("cannot pull image {unpullable}"))
            && (said.contains("ErrImagePull") || said.contains("ImagePullBackOff"))
            && said.contains("kind load docker-image");
        if named { Ok(()) } else { Err(said) }
    })
    .await;
    externals.delete("kind-unpullable", &Default::default()).await.expect("delete kind-unpullable");

    let wrappeds = api(&manager, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", Some("default"));
    wrapper_succeeds_on_worker1(&manager, &wrappeds, &wrapped_job("kind-wrapped")).await;

    let jobset = apply_yaml(&manager, &jobset("kind-jobset")).await.remove(0);
    let uid = jobset["metadata"]["uid"].as_str().unwrap().to_string();
    let jobsets = api(&manager, "jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", Some("default"));
    eventually("the manager's JobSet to complete on the worker", Duration::from_secs(180), || async {
        let js = serde_json::to_value(jobsets.get("kind-jobset").await.map_err(|e| e.to_string())?).unwrap();
        if condition_is(&js, "Completed", "True") { Ok(()) } else { Err(format!("{:#}", js["status"])) }
    })
    .await;
    finished_on_worker1(&manager, &uid).await;
    let components = status["clusters"][1]["components"].as_array().cloned().unwrap_or_default();
    for addon in ["jobset", "appwrapper", "kubeflow", "tekton"] {
        assert!(components.iter().any(|c| c["name"] == addon && c["ready"] == true), "{addon}: {status:#}");
    }

    // WrappedJob's model, side by side: AppWrapper's own controller runs the same kind of job.
    let appwrappers = api(&manager, "workload.codeflare.dev/v1beta2", "AppWrapper", "appwrappers", Some("default"));
    wrapper_succeeds_on_worker1(&manager, &appwrappers, &appwrapper("kind-appwrapper")).await;
    // `submit` leaves an AppWrapper as it is where AppWrapper's controller runs.
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("appwrapper.yaml");
    std::fs::write(&file, appwrapper("kind-submitted")).unwrap();
    let submitted = sandbox.run("submit", &[file.to_str().unwrap()]);
    let out = text(&submitted);
    assert!(submitted.status.success(), "{out}");
    assert!(
        out.contains("appwrapper.workload.codeflare.dev/kind-submitted created") && !out.contains("WrappedJob"),
        "{out}"
    );
    wrapper_succeeded_on_worker1(&manager, &appwrappers, "kind-submitted").await;

    // A PyTorchJob: one Workload with Kueue's pod sets of its Master and Worker, run on worker1 by
    // the worker's training operator, its end copied back to the manager's job.
    let pytorch = apply_yaml(&manager, &pytorch_job("kind-pytorch")).await.remove(0);
    assert_eq!(pytorch["spec"]["runPolicy"]["suspend"], true, "suspended on create: {pytorch:#}");
    let uid = pytorch["metadata"]["uid"].as_str().unwrap().to_string();
    let pytorchjobs = api(&manager, "kubeflow.org/v1", "PyTorchJob", "pytorchjobs", Some("default"));
    eventually("the manager's PyTorchJob to succeed on the worker", Duration::from_secs(180), || async {
        let job = serde_json::to_value(pytorchjobs.get("kind-pytorch").await.map_err(|e| e.to_string())?).unwrap();
        if condition_is(&job, "Succeeded", "True") { Ok(()) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;
    finished_on_worker1(&manager, &uid).await;
    let workload = workloads_owned_by(&manager, "default", &uid).await.unwrap().remove(0);
    let pod_sets: Vec<(&str, i64)> = workload["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["count"].as_i64().unwrap()))
        .collect();
    assert_eq!(pod_sets, [("master", 1), ("worker", 1)], "{workload:#}");
    let wrapped_pytorch = wrapped_pytorch_job("kind-wrapped-pytorch");
    wrapper_succeeds_on_worker1(&manager, &wrappeds, &wrapped_pytorch).await;

    // A PipelineRun, on a worker's own queue (it has no managedBy for MultiKueue): held Pending
    // until admitted, then run by Tekton to Succeeded, its Workload Finished.
    let run = apply_yaml(&worker, &pipeline_run("kind-pipeline")).await.remove(0);
    assert_eq!(run["spec"]["status"], "PipelineRunPending", "suspended on create: {run:#}");
    let uid = run["metadata"]["uid"].as_str().unwrap().to_string();
    let runs = api(&worker, "tekton.dev/v1", "PipelineRun", "pipelineruns", Some("default"));
    eventually("the PipelineRun to succeed", Duration::from_secs(180), || async {
        let run = serde_json::to_value(runs.get("kind-pipeline").await.map_err(|e| e.to_string())?).unwrap();
        if condition_is(&run, "Succeeded", "True") { Ok(()) } else { Err(format!("{:#}", run["status"])) }
    })
    .await;
    eventually("the PipelineRun's Workload to be Finished", Duration::from_secs(60), || async {
        match workloads_owned_by(&worker, "default", &uid).await?.as_slice() {
            [w] if condition_is(w, "Finished", "True") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let explained = text(&sandbox.run("explain", &["pipelinerun/kind-pipeline", "--context", "kueue-ext-worker1"]));
    assert!(explained.starts_with("PipelineRun default/kind-pipeline has finished: Succeeded"), "{explained}");
    // The manager's queue goes through MultiKueue, which cannot hand over a kind without
    // managedBy: our webhook refuses it there, saying why, rather than leave it waiting.
    let file = files.path().join("pipelinerun.yaml");
    std::fs::write(&file, pipeline_run("kind-pipeline-on-manager")).unwrap();
    let refused = sandbox.run("submit", &[file.to_str().unwrap()]);
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("goes through MultiKueue, which cannot hand a PipelineRun to a worker"), "{said}");

    let watch = sandbox.run("watch", &["--once", "-o", "json"]);
    assert!(watch.status.success(), "{}", text(&watch));
    let jobs: Value = serde_json::from_slice(&watch.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&watch)));
    let shown = jobs.to_string();
    assert!(shown.contains("kind-external") && shown.contains("kind-wrapped"), "{jobs:#}");
    assert!(shown.contains("worker1"), "watch shows the worker copy: {jobs:#}");

    // The jobframework contract, checked on kind as on the process runtime.
    let conformance = sandbox.run("conformance", &["--kind", "ExternalJob.v1alpha1.kueue-ext.dev"]);
    assert!(conformance.status.success(), "conformance on kind:\n{}", text(&conformance));

    let down = sandbox.run("down", &[]);
    assert!(down.status.success(), "down: {}", text(&down));
    assert!(!sandbox.dir.exists(), "down removes the state dir");
    assert!(sandbox_containers().is_empty(), "containers left: {:?}", sandbox_containers());
    // No other kind test runs beside this one, but one that failed may have left a cluster on
    // the network this sandbox made.
    let joined = kind_network_has_containers();
    assert_eq!(
        kind_network_exists(),
        network_was_there || joined,
        "the network goes if (and only if) this sandbox made it and no other cluster joined it"
    );
}

/// A PyTorchJob's phase as Kueue's Kubeflow integration reads it: its pods are ready while the
/// training operator says it is Running.
fn pytorch_phase(job: &Value) -> &'static str {
    match () {
        _ if condition_is(job, "Succeeded", "True") => "succeeded",
        _ if job["spec"]["runPolicy"]["suspend"] == true => "suspended",
        _ if condition_is(job, "Running", "True") => "running",
        _ => "starting its pods",
    }
}

/// Runs [`pytorch_job`] `name` on a single-cluster sandbox: suspended on create, admitted, its
/// Worker past the DNS wait for its Master, Succeeded, its Workload Finished. Returns the
/// admitted Workload's pod sets and the conditions the Workload went through.
async fn pytorch_job_runs_on_one_cluster(sandbox: &Sandbox, name: &str) -> (Value, Conditions) {
    let client = sandbox.client("manager").await;
    let jobs = api(&client, "kubeflow.org/v1", "PyTorchJob", "pytorchjobs", Some("default"));
    let timeline = ConditionTimeline::watch(&client, jobs.clone(), "PyTorchJob", name, pytorch_phase).await;
    let created = apply_yaml(&client, &pytorch_job(name)).await.remove(0);
    assert_eq!(created["spec"]["runPolicy"]["suspend"], true, "suspended on create: {created:#}");
    let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
    let admitted = workload_with(&client, &uid, "Admitted").await;
    eventually(&format!("PyTorchJob {name} to succeed"), Duration::from_secs(180), || async {
        let job = serde_json::to_value(jobs.get(name).await.map_err(|e| e.to_string())?).unwrap();
        if condition_is(&job, "Succeeded", "True") { Ok(()) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;
    // The operator leaves the pods (cleanPodPolicy None): the Worker's init container found the
    // Master by name, and the Worker ran.
    let pods = api(&client, "v1", "Pod", "pods", Some("default"));
    let worker = serde_json::to_value(pods.get(&format!("{name}-worker-0")).await.unwrap()).unwrap();
    let exit_code = |statuses: &str| worker["status"][statuses][0]["state"]["terminated"]["exitCode"].as_i64();
    assert_eq!(worker["status"]["initContainerStatuses"][0]["name"], "init-pytorch", "{:#}", worker["status"]);
    assert_eq!((exit_code("initContainerStatuses"), exit_code("containerStatuses")), (Some(0), Some(0)));
    workload_with(&client, &uid, "Finished").await;
    (pod_sets(&admitted), timeline.through_finish().await)
}

/// A PyTorchJob with a Master on one kind cluster, under Kueue's built-in integration and then
/// under ours by configuration (`samples/addons/kubeflow/pytorchjob-integration.yaml`): the same pod
/// sets and Workload conditions over its life, both run with the cluster's DNS, and every command
/// sees the configured kind.
#[tokio::test(flavor = "multi_thread")]
async fn a_pytorchjob_by_configuration_gets_kueues_own_pod_sets_on_a_kind_cluster() {
    kind_images_built("kubeflow");
    let _alone = KIND_CLUSTERS.lock().await;
    let down = |sandbox: &Sandbox| {
        let down = sandbox.run("down", &[]);
        assert!(down.status.success(), "down: {}", text(&down));
    };
    let (reference, reference_conditions) = {
        let sandbox = Sandbox::up_on_kind(&["--workers", "0", "--addons", "kubeflow"]);
        let components = sandbox.status_json()["clusters"][0]["components"].clone();
        let ready = |name: &str| components.as_array().unwrap().iter().any(|c| c["name"] == name && c["ready"] == true);
        assert!(ready("coredns") && ready("kubeflow"), "{components:#}");
        let run = pytorch_job_runs_on_one_cluster(&sandbox, "pytorch").await;
        down(&sandbox);
        run
    };
    let names: Vec<&Value> = reference.as_array().unwrap().iter().map(|s| &s["name"]).collect();
    assert_eq!(names, ["master", "worker"], "Kueue's built-in PyTorchJob integration: {reference:#}");
    eprintln!("Kueue's built-in PyTorchJob integration:\n{}", show(&reference_conditions));
    let pods_ready = reference_conditions.get("PodsReady").map(|t| t.iter().map(|t| (t.status.as_str(), t.job)));
    assert_eq!(
        pods_ready.map(Iterator::collect::<Vec<_>>),
        Some(vec![("False", "suspended"), ("True", "running")]),
        "Kueue says PodsReady once the PyTorchJob is Running:\n{}",
        show(&reference_conditions)
    );

    let integrations = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/addons/kubeflow/pytorchjob-integration.yaml");
    let sandbox = Sandbox::up_on_kind(&["--workers", "0", "--addons", "kubeflow", "--integrations", integrations]);
    let (ours, our_conditions) = pytorch_job_runs_on_one_cluster(&sandbox, "pytorch").await;
    assert_eq!(ours, reference, "our configured PyTorchJob integration describes it as Kueue's own does");
    // Nothing is normalised but the times of the writes, which are not recorded. The job has the
    // same name in both sandboxes, so the Finished message (the training operator's Succeeded
    // message, which names the job) is compared as it is.
    assert_eq!(
        our_conditions,
        reference_conditions,
        "our configured PyTorchJob integration's Workload conditions:\n{}Kueue's built-in:\n{}",
        show(&our_conditions),
        show(&reference_conditions)
    );

    let watched = sandbox.run("watch", &["--once", "-o", "json"]);
    let json: Value = serde_json::from_slice(&watched.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&watched)));
    let row = json["jobs"].as_array().and_then(|jobs| jobs.iter().find(|j| j["key"]["name"] == "pytorch"));
    let row = row.unwrap_or_else(|| panic!("pytorch in {json:#}"));
    assert_eq!(
        (row["key"]["kind"].as_str(), row["status"].as_str()),
        (Some("PyTorchJob"), Some("Succeeded")),
        "{row:#}"
    );
    let explained = text(&sandbox.run("explain", &["pytorchjob/pytorch"]));
    assert!(explained.starts_with("PyTorchJob default/pytorch has finished: Succeeded"), "{explained}");
    let files = tempfile::tempdir().unwrap();
    let waited = files.path().join("waited.yaml");
    std::fs::write(&waited, pytorch_job("waited-pytorch")).unwrap();
    let submitted = sandbox.run("submit", &[waited.to_str().unwrap(), "--wait=3m"]);
    let out = text(&submitted);
    assert!(submitted.status.success() && out.contains("pytorchjob.kubeflow.org/waited-pytorch succeeded"), "{out}");
    down(&sandbox);
    assert!(sandbox_containers().is_empty(), "containers left: {:?}", sandbox_containers());
}

fn kind_network_exists() -> bool {
    let output = Command::new("docker").args(["network", "inspect", "kind"]).output().expect("docker runs");
    output.status.success()
}

/// Whether containers (of clusters that are not this sandbox's, once it is down) are on kind's network.
fn kind_network_has_containers() -> bool {
    let format = "{{len .Containers}}";
    let output =
        Command::new("docker").args(["network", "inspect", "kind", "-f", format]).output().expect("docker runs");
    output.status.success() && String::from_utf8_lossy(&output.stdout).trim() != "0"
}

#[test]
fn a_kind_up_that_cannot_bind_its_port_says_so_and_leaves_nothing() {
    kind_images_built("");
    let _alone = KIND_CLUSTERS.blocking_lock();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let sandbox = Sandbox::unstarted_on_kind();
    let output = sandbox.run("up", &["--workers", "0", "--api-server-port", &port]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains(&port), "the error names the port: {said}");
    assert!(sandbox_containers().is_empty(), "containers left: {:?}", sandbox_containers());
    let status = sandbox.run("status", &[]);
    assert!(!status.status.success(), "no sandbox is left recorded: {}", text(&status));
}
