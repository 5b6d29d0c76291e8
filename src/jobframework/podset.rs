//! Pod-set info: what an admission tells a job about each pod set (flavor node labels and
//! tolerations, Kueue's labels, admission-check updates, admitted counts), how it is injected
//! into pod templates when the job starts and how the originals are put back when it stops
//! (Kueue's `pkg/podset`). Pure functions.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSchedulingGate, PodTemplateSpec, Toleration};

use super::webhook::dns1123_label;

pub const POD_SET_LABEL: &str = "kueue.x-k8s.io/podset";
pub const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
pub const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";

/// What an admission tells a job about one pod set (Kueue's `podset.PodSetInfo`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodSetInfo {
    pub name: String,
    pub count: i32,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub scheduling_gates: Vec<PodSchedulingGate>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PodSetInfoError {
    #[error("expecting {expected} pod sets info, got {got}")]
    BadLength { expected: usize, got: usize },
    #[error("pod set {pod_set}: conflicting {field} {key:?}: {existing:?} and {new:?}")]
    Conflict { pod_set: String, field: &'static str, key: String, existing: String, new: String },
}

fn merge_map(
    pod_set: &str,
    field: &'static str,
    into: &mut BTreeMap<String, String>,
    from: &BTreeMap<String, String>,
) -> Result<(), PodSetInfoError> {
    for (key, value) in from {
        match into.get(key) {
            Some(existing) if existing != value => {
                return Err(PodSetInfoError::Conflict {
                    pod_set: pod_set.to_string(),
                    field,
                    key: key.clone(),
                    existing: existing.clone(),
                    new: value.clone(),
                });
            }
            Some(_) => {}
            None => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(())
}

fn append_unique<T: PartialEq + Clone>(into: &mut Vec<T>, from: &[T]) {
    for item in from {
        if !into.contains(item) {
            into.push(item.clone());
        }
    }
}

impl PodSetInfo {
    /// Kueue's `Merge`: maps are united (a key with two values is a conflict), tolerations and
    /// scheduling gates appended without duplicates.
    pub fn merge(&mut self, other: &PodSetInfo) -> Result<(), PodSetInfoError> {
        merge_map(&self.name, "label", &mut self.labels, &other.labels)?;
        merge_map(&self.name, "annotation", &mut self.annotations, &other.annotations)?;
        merge_map(&self.name, "nodeSelector", &mut self.node_selector, &other.node_selector)?;
        append_unique(&mut self.tolerations, &other.tolerations);
        append_unique(&mut self.scheduling_gates, &other.scheduling_gates);
        Ok(())
    }
}

/// One `status.admission.podSetAssignments[i]`.
pub struct Assignment<'a> {
    pub name: &'a str,
    pub count: Option<i32>,
    pub flavors: Vec<&'a str>,
}

/// The parts of a ResourceFlavor that reach pods.
pub struct Flavor<'a> {
    pub node_labels: &'a BTreeMap<String, String>,
    pub tolerations: &'a [Toleration],
}

/// One `status.admissionChecks[].podSetUpdates[]`.
pub struct CheckUpdate<'a> {
    pub pod_set: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub annotations: &'a BTreeMap<String, String>,
    pub node_selector: &'a BTreeMap<String, String>,
    pub tolerations: &'a [Toleration],
}

