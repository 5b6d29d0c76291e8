//! The job kinds MultiKueue copies to a worker, which its ServiceAccount there must be allowed
//! to create: ours, the ones an install integrates by configuration, and those of Kueue's own
//! integrations that have a MultiKueue adapter.

use crate::integrations::declarative::config::Integration;

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

/// Kueue's own integrations with a MultiKueue adapter (`MultiKueueAdapter` in their
/// `jobframework.RegisterIntegration`), by the name `integrations.frameworks` gives them, with
/// the resource the adapter creates on a worker. Kueue keeps a worker connection inactive until
/// it may watch every one of them there.
const WITH_ADAPTER: [(&str, &str, &str); 14] = [
    ("batch/job", "batch", "jobs"),
    ("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "jobsets"),
    ("kubeflow.org/mpijob", "kubeflow.org", "mpijobs"),
    ("kubeflow.org/paddlejob", "kubeflow.org", "paddlejobs"),
    ("kubeflow.org/pytorchjob", "kubeflow.org", "pytorchjobs"),
    ("kubeflow.org/tfjob", "kubeflow.org", "tfjobs"),
    ("kubeflow.org/xgboostjob", "kubeflow.org", "xgboostjobs"),
    ("kubeflow.org/jaxjob", "kubeflow.org", "jaxjobs"),
    ("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "trainjobs"),
    ("ray.io/rayjob", "ray.io", "rayjobs"),
    ("ray.io/raycluster", "ray.io", "rayclusters"),
    ("ray.io/rayservice", "ray.io", "rayservices"),
    ("workload.codeflare.dev/appwrapper", "workload.codeflare.dev", "appwrappers"),
    ("leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "leaderworkersets"),
];

/// The kinds of Kueue's `frameworks` (as `integrations.frameworks` names them) that MultiKueue
/// copies to workers; the others stay on the manager.
pub fn with_multikueue_adapter(frameworks: &[String]) -> Vec<JobResource> {
    let adapted = |framework: &String| WITH_ADAPTER.iter().find(|(name, _, _)| name == framework);
    frameworks.iter().filter_map(adapted).map(|(_, group, resource)| JobResource::new(group, resource)).collect()
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
            ["batch/job", "pod", "deployment", "jobset.x-k8s.io/jobset"].map(String::from).to_vec();
        assert_eq!(
            with_multikueue_adapter(&frameworks),
            [JobResource::new("batch", "jobs"), JobResource::new("jobset.x-k8s.io", "jobsets")]
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
