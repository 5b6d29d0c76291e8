//! `ExternalJob`: a batch job kind Kueue does not know, integrated through this project's
//! jobframework. Its pods are created by this project's controller; on a MultiKueue manager
//! (`spec.managedBy: kueue.x-k8s.io/multikueue`) it only gets a Workload and a mirrored status.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::condition::Condition;

/// Default retries of failed pods.
pub const DEFAULT_BACKOFF_LIMIT: i32 = 6;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[kube(
    group = "kueue-ext.dev",
    version = "v1alpha1",
    kind = "ExternalJob",
    namespaced,
    status = "ExternalJobStatus",
    shortname = "ej",
    derive = "PartialEq",
    category = "kueue-ext",
    printcolumn = r#"{"name":"Suspended","type":"boolean","jsonPath":".spec.suspend"}"#,
    printcolumn = r#"{"name":"Complete","type":"string","jsonPath":".status.conditions[?(@.type==\"Complete\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ExternalJobSpec {
    /// While true no pod runs; Kueue's integration keeps a queued job suspended until admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// The controller that runs this job; `kueue.x-k8s.io/multikueue` hands it to a worker cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// Groups of identical pods (1 to 8), named as Kueue names Workload pod sets.
    #[schemars(length(min = 1, max = 8))]
    pub pod_sets: Vec<ExternalPodSet>,
    /// Failed pods retried before the job fails (default 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// Seconds a running job may take before it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExternalPodSet {
    pub name: String,
    /// Pods of this set.
    pub count: i32,
    /// Fewest pods the job can start with (Kueue partial admission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
    #[schemars(schema_with = "pod_template_schema")]
    pub template: PodTemplateSpec,
}

/// Pod templates are validated by the API server when pods are created; the CRD keeps them
/// opaque rather than embedding the whole Pod schema.
fn pod_template_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExternalJobStatus {
    /// `Suspended`, `Running`, `Complete`, `Failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_sets: Vec<PodSetStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetStatus {
    pub name: String,
    /// Pods pending or running, including those created by the reconcile that wrote this.
    pub active: i32,
    pub ready: i32,
    pub succeeded: i32,
    pub failed: i32,
    /// Pods being deleted that have not ended: they still hold the job's quota.
    #[serde(default)]
    pub terminating: i32,
}

impl ExternalJob {
    pub fn is_suspended(&self) -> bool {
        self.spec.suspend.unwrap_or(false)
    }

    pub fn backoff_limit(&self) -> i32 {
        self.spec.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT)
    }

    pub fn status_or_default(&self) -> ExternalJobStatus {
        self.status.clone().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn crd_has_status_subresource_and_bounded_pod_sets() {
        let crd = serde_json::to_value(ExternalJob::crd()).unwrap();
        assert_eq!(crd["metadata"]["name"], "externaljobs.kueue-ext.dev");
        let version = &crd["spec"]["versions"][0];
        assert!(version["subresources"]["status"].is_object(), "MultiKueue writes /status");
        let pod_sets = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["podSets"];
        assert_eq!((pod_sets["minItems"].as_u64(), pod_sets["maxItems"].as_u64()), (Some(1), Some(8)));
    }
}
