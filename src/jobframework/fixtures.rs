//! Jobs and Workloads the reconciler's tests start from.

use serde_json::json;

use super::{status, workload as build};
use crate::api::condition::{self, Condition};
use crate::api::external_job::{ExternalJob, ExternalJobSpec, ExternalPodSet};
use crate::api::kueue::{
    ADMITTED, Admission, PodSetAssignment, QUEUE_NAME_LABEL, QUOTA_RESERVED, Workload, WorkloadStatus,
};

/// The flavor every admission here assigns; the context's cache holds it.
pub const FLAVOR: &str = "default-flavor";

/// A queued ExternalJob, suspended, with one pod set of one pod.
pub fn suspended_job() -> ExternalJob {
    let spec = ExternalJobSpec {
        suspend: Some(true),
        managed_by: None,
        pod_sets: vec![ExternalPodSet {
            name: "workers".into(),
            count: 1,
            min_count: None,
            template: serde_json::from_value(json!({"spec": {"containers": [{"name": "main", "image": "x"}]}}))
                .unwrap(),
        }],
        backoff_limit: None,
        active_deadline_seconds: None,
    };
    let mut job = ExternalJob::new("train", spec);
    job.metadata.namespace = Some("default".into());
    job.metadata.uid = Some("uid-1".into());
    job.metadata.labels = Some([(QUEUE_NAME_LABEL.to_string(), "user-queue".to_string())].into());
    job
}

/// The job's Workload, admitted or still queued, with the PodsReady condition the job side
/// would write, so that only admission is left to act on.
pub fn workload(job: &ExternalJob, admitted: bool) -> Workload {
    let mut wl = build::construct(job, None);
    let now = condition::now();
    let mut conditions = Vec::new();
    for kind in [QUOTA_RESERVED, ADMITTED] {
        condition::set(&mut conditions, Condition::new(kind, admitted, "Test", ""), &now);
    }
    condition::set(&mut conditions, status::pods_ready(None, admitted, false), &now);
    let admission = admitted.then(|| Admission {
        cluster_queue: "cq".into(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "workers".into(),
            flavors: [("cpu".to_string(), FLAVOR.to_string())].into(),
            count: Some(1),
            resource_usage: Default::default(),
        }],
    });
    wl.status = Some(WorkloadStatus { conditions, admission, ..Default::default() });
    wl.metadata.resource_version = Some("1".into());
    wl
}
