//! The checks of the suite: Kueue's jobframework contract, one promise each, in the order a
//! job meets them.

use serde::{Serialize, Serializer};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    SuspendedOnCreate,
    OneWorkload,
    PodSetsMatch,
    StartedWithFlavor,
    PodsReady,
    StopAndRestore,
    QuotaReleasedAfterPods,
    FinishedPropagated,
    PrebuiltWorkloadAdopted,
    ManagedByMultiKueue,
    StatusFromWorker,
}

/// Where a check runs: on a cluster that runs pods itself, or on a MultiKueue manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    SingleCluster,
    MultiKueue,
}

impl Check {
    pub const ALL: [Check; 11] = [
        Check::SuspendedOnCreate,
        Check::OneWorkload,
        Check::PodSetsMatch,
        Check::StartedWithFlavor,
        Check::PodsReady,
        Check::StopAndRestore,
        Check::QuotaReleasedAfterPods,
        Check::FinishedPropagated,
        Check::PrebuiltWorkloadAdopted,
        Check::ManagedByMultiKueue,
        Check::StatusFromWorker,
    ];

    /// Short and stable: the table's first column, JSON's `check`, part of the namespace name.
    pub fn id(self) -> &'static str {
        match self {
            Check::SuspendedOnCreate => "suspended-on-create",
            Check::OneWorkload => "one-workload",
            Check::PodSetsMatch => "pod-sets-match",
            Check::StartedWithFlavor => "started-with-flavor",
            Check::PodsReady => "pods-ready",
            Check::StopAndRestore => "stop-and-restore",
            Check::QuotaReleasedAfterPods => "quota-after-pods",
            Check::FinishedPropagated => "finished",
            Check::PrebuiltWorkloadAdopted => "prebuilt-workload",
            Check::ManagedByMultiKueue => "managed-by-multikueue",
            Check::StatusFromWorker => "status-from-worker",
        }
    }

    /// The promise, in words.
    pub fn title(self) -> &'static str {
        match self {
            Check::SuspendedOnCreate => "a queued job is suspended when created",
            Check::OneWorkload => "exactly one Workload, named as Kueue names it, owned by the job",
            Check::PodSetsMatch => "the pods created match the Workload's pod sets (counts, requests)",
            Check::StartedWithFlavor => "on admission the job runs with the flavor's node selector on its pods",
            Check::PodsReady => "the Workload's PodsReady condition is set once its pods run",
            Check::StopAndRestore => "on eviction the job is suspended and its spec restored",
            Check::QuotaReleasedAfterPods => "quota is released only after the job's pods are gone",
            Check::FinishedPropagated => "the job's end is set as the Workload's Finished condition",
            Check::PrebuiltWorkloadAdopted => "a prebuilt Workload is adopted, not duplicated",
            Check::ManagedByMultiKueue => "managedBy is defaulted to MultiKueue in a MultiKueue queue",
            Check::StatusFromWorker => "a worker's run is copied back: the manager's job finishes",
        }
    }

    pub fn scope(self) -> Scope {
        match self {
            Check::ManagedByMultiKueue | Check::StatusFromWorker => Scope::MultiKueue,
            _ => Scope::SingleCluster,
        }
    }
}

impl Serialize for Check {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_dns_labels_short_enough_for_a_namespace() {
        let mut seen = std::collections::BTreeSet::new();
        for check in Check::ALL {
            assert!(seen.insert(check.id()), "{} twice", check.id());
            crate::jobframework::webhook::dns1123_label(check.id()).unwrap();
            // `conformance-<5 hex>-<id>` must stay a DNS label.
            assert!(check.id().len() <= 63 - "conformance-00000-".len(), "{}", check.id());
            assert_eq!(serde_json::to_value(check).unwrap(), check.id());
        }
    }
}
