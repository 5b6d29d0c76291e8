//! Pod-set info: what an admission injects into a job's pod templates when it starts and what is put
//! back when it stops. Mirrors Kueue v0.19.2 `pkg/podset`, the pod-set parts of
//! `pkg/controller/jobframework/reconciler.go` and `pkg/util/equality/podset.go`, with default feature
//! gates. Pure functions: the caller reads the Workload and its ResourceFlavors.
//!
//! Not mirrored, because the inputs here do not carry them: TAS topology assignments (Kueue then adds
//! the unconstrained-topology annotation and the topology scheduling gate), elastic workload slices
//! (the slice-name annotation and its overwrite-on-merge rule) and pod affinity. The MultiKueue
//! worker pod label is the reconciler's to add, since only it reads the Workload's labels.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodSchedulingGate, PodTemplateSpec, Toleration};

mod semantic;
#[cfg(test)]
mod tests;

/// Pod label naming the pod set a pod belongs to.
pub const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";
/// Pod label naming the LocalQueue the Workload was submitted to.
pub const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
/// Pod label naming the ClusterQueue that admitted the Workload.
pub const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
/// Pod annotation naming the Workload the pod runs for.
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";

type StringMap = BTreeMap<String, String>;

/// What an admission tells a job about one pod set (Kueue's podset.PodSetInfo).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodSetInfo {
    pub name: String,
    pub count: i32,
    pub labels: StringMap,
    pub annotations: StringMap,
    pub node_selector: StringMap,
    pub tolerations: Vec<Toleration>,
    pub scheduling_gates: Vec<PodSchedulingGate>,
}

/// Both kinds are permanent: retrying with the same Workload and job gives the same error.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PodSetInfoError {
    /// The job has a different number of pod sets than the info (Kueue: BadPodSetsInfoLenError).
    #[error("expecting {expected} pod sets info, got {got}")]
    BadLength { expected: usize, got: usize },
    /// A key in labels, annotations or nodeSelector already has another value (Kueue: ErrInvalidPodSetUpdate).
    #[error(
        "invalid pod set update for pod set {pod_set:?}: conflict for {field} key {key:?}: {existing:?} vs {new:?}"
    )]
    Conflict { pod_set: String, field: &'static str, key: String, existing: String, new: String },
}

/// One `status.admission.podSetAssignments[i]` of a Workload.
pub struct Assignment<'a> {
    pub name: &'a str,
    pub count: Option<i32>,
    /// The flavor of each resource; the same flavor may appear several times.
    pub flavors: Vec<&'a str>,
}

/// The part of a ResourceFlavor's spec that reaches the pods.
pub struct Flavor<'a> {
    pub node_labels: &'a StringMap,
    pub tolerations: &'a [Toleration],
}

/// One `status.admissionChecks[].podSetUpdates[]` of a Workload. Kueue uses only the first update per
/// admission check and pod set, so pass no others.
pub struct CheckUpdate<'a> {
    pub pod_set: &'a str,
    pub labels: &'a StringMap,
    pub annotations: &'a StringMap,
    pub node_selector: &'a StringMap,
    pub tolerations: &'a [Toleration],
}

impl PodSetInfo {
    /// Adds `other` to this info. Nothing changes when a map key conflicts.
    pub fn merge(&mut self, other: &PodSetInfo) -> Result<(), PodSetInfoError> {
        check_conflicts(&self.name, Some(&self.annotations), Some(&self.labels), Some(&self.node_selector), other)?;
        copy_map(&mut self.annotations, &other.annotations);
        copy_map(&mut self.labels, &other.labels);
        copy_map(&mut self.node_selector, &other.node_selector);
        append_missing(&mut self.tolerations, &other.tolerations, same_toleration);
        append_missing(&mut self.scheduling_gates, &other.scheduling_gates, PartialEq::eq);
        Ok(())
    }
}

