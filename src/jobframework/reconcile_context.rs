//! What every reconcile of the generic reconciler shares: the framework's settings, the caches
//! and clients of its context, and its errors.

use std::sync::Arc;

use kube::Client;
use kube::runtime::reflector::Store;

use super::api_error;
use super::events::EventSink;
use super::multikueue_nudge;
use super::own_writes::OwnWrites;
use crate::api::kueue::{MultiKueueCluster, ResourceFlavor, Workload};

/// Framework settings (Kueue's Configuration fields that matter to a job reconciler).
#[derive(Clone, Debug)]
pub struct Config {
    pub manage_jobs_without_queue_name: bool,
    /// Kueue 0.19 enables waitForPodsReady by default: an admitted Workload without
    /// `PodsReady=True` is evicted after its timeout.
    pub wait_for_pods_ready: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { manage_jobs_without_queue_name: false, wait_for_pods_ready: true }
    }
}

/// What every reconcile shares.
pub struct Context {
    pub client: Client,
    pub config: Config,
    /// Workloads of the cluster, from a watch; never trusted for "does not exist" decisions
    /// that could duplicate (creation tolerates AlreadyExists).
    pub workloads: Store<Workload>,
    /// What we last wrote to a Workload, until `workloads` has it.
    pub own_writes: Arc<OwnWrites<Workload>>,
    /// ResourceFlavors, from a watch: a job starting reads its admission's flavors here, and
    /// from the API server only when one is not cached yet.
    pub flavors: Store<ResourceFlavor>,
    /// Where reconciles leave their events.
    pub events: EventSink,
    /// What MultiKueue has shown of its progress, for the nudge.
    pub multikueue: multikueue_nudge::MultiKueueProgress,
    /// The manager's MultiKueueClusters, from a watch: a nudge waits for one to be connected.
    pub multikueue_clusters: Store<MultiKueueCluster>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {kind} {name}: {}", api_error::in_words(source))]
    Kube {
        action: &'static str,
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("waiting for prebuilt Workload {0}")]
    PrebuiltWorkloadNotFound(String),
    #[error("cannot encode job {name}: {source}")]
    Encode {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("removed {0} Workload(s) that did not match the job; a new pass creates the right one")]
    RemovedNonMatching(usize),
}

impl Error {
    /// True for optimistic-concurrency conflicts: a retry with fresh objects fixes them.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube { source: kube::Error::Api(s), .. } if s.is_conflict())
    }

    /// True when a JSON patch's `test` failed (the API server answers 422).
    pub(super) fn is_refused_patch_test(&self) -> bool {
        matches!(self, Error::Kube { source: kube::Error::Api(s), .. } if s.is_invalid())
    }
}

pub(super) fn kube_err(
    action: &'static str,
    kind: &'static str,
    name: impl Into<String>,
) -> impl FnOnce(kube::Error) -> Error {
    let name = name.into();
    move |source| Error::Kube { action, kind, name, source }
}
