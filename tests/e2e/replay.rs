//! End-to-end: `up --from` reproduces a captured sandbox. A manager and one worker with two
//! ResourceFlavors, a Cohort whose ClusterQueues borrow from each other, a priority class, a
//! ClusterQueue whose ProvisioningRequest check the sandbox cannot run, labelled and tainted
//! nodes, and three jobs: one running on the worker, one its worker queue keeps waiting, one too
//! big for any quota. Captured as `down --keep-snapshot` leaves it, replayed with `--with-jobs`
//! into another state dir, and compared: the queue objects (spec and labels), the nodes, and why
//! each Workload waits.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::capture::{json as file_json, unpack};
use crate::common::{Sandbox, api, apply_yaml, condition, eventually, text, workloads};
use crate::fixtures::{ExternalJob, Queue, external_job, priority_class, resource_flavor};

const TIMEOUT: Duration = Duration::from_secs(180);

const MANAGER_QUEUES: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: flavor-a, labels: {replay: "yes"}}
spec: {nodeLabels: {pool: a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: flavor-b}
spec: {nodeLabels: {pool: b}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: team}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  cohortName: team
  namespaceSelector: {}
  admissionChecksStrategy: {admissionChecks: [{name: multikueue}]}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: flavor-a
      resources:
      - {name: cpu, nominalQuota: "1", borrowingLimit: "1"}
      - {name: memory, nominalQuota: 4Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-b}
spec:
  cohortName: team
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: flavor-a
      resources:
      - {name: cpu, nominalQuota: "3", lendingLimit: "2"}
      - {name: memory, nominalQuota: 12Gi}
    - name: flavor-b
      resources:
      - {name: cpu, nominalQuota: "2"}
      - {name: memory, nominalQuota: 8Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec: {controllerName: kueue.x-k8s.io/provisioning-request}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-prov}
spec:
  namespaceSelector: {}
  admissionChecksStrategy: {admissionChecks: [{name: prov}]}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: flavor-b, resources: [{name: cpu, nominalQuota: "1"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-a, namespace: default}
spec: {clusterQueue: cq-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
"#;

/// The worker runs one job of flavor-a at a time; a higher priority one preempts.
fn worker_queues() -> String {
    let queue = Queue {
        cluster_queue: "cq-a",
        local_queue: "lq-a",
        flavor: "flavor-a",
        cpu: "1",
        memory: "4Gi",
        preempts: true,
    };
    [resource_flavor("flavor-a", "{pool: a}"), queue.yaml(), priority_class("high", 1000)].join("\n---\n")
}

/// Kueue's objects compared, by file (the kind's plural).
const QUEUE_KINDS: [(&str, &str); 8] = [
    ("ResourceFlavor", "resourceflavors"),
    ("Cohort", "cohorts"),
    ("ClusterQueue", "clusterqueues"),
    ("LocalQueue", "localqueues"),
    ("WorkloadPriorityClass", "workloadpriorityclasses"),
    ("AdmissionCheck", "admissionchecks"),
    ("MultiKueueConfig", "multikueueconfigs"),
    ("MultiKueueCluster", "multikueueclusters"),
];

/// An ExternalJob on `lq-a` of one pod of `cpu` that runs ten minutes.
fn job(name: &str, cpu: &str) -> ExternalJob {
    external_job(name).queue(Some("lq-a")).requests(cpu, "1Gi").runs_for("10m")
}

/// `namespace/name → (spec, value, labels)` of objects (a priority class has a value, no spec).
fn specs(items: &[Value]) -> BTreeMap<String, Value> {
    items
        .iter()
        .map(|o| {
            let metadata = &o["metadata"];
            let key = format!(
                "{}/{}",
                metadata["namespace"].as_str().unwrap_or_default(),
                metadata["name"].as_str().unwrap_or_default()
            );
            (key, json!({"spec": o["spec"], "value": o["value"], "labels": metadata["labels"]}))
        })
        .collect()
}

async fn live(client: &kube::Client, kind: &str, plural: &str) -> Vec<Value> {
    let list = api(client, "kueue.x-k8s.io/v1beta2", kind, plural, None).list(&ListParams::default()).await;
    list.unwrap_or_else(|e| panic!("{kind}: {e}"))
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).expect("serializes"))
        .collect()
}

/// `name → (labels, taints, allocatable, capacity)` of nodes.
fn node_shapes(nodes: &[Value]) -> BTreeMap<String, Value> {
    nodes
        .iter()
        .map(|n| {
            let name = n["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let taints = n["spec"]["taints"].as_array().cloned().unwrap_or_default();
            let (status, labels) = (&n["status"], &n["metadata"]["labels"]);
            (name, json!([labels, taints, status["allocatable"], status["capacity"]]))
        })
        .collect()
}

/// `job → (reason, message)` of each Workload that waits for quota (QuotaReserved=False); a
/// Workload is named after its job and a hash of the job's uid, which a replay changes.
fn pending(workloads: &[Value]) -> BTreeMap<String, (Value, Value)> {
    workloads
        .iter()
        .filter_map(|w| {
            let waits = condition(w, "QuotaReserved").filter(|c| c["status"] == "False")?;
            let name = w["metadata"]["name"].as_str()?;
            let job = name.rsplit_once('-').map_or(name, |(job, _)| job).to_string();
            Some((job, (waits["reason"].clone(), waits["message"].clone())))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn up_from_a_capture_reproduces_its_queues_nodes_and_why_jobs_wait() {
    let started = Instant::now();
    let original = Sandbox::up(&["--workers", "1"]);
    let (manager, worker) = (original.client("manager").await, original.client("worker1").await);
    apply_yaml(&manager, MANAGER_QUEUES).await;
    apply_yaml(&worker, &worker_queues()).await;
    let nodes: Api<Node> = Api::all(worker.clone());
    let patch = |body: Value| Patch::Merge(body);
    nodes
        .patch("kwok-node-0", &PatchParams::default(), &patch(json!({"metadata": {"labels": {"pool": "a"}}})))
        .await
        .expect("label");
    let taint = json!({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}});
    nodes.patch("kwok-node-3", &PatchParams::default(), &patch(taint)).await.expect("taint");

    apply_yaml(&manager, &job("first", "1").label("kueue.x-k8s.io/priority-class", "high").yaml()).await;
    // Its copy on the worker exists once the worker admitted it: the capture holds one copy.
    let copies = api(&worker, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    eventually("the first job's copy to run on the worker", TIMEOUT, || async {
        match copies.get_opt("first").await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err("no copy yet".to_string()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    apply_yaml(&manager, &job("second", "1").yaml()).await;
    apply_yaml(&manager, &job("huge", "100000").yaml()).await;
    let waiting = |client: kube::Client, expected: &'static [&'static str]| async move {
        let list = workloads(&client, "default").list(&ListParams::default()).await.map_err(|e| e.to_string())?;
        let values: Vec<Value> = list.items.iter().map(|w| serde_json::to_value(w).expect("serializes")).collect();
        let pending = pending(&values);
        let named: Vec<&str> = pending.keys().map(String::as_str).collect();
        let messages = pending.values().all(|(_, m)| m.as_str().is_some_and(|m| !m.is_empty()));
        (named == expected && messages).then_some(values).ok_or(format!("waiting: {pending:?}"))
    };
    eventually("the second job to wait on the worker", TIMEOUT, || waiting(worker.clone(), &["externaljob-second"]))
        .await;
    eventually("the huge job to wait on the manager", TIMEOUT, || waiting(manager.clone(), &["externaljob-huge"]))
        .await;

    // `down --keep-snapshot` captures the sandbox before it goes. The replay is compared with
    // the archive alone: two sandboxes on 2 cores would only slow each other.
    let archive = original.dir.parent().expect("the test's temp dir").join("capture.tgz");
    let down = original.run("down", &["--keep-snapshot", archive.to_str().expect("utf-8")]);
    assert!(down.status.success(), "down --keep-snapshot: {}", text(&down));
    assert!(text(&down).contains("snapshot written to"), "{}", text(&down));
    let (_, files) = unpack(&archive);
    let set_up = started.elapsed();

    let replay = original.beside();
    let replay_started = Instant::now();
    let up = replay.run("up", &["--from", archive.to_str().expect("utf-8"), "--with-jobs"]);
    assert!(up.status.success(), "up --from failed:\n{}", text(&up));
    let said = text(&up);
    eprintln!("{said}");
    assert!(
        said.contains("AdmissionCheck prov not created: its controller kueue.x-k8s.io/provisioning-request needs a cluster autoscaler"),
        "{said}"
    );
    assert!(
        said.contains("worker1 (captured worker1): 1 job(s) not created: MultiKueue's copy of a manager's job"),
        "{said}"
    );
    let (manager, worker) = (replay.client("manager").await, replay.client("worker1").await);

    for (cluster, client) in [("manager", &manager), ("worker1", &worker)] {
        for (kind, plural) in QUEUE_KINDS {
            let captured = file_json(&files, &format!("{cluster}/{plural}.json"));
            let mut expected = specs(captured["items"].as_array().expect("items"));
            let live = live(client, kind, plural).await;
            let mut got = specs(&live);
            if (cluster, kind) == ("manager", "AdmissionCheck") {
                assert!(expected.remove("/prov").is_some(), "the capture has the check the sandbox cannot run");
            }
            if (cluster, kind) == ("manager", "ClusterQueue") {
                let prov = live.iter().find(|q| q["metadata"]["name"] == "cq-prov").expect("cq-prov");
                let stand_in = prov["metadata"]["annotations"]["kueue-ext.dev/stand-in"].as_str().unwrap_or_default();
                assert!(stand_in.starts_with("admission check prov removed: its controller"), "{prov:#}");
                assert_eq!(prov["spec"].get("admissionChecksStrategy"), None, "{prov:#}");
                expected.remove("/cq-prov");
                got.remove("/cq-prov");
            }
            assert_eq!(got, expected, "{kind} on {cluster}: spec and labels as captured");
        }
        let captured = file_json(&files, &format!("{cluster}/nodes.json"));
        let expected = node_shapes(captured["items"].as_array().expect("items"));
        let api: Api<Node> = Api::all(client.clone());
        eventually(&format!("the nodes of {cluster} as captured"), TIMEOUT, || async {
            let list = api.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
            let live: Vec<Value> = list.items.iter().map(|n| serde_json::to_value(n).expect("serializes")).collect();
            let got = node_shapes(&live);
            (got == expected).then_some(()).ok_or(format!("{got:#?}\nexpected {expected:#?}"))
        })
        .await;

        let captured = file_json(&files, &format!("{cluster}/workloads.json"));
        let expected = pending(captured["items"].as_array().expect("items"));
        assert!(!expected.is_empty(), "{cluster}: the capture has a waiting Workload");
        eventually(&format!("the Workloads of {cluster} to wait as captured"), TIMEOUT, || async {
            let list = workloads(client, "default").list(&ListParams::default()).await.map_err(|e| e.to_string())?;
            let live: Vec<Value> = list.items.iter().map(|w| serde_json::to_value(w).expect("serializes")).collect();
            let got = pending(&live);
            (got == expected).then_some(()).ok_or(format!("{got:#?}\nexpected {expected:#?}"))
        })
        .await;
    }
    eprintln!(
        "set up and captured in {:.0}s; replayed and compared in {:.0}s",
        set_up.as_secs_f64(),
        replay_started.elapsed().as_secs_f64()
    );
}