/// The infos to start a job with, from its Workload's admission (Kueue's getPodSetsInfoFromStatus).
/// `pod_sets` are the names and counts of `spec.podSets`; `flavors` holds the ResourceFlavors that still exist.
pub fn infos_from_admission(
    pod_sets: &[(String, i32)],
    assignments: &[Assignment],
    flavors: &BTreeMap<String, Flavor>,
    check_updates: &[CheckUpdate],
    workload_name: &str,
    local_queue: &str,
    cluster_queue: &str,
) -> Result<Vec<PodSetInfo>, PodSetInfoError> {
    // Kueue pairs assignments with spec.podSets by index; the Workload CRD keeps both the same length once
    // admitted, so a mismatch means inconsistent input rather than a partial admission.
    if !assignments.is_empty() && pod_sets.len() != assignments.len() {
        return Err(PodSetInfoError::BadLength { expected: pod_sets.len(), got: assignments.len() });
    }
    let from_assignment = |(&(_, pod_set_count), assignment): (&(String, i32), &Assignment)| -> Result<_, _> {
        let mut info = PodSetInfo {
            name: assignment.name.to_owned(),
            // A partial admission assigns fewer pods than the pod set asks for.
            count: assignment.count.unwrap_or(pod_set_count),
            ..PodSetInfo::default()
        };
        let mut applied = BTreeSet::new();
        for &flavor_name in &assignment.flavors {
            // One flavor usually serves several resources; its labels and tolerations go in once.
            if !applied.insert(flavor_name) {
                continue;
            }
            // A deleted flavor has nothing left to inject.
            let Some(flavor) = flavors.get(flavor_name) else { continue };
            // Kueue copies node labels without a conflict check; there Go's map order picks the winner, here
            // the later flavor wins.
            copy_map(&mut info.node_selector, flavor.node_labels);
            info.tolerations.extend_from_slice(flavor.tolerations);
        }
        // TopologyAwareScheduling is beta and on by default since v0.14, and then every pod names its Workload.
        info.annotations.insert(WORKLOAD_ANNOTATION.to_owned(), workload_name.to_owned());
        // Always set, so the job's pods can be told apart by pod set.
        info.labels.insert(PODSET_LABEL.to_owned(), assignment.name.to_owned());
        // AssignQueueLabelsForPods is beta and on by default since v0.17.
        info.labels.insert(LOCAL_QUEUE_LABEL.to_owned(), local_queue.to_owned());
        // A ClusterQueue name may be a DNS subdomain, which is not a valid label value; Kueue then leaves it out.
        if is_dns1123_label(cluster_queue) {
            info.labels.insert(CLUSTER_QUEUE_LABEL.to_owned(), cluster_queue.to_owned());
        }
        // Admission checks (e.g. provisioning) may ask for more labels, node selectors or tolerations.
        for update in check_updates.iter().filter(|update| update.pod_set == assignment.name) {
            info.merge(&PodSetInfo {
                labels: update.labels.clone(),
                annotations: update.annotations.clone(),
                node_selector: update.node_selector.clone(),
                tolerations: update.tolerations.to_vec(),
                ..PodSetInfo::default()
            })?;
        }
        Ok(info)
    };
    pod_sets.iter().zip(assignments).map(from_assignment).collect()
}

