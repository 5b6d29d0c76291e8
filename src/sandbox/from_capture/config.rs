//! What of a captured Kueue Configuration a sandbox's Kueue runs with: what decides scheduling
//! (queueing without a queue name, pods-ready waits, fair sharing, resources, feature gates,
//! the integrations, MultiKueue's dispatching) is taken over; how the sandbox runs Kueue (ports,
//! certificates, client connection, leader election, MultiKueue's timings and kinds) stays the
//! sandbox's. What is left out and matters is said, never dropped in silence.

use serde_json::{Map, Value, json};

/// Fields taken over whole.
const TAKEN: [&str; 7] = [
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "waitForPodsReady",
    "fairSharing",
    "admissionFairSharing",
    "resources",
    "objectRetentionPolicies",
];

/// Fields that say how the sandbox runs Kueue: its own, not the capture's.
const SANDBOX_OWN: [&str; 14] = [
    "apiVersion",
    "kind",
    "namespace",
    "internalCertManagement",
    "clientConnection",
    "visibilityServer",
    "health",
    "metrics",
    "webhook",
    "leaderElection",
    "controller",
    "pprofBindAddress",
    "cacheSyncTimeout",
    "gracefulShutdownTimeout",
];

/// Feature gates a sandbox needs as they are, whatever a capture says: the visibility server
/// wants an aggregated API and certificate paths the process runtime does not give it
/// (`process_runtime/kueue.rs`); MultiKueue's generic adapter copies our kinds to the workers
/// (`cluster_setup/kueue`).
const SANDBOX_GATES: [(&str, bool); 2] = [("VisibilityOnDemand", false), ("MultiKueueAdaptersForCustomJobs", true)];

/// MultiKueue settings taken over; its timings (gcInterval, workerLostTimeout) and external
/// frameworks (the kinds our controller runs) are the sandbox's.
const MULTIKUEUE_TAKEN: [&str; 4] = ["origin", "dispatcherName", "clusterProfile", "incrementalDispatcherConfig"];

/// The settings to lay over a sandbox's own Configuration, and what of the capture's is not
/// reproduced. `enabled` says whether the sandbox can run one of Kueue's built-in integrations;
/// `ours` lists the kinds our controller runs there (its external frameworks).
pub fn settings(captured: &Value, enabled: &dyn Fn(&str) -> bool, ours: &[String]) -> (Value, Vec<String>) {
    let mut out = Map::new();
    let mut left = Vec::new();
    let Some(fields) = captured.as_object() else { return (Value::Object(out), left) };
    for (key, value) in fields {
        match key.as_str() {
            key if TAKEN.contains(&key) => {
                out.insert(key.into(), value.clone());
            }
            key if SANDBOX_OWN.contains(&key) => {}
            "featureGates" => {
                let mut gates = Map::new();
                for (gate, on) in value.as_object().into_iter().flatten() {
                    match SANDBOX_GATES.iter().find(|(name, _)| name == gate) {
                        Some((_, needed)) if on != needed => {
                            left.push(format!("feature gate {gate}={on}: the sandbox runs Kueue with {gate}={needed}"));
                        }
                        Some(_) => {}
                        None => {
                            gates.insert(gate.clone(), on.clone());
                        }
                    }
                }
                out.insert(key.into(), Value::Object(gates));
            }
            "integrations" => {
                out.insert(key.into(), integrations(value, enabled, ours, &mut left));
            }
            "multiKueue" => {
                let taken: Map<String, Value> =
                    MULTIKUEUE_TAKEN.iter().filter_map(|k| Some((k.to_string(), value.get(*k)?.clone()))).collect();
                out.insert(key.into(), Value::Object(taken));
            }
            other => left.push(format!("Configuration field {other}: not reproduced by the sandbox")),
        }
    }
    (Value::Object(out), left)
}

