//! Objects as the API server returns them, for the model, explain, view and app tests: a
//! sandbox (manager and two workers with the default queues) and jobs in every state.

use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::{Value, json};

use super::pods::{PodProblem, PodReason};
use super::snapshot::{ClusterSnapshot, EventLine, JobKind, JobObject, ObjectKey, PodCounts, Role, Snapshot};
pub use crate::integrations::registry::built_in_kind;

/// When every fixture object was created; tests render at [`NOW`].
pub const CREATED: &str = "2026-01-01T00:00:00Z";
/// Five minutes after [`CREATED`].
pub const NOW: i64 = 1_767_225_600 + 300;

pub fn object(value: Value) -> Arc<DynamicObject> {
    Arc::new(serde_json::from_value(value).expect("fixture is an object"))
}

pub fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason, "message": message,
           "lastTransitionTime": CREATED})
}

/// Appends (or replaces) a condition in `status.conditions`.
pub fn set_condition(object: &mut Value, condition: Value) {
    let conditions = &mut object["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(list) = conditions.as_array_mut() {
        list.retain(|c| c["type"] != condition["type"]);
        list.push(condition);
    }
}

/// A queued, suspended job of `kind` in `default` on `user-queue`.
pub fn job(kind: &JobKind, name: &str) -> Value {
    let resource = kind.api_resource();
    json!({
        "apiVersion": resource.api_version, "kind": kind.name(),
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "creationTimestamp": CREATED, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"suspend": true},
        "status": {},
    })
}

pub fn job_object(kind: &JobKind, value: Value) -> JobObject {
    JobObject { kind: kind.clone(), object: object(value) }
}

/// The copy MultiKueue makes of `job` on a worker: no managedBy, origin label, prebuilt name.
pub fn mirror_of(job: &Value, workload: &str) -> Value {
    let mut copy = job.clone();
    copy["metadata"]["uid"] = json!(format!("{}-copy", job["metadata"]["uid"].as_str().unwrap_or_default()));
    copy["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = json!("multikueue");
    copy["metadata"]["annotations"] = json!({"kueue.x-k8s.io/prebuilt-workload-name": workload});
    if let Some(spec) = copy["spec"].as_object_mut() {
        spec.remove("managedBy");
    }
    copy
}

/// The Workload Kueue's jobframework makes for `job`, not evaluated yet.
pub fn workload_for(job: &Value, name: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": CREATED,
                     "ownerReferences": [{"apiVersion": job["apiVersion"], "kind": job["kind"],
                                          "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
                                          "controller": true}]},
        "spec": {"queueName": "user-queue", "podSets": []},
        "status": {},
    })
}

/// A Workload copy on a worker: same name, origin label, no owner until the job copy adopts it.
pub fn remote_workload(name: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": CREATED,
                     "labels": {"kueue.x-k8s.io/multikueue-origin": "multikueue"}},
        "spec": {"queueName": "user-queue", "podSets": []},
        "status": {},
    })
}

pub fn pending(workload: &mut Value, reason: &str, message: &str, cpu: &str) {
    set_condition(workload, condition("QuotaReserved", false, reason, message));
    workload["status"]["resourceRequests"] = json!([{"name": "main", "resources": {"cpu": cpu, "memory": "1Gi"}}]);
}

pub fn reserved(workload: &mut Value) {
    set_condition(
        workload,
        condition("QuotaReserved", true, "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue"),
    );
    workload["status"]["admission"] = json!({"clusterQueue": "cluster-queue", "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "default-flavor", "memory": "default-flavor"}, "count": 1}]});
}

pub fn admitted(workload: &mut Value) {
    reserved(workload);
    set_condition(workload, condition("Admitted", true, "Admitted", "The workload is admitted"));
}

pub fn check(workload: &mut Value, name: &str, state: &str, message: &str) {
    workload["status"]["admissionChecks"] = json!([{"name": name, "state": state, "message": message,
                                                     "lastTransitionTime": CREATED}]);
}

pub fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
        "status": {"conditions": [condition("Active", true, "Ready", "Can submit new workloads to localQueue")],
                   "pendingWorkloads": 0, "admittedWorkloads": 0},
    })
}

/// A ClusterQueue with one flavor: `cpu` cores and `memory` of quota, `reserved_cpu` held.
pub fn cluster_queue(name: &str, cpu: &str, memory: &str, reserved_cpu: &str, check: Option<&str>) -> Value {
    let mut cq = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "default-flavor",
                  "resources": [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]}]}]},
        "status": {"conditions": [condition("Active", true, "Ready", "Can admit new workloads")],
                   "pendingWorkloads": 0, "reservingWorkloads": 0, "admittedWorkloads": 0,
                   "flavorsReservation": [{"name": "default-flavor", "resources": [
                       {"name": "cpu", "total": reserved_cpu}, {"name": "memory", "total": "0"}]}],
                   "flavorsUsage": [{"name": "default-flavor", "resources": [
                       {"name": "cpu", "total": reserved_cpu}, {"name": "memory", "total": "0"}]}]},
    });
    if let Some(check) = check {
        cq["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": check}]});
    }
    cq
}

