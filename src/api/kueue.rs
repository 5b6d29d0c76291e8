//! The parts of Kueue's `kueue.x-k8s.io/v1beta2` API this project reads and writes. Unknown
//! fields are ignored on read; writes send only the fields they own (server-side apply).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::condition::Condition;

/// The untyped API of one of Kueue's `v1beta2` kinds, for lists where no typed struct is kept.
pub fn untyped_resource(kind: &str, plural: &str) -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "kueue.x-k8s.io/v1beta2".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Largest number of pod sets of a Workload (Kueue's API validation; AppWrapper's too): every
/// kind's webhook refuses more.
pub const MAX_POD_SETS: usize = 8;

pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
pub const PREBUILT_WORKLOAD_LABEL: &str = "kueue.x-k8s.io/prebuilt-workload-name";
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
pub const MULTIKUEUE_ORIGIN_LABEL: &str = "kueue.x-k8s.io/multikueue-origin";
pub const MULTIKUEUE_WORKER_POD_LABEL: &str = "kueue.x-k8s.io/multikueue-worker-workload-pod";
pub const RESOURCE_IN_USE_FINALIZER: &str = "kueue.x-k8s.io/resource-in-use";
pub const MULTIKUEUE_CONTROLLER: &str = "kueue.x-k8s.io/multikueue";

// Workload condition types.
pub const QUOTA_RESERVED: &str = "QuotaReserved";
pub const ADMITTED: &str = "Admitted";
pub const EVICTED: &str = "Evicted";
pub const FINISHED: &str = "Finished";
pub const PODS_READY: &str = "PodsReady";
pub const REQUEUED: &str = "Requeued";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Workload",
    namespaced,
    status = "WorkloadStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    pub pod_sets: Vec<PodSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_ref: Option<PriorityClassRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSet {
    pub name: String,
    pub count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
    pub template: PodTemplateSpec,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct PriorityClassRef {
    pub group: String,
    pub kind: String,
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    #[serde(default)]
    pub admission_checks: Vec<AdmissionCheckState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// The workers MultiKueue has dispatched copies of the Workload to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nominated_cluster_names: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    pub cluster_queue: String,
    #[serde(default)]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAssignment {
    pub name: String,
    #[serde(default)]
    pub flavors: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// What the pod set holds of each resource, as a quantity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_usage: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    pub name: String,
    /// `Pending`, `Ready`, `Retry` or `Rejected`.
    pub state: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default)]
    pub pod_set_updates: Vec<PodSetUpdate>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdate {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
}

impl Workload {
    pub fn conditions(&self) -> &[Condition] {
        self.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default()
    }

    pub fn is(&self, condition: &str) -> bool {
        super::condition::is_true(self.conditions(), condition)
    }

    pub fn admission(&self) -> Option<&Admission> {
        self.status.as_ref().and_then(|s| s.admission.as_ref())
    }

    /// Admitted, and every admission check agrees (Kueue sets Admitted only then; checked
    /// again so a check turning Retry/Rejected stops us as soon as we see it).
    pub fn is_admitted(&self) -> bool {
        self.is(ADMITTED) && self.status.as_ref().is_none_or(|s| s.admission_checks.iter().all(|c| c.state == "Ready"))
    }

    pub fn is_finished(&self) -> bool {
        self.is(FINISHED)
    }
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(group = "kueue.x-k8s.io", version = "v1beta2", kind = "ResourceFlavor", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ResourceFlavorSpec {
    #[serde(default)]
    pub node_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(group = "kueue.x-k8s.io", version = "v1beta2", kind = "LocalQueue", namespaced, schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueSpec {
    #[serde(default)]
    pub cluster_queue: String,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(group = "kueue.x-k8s.io", version = "v1beta2", kind = "ClusterQueue", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueSpec {
    #[serde(default)]
    pub admission_checks_strategy: Option<AdmissionChecksStrategy>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionChecksStrategy {
    #[serde(default)]
    pub admission_checks: Vec<AdmissionCheckStrategyRule>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct AdmissionCheckStrategyRule {
    pub name: String,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(group = "kueue.x-k8s.io", version = "v1beta2", kind = "AdmissionCheck", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    #[serde(default)]
    pub controller_name: String,
}

/// A worker the manager's MultiKueue dispatches to; read for whether it is connected.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueCluster",
    status = "MultiKueueClusterStatus",
    schema = "disabled"
)]
pub struct MultiKueueClusterSpec {}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MultiKueueClusterStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// A cluster's part in MultiKueue: the manager, where jobs are queued, or a worker, where
/// they run.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Manager,
    Worker,
}
