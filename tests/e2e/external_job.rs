//! End-to-end: ExternalJob on one process-runtime cluster with the real Kueue, driven by this
//! project's controller and webhook as the sandbox deploys them.

use std::process::Child;
use std::time::Duration;

use crate::common::{
    Restarts, Sandbox, api, apply_yaml, condition_is, controller_process, eventually, small_queues, text, workloads,
    workloads_owned_by,
};
use crate::fixtures::{ExternalJob, external_job};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kueue_ext::jobframework::naming::workload_name;
use serde_json::{Value, json};

/// An ExternalJob on the `small` queue at `priority`: `pods` pods of `cpu` CPU that run for `run`.
fn priority_job(name: &str, pods: u32, cpu: &str, run: &str, priority: &str) -> ExternalJob {
    external_job(name)
        .queue(Some("small"))
        .label("kueue.x-k8s.io/priority-class", priority)
        .pods(pods)
        .requests(cpu, "1Gi")
        .runs_for(run)
}

fn external_jobs(client: &Client) -> Api<kube::api::DynamicObject> {
    api(client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"))
}

async fn get_job(client: &Client, name: &str) -> Result<Value, String> {
    let job = external_jobs(client).get(name).await.map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(job).unwrap())
}

async fn wait_complete(client: &Client, name: &str, timeout: Duration) -> Value {
    eventually(&format!("ExternalJob {name} to complete"), timeout, || async {
        let job = get_job(client, name).await?;
        if condition_is(&job, "Complete", "True") { Ok(job) } else { Err(format!("{:#}", job["status"])) }
    })
    .await
}