pub fn admission_check(name: &str, controller: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {"controllerName": controller},
        "status": {"conditions": [condition("Active", true, "Active", "The admission check is active")]},
    })
}

pub fn multikueue_cluster(name: &str, active: bool, reason: &str, message: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "status": {"conditions": [condition("Active", active, reason, message)]},
    })
}

pub fn event(kind: &str, name: &str, reason: &str, message: &str, seconds_after_creation: i64) -> EventLine {
    EventLine {
        object: ObjectKey::new(kind, "default", name),
        type_: if reason.starts_with("Failed") { "Warning" } else { "Normal" }.into(),
        reason: reason.into(),
        message: message.into(),
        time: Some(NOW - 300 + seconds_after_creation),
        count: 1,
    }
}

pub fn pods(pending: u32, running: u32, succeeded: u32, failed: u32) -> PodCounts {
    PodCounts { pending, running, succeeded, failed }
}

/// What keeps one pod of a job (`pod`, container `container`) from running.
pub fn pod_problem(reason: PodReason, pod: &str, container: Option<&str>, message: &str) -> PodProblem {
    PodProblem {
        reason,
        pod: pod.into(),
        container: container.map(String::from),
        image: None,
        message: message.into(),
        exit_code: None,
        pods: 1,
    }
}

/// The nodes of kind cluster `kind`, as their provider IDs name it.
pub fn kind_nodes(kind: &str) -> Vec<String> {
    ["control-plane", "worker"].map(|node| format!("kind://docker/{kind}/{kind}-{node}")).to_vec()
}

/// A ClusterQueue's quota of `resource` in `flavor`, of which `reserved` is held and used.
pub fn flavor_quota(flavor: &str, resource: &str, nominal: f64, reserved: f64) -> super::FlavorQuota {
    super::FlavorQuota {
        flavor: flavor.into(),
        resource: resource.into(),
        nominal,
        borrowing_limit: None,
        reserved,
        used: reserved,
    }
}

/// A single cluster with the sandbox's default queues (4 CPU, nothing reserved).
pub fn single_cluster() -> ClusterSnapshot {
    let mut manager = ClusterSnapshot::empty("manager", "kueue-ext-manager", Role::Manager);
    manager.cluster_queues.push(object(cluster_queue("cluster-queue", "4", "16Gi", "0", None)));
    manager.local_queues.push(object(local_queue("default", "user-queue", "cluster-queue")));
    manager
}

/// A manager wired to two workers as `up` wires them: the MultiKueue check on the manager's
/// queue, both workers connected, each with its own queue of 32 CPU.
pub fn sandbox() -> Snapshot {
    let mut manager = ClusterSnapshot::empty("manager", "kueue-ext-manager", Role::Manager);
    manager.cluster_queues.push(object(cluster_queue("cluster-queue", "64", "256Gi", "0", Some("multikueue"))));
    manager.local_queues.push(object(local_queue("default", "user-queue", "cluster-queue")));
    manager.admission_checks.push(object(admission_check("multikueue", "kueue.x-k8s.io/multikueue")));
    let mut clusters = vec![manager];
    for name in ["worker1", "worker2"] {
        clusters[0].multikueue_clusters.push(object(multikueue_cluster(name, true, "Active", "Connected")));
        let mut worker = ClusterSnapshot::empty(name, &format!("kueue-ext-{name}"), Role::Worker);
        worker.cluster_queues.push(object(cluster_queue("cluster-queue", "32", "128Gi", "0", None)));
        worker.local_queues.push(object(local_queue("default", "user-queue", "cluster-queue")));
        clusters.push(worker);
    }
    Snapshot { clusters }
}

