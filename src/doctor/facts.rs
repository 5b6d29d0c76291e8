//! What `doctor` reads of each cluster, once, before any check runs: the checks are pure
//! functions of these facts, so that each is tested with facts written by hand.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::api::condition::Condition;
use crate::model::snapshot::Role;
use crate::model::{LocalQueueFacts, QueueRow};

/// Every cluster, the manager first, and the kinds this project integrates there.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// The kubeconfig file the clusters were read through, when not kubectl's default: the
    /// kubectl commands of the fixes name it.
    pub kubeconfig: Option<String>,
    pub clusters: Vec<ClusterFacts>,
    /// `Kind.version.group` of every kind ours to integrate: the compiled ones and those of the
    /// manager's integrations ConfigMap.
    pub kinds: Vec<String>,
    /// Why the manager's integrations ConfigMap could not be read, when it could not.
    pub kinds_unread: Option<String>,
}

impl Facts {
    pub fn manager(&self) -> Option<&ClusterFacts> {
        self.clusters.iter().find(|c| c.role == Role::Manager)
    }

    /// The workers that could be read.
    pub fn workers(&self) -> impl Iterator<Item = &ClusterFacts> {
        self.clusters.iter().filter(|c| c.role == Role::Worker && c.unreachable.is_none())
    }

    /// `kubectl --context CONTEXT`, with `--kubeconfig` when it is not the default.
    pub fn kubectl(&self, cluster: &ClusterFacts) -> String {
        self.command("kubectl", cluster)
    }

    /// `kubectl kueue-ext COMMAND --context CONTEXT`, with `--kubeconfig` when it is not the
    /// default.
    pub fn plugin(&self, command: &str, cluster: &ClusterFacts) -> String {
        self.command(&format!("kubectl kueue-ext {command}"), cluster)
    }

    fn command(&self, program: &str, cluster: &ClusterFacts) -> String {
        match &self.kubeconfig {
            Some(file) => format!("{program} --kubeconfig {file} --context {}", cluster.context),
            None => format!("{program} --context {}", cluster.context),
        }
    }
}

/// One cluster as `doctor` read it.
#[derive(Clone, Debug)]
pub struct ClusterFacts {
    /// The name MultiKueue knows it by (`worker1`); the manager is `manager`.
    pub name: String,
    pub context: String,
    pub role: Role,
    /// Why nothing could be read, when nothing could.
    pub unreachable: Option<String>,
    /// What could not be read (`LocalQueues` → why): the checks that need it say nothing.
    pub unread: BTreeMap<String, String>,
    /// `None` when discovery could not be asked.
    pub kueue_api: Option<KueueApi>,
    /// Kueue's Deployment; `None` when Kueue runs without one (a process sandbox) or it could
    /// not be looked for (then `unread` says why).
    pub kueue: Option<KueueFacts>,
    pub controller: ControllerFacts,
    /// The integrated kinds (`Kind.version.group`) this cluster does not serve.
    pub unserved: BTreeSet<String>,
    pub namespaces: BTreeSet<String>,
    pub local_queues: Vec<LocalQueueFacts>,
    pub cluster_queues: Vec<QueueRow>,
    pub admission_checks: Vec<AdmissionCheck>,
    /// MultiKueueConfigs by name, with the clusters each lists.
    pub multikueue_configs: BTreeMap<String, Vec<String>>,
    pub multikueue_clusters: Vec<MultiKueueCluster>,
    /// Names of the Secrets in Kueue's namespace (read on a manager with MultiKueueClusters).
    pub kueue_secrets: BTreeSet<String>,
    /// Kueue's namespace: its Deployment's, else Kueue's default.
    pub kueue_namespace: String,
    pub workloads: Vec<Workload>,
    pub jobs: Vec<Job>,
}

impl ClusterFacts {
    /// A cluster with nothing on it yet, for the reader (and tests) to fill in.
    pub fn new(name: &str, context: &str, role: Role) -> ClusterFacts {
        ClusterFacts {
            name: name.into(),
            context: context.into(),
            role,
            unreachable: None,
            unread: BTreeMap::new(),
            kueue_api: None,
            kueue: None,
            controller: ControllerFacts::default(),
            unserved: BTreeSet::new(),
            namespaces: BTreeSet::new(),
            local_queues: Vec::new(),
            cluster_queues: Vec::new(),
            admission_checks: Vec::new(),
            multikueue_configs: BTreeMap::new(),
            multikueue_clusters: Vec::new(),
            kueue_secrets: BTreeSet::new(),
            kueue_namespace: super::KUEUE_NAMESPACE.into(),
            workloads: Vec::new(),
            jobs: Vec::new(),
        }
    }

