//! The contract a job kind implements to be run by Kueue through this framework (Kueue's
//! `GenericJob` plus the optional interfaces a single-object kind needs).

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{ApiResource, GroupVersionKind};
use kube::{Resource, ResourceExt};
use serde::Serialize;

use super::podset::{PodSetInfo, PodSetInfoError};
use crate::api::kueue::{PodSet, QUEUE_NAME_LABEL};

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    pub success: bool,
    pub message: String,
}

/// What the commands read of a job, decided by its kind's own rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobReading {
    pub suspended: bool,
    pub managed_by: Option<String>,
    pub finished: Option<Finished>,
}

/// A job's reading by its [`GenericJob`] rules.
pub fn reading<J: GenericJob>(job: &J) -> JobReading {
    JobReading {
        suspended: job.is_suspended(),
        managed_by: job.managed_by().filter(|m| !m.is_empty()).map(String::from),
        finished: job.finished(),
    }
}

/// A job kind Kueue admits through a Workload. Mutating methods change the object in memory;
/// the reconciler writes it back as it serializes. Kinds compiled in and kinds described by
/// configuration alike, so the kind is asked of the job rather than of its type.
pub trait GenericJob:
    Resource<Scope = NamespaceResourceScope> + Clone + Debug + PartialEq + Serialize + Send + Sync + 'static
{
    /// Group, version and kind (names the Workload and matches its owner).
    fn gvk(&self) -> GroupVersionKind;

    /// Where the kind is served (the reconciler writes the job back through it).
    fn api_resource(&self) -> ApiResource;

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

    /// Why MultiKueue cannot hand jobs of this kind to a worker, if it cannot.
    fn why_not_through_multikueue(&self) -> Option<String> {
        None
    }

    /// Kueue's `CanDefaultManagedBy`: whether MultiKueue defaulting may set `spec.managedBy`,
    /// i.e. the job has not named a controller other than its kind's own.
    fn can_default_managed_by(&self) -> bool {
        self.managed_by().is_none()
    }

    /// The queue the job asked for.
    fn queue_name(&self) -> Option<String> {
        self.labels().get(QUEUE_NAME_LABEL).cloned()
    }
}

/// A reference to `job` for events.
pub fn object_reference<J: GenericJob>(job: &J) -> ObjectReference {
    let resource = job.api_resource();
    ObjectReference {
        api_version: Some(resource.api_version),
        kind: Some(resource.kind),
        name: job.meta().name.clone(),
        namespace: job.namespace(),
        uid: job.uid(),
        resource_version: job.resource_version(),
        field_path: None,
    }
}
