//! A capture planned into a replay, from an archive written as `capture` writes one: which
//! sandbox cluster gets what, and what is said not to be as captured.

use serde_json::{Value, json};

use super::{ReplayOptions, plan};
use crate::api::kueue::Role;
use crate::capture::{Capture, ClusterCapture, ClusterEntry, FORMAT, Manifest, archive, open};

fn list(items: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap()
}

fn kueue(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": name, "uid": "u"}, "spec": spec})
}

fn job(name: &str, created: &str, labels: Value) -> Value {
    json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
           "metadata": {"name": name, "namespace": "team", "creationTimestamp": created, "labels": labels},
           "spec": {"suspend": true}, "status": {"conditions": []}})
}

fn cluster(name: &str, role: Role, files: Vec<(&str, Vec<u8>)>) -> (ClusterEntry, ClusterCapture) {
    let mut entry = ClusterEntry::new(name, name, role);
    for (file, _) in &files {
        entry.files.insert(file.to_string(), String::new());
    }
    let files = files.into_iter().map(|(f, b)| (f.to_string(), b)).collect();
    let mut capture = ClusterCapture::default();
    (capture.name, capture.files) = (name.into(), files);
    (entry, capture)
}

/// A manager of two workers ("east", "west") with a ProvisioningRequest check on one queue, and
/// three jobs: two on the manager, one MultiKueue copy on a worker.
fn opened() -> (tempfile::TempDir, crate::capture::Opened) {
    let manager = cluster(
        "hub",
        Role::Manager,
        vec![
            ("kueue/configuration.yaml", b"kind: Configuration\nwaitForPodsReady: {timeout: 5m}\n".to_vec()),
            (
                "multikueueclusters.json",
                list(json!([
                    kueue("MultiKueueCluster", "east", json!({})),
                    kueue("MultiKueueCluster", "west", json!({})),
                    kueue("MultiKueueCluster", "north", json!({}))
                ])),
            ),
            (
                "multikueueconfigs.json",
                list(json!([kueue("MultiKueueConfig", "mk", json!({"clusters": ["east", "west", "north"]}))])),
            ),
            (
                "admissionchecks.json",
                list(json!([
                    kueue("AdmissionCheck", "mk", json!({"controllerName": "kueue.x-k8s.io/multikueue"})),
                    kueue("AdmissionCheck", "prov", json!({"controllerName": "kueue.x-k8s.io/provisioning-request"})),
                ])),
            ),
            (
                "clusterqueues.json",
                list(json!([kueue(
                    "ClusterQueue",
                    "cq",
                    json!({
                "admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}, {"name": "prov"}]}})
                )])),
            ),
            (
                "jobs/externaljobs.kueue-ext.dev.json",
                list(json!([
                    job("later", "2026-01-01T00:00:09Z", json!({})),
                    job("earlier", "2026-01-01T00:00:01Z", json!({})),
                ])),
            ),
        ],
    );
    let east = cluster(
        "east",
        Role::Worker,
        vec![
            (
                "nodes.json",
                list(json!([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
                                    "status": {"allocatable": {"cpu": "8"}, "capacity": {"cpu": "8"}}}])),
            ),
            (
                "jobs/externaljobs.kueue-ext.dev.json",
                list(json!([job(
                    "earlier",
                    "2026-01-01T00:00:02Z",
                    json!({"kueue.x-k8s.io/multikueue-origin": "multikueue"})
                )])),
            ),
        ],
    );
    let west = cluster("west", Role::Worker, vec![]);
    let (entries, clusters): (Vec<_>, Vec<_>) = [manager, east, west].into_iter().unzip();
    let manifest = Manifest {
        format: FORMAT.into(),
        captured_at: "2026-01-01T00:00:10Z".into(),
        plugin_version: "0.1.0".into(),
        origin: "test".into(),
        namespace: None,
        selector: None,
        clusters: entries,
        left_out: Vec::new(),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.tgz");
    std::fs::write(&path, archive(&Capture { manifest, clusters }, 0).unwrap()).unwrap();
    let opened = open(&path).unwrap();
    (dir, opened)
}

fn names(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| format!("{}/{}", o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap()))
        .collect()
}

#[test]
fn a_capture_plans_into_clusters_objects_and_stand_ins() {
    let (_dir, opened) = opened();
    let replay = plan(&opened, ReplayOptions { scale: 1.0, with_jobs: true }, &[]).unwrap();
    assert_eq!(replay.workers(), 2);
    let clusters: Vec<(&str, &str)> = replay.clusters.iter().map(|c| (c.name.as_str(), c.captured.as_str())).collect();
    assert_eq!(clusters, [("manager", "hub"), ("worker1", "east"), ("worker2", "west")]);

    let manager = &replay.clusters[0];
    assert_eq!(manager.multikueue_clusters, ["east", "west"], "captured names, in capture order");
    assert_eq!(manager.kueue_settings, json!({"waitForPodsReady": {"timeout": "5m"}}));
    assert_eq!(
        names(&manager.objects),
        ["Namespace/team", "MultiKueueConfig/mk", "AdmissionCheck/mk", "ClusterQueue/cq"],
        "what an object names comes first; the check the sandbox cannot run is not created"
    );
    assert_eq!(manager.objects[1]["spec"]["clusters"], json!(["east", "west"]));
    assert_eq!(manager.objects[3]["spec"]["admissionChecksStrategy"]["admissionChecks"], json!([{"name": "mk"}]));
    assert!(manager.objects[3]["metadata"].get("uid").is_none());
    assert_eq!(names(&manager.jobs), ["ExternalJob/earlier", "ExternalJob/later"], "oldest first");
    assert!(manager.jobs[0].get("status").is_none());

    let east = &replay.clusters[1];
    assert!(east.jobs.is_empty(), "MultiKueue's copy is made again by MultiKueue");
    assert_eq!(names(&east.nodes), ["Node/n0"]);

    let said = replay.not_as_captured.join("\n");
    for expected in [
        "manager (captured hub): AdmissionCheck prov not created: its controller kueue.x-k8s.io/provisioning-request",
        "manager (captured hub): ClusterQueue cq is a stand-in (kueue-ext.dev/stand-in): admission check prov removed",
        "manager (captured hub): MultiKueueConfig mk is a stand-in (kueue-ext.dev/stand-in): MultiKueueCluster(s) north removed",
        "worker1 (captured east): Kueue's Configuration was not captured: the sandbox's own is used",
        "worker1 (captured east): 1 job(s) not created: MultiKueue's copy of a manager's job",
        "manager: MultiKueueCluster(s) north not created: the capture holds no worker cluster for them",
    ] {
        assert!(said.contains(expected), "{expected}\nnot in\n{said}");
    }

    let without_jobs = plan(&opened, ReplayOptions { scale: 1.0, with_jobs: false }, &[]).unwrap();
    assert!(without_jobs.clusters.iter().all(|c| c.jobs.is_empty()));
    assert!(
        without_jobs
            .not_as_captured
            .iter()
            .any(|l| l == "manager (captured hub): 2 job(s) not created (--with-jobs creates them)")
    );
    assert_eq!(names(&without_jobs.clusters[0].objects)[0], "MultiKueueConfig/mk", "no namespace for no job");
}
