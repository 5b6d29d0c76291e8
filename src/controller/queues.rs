//! Which LocalQueues go through MultiKueue, answered from watch caches (no API call per
//! admission).

use kube::runtime::reflector::{ObjectRef, Store};

use crate::api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, MULTIKUEUE_CONTROLLER};
use crate::jobframework::webhook::QueueLookup;

#[derive(Clone)]
pub struct QueueCache {
    pub local_queues: Store<LocalQueue>,
    pub cluster_queues: Store<ClusterQueue>,
    pub admission_checks: Store<AdmissionCheck>,
}

impl QueueLookup for QueueCache {
    fn uses_multikueue(&self, namespace: &str, local_queue: &str) -> bool {
        let Some(lq) = self.local_queues.get(&ObjectRef::new(local_queue).within(namespace)) else { return false };
        let Some(cq) = self.cluster_queues.get(&ObjectRef::new(&lq.spec.cluster_queue)) else { return false };
        let checks = cq.spec.admission_checks_strategy.iter().flat_map(|s| &s.admission_checks);
        checks
            .filter_map(|c| self.admission_checks.get(&ObjectRef::new(&c.name)))
            .any(|ac| ac.spec.controller_name == MULTIKUEUE_CONTROLLER)
    }
}