    pub fn local_queue(&self, namespace: &str, name: &str) -> Option<&LocalQueueFacts> {
        self.local_queues.iter().find(|q| q.namespace == namespace && q.name == name)
    }

    pub fn cluster_queue(&self, name: &str) -> Option<&QueueRow> {
        self.cluster_queues.iter().find(|q| q.name == name)
    }

    /// The MultiKueue AdmissionChecks a ClusterQueue goes through.
    pub fn multikueue_checks_of<'a>(&'a self, queue: &'a QueueRow) -> impl Iterator<Item = &'a AdmissionCheck> {
        let checks = queue.admission_checks.iter();
        checks.filter_map(|name| self.admission_checks.iter().find(|c| &c.name == name && c.is_multikueue()))
    }

    /// Whether a job queued to `queue` in `namespace` goes through MultiKueue.
    pub fn dispatches(&self, namespace: &str, queue: &str) -> bool {
        let local = self.local_queue(namespace, queue);
        let cluster_queue = local.and_then(|q| self.cluster_queue(&q.cluster_queue));
        cluster_queue.is_some_and(|q| self.multikueue_checks_of(q).next().is_some())
    }

    /// Whether `what` (a key of `unread`) was read.
    pub fn read(&self, what: &str) -> bool {
        self.unreachable.is_none() && !self.unread.contains_key(what)
    }
}

/// Whether the cluster serves Kueue's API at the version this project speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KueueApi {
    Served,
    Missing,
    /// Served at other versions only (Kueue before v0.15).
    Old {
        served: String,
    },
}

/// Kueue's Deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KueueFacts {
    pub namespace: String,
    pub name: String,
    pub image: String,
    /// Why no replica is available, when none is.
    pub unavailable: Option<String>,
    pub configuration: Configuration,
}

/// Kueue's Configuration, as far as it names external frameworks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Configuration {
    /// Kueue's Deployment passes no `--config` file: it runs on its defaults.
    NoFile,
    Unreadable(String),
    Read {
        /// `namespace/name` of the ConfigMap.
        config_map: String,
        integrations: Vec<String>,
        multikueue: Vec<String>,
    },
}

/// This project's controller on a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerFacts {
    /// Its Deployment; `None` where it runs otherwise (a sandbox's process) or not at all.
    pub deployment: Option<Deployment>,
    /// Our MutatingWebhookConfiguration exists: the API server calls us.
    pub webhook_configured: bool,
    /// Why a dry-run create of an ExternalJob found no webhook answering, when it found none.
    pub webhook_refusal: Option<String>,
    /// The serving certificate's Secret, when there is one.
    pub certificate: Option<Certificate>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deployment {
    pub image: String,
    pub unavailable: Option<String>,
}

/// The annotations the controller writes on its certificate Secret (RFC 3339), if written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Certificate {
    pub not_before: Option<String>,
    pub not_after: Option<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AdmissionCheck {
    pub name: String,
    pub controller: String,
    pub active: Option<Condition>,
    /// The MultiKueueConfig its parameters name, for MultiKueue's.
    pub multikueue_config: Option<String>,
}

impl AdmissionCheck {
    pub fn is_multikueue(&self) -> bool {
        self.controller == crate::api::kueue::MULTIKUEUE_CONTROLLER
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MultiKueueCluster {
    pub name: String,
    /// The Secret its kubeconfig is in (`clusterSource.kubeConfig.location`, for a
    /// `locationType: Secret`).
    pub secret: Option<String>,
    pub active: Option<Condition>,
}

/// A Workload, with what its pod sets ask in all.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub namespace: String,
    pub name: String,
    pub queue: Option<String>,
    /// The job it belongs to, `(kind, name)`.
    pub owner: Option<(String, String)>,
    /// Admitted or finished: no longer waiting for quota.
    pub done_waiting: bool,
    /// Admitted and not finished.
    pub running: bool,
    /// The worker MultiKueue placed it on (`status.clusterName`).
    pub placed_on: Option<String>,
    /// The admission checks it has a state for (`status.admissionChecks`).
    pub check_states: Vec<String>,
    /// Each resource, times each pod set's count, summed.
    pub requests: BTreeMap<String, f64>,
}

/// A job of an integrated kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// `ExternalJob`.
    pub kind: String,
    /// As kubectl names the kind: `externaljobs.kueue-ext.dev`.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub queue: Option<String>,
    pub managed_by: Option<String>,
    /// It carries `kueue.x-k8s.io/multikueue-origin`: MultiKueue created it.
    pub from_multikueue: bool,
    pub finished: bool,
}
