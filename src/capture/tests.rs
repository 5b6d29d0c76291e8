//! One cluster read through the scripted API server: what is asked (never a Secret, never a
//! ConfigMap but Kueue's), and what lands in which file.

use std::collections::BTreeMap;
use std::io::Write;

use http::Method;
use serde_json::{Value, json};

use super::read::cluster;
use super::{LocalFiles, Options};
use crate::api::kueue::Role;
use crate::integrations::registry::KindRegistry;
use crate::model::source::Target;
use crate::test_api_server::{requested, scripted_client};

fn list(items: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": items})
}

/// The API server of a worker: one ClusterQueue, one ExternalJob with an inline password, one
/// node, two events (one about the ClusterQueue, one about a pod); no Kueue Deployment (a
/// process sandbox runs Kueue as a process).
fn answer(_: &Method, path: &str) -> Result<Value, u16> {
    match path {
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues" => Ok(list(json!([{
            "metadata": {"name": "cluster-queue", "uid": "cq", "managedFields": [{"manager": "kubectl"}]},
            "spec": {"resourceGroups": []},
        }]))),
        "/apis/kueue.x-k8s.io/v1beta2/topologies" => Err(403),
        "/apis/kueue-ext.dev/v1alpha1/namespaces/team/externaljobs" => Ok(list(json!([{
            "metadata": {"name": "train", "namespace": "team", "uid": "j1"},
            "spec": {"podSets": [{"name": "main", "template": {"spec": {"containers": [
                {"name": "main", "env": [{"name": "PASSWORD", "value": "hunter2"}]}]}}}]},
        }]))),
        "/api/v1/nodes" => Ok(list(json!([{
            "metadata": {"name": "node-1", "labels": {"type": "kwok"}},
            "status": {"allocatable": {"cpu": "8"}, "capacity": {"cpu": "8"},
                       "addresses": [{"type": "InternalIP", "address": "10.1.2.3"}]},
        }]))),
        "/api/v1/namespaces/team/events" => Ok(list(json!([
            {"metadata": {"name": "e1", "namespace": "default"}, "reason": "Created",
             "involvedObject": {"kind": "ClusterQueue", "name": "cluster-queue"}},
            {"metadata": {"name": "e2", "namespace": "team"}, "reason": "Scheduled",
             "involvedObject": {"kind": "Pod", "namespace": "team", "name": "p"}},
        ]))),
        path if path.contains("/namespaces/kueue-ext-system/deployments/") => Err(404),
        "/api/v1/namespaces/kueue-ext-system/configmaps/kueue-ext-integrations" => Ok(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-ext-integrations", "namespace": "kueue-ext-system"},
            "data": {"integrations.yaml": "integrations: []\n"},
        })),
        _ => Ok(list(json!([]))),
    }
}

#[tokio::test]
async fn a_cluster_is_read_without_secrets_and_scrubbed() {
    let (client, requests) = scripted_client(answer);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n").unwrap();
    let log = dir.path().join("kueue.log");
    let mut file = std::fs::File::create(&log).unwrap();
    for line in 0..3000 {
        writeln!(file, "line {line}").unwrap();
    }
    let local = LocalFiles { kueue_config: Some(config), kueue_version: Some("v0.19.2".into()), logs: vec![log] };
    let target = Target { name: "worker1".into(), context: "kueue-ext-worker1".into(), role: Role::Worker };
    let options = Options { namespace: Some("team".into()), selector: None };
    let (entry, captured) = cluster(&target, client, &KindRegistry::built_in(), &local, &options).await;

    let asked = requested(&requests);
    assert!(!asked.iter().any(|r| r.contains("secrets")), "{asked:#?}");
    let config_maps: Vec<&String> = asked.iter().filter(|r| r.contains("configmaps")).collect();
    assert_eq!(config_maps, ["GET /api/v1/namespaces/kueue-ext-system/configmaps/kueue-ext-integrations"]);
    assert!(asked.contains(&"GET /apis/kueue.x-k8s.io/v1beta2/namespaces/team/localqueues".to_string()), "{asked:#?}");
    assert!(asked.contains(&"GET /apis/kueue.x-k8s.io/v1beta2/resourceflavors".to_string()), "cluster-scoped: all");

    let files: BTreeMap<&str, &[u8]> = captured.files.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
    let json_of = |path: &str| -> Value { serde_json::from_slice(files[path]).unwrap() };
    let queues = json_of("clusterqueues.json");
    assert_eq!(queues["items"][0]["kind"], "ClusterQueue", "a list's items say their kind");
    assert!(queues["items"][0]["metadata"].get("managedFields").is_none());
    let jobs = String::from_utf8_lossy(files["jobs/externaljobs.kueue-ext.dev.json"]).into_owned();
    assert!(jobs.contains("PASSWORD") && !jobs.contains("hunter2"), "{jobs}");
    assert!(!String::from_utf8_lossy(files["nodes.json"]).contains("10.1.2.3"));
    let events = json_of("events.json");
    assert_eq!(events["items"].as_array().unwrap().len(), 1, "only the ClusterQueue's: {events:#}");
    assert_eq!(files["kueue/configuration.yaml"], b"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n");
    assert_eq!(files["kueue-ext/integrations.yaml"], b"integrations: []\n", "the kinds our controller ran");
    let log = String::from_utf8_lossy(files["logs/kueue.log"]).into_owned();
    assert_eq!((log.lines().count(), log.lines().next()), (2000, Some("line 1000")));

    assert_eq!(entry.kueue_version.as_deref(), Some("v0.19.2"));
    assert_eq!((entry.counts["ClusterQueue"], entry.counts["Node"], entry.counts["Event"]), (1, 1, 1));
    assert_eq!(entry.truncated_logs, ["logs/kueue.log"]);
    assert!(entry.unread.contains_key("Topology"), "{:?}", entry.unread);
}