/// Adds a MultiKueue job to `snapshot`: the manager job and Workload after `shape`, and on
/// `worker` the copies `copy` describes (job copy value, remote Workload value).
pub fn dispatched(
    snapshot: &mut Snapshot,
    kind: &JobKind,
    name: &str,
    shape: impl FnOnce(&mut Value, &mut Value),
    worker: Option<(&str, Option<Value>, Option<Value>, PodCounts)>,
) {
    let mut job = job(kind, name);
    job["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    let wl_name = format!("{}-{name}-00000", kind.name().to_lowercase());
    let mut wl = workload_for(&job, &wl_name);
    shape(&mut job, &mut wl);
    snapshot.clusters[0].jobs.push(job_object(kind, job));
    snapshot.clusters[0].workloads.push(object(wl));
    if let Some((worker, copy, remote, pods)) = worker
        && let Some(cluster) = snapshot.clusters.iter_mut().find(|c| c.name == worker)
    {
        if let Some(copy) = copy {
            cluster.jobs.push(job_object(kind, copy));
            cluster.pods.insert(ObjectKey::new(kind.name(), "default", name), pods);
        }
        if let Some(remote) = remote {
            cluster.workloads.push(object(remote));
        }
    }
}

/// The scene the view and app tests draw: one job in each state a user meets in a sandbox.
pub fn scene() -> Snapshot {
    let mut snapshot = sandbox();
    let wl = |kind: &JobKind, name: &str| format!("{}-{name}-00000", kind.name().to_lowercase());

    dispatched(&mut snapshot, &built_in_kind("ExternalJob"), "queued", |_, _| {}, None);
    dispatched(
        &mut snapshot,
        &built_in_kind("ExternalJob"),
        "too-big",
        |_, w| {
            pending(
                w,
                "ExceedsMaxQuota",
                "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, previously considered podsets requests (0) + current podset request (2k) > maximum capacity (64)",
                "2000",
            )
        },
        None,
    );
    let name = wl(&built_in_kind("Job"), "dispatching");
    let mut remote = remote_workload(&name);
    pending(
        &mut remote,
        "Pending",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 8 more needed",
        "40",
    );
    dispatched(
        &mut snapshot,
        &built_in_kind("Job"),
        "dispatching",
        |_, w| {
            reserved(w);
            check(w, "multikueue", "Pending", "");
            w["status"]["nominatedClusterNames"] = json!(["worker1", "worker2"]);
        },
        Some(("worker1", None, Some(remote), PodCounts::default())),
    );
    let name = wl(&built_in_kind("WrappedJob"), "training");
    let mut remote = remote_workload(&name);
    admitted(&mut remote);
    let job_value = job(&built_in_kind("WrappedJob"), "training");
    let mut copy = mirror_of(&job_value, &name);
    copy["spec"]["suspend"] = json!(false);
    dispatched(
        &mut snapshot,
        &built_in_kind("WrappedJob"),
        "training",
        |j, w| {
            j["spec"]["suspend"] = json!(false);
            admitted(w);
            check(w, "multikueue", "Ready", "The workload was admitted on \"worker2\"");
            w["status"]["clusterName"] = json!("worker2");
        },
        Some(("worker2", Some(copy), Some(remote), pods(1, 3, 0, 0))),
    );
    dispatched(
        &mut snapshot,
        &built_in_kind("ExternalJob"),
        "preempted",
        |_, w| {
            pending(
                w,
                "Pending",
                "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 2 more needed",
                "4",
            );
            set_condition(
                w,
                condition("Evicted", true, "Preempted", "Preempted to accommodate a higher priority Workload"),
            );
        },
        None,
    );
    dispatched(
        &mut snapshot,
        &built_in_kind("ExternalJob"),
        "done",
        |j, w| {
            j["spec"]["suspend"] = json!(false);
            set_condition(j, condition("Complete", true, "Completed", "All pods succeeded"));
            admitted(w);
            set_condition(w, condition("Finished", true, "Succeeded", "All pods succeeded"));
            w["status"]["clusterName"] = json!("worker1");
        },
        None,
    );
    let mut plain = job(&built_in_kind("Job"), "no-queue");
    plain["metadata"]["labels"] = json!({});
    plain["spec"]["suspend"] = json!(false);
    snapshot.clusters[0].jobs.push(job_object(&built_in_kind("Job"), plain));
    snapshot.clusters[0].events.push(event(
        "WrappedJob",
        "training",
        "Started",
        "Admitted by ClusterQueue cluster-queue",
        20,
    ));
    snapshot.clusters[0].events.push(event(
        "Workload",
        &wl(&built_in_kind("WrappedJob"), "training"),
        "QuotaReserved",
        "Quota reserved in ClusterQueue cluster-queue, wait time since queued was 1s",
        10,
    ));
    snapshot.clusters[2].events.push(event("Pod", "training-0", "Scheduled", "not a job event", 30));
    snapshot
}

/// One cluster with the default queues and the job `train` after `shape` (its Workload too,
/// unless `shape` leaves it null).
pub fn single(shape: impl FnOnce(&mut Snapshot, &mut Value, &mut Value)) -> Snapshot {
    let mut snapshot = Snapshot { clusters: vec![single_cluster()] };
    let mut job = job(&built_in_kind("ExternalJob"), "train");
    let mut wl = workload_for(&job, "externaljob-train-12345");
    shape(&mut snapshot, &mut job, &mut wl);
    snapshot.clusters[0].jobs.push(job_object(&built_in_kind("ExternalJob"), job));
    if !wl.is_null() {
        snapshot.clusters[0].workloads.push(object(wl));
    }
    snapshot
}

/// The sandbox with `train` admitted and dispatched to worker1, with its copy, the copy's
/// Workload and the pods there as given.
pub fn on_worker1(copy: Option<Value>, remote: Option<Value>, pods_there: PodCounts) -> Snapshot {
    let mut snapshot = sandbox();
    dispatched(
        &mut snapshot,
        &built_in_kind("ExternalJob"),
        "train",
        |_, w| {
            admitted(w);
            w["status"]["clusterName"] = json!("worker1");
        },
        Some(("worker1", copy, remote, pods_there)),
    );
    snapshot
}
