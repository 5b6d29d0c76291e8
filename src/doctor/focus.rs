//! The findings of a report that bear on one job: `explain` shows them beside its reasons, so a
//! job waiting on a broken setup says which part is broken. A finding about another job, or
//! about a queue the job does not use, is left out.

use super::{Finding, Severity};

/// What a job goes through, as far as the report can name it.
#[derive(Clone, Debug, Default)]
pub struct JobPath<'a> {
    /// `ExternalJob`.
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub workload: Option<&'a str>,
    pub local_queue: Option<&'a str>,
    pub cluster_queue: Option<&'a str>,
    /// It is dispatched through MultiKueue: the manager's MultiKueue objects bear on it.
    pub through_multikueue: bool,
}

/// MultiKueue's objects on the manager, and what each worker connection needs.
const MULTIKUEUE_KINDS: [&str; 4] = ["MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck", "Secret"];

/// The errors and warnings of `findings` that bear on the job `path` describes: those about its
/// cluster's setup as a whole, the job itself, its Workload, its queues (on any cluster, where
/// MultiKueue copies them), its namespace, and MultiKueue's objects when it goes through them.
pub fn bearing_on<'f>(findings: &'f [Finding], path: &JobPath<'_>) -> Vec<&'f Finding> {
    let bears = |finding: &&Finding| {
        if finding.severity == Severity::Info {
            return false;
        }
        let Some(object) = &finding.object else { return true };
        let named = |name: Option<&str>| name == Some(object.name.as_str());
        let in_namespace = object.namespace == path.namespace;
        match object.kind.as_str() {
            "Workload" => in_namespace && named(path.workload),
            "LocalQueue" => in_namespace && named(path.local_queue),
            "ClusterQueue" => named(path.cluster_queue),
            "Namespace" => object.name == path.namespace,
            kind if MULTIKUEUE_KINDS.contains(&kind) => path.through_multikueue,
            kind => kind == path.kind && in_namespace && object.name == path.name,
        }
    };
    findings.iter().filter(bears).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::ObjectRef;

    fn finding(severity: Severity, object: Option<ObjectRef>) -> Finding {
        Finding { severity, cluster: "manager".into(), object, problem: "p".into(), fix: None }
    }

    #[test]
    fn only_what_the_job_goes_through_bears_on_it() {
        let path = JobPath {
            kind: "ExternalJob",
            namespace: "team",
            name: "train",
            workload: Some("externaljob-train-1a2b3"),
            local_queue: Some("user-queue"),
            cluster_queue: Some("cluster-queue"),
            through_multikueue: true,
        };
        let on = |kind: &str, namespace: &str, name: &str| {
            finding(Severity::Error, Some(ObjectRef::new(kind, namespace, name)))
        };
        let bearing = [
            finding(Severity::Error, None),
            finding(Severity::Warning, None),
            on("Workload", "team", "externaljob-train-1a2b3"),
            on("LocalQueue", "team", "user-queue"),
            on("ClusterQueue", "", "cluster-queue"),
            on("Namespace", "", "team"),
            on("MultiKueueCluster", "", "worker1"),
            on("Secret", "kueue-system", "multikueue-worker1"),
            on("ExternalJob", "team", "train"),
        ];
        let not_bearing = [
            finding(Severity::Info, None),
            on("Workload", "team", "externaljob-other-9z8y7"),
            on("LocalQueue", "other", "user-queue"),
            on("ClusterQueue", "", "another-queue"),
            on("ExternalJob", "team", "other"),
            on("WrappedJob", "team", "train"),
        ];
        let findings: Vec<Finding> = bearing.iter().chain(&not_bearing).cloned().collect();
        assert_eq!(bearing_on(&findings, &path), bearing.iter().collect::<Vec<_>>());

        let local = JobPath { through_multikueue: false, ..path };
        let plumbing = [on("AdmissionCheck", "", "multikueue")];
        assert!(
            bearing_on(&plumbing, &local).is_empty(),
            "MultiKueue's objects bear only on a job that goes through it"
        );
    }
}