async fn only_workload(client: &Client, uid: &str) -> Result<Value, String> {
    match workloads_owned_by(client, "default", uid).await?.as_slice() {
        [w] => Ok(w.clone()),
        other => Err(format!("{} workloads: {other:?}", other.len())),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn external_jobs_run_through_kueue_with_the_rust_jobframework() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    apply_yaml(&client, &small_queues()).await;

    // Admission, exact Workload name, flavor node labels on the pods, completion.
    let created = apply_yaml(&client, &priority_job("first", 2, "1", "3s", "low").yaml()).await.remove(0);
    assert_eq!(created["spec"]["suspend"], true, "our webhook suspends a queued ExternalJob");
    let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
    let expected_name = workload_name("ExternalJob", "kueue-ext.dev", "first", &uid);
    let wl = eventually("the Workload to be admitted", Duration::from_secs(60), || async {
        let wl = only_workload(&client, &uid).await?;
        if condition_is(&wl, "Admitted", "True") { Ok(wl) } else { Err(format!("{:#}", wl["status"])) }
    })
    .await;
    assert_eq!(wl["metadata"]["name"], expected_name, "named exactly as Kueue names Workloads");
    assert_eq!(wl["spec"]["queueName"], "small");
    assert_eq!(wl["spec"]["priority"], 10);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let ran = eventually("the job's pods to exist", Duration::from_secs(30), || async {
        let list = pods.list(&ListParams::default().labels(&format!("kueue-ext.dev/job-uid={uid}"))).await;
        let list = list.map_err(|e| e.to_string())?;
        if list.items.len() == 2 { Ok(list.items) } else { Err(format!("{} pods", list.items.len())) }
    })
    .await;
    for pod in &ran {
        let selector = pod.spec.as_ref().and_then(|s| s.node_selector.clone()).unwrap_or_default();
        assert_eq!(selector.get("type").map(String::as_str), Some("kwok"), "the flavor's node labels are injected");
    }
    wait_complete(&client, "first", Duration::from_secs(60)).await;
    let finished = eventually("the Workload to be Finished", Duration::from_secs(30), || async {
        let wl = only_workload(&client, &uid).await?;
        if condition_is(&wl, "Finished", "True") { Ok(wl) } else { Err(format!("{:#}", wl["status"])) }
    })
    .await;
    // Created and declared finished by our controller, under its own name: no field of it is
    // filed under an unnamed client.
    let managers: Vec<&str> = finished["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| entry["manager"].as_str().unwrap_or_default())
        .collect();
    assert!(managers.contains(&"kueue-ext-controller"), "{managers:?}");
    assert!(!managers.contains(&"unknown"), "{managers:?}");

    // Preemption: a high-priority job takes the quota of a running low-priority one.
    let low = apply_yaml(&client, &priority_job("low", 4, "1", "20s", "low").yaml()).await.remove(0);
    let low_uid = low["metadata"]["uid"].as_str().unwrap().to_string();
    eventually("the low job to run", Duration::from_secs(60), || async {
        let job = get_job(&client, "low").await?;
        let active = job["status"]["podSets"][0]["active"].as_i64().unwrap_or(0);
        if job["spec"]["suspend"] == false && active == 4 { Ok(()) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;
    apply_yaml(&client, &priority_job("high", 2, "1", "3s", "high").yaml()).await;
    eventually(
        "the low job to be preempted: suspended, pods gone, templates restored",
        Duration::from_secs(60),
        || async {
            let job = get_job(&client, "low").await?;
            let left = pods.list(&ListParams::default().labels(&format!("kueue-ext.dev/job-uid={low_uid}"))).await;
            let active = left
                .map_err(|e| e.to_string())?
                .items
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .count();
            let restored = job["spec"]["podSets"][0]["template"]["spec"].get("nodeSelector").is_none();
            if job["spec"]["suspend"] == true && active == 0 && restored {
                Ok(())
            } else {
                Err(format!("active {active}: {job:#}"))
            }
        },
    )
    .await;
    wait_complete(&client, "high", Duration::from_secs(60)).await;
    wait_complete(&client, "low", Duration::from_secs(120)).await;
    let low_workloads = workloads_owned_by(&client, "default", &low_uid).await.unwrap();
    assert_eq!(low_workloads.len(), 1, "one Workload per job through preemption and requeue");

    // A suspended job that changes its pod sets gets a matching Workload; deleting it removes it.
    let mut parked: Value = priority_job("parked", 1, "8", "1s", "low").value();
    let parked_obj = apply_yaml(&client, &serde_saphyr::to_string(&parked).unwrap()).await.remove(0);
    let parked_uid = parked_obj["metadata"]["uid"].as_str().unwrap().to_string();
    eventually("the too-big job to get a pending Workload", Duration::from_secs(30), || async {
        let wl = only_workload(&client, &parked_uid).await?;
        if wl["spec"]["podSets"][0]["count"] == 1 { Ok(()) } else { Err(format!("{wl:#}")) }
    })
    .await;
    parked["spec"]["podSets"][0]["count"] = json!(2);
    parked["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("500m");
    apply_yaml(&client, &serde_saphyr::to_string(&parked).unwrap()).await;
    eventually("a Workload matching the new pod sets", Duration::from_secs(30), || async {
        let wl = only_workload(&client, &parked_uid).await?;
        if wl["spec"]["podSets"][0]["count"] == 2 { Ok(()) } else { Err(format!("{wl:#}")) }
    })
    .await;
    wait_complete(&client, "parked", Duration::from_secs(60)).await;
    external_jobs(&client).delete("parked", &DeleteParams::background()).await.unwrap();
    eventually("the deleted job's Workload to go", Duration::from_secs(60), || async {
        let left = workloads_owned_by(&client, "default", &parked_uid).await?;
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_external_jobs_are_rejected_with_field_paths() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let jobs = external_jobs(&client);
    let base: Value = priority_job("bad", 1, "1", "1s", "low").value();
    let attempt = |change: fn(&mut Value)| {
        let mut job = base.clone();
        change(&mut job);
        job
    };
    type Change = fn(&mut Value);
    let cases: [(Change, &str); 4] = [
        (
            |j| j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("Not_A_Queue"),
            "metadata.labels[kueue.x-k8s.io/queue-name]",
        ),
        (|j| j["spec"]["podSets"] = json!([]), "spec.podSets"),
        (
            |j| {
                j["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] =
                    json!("lots")
            },
            "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]",
        ),
        (
            |j| {
                j["spec"]["podSets"] = json!((0..9).map(|i| json!({"name": format!("p{i}"), "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}})).collect::<Vec<_>>())
            },
            "spec.podSets",
        ),
    ];
    for (change, field) in cases {
        let job = attempt(change);
        let err = kueue_ext::kube_util::apply(&client, &job).await.expect_err("rejected");
        assert!(err.to_string().contains(field), "rejection names {field}: {err}");
    }

    // Pod sets are immutable while running.
    let mut running = base.clone();
    running["metadata"]["name"] = json!("running");
    running["metadata"]["labels"] = json!({});
    running["spec"]["suspend"] = json!(false);
    running["spec"]["podSets"][0]["template"]["metadata"]["annotations"]["kueue-ext.dev/run-duration"] = json!("60s");
    apply_yaml(&client, &serde_saphyr::to_string(&running).unwrap()).await;
    let patch = json!({"spec": {"podSets": [{"name": "main", "count": 3, "template": running["spec"]["podSets"][0]["template"]}]}});
    let err = jobs.patch("running", &PatchParams::default(), &Patch::Merge(&patch)).await.expect_err("rejected");
    assert!(err.to_string().contains("spec.podSets"), "{err}");
    let status = sandbox.run("status", &[]);
    assert!(status.status.success(), "the controller survived every bad object: {}", text(&status));
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_job_and_external_job_get_equivalent_workloads() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    apply_yaml(&client, &small_queues()).await;
    let batch = apply_yaml(
        &client,
        r#"
apiVersion: batch/v1
kind: Job
metadata: {name: parity, namespace: default, labels: {kueue.x-k8s.io/queue-name: small, kueue.x-k8s.io/priority-class: low}}
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/work
        resources: {requests: {cpu: "1", memory: 1Gi}}
"#,
    )
    .await
    .remove(0);
    let external = apply_yaml(&client, &priority_job("parity", 2, "1", "1s", "low").yaml()).await.remove(0);
    let mut specs = Vec::new();
    for obj in [batch, external] {
        let uid = obj["metadata"]["uid"].as_str().unwrap().to_string();
        let wl =
            eventually("a Workload", Duration::from_secs(30), || async { only_workload(&client, &uid).await }).await;
        specs.push(wl["spec"].clone());
    }
    let (go, rust) = (&specs[0], &specs[1]);
    for field in ["queueName", "priority", "priorityClassRef"] {
        assert_eq!(go[field], rust[field], "{field}");
    }
    let (a, b) = (&go["podSets"][0], &rust["podSets"][0]);
    assert_eq!((&a["name"], &a["count"]), (&b["name"], &b["count"]));
    let resources = |p: &Value| p["template"]["spec"]["containers"][0]["resources"].clone();
    assert_eq!(resources(a), resources(b));
    assert_eq!(workloads(&client, "default").list(&Default::default()).await.unwrap().items.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_controller_mid_run_loses_nothing_and_duplicates_nothing() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let mut uids = Vec::new();
    for i in 0..16 {
        let job = external_job(&format!("batch-{i}")).pods(2).runs_for("4s").yaml();
        uids.push(apply_yaml(&client, &job).await.remove(0)["metadata"]["uid"].as_str().unwrap().to_string());
    }
    let mut controller = Restarts::controller(&sandbox);
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        controller.kill_and_restart();
    }
    for i in 0..16 {
        wait_complete(&client, &format!("batch-{i}"), Duration::from_secs(180)).await;
    }
    for uid in &uids {
        // The job's end reaches its Workload in the reconcile after the job's own status.
        eventually(&format!("job {uid}'s Workload to be Finished"), Duration::from_secs(30), || async {
            let owned = workloads_owned_by(&client, "default", uid).await?;
            assert_eq!(owned.len(), 1, "exactly one Workload for job {uid}");
            if !condition_is(&owned[0], "Finished", "True") {
                return Err(format!("{:#}", owned[0]["status"]));
            }
            Ok(())
        })
        .await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for (i, uid) in uids.iter().enumerate() {
        let ran = pods.list(&ListParams::default().labels(&format!("kueue-ext.dev/job-uid={uid}"))).await.unwrap();
        let succeeded = ran
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
            .count();
        assert_eq!(succeeded, 2, "batch-{i} ran its two pods exactly once");
    }
}

async fn lease_renewal(client: &Client) -> String {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(client.clone(), "kueue-ext-system");
    let lease = leases.get_opt("kueue-ext-controller").await.unwrap();
    lease.and_then(|l| Some(format!("{:?}", l.spec?.renew_time?))).unwrap_or_default()
}

async fn lease_holder(client: &Client) -> String {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(client.clone(), "kueue-ext-system");
    let lease = leases.get_opt("kueue-ext-controller").await.unwrap();
    lease.and_then(|l| l.spec?.holder_identity).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_replica_takes_over_when_the_leader_dies() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let (leader_pid, command) = controller_process(&sandbox);
    let holder = eventually("the sandbox's controller to lead", Duration::from_secs(30), || async {
        let holder = lease_holder(&client).await;
        if holder.ends_with(&format!("-{leader_pid}")) { Ok(holder) } else { Err(holder) }
    })
    .await;

    // A second replica on its own port: it serves webhooks but waits for the Lease.
    let (replica, port) = waiting_replica(&sandbox, &command, "replica", &holder).await;
    let renewed_at = lease_renewal(&client).await;
    eventually("the leader to renew its Lease while the replica waits", Duration::from_secs(30), || async {
        let now = lease_renewal(&client).await;
        if now != renewed_at { Ok(()) } else { Err(now) }
    })
    .await;
    assert_eq!(lease_holder(&client).await, holder, "the first leader keeps the Lease while it lives");

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(leader_pid), nix::sys::signal::Signal::SIGKILL).unwrap();
    // Local processes have no Service in front of the replicas: point the webhooks at the
    // replica, as a Service would route to it.
    let ca = std::fs::read_to_string(sandbox.dir.join("manager/pki/ca.crt")).unwrap();
    let ca_bundle = kueue_ext::sandbox::kubeconfig::b64(&ca);
    let endpoint =
        kueue_ext::manifests::Endpoint::Url { base: format!("https://127.0.0.1:{port}"), ca_bundle_b64: &ca_bundle };
    for webhook in kueue_ext::manifests::webhooks(&endpoint) {
        kueue_ext::kube_util::apply(&client, &webhook).await.unwrap();
    }
    let job = external_job("after-failover").runs_for("2s").yaml();
    eventually("the webhook to answer again", Duration::from_secs(30), || async {
        kueue_ext::kube_util::apply(&client, &serde_saphyr::from_str::<Value>(&job).unwrap())
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    wait_complete(&client, "after-failover", Duration::from_secs(90)).await;
    let successor = lease_holder(&client).await;
    assert!(successor.ends_with(&format!("-{}", replica.0.id())), "the replica leads now: {successor}");

    // A replica stopped while it waits for the Lease (a Deployment's roll stops such a standby
    // as often as the leader) shuts its webhook server down in order instead of dying mid-answer.
    let (mut standby, _) = waiting_replica(&sandbox, &command, "standby", &successor).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(standby.0.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let status = standby.0.wait().unwrap();
    let log = std::fs::read_to_string(sandbox.dir.join("manager/logs/standby.log")).unwrap_or_default();
    assert!(status.success() && log.contains("shutting down"), "a waiting replica stops in order: {status}\n{log}");
}

/// A replica the test started, stopped when the test ends, also when it fails.
struct Replica(Child);

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Another replica of the controller of `command`, on a port of its own, started once it has
/// found `holder` leading and tried for the Lease; its log is `manager/logs/<name>.log`.
async fn waiting_replica(sandbox: &Sandbox, command: &[String], name: &str, holder: &str) -> (Replica, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let args: Vec<String> = command[1..]
        .iter()
        .map(|a| if a.starts_with("--listen=") { format!("--listen=127.0.0.1:{port}") } else { a.clone() })
        .collect();
    let replica_log = sandbox.dir.join(format!("manager/logs/{name}.log"));
    let log = std::fs::File::create(&replica_log).unwrap();
    let replica = Replica(
        std::process::Command::new(&command[0])
            .args(&args)
            // The replica says whom it found leading (ours, at info), and each time it tries for the
            // Lease and finds it held (kube-lease-manager's, at debug).
            .env("RUST_LOG", "kueue_ext=info,kube_lease_manager=debug")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    // The replica competes: it found the leader and tried for the Lease, held by the leader.
    eventually("the replica to find the leader and try for its Lease", Duration::from_secs(60), || async {
        let log = std::fs::read_to_string(&replica_log).unwrap_or_default();
        let said = |what: &str| log.lines().any(|l| l.contains(what) && l.contains(holder));
        if said("another replica leads") && said("lease is actually locked by other identity") {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
    (replica, port)
}

/// A node restarted between creating a pod's container and starting it leaves the pod Pending
/// for ever: the kubelet makes no new sandbox for a pod of `restartPolicy: Never`. Here the pod
/// is bound to a node nobody runs (so no kubelet writes its status and no pod GC takes it) and
/// its status is written as that kubelet leaves it, its sandbox lost two minutes ago: the job
/// deletes it and gives its slot the next attempt, with no failure counted.
#[tokio::test(flavor = "multi_thread")]
async fn a_pod_its_node_left_unstarted_is_replaced_by_the_next_attempt() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node = serde_json::from_value(json!({"metadata": {"name": "restarted-node"}})).unwrap();
    nodes.create(&Default::default(), &node).await.expect("a node no kubelet runs");
    let mut job = external_job("stranded").requests("100m", "64Mi").value();
    let template = &mut job["spec"]["podSets"][0]["template"]["spec"];
    template["nodeName"] = json!("restarted-node");
    // Kept from the node's not-ready taints, which would otherwise evict it.
    template["tolerations"] = json!([{"operator": "Exists", "effect": "NoExecute"}]);
    apply_yaml(&client, &job.to_string()).await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually("the job's first pod to exist", Duration::from_secs(60), || async {
        pods.get("stranded-main-0-0").await.map(|_| ()).map_err(|e| e.to_string())
    })
    .await;
    let lost_at = (k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(120)).to_string();
    let status = json!({"status": {
        "phase": "Pending",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "False", "lastTransitionTime": lost_at},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": lost_at},
        ],
        "containerStatuses": [{
            "name": "main", "image": "registry.invalid/work", "imageID": "", "ready": false, "restartCount": 0,
            "containerID": "containerd://0123456789abcdef", "lastState": {}, "state": {"waiting": {}},
        }],
    }});
    pods.patch_status("stranded-main-0-0", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();

    let replaced =
        eventually("the stranded pod deleted and its slot's next attempt created", Duration::from_secs(60), || async {
            let first = pods.get_opt("stranded-main-0-0").await.map_err(|e| e.to_string())?;
            let next = pods.get_opt("stranded-main-0-1").await.map_err(|e| e.to_string())?;
            let first_leaving = first.as_ref().is_none_or(|p| p.metadata.deletion_timestamp.is_some());
            if first_leaving && next.is_some() {
                Ok(())
            } else {
                Err(format!("next attempt: {}, first: {:?}", next.is_some(), first.and_then(|p| p.status)))
            }
        });
    replaced.await;
    let job = get_job(&client, "stranded").await.unwrap();
    assert_eq!(job["status"]["podSets"][0]["failed"], 0, "its work never began: {:#}", job["status"]);
}