/// The infos to restore a stopped job with: the templates as the Workload recorded them
/// (Kueue's GetPodSetsInfoFromWorkload). `pod_sets` are the name, count and template of `spec.podSets`.
pub fn infos_from_templates(pod_sets: &[(String, i32, PodTemplateSpec)]) -> Vec<PodSetInfo> {
    pod_sets
        .iter()
        .map(|(name, count, template)| {
            let meta = template.metadata.as_ref();
            let spec = template.spec.as_ref();
            PodSetInfo {
                name: name.clone(),
                count: *count,
                labels: meta.and_then(|meta| meta.labels.clone()).unwrap_or_default(),
                annotations: meta.and_then(|meta| meta.annotations.clone()).unwrap_or_default(),
                node_selector: spec.and_then(|spec| spec.node_selector.clone()).unwrap_or_default(),
                tolerations: spec.and_then(|spec| spec.tolerations.clone()).unwrap_or_default(),
                scheduling_gates: spec.and_then(|spec| spec.scheduling_gates.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

/// Injects the infos into the job's templates before it starts (Kueue's podset.Merge per pod set).
/// A template is left as it was when one of its keys conflicts; counts are the caller's business.
pub fn run_with_infos(templates: &mut [PodTemplateSpec], infos: &[PodSetInfo]) -> Result<(), PodSetInfoError> {
    if templates.len() != infos.len() {
        return Err(PodSetInfoError::BadLength { expected: templates.len(), got: infos.len() });
    }
    for (template, info) in templates.iter_mut().zip(infos) {
        let meta = template.metadata.as_ref();
        let node_selector = template.spec.as_ref().and_then(|spec| spec.node_selector.as_ref());
        check_conflicts(
            &info.name,
            meta.and_then(|meta| meta.annotations.as_ref()),
            meta.and_then(|meta| meta.labels.as_ref()),
            node_selector,
            info,
        )?;
        // Fields stay unset when nothing is added, so a restore gives back the template exactly.
        if !info.annotations.is_empty() || !info.labels.is_empty() {
            let meta = template.metadata.get_or_insert_default();
            copy_map_into(&mut meta.annotations, &info.annotations);
            copy_map_into(&mut meta.labels, &info.labels);
        }
        if !info.node_selector.is_empty() || !info.tolerations.is_empty() || !info.scheduling_gates.is_empty() {
            let spec = template.spec.get_or_insert_default();
            copy_map_into(&mut spec.node_selector, &info.node_selector);
            if !info.tolerations.is_empty() {
                append_missing(spec.tolerations.get_or_insert_default(), &info.tolerations, same_toleration);
            }
            if !info.scheduling_gates.is_empty() {
                append_missing(spec.scheduling_gates.get_or_insert_default(), &info.scheduling_gates, PartialEq::eq);
            }
        }
    }
    Ok(())
}

/// Puts the recorded labels, annotations, node selector, tolerations and scheduling gates back into the
/// job's templates after it stops (Kueue's RestorePodSpec per pod set). Returns whether anything changed;
/// a length mismatch changes nothing.
pub fn restore_templates(templates: &mut [PodTemplateSpec], infos: &[PodSetInfo]) -> bool {
    if templates.len() != infos.len() {
        return false;
    }
    let mut changed = false;
    for (template, info) in templates.iter_mut().zip(infos) {
        let meta = template.metadata.as_ref();
        let restore_annotations = !same_map(meta.and_then(|meta| meta.annotations.as_ref()), &info.annotations);
        let restore_labels = !same_map(meta.and_then(|meta| meta.labels.as_ref()), &info.labels);
        if restore_annotations || restore_labels {
            let meta = template.metadata.get_or_insert_default();
            if restore_annotations {
                meta.annotations = owned_map(&info.annotations);
            }
            if restore_labels {
                meta.labels = owned_map(&info.labels);
            }
            changed = true;
        }

        let spec = template.spec.as_ref();
        let restore_node_selector = !same_map(spec.and_then(|spec| spec.node_selector.as_ref()), &info.node_selector);
        let restore_tolerations = !same_list(spec.and_then(|spec| spec.tolerations.as_deref()), &info.tolerations);
        let restore_gates = !same_list(spec.and_then(|spec| spec.scheduling_gates.as_deref()), &info.scheduling_gates);
        if restore_node_selector || restore_tolerations || restore_gates {
            let spec = template.spec.get_or_insert_default();
            if restore_node_selector {
                spec.node_selector = owned_map(&info.node_selector);
            }
            if restore_tolerations {
                spec.tolerations = owned_list(&info.tolerations);
            }
            if restore_gates {
                spec.scheduling_gates = owned_list(&info.scheduling_gates);
            }
            changed = true;
        }
    }
    changed
}

/// Whether a job's pod sets still match its Workload's (Kueue's ComparePodSetSlices). Each entry is
/// `(count, min_count, template)`. Only what affects scheduling is compared: labels, annotations and node
/// selectors change when the job starts, and tolerations may too, hence `compare_tolerations`.
/// Containers compare as Go compares them ([`semantic`]).
pub fn equivalent_pod_sets(
    a: &[(i32, Option<i32>, &PodTemplateSpec)],
    b: &[(i32, Option<i32>, &PodTemplateSpec)],
    compare_tolerations: bool,
) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(&(count_a, min_a, template_a), &(count_b, min_b, template_b))| {
            let spec_a = template_a.spec.as_ref();
            let spec_b = template_b.spec.as_ref();
            count_a == count_b
                && min_a == min_b
                && (!compare_tolerations
                    || semantic::equal(
                        &spec_a.and_then(|spec| spec.tolerations.as_deref()),
                        &spec_b.and_then(|spec| spec.tolerations.as_deref()),
                    ))
                && semantic::equal(
                    &spec_a.and_then(|spec| spec.init_containers.as_deref()),
                    &spec_b.and_then(|spec| spec.init_containers.as_deref()),
                )
                && semantic::equal(
                    &spec_a.map(|spec| spec.containers.as_slice()),
                    &spec_b.map(|spec| spec.containers.as_slice()),
                )
        })
}

/// Finds the first key of `other` that already has another value, in Kueue's order of fields.
fn check_conflicts(
    pod_set: &str,
    annotations: Option<&StringMap>,
    labels: Option<&StringMap>,
    node_selector: Option<&StringMap>,
    other: &PodSetInfo,
) -> Result<(), PodSetInfoError> {
    let fields = [
        ("annotations", annotations, &other.annotations),
        ("labels", labels, &other.labels),
        ("nodeSelector", node_selector, &other.node_selector),
    ];
    for (field, existing, new) in fields {
        let Some(existing) = existing else { continue };
        for (key, new_value) in new {
            if let Some(existing_value) = existing.get(key)
                && existing_value != new_value
            {
                return Err(PodSetInfoError::Conflict {
                    pod_set: pod_set.to_owned(),
                    field,
                    key: key.clone(),
                    existing: existing_value.clone(),
                    new: new_value.clone(),
                });
            }
        }
    }
    Ok(())
}

fn copy_map(dst: &mut StringMap, src: &StringMap) {
    dst.extend(src.iter().map(|(key, value)| (key.clone(), value.clone())));
}

fn copy_map_into(dst: &mut Option<StringMap>, src: &StringMap) {
    if !src.is_empty() {
        copy_map(dst.get_or_insert_default(), src);
    }
}

/// Appends the items of `src` that `dst` does not hold yet, `src`'s own repeats included.
fn append_missing<T: Clone>(dst: &mut Vec<T>, src: &[T], same: fn(&T, &T) -> bool) {
    for item in src {
        if !dst.iter().any(|held| same(held, item)) {
            dst.push(item.clone());
        }
    }
}

/// Kueue's toleration equality: an empty operator means Equal, and tolerationSeconds is ignored.
fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    let operator = |toleration: &Toleration| toleration.operator.clone().unwrap_or_else(|| "Equal".to_owned());
    a.key.as_deref().unwrap_or_default() == b.key.as_deref().unwrap_or_default()
        && a.effect.as_deref().unwrap_or_default() == b.effect.as_deref().unwrap_or_default()
        && a.value.as_deref().unwrap_or_default() == b.value.as_deref().unwrap_or_default()
        && operator(a) == operator(b)
}

/// Go's maps.Equal, where an unset map equals an empty one.
fn same_map(have: Option<&StringMap>, want: &StringMap) -> bool {
    have.map_or(want.is_empty(), |have| have == want)
}

/// Go's slices.Equal, where an unset slice equals an empty one.
fn same_list<T: PartialEq>(have: Option<&[T]>, want: &[T]) -> bool {
    have.unwrap_or_default() == want
}

/// The API omits empty fields, so an empty value is stored as unset.
fn owned_map(map: &StringMap) -> Option<StringMap> {
    (!map.is_empty()).then(|| map.clone())
}

fn owned_list<T: Clone>(list: &[T]) -> Option<Vec<T>> {
    (!list.is_empty()).then(|| list.to_vec())
}

/// RFC 1123 label, as Kubernetes' IsDNS1123Label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
fn is_dns1123_label(value: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    value.len() <= 63
        && value.starts_with(alphanumeric)
        && value.ends_with(alphanumeric)
        && value.chars().all(|c| alphanumeric(c) || c == '-')
}
