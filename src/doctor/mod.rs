//! `doctor`: one consistency report over a manager and its workers. Each cluster is read once
//! ([`read`]: lists, discovery, one dry-run create), then small pure checks compare what was
//! read ([`Facts`]) and each says what is wrong, on which object of which cluster, and the
//! command that fixes it. As linkerd's policy controller keeps its index apart from the API,
//! every check is tested with facts written by hand; only [`read`] talks to clusters.

mod facts;
#[cfg(test)]
mod fixtures;
mod focus;
mod jobs;
mod multikueue;
mod read;
mod report;
mod setup;

use std::fmt;

use serde::Serialize;

pub use facts::{
    AdmissionCheck, Certificate, ClusterFacts, Configuration, ControllerFacts, Deployment, Facts, Job, KueueApi,
    KueueFacts, MultiKueueCluster, Workload,
};
pub use focus::{JobPath, bearing_on};
pub use read::read;
pub use report::table;

/// Kueue's default namespace, where a process sandbox keeps MultiKueue's Secrets too.
pub const KUEUE_NAMESPACE: &str = "kueue-system";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something does not work, or cannot ever: `doctor` exits 1.
    Error,
    /// Works, but may not for long or not everywhere alike.
    Warning,
    /// A check left out, and why.
    Info,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        })
    }
}

/// An object as kubectl names it: `LocalQueue/default/user-queue`, `ClusterQueue/cluster-queue`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ObjectRef {
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    pub fn new(kind: &str, namespace: &str, name: &str) -> ObjectRef {
        ObjectRef { kind: kind.into(), namespace: namespace.into(), name: name.into() }
    }

    pub fn cluster_scoped(kind: &str, name: &str) -> ObjectRef {
        ObjectRef::new(kind, "", name)
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.namespace.as_str() {
            "" => write!(f, "{}/{}", self.kind, self.name),
            namespace => write!(f, "{}/{namespace}/{}", self.kind, self.name),
        }
    }
}

/// One thing wrong (or left unchecked) on one cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub cluster: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRef>,
    pub problem: String,
    /// The command (or the step) that fixes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub fn error(cluster: &ClusterFacts, problem: impl Into<String>) -> Finding {
        Finding::new(Severity::Error, cluster, problem)
    }

    pub fn warning(cluster: &ClusterFacts, problem: impl Into<String>) -> Finding {
        Finding::new(Severity::Warning, cluster, problem)
    }

    pub fn info(cluster: &ClusterFacts, problem: impl Into<String>) -> Finding {
        Finding::new(Severity::Info, cluster, problem)
    }

    fn new(severity: Severity, cluster: &ClusterFacts, problem: impl Into<String>) -> Finding {
        Finding { severity, cluster: cluster.name.clone(), object: None, problem: problem.into(), fix: None }
    }

    pub fn on(mut self, object: ObjectRef) -> Finding {
        self.object = Some(object);
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = Some(fix.into());
        self
    }
}

/// A cluster as the report names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClusterLine {
    pub name: String,
    pub context: String,
    pub role: crate::model::snapshot::Role,
    /// Kueue's image tag, where its Deployment says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kueue: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    pub clusters: Vec<ClusterLine>,
    pub errors: usize,
    pub warnings: usize,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn healthy(&self) -> bool {
        self.errors == 0
    }
}

/// A check: what is wrong, as read.
type Check<'a> = &'a dyn Fn(&Facts) -> Vec<Finding>;

/// Every check over `facts` at `now` (seconds since the epoch), errors first.
pub fn check(facts: &Facts, now: i64) -> Report {
    let checks: [Check; 17] = [
        &setup::reachable,
        &setup::kueue_api,
        &setup::kueue_deployment,
        &setup::kueue_versions,
        &setup::controller,
        &setup::controller_images,
        &|facts| setup::certificate(facts, now),
        &setup::kinds_served,
        &setup::kueue_configuration,
        &multikueue::connections,
        &multikueue::kubeconfig_secrets,
        &multikueue::admission_check,
        &multikueue::queues_on_workers,
        &jobs::never_fits,
        &jobs::admitted_around_multikueue,
        &jobs::same_name_on_worker,
        &setup::unread,
    ];
    let mut findings: Vec<Finding> = checks.iter().flat_map(|check| check(facts)).collect();
    let order = |cluster: &str| facts.clusters.iter().position(|c| c.name == cluster);
    findings.sort_by_key(|f| (f.severity, order(&f.cluster)));
    let count = |severity| findings.iter().filter(|f| f.severity == severity).count();
    Report {
        clusters: facts
            .clusters
            .iter()
            .map(|c| ClusterLine {
                name: c.name.clone(),
                context: c.context.clone(),
                role: c.role,
                kueue: c.kueue.as_ref().and_then(|k| setup::image_tag(&k.image)).map(String::from),
            })
            .collect(),
        errors: count(Severity::Error),
        warnings: count(Severity::Warning),
        findings,
    }
}
