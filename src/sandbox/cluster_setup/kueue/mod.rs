//! Kueue as every sandbox configures it, whichever runtime runs it: its built-in integrations,
//! our kinds as external frameworks, and MultiKueue on a manager of workers. Each runtime installs
//! Kueue its own way (`process_runtime/kueue.rs`, `kind_runtime/kueue.rs`) with this.

pub mod manifests;

use serde_json::{Value, json};

use super::addons::{self, Addon};
use crate::integrations::declarative::config::Integration;
use crate::integrations::kueue_frameworks::{self, KueueFramework};
use crate::manifests::external_frameworks;
use crate::sandbox::runtime::MultiKueueManager;

/// Kueue's built-in integrations every sandbox enables (add-ons bring theirs): a framework whose
/// MultiKueue adapter is on needs its CRD on every worker, or the whole worker connection fails.
const SANDBOX_FRAMEWORKS: [&str; 1] = ["batch/job"];

/// The built-in integrations a sandbox with `addons` enables.
pub fn frameworks(addons: &[Addon]) -> Vec<&'static str> {
    SANDBOX_FRAMEWORKS.into_iter().chain(addons::kueue_frameworks(addons)).collect()
}

/// Whether a sandbox with `addons` runs Kueue's built-in integration `name` (the idle one
/// included, which it may enable itself).
pub fn runs_framework(addons: &[Addon], name: &str) -> bool {
    name == IDLE_FRAMEWORK.0 || frameworks(addons).contains(&name)
}

/// What every sandbox's Kueue is told, whatever runs it: our kinds as external frameworks (and
/// MultiKueue's generic adapter for them, which is gated), and on a manager of workers
/// MultiKueue with sandbox timings.
pub fn configure_for_sandbox(
    config: &mut Value,
    multikueue_manager: Option<MultiKueueManager>,
    integrations: &[Integration],
) {
    let frameworks = external_frameworks(integrations);
    config["integrations"]["externalFrameworks"] = json!(frameworks);
    // A kind configured here replaces Kueue's built-in integration of it: one owner per kind.
    let configured =
        |framework: &str| built_in_kind(framework).is_some_and(|kind| integrations.iter().any(|i| i.kind == kind));
    if let Some(built_in) = config["integrations"]["frameworks"].as_array_mut() {
        built_in.retain(|name| !name.as_str().is_some_and(configured));
        // Kueue turns an empty list into `batch/job`: keep one whose CRD a sandbox does not
        // install (Kueue then only waits for it) and that has no MultiKueue adapter (which
        // would need the CRD on every worker).
        if built_in.is_empty() {
            built_in.push(json!(IDLE_FRAMEWORK.0));
            config["featureGates"][IDLE_FRAMEWORK.1] = json!(true);
        }
    }
    config["featureGates"]["MultiKueueAdaptersForCustomJobs"] = json!(true);
    if let Some(manager) = multikueue_manager {
        // Orphaned remote objects are collected every 30s (default 1m): a sandbox is watched.
        // Key by key: how MultiKueue dispatches, replayed from a capture, stays.
        let external: Vec<Value> = frameworks.iter().map(|name| json!({"name": name})).collect();
        let lost = format!("{}s", manager.worker_lost_timeout.as_secs());
        let multikueue = &mut config["multiKueue"];
        multikueue["gcInterval"] = json!("30s");
        multikueue["workerLostTimeout"] = json!(lost);
        multikueue["externalFrameworks"] = json!(external);
    }
}

/// A built-in framework that stays idle in a sandbox, and the feature gate it needs.
const IDLE_FRAMEWORK: (&str, &str) = ("sparkoperator.k8s.io/sparkapplication", "SparkApplicationIntegration");

/// The kind (`Kind.version.group`) of one of Kueue's built-in frameworks.
fn built_in_kind(framework: &str) -> Option<String> {
    kueue_frameworks::by_name(framework).map(KueueFramework::qualified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::declarative::config::IntegrationConfig;

    #[test]
    fn a_configured_kind_replaces_kueues_built_in_integration_of_it() {
        let file = include_str!("../../../../samples/integrations/job-integration.yaml");
        let integrations = IntegrationConfig::parse("job-integration.yaml", file).unwrap().integrations;
        let mut config = json!({"integrations": {"frameworks": ["batch/job"]}});
        configure_for_sandbox(&mut config, Some(MultiKueueManager::default()), &integrations);
        assert_eq!(
            config["integrations"]["frameworks"],
            json!([IDLE_FRAMEWORK.0]),
            "never empty: Kueue would default it"
        );
        assert_eq!(config["featureGates"][IDLE_FRAMEWORK.1], true);
        let external = config["integrations"]["externalFrameworks"].as_array().unwrap();
        assert!(
            external.contains(&json!("Job.v1.batch"))
                && external.contains(&json!("ExternalJob.v1alpha1.kueue-ext.dev"))
        );
        assert!(
            config["multiKueue"]["externalFrameworks"].as_array().unwrap().contains(&json!({"name": "Job.v1.batch"}))
        );
        assert_eq!(config["multiKueue"]["workerLostTimeout"], "300s", "longer than an API server restart");

        let mut untouched = json!({"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}});
        configure_for_sandbox(&mut untouched, None, &[]);
        assert_eq!(untouched["integrations"]["frameworks"], json!(["batch/job", "jobset.x-k8s.io/jobset"]));
        assert!(untouched["featureGates"].get(IDLE_FRAMEWORK.1).is_none());
    }

    #[test]
    fn the_jobset_add_on_brings_kueues_jobset_integration_unless_an_integrations_file_configures_jobsets() {
        let mut config = json!({"integrations": {"frameworks": frameworks(&[Addon::Jobset])}});
        configure_for_sandbox(&mut config, None, &[]);
        assert_eq!(config["integrations"]["frameworks"], json!(["batch/job", "jobset.x-k8s.io/jobset"]));

        let file = include_str!("../../../../samples/addons/jobset/jobset-integration.yaml");
        let integrations = IntegrationConfig::parse("jobset-integration.yaml", file).unwrap().integrations;
        let mut config = json!({"integrations": {"frameworks": frameworks(&[Addon::Jobset])}});
        configure_for_sandbox(&mut config, Some(MultiKueueManager::default()), &integrations);
        assert_eq!(config["integrations"]["frameworks"], json!(["batch/job"]), "ours replaces Kueue's");
        assert!(
            config["multiKueue"]["externalFrameworks"]
                .as_array()
                .unwrap()
                .contains(&json!({"name": "JobSet.v1alpha2.jobset.x-k8s.io"}))
        );
    }
}
