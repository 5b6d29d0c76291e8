//! What MultiKueue needs on the manager: a kubeconfig Secret and a MultiKueueCluster per worker,
//! one MultiKueueConfig naming them, the AdmissionCheck that uses it, and that check on the
//! ClusterQueue whose Workloads go to the workers.

use serde_json::{Value, json};

use super::connected;
use crate::kube_util::kubeconfig;

pub const ADMISSION_CHECK: &str = "multikueue";
pub const CONFIG: &str = "kueue-ext";
pub const CONTROLLER_NAME: &str = "kueue.x-k8s.io/multikueue";
/// The annotation on the MultiKueueConfig naming the ClusterQueues `connect` added the
/// AdmissionCheck to (a JSON list), so that `disconnect` takes it out of those and no other.
pub const CHECKED_QUEUES_ANNOTATION: &str = "kueue-ext.dev/admission-check-added-to";

/// Secret on the manager holding a worker's kubeconfig.
pub fn secret_name(worker: &str) -> String {
    format!("multikueue-{worker}")
}

/// The names of the manager's MultiKueue objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// Kueue's namespace, where it reads the workers' kubeconfigs.
    pub kueue_namespace: String,
    pub admission_check: String,
    pub config: String,
}

impl Default for Names {
    fn default() -> Names {
        Names {
            kueue_namespace: super::WORKER_NAMESPACE.into(),
            admission_check: ADMISSION_CHECK.into(),
            config: CONFIG.into(),
        }
    }
}

/// A worker's kubeconfig Secret and its MultiKueueCluster.
pub fn objects_for(names: &Names, worker: &str, kubeconfig: &str) -> Vec<Value> {
    vec![
        // `data`, not `stringData`: applied again, the same kubeconfig leaves the Secret unchanged.
        connected(json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": secret_name(worker), "namespace": names.kueue_namespace},
               "data": {"kubeconfig": kubeconfig::b64(kubeconfig)}})),
        connected(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
               "metadata": {"name": worker},
               "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name(worker)}}}})),
    ]
}