/// The info to start a job with, from its Workload's admission (Kueue's
/// `getPodSetsInfoFromStatus` with v0.19's default feature gates).
pub fn infos_from_admission(
    pod_sets: &[(String, i32)],
    assignments: &[Assignment<'_>],
    flavors: &BTreeMap<String, Flavor<'_>>,
    check_updates: &[CheckUpdate<'_>],
    workload_name: &str,
    local_queue: &str,
    cluster_queue: &str,
) -> Result<Vec<PodSetInfo>, PodSetInfoError> {
    if assignments.len() != pod_sets.len() {
        return Err(PodSetInfoError::BadLength { expected: pod_sets.len(), got: assignments.len() });
    }
    let mut infos = Vec::with_capacity(pod_sets.len());
    for ((name, count), assignment) in pod_sets.iter().zip(assignments) {
        let mut info =
            PodSetInfo { name: name.clone(), count: assignment.count.unwrap_or(*count), ..Default::default() };
        let mut seen = Vec::new();
        for flavor_name in &assignment.flavors {
            if seen.contains(flavor_name) {
                continue;
            }
            seen.push(*flavor_name);
            // A flavor deleted since admission contributes nothing, as in Kueue.
            if let Some(flavor) = flavors.get(*flavor_name) {
                merge_map(name, "nodeSelector", &mut info.node_selector, flavor.node_labels)?;
                append_unique(&mut info.tolerations, flavor.tolerations);
            }
        }
        info.labels.insert(POD_SET_LABEL.into(), name.clone());
        // AssignQueueLabelsForPods (beta, on): pods name their queues.
        if dns1123_label(local_queue).is_ok() {
            info.labels.insert(LOCAL_QUEUE_LABEL.into(), local_queue.to_string());
        }
        if dns1123_label(cluster_queue).is_ok() {
            info.labels.insert(CLUSTER_QUEUE_LABEL.into(), cluster_queue.to_string());
        }
        // TopologyAwareScheduling (beta, on): pods name their Workload.
        info.annotations.insert(WORKLOAD_ANNOTATION.into(), workload_name.to_string());
        for update in check_updates.iter().filter(|u| u.pod_set == name) {
            info.merge(&PodSetInfo {
                name: name.clone(),
                labels: update.labels.clone(),
                annotations: update.annotations.clone(),
                node_selector: update.node_selector.clone(),
                tolerations: update.tolerations.to_vec(),
                ..Default::default()
            })?;
        }
        infos.push(info);
    }
    Ok(infos)
}

/// The original templates as recorded in the Workload (Kueue's `GetPodSetsInfoFromWorkload`):
/// what a stopped job gets back.
pub fn infos_from_templates(pod_sets: &[(String, i32, PodTemplateSpec)]) -> Vec<PodSetInfo> {
    pod_sets
        .iter()
        .map(|(name, count, template)| {
            let meta = template.metadata.clone().unwrap_or_default();
            let spec = template.spec.clone().unwrap_or_default();
            PodSetInfo {
                name: name.clone(),
                count: *count,
                labels: meta.labels.unwrap_or_default(),
                annotations: meta.annotations.unwrap_or_default(),
                node_selector: spec.node_selector.unwrap_or_default(),
                tolerations: spec.tolerations.unwrap_or_default(),
                scheduling_gates: spec.scheduling_gates.unwrap_or_default(),
            }
        })
        .collect()
}

/// Injects each info into its template (index-aligned). Counts are the caller's to apply.
pub fn run_with_infos(templates: &mut [PodTemplateSpec], infos: &[PodSetInfo]) -> Result<(), PodSetInfoError> {
    if templates.len() != infos.len() {
        return Err(PodSetInfoError::BadLength { expected: templates.len(), got: infos.len() });
    }
    for (template, info) in templates.iter_mut().zip(infos) {
        let mut current = infos_from_templates(&[(info.name.clone(), info.count, template.clone())]).remove(0);
        current.merge(info)?;
        write(template, &current);
    }
    Ok(())
}

/// Puts back the recorded templates' labels, annotations, node selector, tolerations and
/// scheduling gates (Kueue's `RestorePodSpec`). Returns whether anything changed; a length
/// mismatch changes nothing.
pub fn restore_templates(templates: &mut [PodTemplateSpec], infos: &[PodSetInfo]) -> bool {
    if templates.len() != infos.len() {
        return false;
    }
    let mut changed = false;
    for (template, info) in templates.iter_mut().zip(infos) {
        let before = template.clone();
        write(template, info);
        changed |= *template != before;
    }
    changed
}

fn some_if_any<T: Default + PartialEq>(value: T) -> Option<T> {
    (value != T::default()).then_some(value)
}

fn write(template: &mut PodTemplateSpec, info: &PodSetInfo) {
    let meta = template.metadata.get_or_insert_with(Default::default);
    meta.labels = some_if_any(info.labels.clone());
    meta.annotations = some_if_any(info.annotations.clone());
    if template.metadata.as_ref().is_some_and(|m| *m == Default::default()) {
        template.metadata = None;
    }
    let spec = template.spec.get_or_insert_with(Default::default);
    spec.node_selector = some_if_any(info.node_selector.clone());
    spec.tolerations = some_if_any(info.tolerations.clone());
    spec.scheduling_gates = some_if_any(info.scheduling_gates.clone());
}

/// Kueue's pod-set equality: same length and, per index, equal counts, minimum counts, init
/// containers and containers, and tolerations when asked (they change on admission).
pub fn equivalent_pod_sets(
    a: &[(i32, Option<i32>, &PodTemplateSpec)],
    b: &[(i32, Option<i32>, &PodTemplateSpec)],
    compare_tolerations: bool,
) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((count_a, min_a, ta), (count_b, min_b, tb))| {
            let spec_a = ta.spec.clone().unwrap_or_default();
            let spec_b = tb.spec.clone().unwrap_or_default();
            count_a == count_b
                && min_a == min_b
                && spec_a.init_containers.unwrap_or_default() == spec_b.init_containers.unwrap_or_default()
                && spec_a.containers == spec_b.containers
                && (!compare_tolerations
                    || spec_a.tolerations.unwrap_or_default() == spec_b.tolerations.unwrap_or_default())
        })
}

#[cfg(test)]
mod tests;
