//! Captured objects as a user would write them again: what the API server and the controllers
//! assigned (uid, resourceVersion, owners, finalizers, status, a Job's generated selector) goes,
//! so that applying them to a new cluster creates objects, not conflicts.

use serde_json::Value;

use crate::jobframework::podset::{CLUSTER_QUEUE_LABEL, LOCAL_QUEUE_LABEL, PODSET_LABEL, WORKLOAD_ANNOTATION};

/// The label MultiKueue puts on the copies it makes on a worker: the manager's job is replayed,
/// and MultiKueue makes the copy again.
pub const MULTIKUEUE_ORIGIN: &str = "kueue.x-k8s.io/multikueue-origin";

/// Metadata a user writes; the rest is the API server's and the controllers'.
const USER_METADATA: [&str; 4] = ["name", "namespace", "labels", "annotations"];

/// Labels the Job controller puts on a Job's pod template to match the selector it generates.
const JOB_CONTROLLER_LABELS: [&str; 4] =
    ["controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"];

/// An object without its status and without metadata a user does not write.
pub fn object(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("status");
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.retain(|key, _| USER_METADATA.contains(&key.as_str()));
        }
    }
    out
}

/// What an admission puts into a job's pod templates that names that admission: a job created
/// again is admitted again, and a second Workload name beside the first is a conflict that
/// fails the job (flavors' node labels and tolerations stay: admitted again, they are the same).
const ADMISSION_ANNOTATIONS: [&str; 1] = [WORKLOAD_ANNOTATION];
const ADMISSION_LABELS: [&str; 3] = [PODSET_LABEL, LOCAL_QUEUE_LABEL, CLUSTER_QUEUE_LABEL];

/// A job as it is created again: [`object`] without what its last admission put into its pod
/// templates, and for a batch/v1 Job without a manual selector, the selector and pod labels the
/// Job controller generated (the API server refuses a Job that brings them).
pub fn job(job: &Value) -> Value {
    let mut out = object(job);
    if let Some(spec) = out.get_mut("spec") {
        forget_admission(spec);
    }
    let generated = out["apiVersion"] == "batch/v1" && out["kind"] == "Job" && out["spec"]["manualSelector"] != true;
    if generated {
        if let Some(spec) = out["spec"].as_object_mut() {
            spec.remove("selector");
        }
        if let Some(labels) = out.pointer_mut("/spec/template/metadata/labels").and_then(Value::as_object_mut) {
            labels.retain(|key, _| !JOB_CONTROLLER_LABELS.contains(&key.as_str()));
        }
    }
    out
}

/// Takes the admission's keys out of every pod template (`template.metadata`) under `value`.
fn forget_admission(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(metadata) = map.get_mut("template").and_then(|t| t.get_mut("metadata")) {
                for (field, keys) in [("annotations", &ADMISSION_ANNOTATIONS[..]), ("labels", &ADMISSION_LABELS[..])] {
                    if let Some(found) = metadata.get_mut(field).and_then(Value::as_object_mut) {
                        found.retain(|key, _| !keys.contains(&key.as_str()));
                    }
                }
            }
            map.values_mut().for_each(forget_admission);
        }
        Value::Array(items) => items.iter_mut().for_each(forget_admission),
        _ => {}
    }
}

/// Why a captured job is not created again, if it is not: MultiKueue's copy on a worker, or a
/// job another object controls (its owner makes it again).
pub fn not_replayed(job: &Value) -> Option<&'static str> {
    if job["metadata"]["labels"][MULTIKUEUE_ORIGIN].is_string() {
        return Some("MultiKueue's copy of a manager's job");
    }
    let owners = job["metadata"]["ownerReferences"].as_array().into_iter().flatten();
    owners.clone().any(|o| o["controller"] == true).then_some("made by the object that controls it")
}

/// `metadata.namespace` of each object, once each, in order.
pub fn namespaces<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for namespace in objects.into_iter().filter_map(|o| o["metadata"]["namespace"].as_str()) {
        if !out.iter().any(|n| n == namespace) {
            out.push(namespace.to_string());
        }
    }
    out
}

