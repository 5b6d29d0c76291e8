//! The job kinds MultiKueue copies to a worker, which its ServiceAccount there must be allowed
//! to create: ours, the ones an install integrates by configuration, and those of Kueue's own
//! integrations that have a MultiKueue adapter.

use crate::integrations::declarative::config::Integration;
use crate::integrations::kueue_frameworks;

/// A kind of job by its API group and resource, as an RBAC rule names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct JobResource {
    pub group: String,
    pub resource: String,
}

impl JobResource {
    pub fn new(group: &str, resource: &str) -> JobResource {
        JobResource { group: group.to_string(), resource: resource.to_string() }
    }

    pub fn of(integration: &Integration) -> JobResource {
        JobResource { group: integration.gvk().group, resource: integration.resource.clone() }
    }
}

/// The kinds of Kueue's `frameworks` (as `integrations.frameworks` names them) that MultiKueue
/// copies to workers, those with a MultiKueue adapter; the others stay on the manager. Kueue
/// keeps a worker connection inactive until it may watch every one of them there.
pub fn with_multikueue_adapter(frameworks: &[String]) -> Vec<JobResource> {
    let adapted = frameworks.iter().filter_map(|name| kueue_frameworks::by_name(name)).filter(|f| f.multikueue_adapter);
    adapted.map(|f| JobResource::new(f.group, f.resource)).collect()
}

/// Every kind a worker must accept beyond Kueue's Workloads and ours: the manager's kinds
/// integrated by configuration, then those of Kueue's own integrations it enables.
pub fn for_workers(integrations: &[Integration], kueue_frameworks: &[String]) -> Vec<JobResource> {
    let mut kinds: Vec<JobResource> = integrations.iter().map(JobResource::of).collect();
    for kind in with_multikueue_adapter(kueue_frameworks) {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kueues_integrations_with_an_adapter_reach_the_workers() {
        let frameworks: Vec<String> =
            ["batch/job", "deployment", "jobset.x-k8s.io/jobset", "no.such/framework"].map(String::from).to_vec();
        assert_eq!(
            with_multikueue_adapter(&frameworks),
            [JobResource::new("batch", "jobs"), JobResource::new("jobset.x-k8s.io", "jobsets")]
        );
    }

    /// Kueue v0.19.2 registers a MultiKueue adapter for Pods and StatefulSets too.
    #[test]
    fn pods_and_statefulsets_reach_the_workers_when_enabled() {
        let frameworks: Vec<String> = ["pod", "statefulset"].map(String::from).to_vec();
        assert_eq!(
            with_multikueue_adapter(&frameworks),
            [JobResource::new("", "pods"), JobResource::new("apps", "statefulsets")]
        );
    }

    #[test]
    fn a_configured_kind_comes_first_and_once() {
        let text = std::fs::read_to_string("samples/addons/jobset/jobset-integration.yaml").unwrap();
        let integrations =
            crate::integrations::declarative::config::IntegrationConfig::parse("jobset", &text).unwrap().integrations;
        let kinds = for_workers(&integrations, &["jobset.x-k8s.io/jobset".into(), "batch/job".into()]);
        assert_eq!(kinds, [JobResource::new("jobset.x-k8s.io", "jobsets"), JobResource::new("batch", "jobs")]);
    }
}