/// The MultiKueueConfig of `workers` and the AdmissionCheck that uses it; `checked_queues`
/// (the ClusterQueues the check was added to) is recorded on the config.
pub fn shared_objects(names: &Names, workers: &[&str], checked_queues: &[String]) -> Vec<Value> {
    let mut config = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                            "metadata": {"name": names.config}, "spec": {"clusters": workers}});
    if !checked_queues.is_empty() {
        config["metadata"]["annotations"][CHECKED_QUEUES_ANNOTATION] = json!(json!(checked_queues).to_string());
    }
    vec![
        connected(config),
        connected(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": names.admission_check},
               "spec": {"controllerName": CONTROLLER_NAME,
                        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": names.config}}})),
    ]
}

/// The ClusterQueues a MultiKueueConfig records the check was added to.
pub fn checked_queues(config: &Value) -> Vec<String> {
    let recorded = config["metadata"]["annotations"][CHECKED_QUEUES_ANNOTATION].as_str().unwrap_or("[]");
    serde_json::from_str(recorded).unwrap_or_default()
}

/// The workers a MultiKueueConfig sends Workloads to.
pub fn clusters_of(config: &Value) -> Vec<String> {
    let clusters = config["spec"]["clusters"].as_array().into_iter().flatten();
    clusters.filter_map(Value::as_str).map(String::from).collect()
}

/// The workers a MultiKueueConfig keeps once `workers` connect: those it listed before, then
/// `workers` not among them (connecting one more worker keeps the others).
pub fn joined_clusters(before: &[String], workers: &[&str]) -> Vec<String> {
    let mut clusters = before.to_vec();
    clusters.extend(workers.iter().filter(|w| !before.iter().any(|b| b == *w)).map(|w| w.to_string()));
    clusters
}

/// The admission checks a ClusterQueue's spec names, in `admissionChecksStrategy` (or the
/// older `admissionChecks` list).
pub fn admission_checks(spec: &Value) -> Vec<String> {
    let strategy = spec["admissionChecksStrategy"]["admissionChecks"].as_array().into_iter().flatten();
    let plain = spec["admissionChecks"].as_array().into_iter().flatten();
    strategy.map(|rule| &rule["name"]).chain(plain).filter_map(Value::as_str).map(String::from).collect()
}

/// The merge patch that adds `check` to a ClusterQueue, or `None` when it has it. The patch
/// carries the queue's resourceVersion: a queue changed meanwhile is refused, not overwritten.
pub fn adding_check(cluster_queue: &Value, check: &str) -> Option<Value> {
    let spec = &cluster_queue["spec"];
    if admission_checks(spec).iter().any(|name| name == check) {
        return None;
    }
    let version = &cluster_queue["metadata"]["resourceVersion"];
    let spec = if spec["admissionChecks"].as_array().is_some_and(|list| !list.is_empty()) {
        let mut list = spec["admissionChecks"].as_array().cloned().unwrap_or_default();
        list.push(json!(check));
        json!({"admissionChecks": list})
    } else {
        let mut rules = spec["admissionChecksStrategy"]["admissionChecks"].as_array().cloned().unwrap_or_default();
        rules.push(json!({"name": check}));
        json!({"admissionChecksStrategy": {"admissionChecks": rules}})
    };
    Some(json!({"metadata": {"resourceVersion": version}, "spec": spec}))
}

/// The merge patch that takes `check` out of a ClusterQueue, or `None` when it lacks it.
pub fn removing_check(cluster_queue: &Value, check: &str) -> Option<Value> {
    let spec = &cluster_queue["spec"];
    if !admission_checks(spec).iter().any(|name| name == check) {
        return None;
    }
    let version = &cluster_queue["metadata"]["resourceVersion"];
    let mut patch = json!({"metadata": {"resourceVersion": version}, "spec": {}});
    if let Some(list) = spec["admissionChecks"].as_array() {
        let kept: Vec<&Value> = list.iter().filter(|name| *name != check).collect();
        patch["spec"]["admissionChecks"] = json!(kept);
    }
    if let Some(rules) = spec["admissionChecksStrategy"]["admissionChecks"].as_array() {
        let kept: Vec<&Value> = rules.iter().filter(|rule| rule["name"] != check).collect();
        patch["spec"]["admissionChecksStrategy"] =
            if kept.is_empty() { Value::Null } else { json!({"admissionChecks": kept}) };
    }
    Some(patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::is_connected;

    #[test]
    fn manager_objects_reference_the_worker_secret() {
        let names = Names { kueue_namespace: "kueue".into(), ..Names::default() };
        let objects = objects_for(&names, "worker1", "apiVersion: v1");
        assert_eq!(objects[0]["metadata"]["name"], "multikueue-worker1");
        assert_eq!(objects[0]["metadata"]["namespace"], "kueue");
        assert_eq!(objects[0]["data"]["kubeconfig"], kubeconfig::b64("apiVersion: v1"));
        assert_eq!(objects[1]["spec"]["clusterSource"]["kubeConfig"]["location"], "multikueue-worker1");
        let shared = shared_objects(&names, &["worker1", "worker2"], &[]);
        assert_eq!(shared[0]["spec"]["clusters"], json!(["worker1", "worker2"]));
        assert!(shared[0]["metadata"].get("annotations").is_none(), "no record: the sandbox's objects");
        assert_eq!(shared[1]["spec"]["controllerName"], CONTROLLER_NAME);
        assert_eq!(shared[1]["spec"]["parameters"]["name"], CONFIG);
        assert!(objects.iter().chain(&shared).all(is_connected));
    }

    #[test]
    fn a_worker_connected_later_joins_the_ones_before() {
        let before = clusters_of(&json!({"spec": {"clusters": ["w1", "w2"]}}));
        assert_eq!(joined_clusters(&before, &["w3", "w1"]), ["w1", "w2", "w3"]);
        assert_eq!(joined_clusters(&[], &["w1"]), ["w1"]);
        assert!(clusters_of(&json!({"metadata": {}})).is_empty());
    }

    #[test]
    fn the_config_records_where_the_check_was_added() {
        let shared = shared_objects(&Names::default(), &["w"], &["team-a".into()]);
        assert_eq!(shared[0]["metadata"]["annotations"][CHECKED_QUEUES_ANNOTATION], "[\"team-a\"]");
        assert_eq!(checked_queues(&shared[0]), ["team-a"]);
        assert!(checked_queues(&json!({"metadata": {}})).is_empty());
    }

    #[test]
    fn the_check_joins_a_queue_once_and_leaves_the_others() {
        let queue = json!({"metadata": {"name": "q", "resourceVersion": "5"},
                           "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "provisioning"}]}}});
        let patch = adding_check(&queue, "multikueue").unwrap();
        assert_eq!(
            patch,
            json!({"metadata": {"resourceVersion": "5"}, "spec": {"admissionChecksStrategy": {"admissionChecks": [
                {"name": "provisioning"}, {"name": "multikueue"}]}}})
        );
        let mut checked = queue.clone();
        checked["spec"] = patch["spec"].clone();
        assert_eq!(adding_check(&checked, "multikueue"), None);
        let removed = removing_check(&checked, "multikueue").unwrap();
        assert_eq!(removed["spec"]["admissionChecksStrategy"], queue["spec"]["admissionChecksStrategy"]);
        assert_eq!(removing_check(&queue, "multikueue"), None);

        let bare = json!({"metadata": {"resourceVersion": "1"}, "spec": {}});
        let added = adding_check(&bare, "multikueue").unwrap();
        let mut only = bare.clone();
        only["spec"] = added["spec"].clone();
        assert_eq!(removing_check(&only, "multikueue").unwrap()["spec"]["admissionChecksStrategy"], Value::Null);

        let older = json!({"metadata": {"resourceVersion": "1"}, "spec": {"admissionChecks": ["a"]}});
        assert_eq!(
            adding_check(&older, "multikueue").unwrap()["spec"],
            json!({"admissionChecks": ["a", "multikueue"]})
        );
    }
}
