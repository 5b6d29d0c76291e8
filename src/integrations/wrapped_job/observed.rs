//! What exists of a WrappedJob in the cluster, as the lifecycle reads it: each component with
//! how its kind ends and how it is doing, and the pods carrying the job's label.

use crate::api::wrapped_job::ComponentFailure;
use crate::integrations::kueue_frameworks;

/// What exists of a WrappedJob in the cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// One per `spec.components`, in order.
    pub components: Vec<ObservedComponent>,
    /// Pods carrying the job's label.
    pub pods: ComponentPods,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ObservedComponent {
    Missing,
    Present {
        name: String,
        deleting: bool,
        completion: Completion,
        outcome: ComponentOutcome,
        /// Read from a watch's cache: a change of it triggers a reconcile. Kinds outside the
        /// caches (a JobSet, a PyTorchJob) are listed through the API and looked at again.
        watched: bool,
    },
}

/// Whether a component's kind ends on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// A batch Job, a Pod, a JobSet …: success is its own report.
    RunsToCompletion,
    /// A Deployment, a Service …: runs until deleted.
    RunsUntilDeleted,
    /// A kind we do not know: judged by its pods, as AppWrapper does.
    Unknown,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ComponentOutcome {
    Running,
    Succeeded,
    /// It reports failure in its own words.
    Failed(ComponentFailure),
    /// It runs but reports a problem (a Deployment's `ReplicaFailure`): shown, not acted on.
    Degraded(ComponentFailure),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ComponentPods {
    pub pending: i32,
    pub running: i32,
    pub succeeded: i32,
    pub failed: i32,
    /// Pods being deleted, whatever their phase.
    pub terminating: i32,
    /// Non-zero exit codes of failed pods.
    pub exits: Vec<FailedExit>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedExit {
    pub pod: String,
    pub container: String,
    pub code: i32,
}

impl ComponentPods {
    /// Pods not yet gone, whatever their phase.
    pub fn left(&self) -> i32 {
        self.pending + self.running + self.succeeded + self.failed + self.terminating
    }
}

/// How a kind ends, whatever its state: as Kueue's table of kinds says, Services and ConfigMaps
/// never, and any other kind as its pods say.
pub fn completion_of(api_version: &str, kind: &str) -> Completion {
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    let ends = match kueue_frameworks::of_kind(group, kind).and_then(|f| f.as_component) {
        Some(component) => component.ends,
        None if group.is_empty() && matches!(kind, "Service" | "ConfigMap") => Some(false),
        None => None,
    };
    match ends {
        Some(true) => Completion::RunsToCompletion,
        Some(false) => Completion::RunsUntilDeleted,
        None => Completion::Unknown,
    }
}
