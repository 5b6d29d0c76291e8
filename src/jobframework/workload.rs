//! Building a job's Workload and telling whether an existing one still matches (Kueue's
//! `ConstructWorkload`, `EquivalentToWorkload`, `PrebuiltWorkloadFor`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::generic_job::GenericJob;
use super::naming::workload_name;
use super::podset;
use crate::api::kueue::{
    JOB_UID_LABEL, PREBUILT_WORKLOAD_LABEL, PriorityClassRef, QUOTA_RESERVED, RESOURCE_IN_USE_FINALIZER, Workload,
    WorkloadSpec,
};

/// The Workload name Kueue would give this job.
pub fn name_for<J: GenericJob>(job: &J) -> String {
    let gvk = J::gvk();
    workload_name(&gvk.kind, &gvk.group, &job.name_any(), job.uid().as_deref().unwrap_or_default())
}

/// The controller reference a Workload carries to its job.
pub fn owner_reference<J: GenericJob>(job: &J) -> OwnerReference {
    let gvk = J::gvk();
    OwnerReference {
        api_version: if gvk.group.is_empty() { gvk.version.clone() } else { format!("{}/{}", gvk.group, gvk.version) },
        kind: gvk.kind,
        name: job.name_any(),
        uid: job.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The prebuilt Workload a job must adopt (a MultiKueue worker copy names it): annotation
/// first, as Kueue writes it by default, else the label.
pub fn prebuilt_name<J: GenericJob>(job: &J) -> Option<String> {
    job.annotations().get(PREBUILT_WORKLOAD_LABEL).or_else(|| job.labels().get(PREBUILT_WORKLOAD_LABEL)).cloned()
}

/// True when `workload`'s controller owner is this very job (name and UID).
pub fn is_controlled_by<J: GenericJob>(workload: &Workload, job: &J) -> bool {
    controller_uid(workload).is_some_and(|uid| Some(uid) == job.uid().as_deref())
}

pub fn controller_uid(workload: &Workload) -> Option<&str> {
    workload.owner_references().iter().find(|o| o.controller == Some(true)).map(|o| o.uid.as_str())
}

/// A new Workload for `job`, owned by it, named as Kueue names it.
pub fn construct<J: GenericJob>(job: &J, priority: Option<(PriorityClassRef, i32)>) -> Workload {
    let (priority_class_ref, priority) = match priority {
        Some((class, value)) => (Some(class), Some(value)),
        None => (None, Some(0)),
    };
    let mut labels = BTreeMap::new();
    if let Some(uid) = job.uid() {
        labels.insert(JOB_UID_LABEL.to_string(), uid);
    }
    Workload {
        metadata: ObjectMeta {
            name: Some(name_for(job)),
            namespace: job.namespace(),
            labels: Some(labels),
            finalizers: Some(vec![RESOURCE_IN_USE_FINALIZER.to_string()]),
            owner_references: Some(vec![owner_reference(job)]),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            pod_sets: job.pod_sets(),
            queue_name: job.queue_name(),
            priority_class_ref,
            priority,
            active: None,
        },
        status: None,
    }
}

/// Whether `workload` still describes `job` (Kueue's equivalence): same owner, and pod sets
/// with equal counts, containers and (before admission) tolerations. While quota is reserved the
/// admitted counts are what the job runs with.
pub fn equivalent<J: GenericJob>(job: &J, workload: &Workload) -> bool {
    let owner = workload.owner_references().iter().find(|o| o.controller == Some(true));
    if owner.is_none_or(|o| o.name != job.name_any() || Some(&o.uid) != job.uid().as_ref()) {
        return false;
    }
    let wanted = job.pod_sets();
    let reserved = workload.is(QUOTA_RESERVED);
    let assigned_count = |name: &str, count: i32| {
        workload
            .admission()
            .and_then(|a| a.pod_set_assignments.iter().find(|p| p.name == name))
            .and_then(|p| p.count)
            .filter(|_| reserved)
            .unwrap_or(count)
    };
    let expected: Vec<_> =
        workload.spec.pod_sets.iter().map(|p| (assigned_count(&p.name, p.count), p.min_count, &p.template)).collect();
    let actual: Vec<_> = wanted.iter().map(|p| (p.count, p.min_count, &p.template)).collect();
    podset::equivalent_pod_sets(&expected, &actual, !reserved)
}
