//! What a sandbox cannot reproduce as captured, replaced by a stand-in that says so: an
//! AdmissionCheck whose controller the sandbox does not run is taken out of the ClusterQueues
//! that use it, and a MultiKueueCluster without a sandbox worker out of its MultiKueueConfigs,
//! each object annotated with what was removed and why.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::connect::{CONTROLLER_NAME as MULTIKUEUE_CONTROLLER, admission_checks};

/// The annotation on an object changed from its capture: what was removed and why.
pub const STAND_IN: &str = "kueue-ext.dev/stand-in";

/// The AdmissionChecks that cannot be reproduced, by name, and why. The sandbox runs only
/// MultiKueue's controller, and only on a manager of workers.
pub fn unreproducible_checks(checks: &[Value], multikueue: bool) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for check in checks {
        let name = check["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let controller = check["spec"]["controllerName"].as_str().unwrap_or("(none)");
        let why = match controller {
            MULTIKUEUE_CONTROLLER if multikueue => continue,
            MULTIKUEUE_CONTROLLER => "MultiKueue runs on a manager of workers only".to_string(),
            "kueue.x-k8s.io/provisioning-request" => {
                format!("its controller {controller} needs a cluster autoscaler, which the sandbox does not run")
            }
            other => format!("its controller {other} does not run in the sandbox"),
        };
        out.insert(name, why);
    }
    out
}

/// A ClusterQueue without the `dropped` checks, annotated when it lost any; and the stand-in
/// in words.
pub fn without_checks(queue: &Value, dropped: &BTreeMap<String, String>) -> (Value, Option<String>) {
    let named = admission_checks(&queue["spec"]);
    let removed: Vec<(&String, &String)> = named.iter().filter_map(|name| Some((name, dropped.get(name)?))).collect();
    if removed.is_empty() {
        return (queue.clone(), None);
    }
    let mut out = queue.clone();
    let gone = |name: &Value| name.as_str().is_some_and(|n| dropped.contains_key(n));
    // pointer_mut, not indexing: indexing would add the field it looks for.
    if let Some(list) = out.pointer_mut("/spec/admissionChecks").and_then(Value::as_array_mut) {
        list.retain(|name| !gone(name));
    }
    if let Some(rules) = out.pointer_mut("/spec/admissionChecksStrategy/admissionChecks").and_then(Value::as_array_mut)
    {
        rules.retain(|rule| !gone(&rule["name"]));
        // Kueue's schema wants at least one rule in a strategy: none is no strategy.
        if rules.is_empty()
            && let Some(spec) = out["spec"].as_object_mut()
        {
            spec.remove("admissionChecksStrategy");
        }
    }
    let words: Vec<String> =
        removed.iter().map(|(name, why)| format!("admission check {name} removed: {why}")).collect();
    let words = words.join("; ");
    annotate(&mut out, &words);
    (out, Some(words))
}

