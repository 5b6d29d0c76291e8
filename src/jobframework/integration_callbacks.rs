//! What a kind compiled into this project gives the framework (Kueue's
//! `IntegrationCallbacks`): the registry holds one of these per compiled kind, and the
//! controller, its webhook server, the install manifests and every command take the kind from
//! there, so a compiled kind is its own module plus one registry line.

use futures::future::BoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use super::admission::Admit;
use super::generic_job::JobReading;
use super::setup::Setup;

#[derive(Debug)]
pub struct IntegrationCallbacks {
    /// The kind in the integrations file's own terms (one entry of `integrations:`), so that
    /// the commands read it as they read a configured kind.
    pub description: &'static str,
    /// The job `conformance` creates of this kind: small pods that run 20 s on kwok.
    pub sample: &'static str,
    /// kubectl's short names (`ej`).
    pub short_names: &'static [&'static str],
    /// The job's state by the kind's own code; `None` when the object does not decode.
    pub read: fn(&Value) -> Option<JobReading>,
    /// Its admission webhooks.
    pub admit: Admit,
    /// Its controllers, running until the process stops.
    pub start: fn(&Setup) -> BoxFuture<'static, ()>,
    pub crd: fn() -> CustomResourceDefinition,
    /// The RBAC rules of what its controller and webhook do besides keeping its jobs and their
    /// Workloads.
    pub controller_rules: fn() -> Vec<Value>,
}
