//! `WrappedJob`: any group of Kubernetes objects (batch Jobs, Deployments, CRDs …) admitted by
//! Kueue as one Workload. Shaped like AppWrapper `v1beta2`, so an AppWrapper manifest converts by
//! changing `apiVersion` and `kind`. This project's controller creates the components on
//! admission, deletes them on suspension, and resets or fails the job when they misbehave.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSchedulingGate, Toleration};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::condition::{self, Condition};

/// Label on every object the controller creates for a WrappedJob, and on every pod template in
/// it, so components and their pods are watched and counted by it.
pub const WRAPPED_JOB_LABEL: &str = "kueue-ext.dev/wrapped-job";
/// Finalizer that keeps a WrappedJob until its components and their pods are gone.
pub const WRAPPED_JOB_FINALIZER: &str = "kueue-ext.dev/wrapped-job-cleanup";
/// Annotation on each created component naming its index in `spec.components`, so it is found
/// again whatever its name (`generateName`) and even if its creation was never recorded.
pub const COMPONENT_INDEX_ANNOTATION: &str = "kueue-ext.dev/component-index";

// Conditions of a WrappedJob, as AppWrapper names them.
pub const QUOTA_RESERVED: &str = "QuotaReserved";
pub const RESOURCES_DEPLOYED: &str = "ResourcesDeployed";
pub const PODS_READY: &str = "PodsReady";
pub const UNHEALTHY: &str = "Unhealthy";
pub const DELETING_RESOURCES: &str = "DeletingResources";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[kube(
    group = "kueue-ext.dev",
    version = "v1alpha1",
    kind = "WrappedJob",
    namespaced,
    status = "WrappedJobStatus",
    shortname = "wj",
    derive = "PartialEq",
    category = "kueue-ext",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Quota Reserved","type":"string","jsonPath":".status.conditions[?(@.type==\"QuotaReserved\")].status"}"#,
    printcolumn = r#"{"name":"Resources Deployed","type":"string","jsonPath":".status.conditions[?(@.type==\"ResourcesDeployed\")].status"}"#,
    printcolumn = r#"{"name":"Unhealthy","type":"string","jsonPath":".status.conditions[?(@.type==\"Unhealthy\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WrappedJobSpec {
    /// While true no component exists; Kueue keeps a queued job suspended until admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// The controller that runs this job; `kueue.x-k8s.io/multikueue` hands it to a worker cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// The wrapped objects, created in order once Kueue admits the job.
    #[schemars(length(min = 1))]
    pub components: Vec<WrappedComponent>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WrappedComponent {
    /// One Kubernetes object: apiVersion, kind, metadata and spec.
    #[schemars(schema_with = "embedded_object_schema")]
    pub template: serde_json::Value,
    /// Where the pod templates are, for kinds whose pod sets cannot be inferred.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_sets: Vec<ComponentPodSet>,
    /// Written on admission, one per pod set of this component: what Kueue injects into its
    /// pod templates when the component is created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_set_infos: Vec<ComponentPodSetInfo>,
}

/// A pod template inside a component.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ComponentPodSet {
    /// Path of a PodTemplateSpec, from `template`: `template.spec.template`,
    /// `template.spec.replicatedJobs[0].template.spec.template`.
    pub path: String,
    /// Pods made from it (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl ComponentPodSet {
    pub fn replicas(&self) -> i32 {
        self.replicas.unwrap_or(1)
    }
}

/// What the admission adds to one pod template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ComponentPodSetInfo {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "opaque_list_schema")]
    pub tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "opaque_list_schema")]
    pub scheduling_gates: Vec<PodSchedulingGate>,
}

/// Where a WrappedJob is in its life.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq)]
pub enum Phase {
    #[default]
    #[serde(rename = "")]
    Empty,
    Suspended,
    Resuming,
    Running,
    Resetting,
    Suspending,
    Succeeded,
    Failed,
    Terminating,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WrappedJobStatus {
    #[serde(default)]
    pub phase: Phase,
    /// Times the job went through Resetting.
    #[serde(default)]
    pub retries: i32,
    /// `QuotaReserved`, `ResourcesDeployed`, `PodsReady`, `Unhealthy`, `DeletingResources`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// One per component, in the order of `spec.components`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub component_status: Vec<ComponentStatus>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ComponentStatus {
    /// Name of the created object (recorded before it is created).
    pub name: String,
    pub kind: String,
    pub api_version: String,
    /// The pod sets of the component, declared or inferred.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_sets: Vec<ComponentPodSet>,
    /// `ResourcesDeployed` of this component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Why the component failed, in its own words (e.g. a Job's `Failed` reason and message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ComponentFailure>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ComponentFailure {
    pub reason: String,
    pub message: String,
}

/// Components are arbitrary objects; the API server checks them when they are created.
fn embedded_object_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

fn opaque_list_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    })
}

impl WrappedJob {
    pub fn is_suspended(&self) -> bool {
        self.spec.suspend.unwrap_or(false)
    }

    pub fn phase(&self) -> Phase {
        self.status.as_ref().map(|s| s.phase).unwrap_or_default()
    }

    pub fn conditions(&self) -> &[Condition] {
        self.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default()
    }

    pub fn is(&self, condition_type: &str) -> bool {
        condition::is_true(self.conditions(), condition_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn crd_embeds_components_and_has_a_status_subresource() {
        let crd = serde_json::to_value(WrappedJob::crd()).unwrap();
        assert_eq!(crd["metadata"]["name"], "wrappedjobs.kueue-ext.dev");
        let version = &crd["spec"]["versions"][0];
        assert!(version["subresources"]["status"].is_object(), "MultiKueue writes /status");
        let components = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["components"];
        assert_eq!(components["minItems"].as_u64(), Some(1));
        let template = &components["items"]["properties"]["template"];
        assert_eq!(template["x-kubernetes-embedded-resource"], true);
    }

    #[test]
    fn phases_serialize_as_appwrapper_writes_them() {
        assert_eq!(serde_json::to_value(Phase::Empty).unwrap(), "");
        assert_eq!(serde_json::to_value(Phase::Resetting).unwrap(), "Resetting");
        let status: WrappedJobStatus = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(status.phase, Phase::Empty);
    }
}