/// A Namespace object.
pub fn namespace(name: &str) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_the_server_assigned_goes_what_a_user_wrote_stays() {
        let cases = [
            (
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                       "metadata": {"name": "cq", "uid": "u", "resourceVersion": "7", "generation": 2,
                                    "creationTimestamp": "2026-01-01T00:00:00Z",
                                    "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                                    "labels": {"team": "a"}, "annotations": {"note": "x"}},
                       "spec": {"cohortName": "team"}, "status": {"pendingWorkloads": 1}}),
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                       "metadata": {"name": "cq", "labels": {"team": "a"}, "annotations": {"note": "x"}},
                       "spec": {"cohortName": "team"}}),
            ),
            (
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": "team-a", "uid": "u"},
                       "spec": {"clusterQueue": "cq"}}),
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": "team-a"}, "spec": {"clusterQueue": "cq"}}),
            ),
        ];
        for (captured, expected) in cases {
            assert_eq!(object(&captured), expected);
        }
    }

    #[test]
    fn a_jobs_generated_selector_goes_unless_it_was_manual() {
        let job = |manual: bool| {
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "d", "uid": "u"},
                   "spec": {"manualSelector": manual, "suspend": true,
                            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                            "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "u",
                                                                 "controller-uid": "u", "job-name": "j",
                                                                 "batch.kubernetes.io/job-name": "j", "app": "x"}}}},
                   "status": {"active": 0}})
        };
        let generated = super::job(&job(false));
        assert_eq!(generated["spec"].get("selector"), None);
        assert_eq!(generated["spec"]["template"]["metadata"]["labels"], json!({"app": "x"}));
        assert_eq!(generated["spec"]["suspend"], true, "suspended as it was");
        assert_eq!(generated.get("status"), None);
        let manual = super::job(&job(true));
        assert!(manual["spec"]["selector"].is_object());
        let external = json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
                              "metadata": {"name": "e"}, "spec": {"selector": "kept"}});
        assert_eq!(super::job(&external)["spec"]["selector"], "kept", "only batch/v1 Jobs have a generated one");
    }

    #[test]
    fn what_the_last_admission_put_into_pod_templates_goes() {
        let admitted = json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob", "metadata": {"name": "e"},
            "spec": {"podSets": [{"name": "main", "template": {
                "metadata": {"annotations": {WORKLOAD_ANNOTATION: "externaljob-e-1a2b3", "note": "kept"},
                             "labels": {PODSET_LABEL: "main", LOCAL_QUEUE_LABEL: "lq", CLUSTER_QUEUE_LABEL: "cq", "app": "x"}},
                "spec": {"nodeSelector": {"pool": "a"}}}}]}});
        let again = job(&admitted);
        let template = &again["spec"]["podSets"][0]["template"];
        assert_eq!(template["metadata"], json!({"annotations": {"note": "kept"}, "labels": {"app": "x"}}));
        assert_eq!(
            template["spec"]["nodeSelector"],
            json!({"pool": "a"}),
            "the flavor's, the same when admitted again"
        );
    }

    #[test]
    fn copies_and_owned_jobs_are_not_replayed() {
        let cases = [
            (json!({"metadata": {"name": "a"}}), None),
            (
                json!({"metadata": {"name": "a", "labels": {MULTIKUEUE_ORIGIN: "multikueue"}}}),
                Some("MultiKueue's copy of a manager's job"),
            ),
            (
                json!({"metadata": {"name": "a", "ownerReferences": [{"kind": "JobSet", "controller": true}]}}),
                Some("made by the object that controls it"),
            ),
            (json!({"metadata": {"name": "a", "ownerReferences": [{"kind": "ConfigMap"}]}}), None),
        ];
        for (job, expected) in cases {
            assert_eq!(not_replayed(&job), expected, "{job}");
        }
    }

    #[test]
    fn namespaces_are_listed_once_in_order() {
        let objects = [
            json!({"metadata": {"namespace": "b"}}),
            json!({"metadata": {}}),
            json!({"metadata": {"namespace": "a"}}),
            json!({"metadata": {"namespace": "b"}}),
        ];
        assert_eq!(namespaces(&objects), ["b", "a"]);
    }
}