fn integrations(captured: &Value, enabled: &dyn Fn(&str) -> bool, ours: &[String], left: &mut Vec<String>) -> Value {
    let mut out = json!({});
    if let Some(frameworks) = captured["frameworks"].as_array() {
        let names = frameworks.iter().filter_map(Value::as_str);
        let (kept, dropped): (Vec<&str>, Vec<&str>) = names.partition(|name| enabled(name));
        for name in dropped {
            left.push(format!(
                "integration {name}: the sandbox does not run it (batch/job and those of --addons only)"
            ));
        }
        out["frameworks"] = json!(kept);
    }
    for name in captured["externalFrameworks"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if !ours.iter().any(|o| o == name) {
            left.push(format!("external framework {name}: no controller runs it in the sandbox"));
        }
    }
    for key in ["labelKeysToCopy", "podOptions"] {
        if let Some(value) = captured.get(key) {
            out[key] = value.clone();
        }
    }
    out
}

/// Lays `settings` over `config`: objects merge key by key, anything else replaces.
pub fn overlay(config: &mut Value, settings: &Value) {
    match (config, settings) {
        (Value::Object(config), Value::Object(settings)) => {
            for (key, value) in settings {
                overlay(config.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (config, settings) => *config = settings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled(name: &str) -> bool {
        name == "batch/job"
    }

    #[test]
    fn what_decides_scheduling_is_taken_how_kueue_runs_is_not() {
        let captured = json!({
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "webhook": {"port": 9443}, "clientConnection": {"qps": 50}, "leaderElection": {"leaderElect": true},
            "waitForPodsReady": {"timeout": "5m"}, "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]},
            "resources": {"excludeResourcePrefixes": ["example.com/"]},
            "featureGates": {"TopologyAwareScheduling": true, "VisibilityOnDemand": true,
                             "MultiKueueAdaptersForCustomJobs": true},
            "integrations": {"frameworks": ["batch/job", "kubeflow.org/mpijob"],
                             "externalFrameworks": ["ExternalJob.v1alpha1.kueue-ext.dev", "Foo.v1.example.com"],
                             "labelKeysToCopy": ["team"]},
            "multiKueue": {"gcInterval": "1m", "workerLostTimeout": "15m", "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                           "externalFrameworks": [{"name": "Foo.v1.example.com"}]},
            "queueVisibility": {"updateIntervalSeconds": 5},
        });
        let (settings, left) = settings(&captured, &enabled, &["ExternalJob.v1alpha1.kueue-ext.dev".to_string()]);
        assert_eq!(
            settings,
            json!({
                "waitForPodsReady": {"timeout": "5m"}, "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]},
                "resources": {"excludeResourcePrefixes": ["example.com/"]},
                "featureGates": {"TopologyAwareScheduling": true},
                "integrations": {"frameworks": ["batch/job"], "labelKeysToCopy": ["team"]},
                "multiKueue": {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"},
            })
        );
        assert_eq!(
            left,
            [
                "feature gate VisibilityOnDemand=true: the sandbox runs Kueue with VisibilityOnDemand=false",
                "integration kubeflow.org/mpijob: the sandbox does not run it (batch/job and those of --addons only)",
                "external framework Foo.v1.example.com: no controller runs it in the sandbox",
                "Configuration field queueVisibility: not reproduced by the sandbox",
            ]
        );
    }

    #[test]
    fn an_overlay_merges_objects_and_replaces_the_rest() {
        let mut config = json!({"webhook": {"port": 1}, "featureGates": {"VisibilityOnDemand": false},
                                "integrations": {"frameworks": ["batch/job"], "externalFrameworks": ["X"]}});
        overlay(
            &mut config,
            &json!({"featureGates": {"TopologyAwareScheduling": true},
                                     "integrations": {"frameworks": []}, "fairSharing": {}}),
        );
        assert_eq!(
            config,
            json!({"webhook": {"port": 1}, "featureGates": {"VisibilityOnDemand": false, "TopologyAwareScheduling": true},
                   "integrations": {"frameworks": [], "externalFrameworks": ["X"]}, "fairSharing": {}})
        );
    }
}