/// A MultiKueueConfig listing only the MultiKueueClusters in `kept`, annotated when it lost any.
pub fn with_clusters(config: &Value, kept: &[String]) -> (Value, Option<String>) {
    let clusters: Vec<&str> =
        config["spec"]["clusters"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let (stay, gone): (Vec<&str>, Vec<&str>) = clusters.into_iter().partition(|c| kept.iter().any(|k| k == c));
    if gone.is_empty() {
        return (config.clone(), None);
    }
    let mut out = config.clone();
    out["spec"]["clusters"] = json!(stay);
    let words = format!("MultiKueueCluster(s) {} removed: no worker of the capture to run them", gone.join(", "));
    annotate(&mut out, &words);
    (out, Some(words))
}

fn annotate(object: &mut Value, words: &str) {
    if !object["metadata"]["annotations"].is_object() {
        object["metadata"]["annotations"] = json!({});
    }
    object["metadata"]["annotations"][STAND_IN] = json!(words);
}

/// The MultiKueueCluster name of each sandbox worker: the captured ones in capture order, then
/// the sandbox's own names (`worker3`) for workers past them; and the captured ones left over.
pub fn worker_names(captured: &[Value], workers: usize) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = captured.iter().filter_map(|c| c["metadata"]["name"].as_str()).map(String::from).collect();
    let mapped = (0..workers).map(|i| names.get(i).cloned().unwrap_or_else(|| format!("worker{}", i + 1))).collect();
    (mapped, names.into_iter().skip(workers).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, controller: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"controllerName": controller}})
    }

    #[test]
    fn only_multikueue_on_a_manager_of_workers_is_reproduced() {
        let checks = [
            check("multikueue", MULTIKUEUE_CONTROLLER),
            check("prov", "kueue.x-k8s.io/provisioning-request"),
            check("mine", "example.com/approver"),
        ];
        let dropped = unreproducible_checks(&checks, true);
        assert_eq!(dropped.keys().collect::<Vec<_>>(), ["mine", "prov"]);
        assert_eq!(
            dropped["prov"],
            "its controller kueue.x-k8s.io/provisioning-request needs a cluster autoscaler, which the sandbox does not run"
        );
        assert_eq!(dropped["mine"], "its controller example.com/approver does not run in the sandbox");
        let alone = unreproducible_checks(&checks[..1], false);
        assert_eq!(alone["multikueue"], "MultiKueue runs on a manager of workers only");
    }

    #[test]
    fn a_check_is_taken_out_of_a_queue_either_way_it_is_named_and_the_queue_says_so() {
        let dropped = BTreeMap::from([("prov".to_string(), "no autoscaler".to_string())]);
        let cases = [
            (
                json!({"metadata": {"name": "cq"}, "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "multikueue"}, {"name": "prov"}]}}}),
                json!({"admissionChecksStrategy": {"admissionChecks": [{"name": "multikueue"}]}}),
                true,
            ),
            (
                json!({"metadata": {"name": "cq"}, "spec": {"admissionChecks": ["prov"]}}),
                json!({"admissionChecks": []}),
                true,
            ),
            (
                json!({"metadata": {"name": "cq"},
                       "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]}, "cohortName": "x"}}),
                json!({"cohortName": "x"}),
                true,
            ),
            (
                json!({"metadata": {"name": "cq"}, "spec": {"admissionChecks": ["multikueue"]}}),
                json!({"admissionChecks": ["multikueue"]}),
                false,
            ),
        ];
        for (queue, spec, changed) in cases {
            let (out, words) = without_checks(&queue, &dropped);
            assert_eq!(out["spec"], spec, "{queue}");
            assert_eq!(words.is_some(), changed);
            if changed {
                assert_eq!(out["metadata"]["annotations"][STAND_IN], "admission check prov removed: no autoscaler");
            } else {
                assert_eq!(out, queue, "untouched");
            }
        }
    }

    #[test]
    fn captured_clusters_map_onto_the_workers_in_order() {
        let clusters = [json!({"metadata": {"name": "east"}}), json!({"metadata": {"name": "west"}})];
        assert_eq!(worker_names(&clusters, 2), (vec!["east".into(), "west".into()], vec![]));
        assert_eq!(worker_names(&clusters, 1), (vec!["east".into()], vec!["west".into()]));
        assert_eq!(worker_names(&clusters[..1], 2), (vec!["east".into(), "worker2".into()], vec![]));

        let config = json!({"metadata": {"name": "mk"}, "spec": {"clusters": ["east", "west"]}});
        let (out, words) = with_clusters(&config, &["east".to_string()]);
        assert_eq!(out["spec"]["clusters"], json!(["east"]));
        assert_eq!(words.as_deref(), Some("MultiKueueCluster(s) west removed: no worker of the capture to run them"));
        assert_eq!(out["metadata"]["annotations"][STAND_IN], words.unwrap());
        assert_eq!(with_clusters(&config, &["east".into(), "west".into()]).0, config);
    }
}