/// Kueue as a kind cluster or a real install runs it: a Deployment mounting its Configuration
/// from a ConfigMap, one pod whose log is read bounded.
fn kueue_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
        "spec": {
            "selector": {"matchLabels": {"control-plane": "controller-manager"}},
            "template": {"spec": {
                "containers": [{
                    "name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.19.2",
                    "args": ["--config=/controller_manager_config.yaml"],
                    "volumeMounts": [{"name": "manager-config", "mountPath": "/controller_manager_config.yaml",
                                      "subPath": "controller_manager_config.yaml"}],
                }],
                "volumes": [{"name": "manager-config", "configMap": {"name": "kueue-manager-config"}}],
            }},
        },
    })
}

fn installed(_: &Method, path: &str) -> Result<Value, u16> {
    match path {
        "/apis/apps/v1/deployments" => Ok(list(json!([kueue_deployment()]))),
        "/apis/apps/v1/namespaces/kueue-system/deployments/kueue-controller-manager" => Ok(kueue_deployment()),
        "/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config" => Ok(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": "kind: Configuration\n"},
        })),
        "/api/v1/namespaces/kueue-system/pods" => Ok(list(json!([{
            "metadata": {"name": "kueue-abc", "namespace": "kueue-system"},
            "spec": {"containers": [{"name": "manager"}]},
        }]))),
        "/api/v1/namespaces/kueue-system/pods/kueue-abc/log" => Ok(json!("started")),
        path if path.contains("/namespaces/kueue-ext-system/") => Err(404),
        _ => Ok(list(json!([]))),
    }
}

#[tokio::test]
async fn an_installed_kueue_gives_its_configuration_version_and_bounded_logs() {
    let (client, requests) = scripted_client(installed);
    let target = Target { name: "manager".into(), context: "prod".into(), role: Role::Manager };
    let options = Options::default();
    let (entry, captured) = cluster(&target, client, &KindRegistry::built_in(), &LocalFiles::default(), &options).await;

    let asked = requested(&requests);
    let config_maps: Vec<&String> = asked.iter().filter(|r| r.contains("configmaps")).collect();
    assert_eq!(
        config_maps,
        [
            "GET /api/v1/namespaces/kueue-system/configmaps/kueue-manager-config",
            "GET /api/v1/namespaces/kueue-ext-system/configmaps/kueue-ext-integrations",
        ]
    );
    let log = asked.iter().find(|r| r.contains("/pods/kueue-abc/log")).expect("the pod's log is asked for");
    assert!(
        log.contains("container=manager") && log.contains("limitBytes=1048576") && log.contains("tailLines=2000"),
        "{log}"
    );
    assert!(
        asked.iter().any(|r| r.contains("/pods?") && r.contains("labelSelector=control-plane%3Dcontroller-manager")),
        "{asked:#?}"
    );

    assert_eq!(entry.kueue_version.as_deref(), Some("v0.19.2"));
    assert_eq!(
        entry.kueue_configuration.as_deref(),
        Some("ConfigMap kueue-system/kueue-manager-config, key controller_manager_config.yaml")
    );
    let files: BTreeMap<&str, &[u8]> = captured.files.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
    assert_eq!(files["kueue/configuration.yaml"], b"kind: Configuration\n");
    assert!(files.contains_key("logs/kueue-system.kueue-abc.manager.log"), "{:?}", files.keys());
    assert!(entry.unread.is_empty(), "{:?}", entry.unread);
}
