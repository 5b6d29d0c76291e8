//! The contract a job kind implements to be run by Kueue through this framework (Kueue's
//! `GenericJob` plus the optional interfaces a single-object kind needs).

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use kube::api::GroupVersionKind;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::podset::{PodSetInfo, PodSetInfoError};
use crate::api::kueue::{PodSet, QUEUE_NAME_LABEL};

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    pub success: bool,
    pub message: String,
}

/// A job kind Kueue admits through a Workload. Mutating methods change the object in memory;
/// the reconciler writes it back.
pub trait GenericJob:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + PartialEq
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Group, version and kind (names the Workload and matches its owner).
    fn gvk() -> GroupVersionKind;

    fn is_suspended(&self) -> bool;

    fn suspend(&mut self);

    /// Unsuspends and injects the admission's per-pod-set info (node selectors, tolerations,
    /// labels, annotations, scheduling gates and counts).
    fn run_with_pod_sets_info(&mut self, infos: &[PodSetInfo]) -> Result<(), PodSetInfoError>;

    /// Puts back the templates recorded in the Workload; returns whether anything changed.
    fn restore_pod_sets_info(&mut self, infos: &[PodSetInfo]) -> bool;

    /// `Some` once the job has ended.
    fn finished(&self) -> Option<Finished>;

    /// The pod sets the Workload must request; deterministic, as it is compared on every pass.
    fn pod_sets(&self) -> Vec<PodSet>;

    /// True while any of its pods still runs.
    fn is_active(&self) -> bool;

    /// True when every pod that should run is ready or has succeeded.
    fn pods_ready(&self) -> bool;

    /// The controller named in `spec.managedBy`, if the kind has one.
    fn managed_by(&self) -> Option<&str> {
        None
    }

    /// Sets `spec.managedBy` (MultiKueue defaulting); kinds without the field ignore it.
    fn set_managed_by(&mut self, _controller: &str) {}

    /// The queue the job asked for.
    fn queue_name(&self) -> Option<String> {
        self.labels().get(QUEUE_NAME_LABEL).cloned()
    }
}
