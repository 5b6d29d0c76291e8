//! Pod sets of a WrappedJob's components: where their pod templates are (declared, or inferred
//! for the kinds AppWrapper knows, with AppWrapper's rules), the templates Kueue is given, and the
//! component object the controller creates with the admission injected into it.
//!
//! Paths are AppWrapper's: `template`, then `.field` or `[index]` elements, so
//! `spec.components[i].` before a path is the field path of that value in the WrappedJob.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::api::wrapped_job::{ComponentPodSet, ComponentPodSetInfo, WRAPPED_JOB_LABEL, WrappedComponent, WrappedJob};
use crate::integrations::kueue_frameworks::{KUEUE_FRAMEWORKS, PodSetsAt};
use crate::jobframework::podset::{PodSetInfo, PodSetInfoError};
use crate::jobframework::workload;

mod template_path;
#[cfg(test)]
mod tests;

pub use template_path::{BadPath, NotAPodTemplate};
use template_path::{TEMPLATE, json_pointer, value_at};

/// One pod set of a WrappedJob, flattened across its components in order.
#[derive(Clone, Debug, PartialEq)]
pub struct JobPodSet {
    /// Index of the component in `spec.components`.
    pub component: usize,
    pub pod_set: ComponentPodSet,
    /// The template as the Workload records it (defaulted as the API server would).
    pub template: PodTemplateSpec,
}

/// A problem with a pod set, worded as the API server words field errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PodSetError {
    /// Field path in the WrappedJob, e.g. `spec.components[1].podSets[0].path`.
    pub path: String,
    /// `Invalid value: …`, `Required value: …`, `Duplicate value: …`.
    pub message: String,
}

impl PodSetError {
    fn invalid(path: impl Into<String>, value: &str, why: &str) -> Self {
        PodSetError { path: path.into(), message: format!("Invalid value: {value:?}: {why}") }
    }

    /// Locates an error found inside component `index` (whose paths start at `template` or `podSets`).
    fn in_component(mut self, index: usize) -> Self {
        self.path = format!("spec.components[{index}].{}", self.path);
        self
    }
}

/// The pod sets of component `index`: the declared ones when given, else those inferred from its
/// kind (none for kinds without pod templates). The first problem found is the error.
pub fn component_pod_sets(index: usize, component: &WrappedComponent) -> Result<Vec<ComponentPodSet>, PodSetError> {
    let (pod_sets, errors) = component_pod_sets_and_errors(index, component);
    match errors.into_iter().next() {
        Some(error) => Err(error),
        None => Ok(pod_sets),
    }
}

/// The pod sets of component `index` as [`component_pod_sets`] finds them, and every problem with
/// them, for a webhook that reports all of them at once.
pub fn component_pod_sets_and_errors(
    index: usize,
    component: &WrappedComponent,
) -> (Vec<ComponentPodSet>, Vec<PodSetError>) {
    let (pod_sets, errors) = checked_pod_sets(component);
    (pod_sets, errors.into_iter().map(|e| e.in_component(index)).collect())
}

/// The pod template at `path` in a component's `template`: an object whose `spec` is a v1 PodSpec
/// with at least one container. Only labels and annotations are kept from its metadata, as
/// AppWrapper does: a Pod's own name or owners mean nothing to Kueue.
pub fn pod_template_at(template: &Value, path: &str) -> Result<PodTemplateSpec, NotAPodTemplate> {
    let candidate =
        value_at(template, path)?.as_object().ok_or_else(|| NotAPodTemplate::NotAnObject(path.to_owned()))?;
    let spec = candidate.get("spec").ok_or_else(|| NotAPodTemplate::NoSpec(path.to_owned()))?;
    if spec.get("containers").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        return Err(NotAPodTemplate::NoContainers(path.to_owned()));
    }
    let spec: PodSpec = serde_json::from_value(spec.clone())
        .map_err(|source| NotAPodTemplate::NotAPodSpec { path: path.to_owned(), source })?;
    let metadata = candidate.get("metadata");
    let string_map = |key| match metadata.and_then(|m| m.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value::<BTreeMap<String, String>>(value.clone())
            .map(Some)
            .map_err(|source| NotAPodTemplate::NotAStringMap { path: path.to_owned(), key, source }),
    };
    let labels = string_map("labels")?;
    let annotations = string_map("annotations")?;
    let metadata = (labels.is_some() || annotations.is_some()).then(|| ObjectMeta {
        labels,
        annotations,
        ..ObjectMeta::default()
    });
    Ok(PodTemplateSpec { metadata, spec: Some(spec) })
}

/// All pod sets of the job in component order (Kueue names them `<job>-<k>`), each template as
/// the Workload stores it, so that a job compared with its Workload stays equivalent.
pub fn job_pod_sets(job: &WrappedJob) -> Result<Vec<JobPodSet>, PodSetError> {
    let mut all = Vec::new();
    for (index, component) in job.spec.components.iter().enumerate() {
        for pod_set in component_pod_sets(index, component)? {
            let template = pod_template_at(&component.template, &pod_set.path)
                .map_err(|why| not_a_pod_template(&component.template, &pod_set.path, why).in_component(index))?;
            all.push(JobPodSet { component: index, pod_set, template: workload::with_schema_defaults(template) });
        }
    }
    Ok(all)
}

/// Component `index` as the controller creates it: in the job's namespace, controlled by the job,
/// labelled with the job's name on the object and on each of `pod_sets`' templates, and with the
/// admission's `podSetInfos` (when Kueue has written them) injected into those templates. Works on
/// the JSON so that fields this crate does not know reach the API server unchanged.
pub fn object_to_create(job: &WrappedJob, index: usize, pod_sets: &[ComponentPodSet]) -> Result<Value, PodSetError> {
    let component_path = format!("spec.components[{index}]");
    let component = job.spec.components.get(index).ok_or_else(|| PodSetError {
        path: component_path.clone(),
        message: format!("Not found: the job has {} components", job.spec.components.len()),
    })?;
    // Without a UID the ownerReference would be rejected, or the object orphaned.
    let uid = job.uid().ok_or_else(|| PodSetError {
        path: "metadata.uid".into(),
        message: "Required value: components are created for a stored job".into(),
    })?;
    let infos = &component.pod_set_infos;
    if !infos.is_empty() && infos.len() != pod_sets.len() {
        return Err(PodSetError::invalid(
            format!("{component_path}.podSetInfos"),
            &format!("{} entries", infos.len()),
            &format!("must have one entry per pod set ({})", pod_sets.len()),
        ));
    }
    let name = job.name_any();
    let mut object = component.template.clone();
    for (k, pod_set) in pod_sets.iter().enumerate() {
        let template_path = format!("{component_path}.{}", pod_set.path);
        let pod_template = object_at(&mut object, &pod_set.path, &template_path)?;
        if let Some(info) = infos.get(k) {
            merge_info(pod_template, info, &pod_set.path).map_err(|error| match error {
                MergeError::Malformed(field, message) => {
                    PodSetError { path: format!("{template_path}.{field}"), message }
                }
                MergeError::Rejected(PodSetInfoError::Conflict { field, key, existing, new, .. }) => {
                    PodSetError::invalid(
                        format!("{component_path}.podSetInfos[{k}].{field}[{key}]"),
                        &new,
                        &format!("the pod template at {} already has {existing:?}", pod_set.path),
                    )
                }
                MergeError::Rejected(other) => PodSetError {
                    path: format!("{component_path}.podSetInfos[{k}]"),
                    message: format!("Invalid value: {other}"),
                },
            })?;
        }
        set_job_label(pod_template, &name)
            .map_err(|(field, found)| not_an_object(format!("{template_path}.{field}"), found))?;
    }

    let template_path = format!("{component_path}.template");
    let found = json_type(&object);
    let root = object.as_object_mut().ok_or_else(|| not_an_object(template_path.clone(), found))?;
    set_job_label(root, &name).map_err(|(field, found)| not_an_object(format!("{template_path}.{field}"), found))?;
    let metadata =
        child_object(root, "metadata").map_err(|found| not_an_object(format!("{template_path}.metadata"), found))?;
    if let Some(namespace) = job.namespace() {
        metadata.insert("namespace".into(), Value::String(namespace));
    }
    let owner = OwnerReference { uid, ..workload::owner_reference(job) };
    add_owner(metadata, owner).map_err(|found| {
        PodSetError::invalid(format!("{template_path}.metadata.ownerReferences"), found, "must be a list")
    })?;
    Ok(object)
}

/// The JSON type of a value, as the API server names it in `Invalid value: "object"`.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as `Invalid value: "…"` shows it: strings without their JSON quotes.
fn display(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn not_an_object(path: String, found: &str) -> PodSetError {
    PodSetError::invalid(path, found, "must be an object")
}

/// Declared pod sets checked against the template and against inference; paths relative to the component.
fn checked_pod_sets(component: &WrappedComponent) -> (Vec<ComponentPodSet>, Vec<PodSetError>) {
    let template = &component.template;
    let declared = &component.pod_sets;
    let inferred = infer(template);
    if declared.is_empty() {
        return match inferred {
            Ok(inferred) => (inferred, Vec::new()),
            Err(error) => (Vec::new(), vec![error]),
        };
    }
    let mut errors: Vec<_> = declared.iter().enumerate().flat_map(|(k, p)| declared_errors(template, k, p)).collect();
    errors.extend(duplicate_paths(declared));
    match inferred {
        // A kind inferred to have no pod templates (e.g. a PyTorchJob without replica specs) leaves
        // the declared ones unchecked, as AppWrapper does.
        Ok(inferred) if !inferred.is_empty() => errors.extend(differences(declared, &inferred)),
        Ok(_) => {}
        Err(error) => errors.push(error),
    }
    (declared.clone(), errors)
}

fn declared_errors(template: &Value, k: usize, pod_set: &ComponentPodSet) -> Vec<PodSetError> {
    let mut errors = Vec::new();
    if pod_set.path.is_empty() {
        errors.push(PodSetError {
            path: format!("podSets[{k}].path"),
            message: "Required value: the path of a pod template, such as \"template.spec.template\"".into(),
        });
    } else if let Err(why) = pod_template_at(template, &pod_set.path) {
        errors.push(PodSetError::invalid(
            format!("podSets[{k}].path"),
            &pod_set.path,
            &format!("does not refer to a pod template: {why}"),
        ));
    }
    if pod_set.replicas() < 0 {
        errors.push(PodSetError::invalid(
            format!("podSets[{k}].replicas"),
            &pod_set.replicas().to_string(),
            "must be greater than or equal to 0",
        ));
    }
    errors
}

fn duplicate_paths(declared: &[ComponentPodSet]) -> Vec<PodSetError> {
    let mut seen = BTreeSet::new();
    declared
        .iter()
        .enumerate()
        .filter(|(_, p)| !seen.insert(p.path.as_str()))
        .map(|(k, p)| PodSetError {
            path: format!("podSets[{k}].path"),
            message: format!("Duplicate value: {:?}", p.path),
        })
        .collect()
}

/// Declared pod sets of an inferable kind must say what inference says: the same paths and replicas.
fn differences(declared: &[ComponentPodSet], inferred: &[ComponentPodSet]) -> Vec<PodSetError> {
    let inferred_paths = || inferred.iter().map(|p| p.path.as_str()).collect::<Vec<_>>().join(", ");
    if declared.len() != inferred.len() {
        return vec![PodSetError::invalid(
            "podSets",
            &format!("{} pod sets", declared.len()),
            &format!("the template's kind has {}: {}", inferred.len(), inferred_paths()),
        )];
    }
    let mut errors = Vec::new();
    for wanted in inferred {
        match declared.iter().position(|p| p.path == wanted.path) {
            None => errors.push(PodSetError {
                path: "podSets".into(),
                message: format!("Required value: the pod set {:?} of the template's kind is missing", wanted.path),
            }),
            Some(k) if declared[k].replicas() != wanted.replicas() => errors.push(PodSetError::invalid(
                format!("podSets[{k}].replicas"),
                &declared[k].replicas().to_string(),
                &format!("must be {}, as inferred from the template", wanted.replicas()),
            )),
            Some(_) => {}
        }
    }
    errors
}

/// The pod sets AppWrapper infers for the kinds it knows (Kueue's table of kinds says where their
/// templates are), in its order; other kinds have none. Every inferred path must hold a pod
/// template.
fn infer(template: &Value) -> Result<Vec<ComponentPodSet>, PodSetError> {
    let field = |name| template.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let framework = KUEUE_FRAMEWORKS.iter().find(|f| (f.group, f.version, f.kind) == (group, version, kind));
    let pod_sets = match framework.and_then(|f| f.as_component).map(|c| c.pod_sets) {
        Some(PodSetsAt::Itself) => vec![pod_set(TEMPLATE, 1)],
        Some(PodSetsAt::Replicas) => {
            replicated(template, "template.spec.template", "template.spec.replicas")?.into_iter().collect()
        }
        Some(PodSetsAt::JobTemplate) => {
            vec![pod_set("template.spec.template", job_pods(template, "template.spec.")?)]
        }
        Some(PodSetsAt::ReplicatedJobs) => replicated_jobs(template)?,
        Some(PodSetsAt::ReplicaSpecs { field, roles }) => roles
            .iter()
            .map(|role| {
                let prefix = format!("template.spec.{field}.{role}.");
                replicated(template, &format!("{prefix}template"), &format!("{prefix}replicas"))
            })
            .filter_map(Result::transpose)
            .collect::<Result<_, _>>()?,
        Some(PodSetsAt::RayCluster { prefix }) => ray_pod_sets(template, &format!("template.spec.{prefix}"))?,
        Some(PodSetsAt::Declared) | None => Vec::new(),
    };
    for pod_set in &pod_sets {
        if let Err(why) = pod_template_at(template, &pod_set.path) {
            return Err(not_a_pod_template(template, &pod_set.path, why));
        }
    }
    Ok(pod_sets)
}

/// The error for a path that should hold a pod template, located at that value.
fn not_a_pod_template(template: &Value, path: &str, why: NotAPodTemplate) -> PodSetError {
    match value_at(template, path) {
        Ok(value) => PodSetError::invalid(path, json_type(value), &format!("not a pod template: {why}")),
        Err(_) => PodSetError { path: path.to_owned(), message: format!("Required value: a pod template: {why}") },
    }
}

fn pod_set(path: impl Into<String>, replicas: i32) -> ComponentPodSet {
    ComponentPodSet { path: path.into(), replicas: Some(replicas), ..ComponentPodSet::default() }
}

/// A pod set at `path` when something is there, with the count at `replicas` (default 1).
fn replicated(template: &Value, path: &str, replicas: &str) -> Result<Option<ComponentPodSet>, PodSetError> {
    if value_at(template, path).is_err() {
        return Ok(None);
    }
    Ok(Some(pod_set(path, count_at(template, replicas)?.unwrap_or(1))))
}

/// Pods a batch Job runs at once: `parallelism` (default 1), but no more than `completions` when set.
fn job_pods(template: &Value, spec_prefix: &str) -> Result<i32, PodSetError> {
    let parallelism = count_at(template, &format!("{spec_prefix}parallelism"))?.unwrap_or(1);
    let completions = count_at(template, &format!("{spec_prefix}completions"))?;
    Ok(completions.map_or(parallelism, |completions| completions.min(parallelism)))
}

/// One pod set per replicated Job of a JobSet: its Jobs' pods times its replicas.
fn replicated_jobs(template: &Value) -> Result<Vec<ComponentPodSet>, PodSetError> {
    let count = value_at(template, "template.spec.replicatedJobs").ok().and_then(Value::as_array).map_or(0, Vec::len);
    let mut pod_sets = Vec::new();
    for i in 0..count {
        let prefix = format!("template.spec.replicatedJobs[{i}].");
        if value_at(template, &format!("{prefix}template")).is_err() {
            continue;
        }
        let pods = job_pods(template, &format!("{prefix}template.spec."))?;
        let replicas_path = format!("{prefix}replicas");
        let replicas = count_at(template, &replicas_path)?.unwrap_or(1);
        let total = replicas.checked_mul(pods).ok_or_else(|| {
            PodSetError::invalid(&replicas_path, &replicas.to_string(), &format!("{pods} pods per Job are too many"))
        })?;
        pod_sets.push(pod_set(format!("{prefix}template.spec.template"), total));
    }
    Ok(pod_sets)
}

/// The head (always one pod) and each worker group with a template (its `replicas`, not its
/// autoscaling bounds) of a Ray cluster spec.
fn ray_pod_sets(template: &Value, cluster_prefix: &str) -> Result<Vec<ComponentPodSet>, PodSetError> {
    let mut pod_sets = vec![pod_set(format!("{cluster_prefix}headGroupSpec.template"), 1)];
    let groups = format!("{cluster_prefix}workerGroupSpecs");
    let count = value_at(template, &groups).ok().and_then(Value::as_array).map_or(0, Vec::len);
    for i in 0..count {
        let prefix = format!("{groups}[{i}].");
        pod_sets.extend(replicated(template, &format!("{prefix}template"), &format!("{prefix}replicas"))?);
    }
    Ok(pod_sets)
}

/// The non-negative 32-bit count at `path`; `None` when nothing is there.
fn count_at(template: &Value, path: &str) -> Result<Option<i32>, PodSetError> {
    match value_at(template, path) {
        Err(_) | Ok(Value::Null) => Ok(None),
        Ok(value) => value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 0)
            .map(Some)
            .ok_or_else(|| PodSetError::invalid(path, &display(value), "must be a non-negative 32-bit integer")),
    }
}

/// The object at `path` in a component's template, to change it; `field` is where the error is.
fn object_at<'v>(template: &'v mut Value, path: &str, field: &str) -> Result<&'v mut Map<String, Value>, PodSetError> {
    let pointer = json_pointer(path).map_err(|why| PodSetError::invalid(field, path, &why.to_string()))?;
    let target = template
        .pointer_mut(&pointer)
        .ok_or_else(|| PodSetError { path: field.to_owned(), message: "Required value: a pod template".to_owned() })?;
    let found = json_type(target);
    target.as_object_mut().ok_or_else(|| not_an_object(field.to_owned(), found))
}

/// The object under `key`, created when missing or null; the error is the JSON type found instead.
fn child_object<'a>(parent: &'a mut Map<String, Value>, key: &str) -> Result<&'a mut Map<String, Value>, &'static str> {
    let slot = parent.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    let found = json_type(slot);
    slot.as_object_mut().ok_or(found)
}

/// Labels an object (or pod template) with the job it belongs to; the error names the field that
/// is not an object and what it is instead.
fn set_job_label(object: &mut Map<String, Value>, job_name: &str) -> Result<(), (&'static str, &'static str)> {
    let metadata = child_object(object, "metadata").map_err(|found| ("metadata", found))?;
    let labels = child_object(metadata, "labels").map_err(|found| ("metadata.labels", found))?;
    labels.insert(WRAPPED_JOB_LABEL.into(), Value::String(job_name.into()));
    Ok(())
}

/// Adds the job's controller reference once, whatever owners the template names; the error is
/// the JSON type found instead of a list.
fn add_owner(metadata: &mut Map<String, Value>, owner: OwnerReference) -> Result<(), &'static str> {
    let slot = metadata.entry("ownerReferences").or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    let found = json_type(slot);
    let owners = slot.as_array_mut().ok_or(found)?;
    if !owners.iter().any(|o| o.get("uid").and_then(Value::as_str) == Some(owner.uid.as_str())) {
        owners.push(json!({
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }));
    }
    Ok(())
}

enum MergeError {
    /// A field (relative to the pod template) is not what Kubernetes expects there, and why.
    Malformed(&'static str, String),
    Rejected(PodSetInfoError),
}

/// Injects one admission into a pod template with Kueue's merge rules (a key that already has
/// another value is an error, tolerations and scheduling gates are added when missing), touching
/// only the fields the admission adds to.
fn merge_info(pod_template: &mut Map<String, Value>, info: &ComponentPodSetInfo, path: &str) -> Result<(), MergeError> {
    let metadata = pod_template.get("metadata");
    let spec = pod_template.get("spec");
    let mut merged = PodSetInfo {
        name: path.to_owned(),
        labels: decode_field(metadata, "labels", "metadata.labels")?,
        annotations: decode_field(metadata, "annotations", "metadata.annotations")?,
        node_selector: decode_field(spec, "nodeSelector", "spec.nodeSelector")?,
        tolerations: decode_field(spec, "tolerations", "spec.tolerations")?,
        scheduling_gates: decode_field(spec, "schedulingGates", "spec.schedulingGates")?,
        ..PodSetInfo::default()
    };
    merged
        .merge(&PodSetInfo {
            labels: info.labels.clone(),
            annotations: info.annotations.clone(),
            node_selector: info.node_selector.clone(),
            tolerations: info.tolerations.clone(),
            scheduling_gates: info.scheduling_gates.clone(),
            ..PodSetInfo::default()
        })
        .map_err(MergeError::Rejected)?;

    // Fields the admission adds nothing to stay as they are, down to their JSON form.
    let updates = [
        ("metadata", "labels", (!info.labels.is_empty()).then(|| json!(merged.labels))),
        ("metadata", "annotations", (!info.annotations.is_empty()).then(|| json!(merged.annotations))),
        ("spec", "nodeSelector", (!info.node_selector.is_empty()).then(|| json!(merged.node_selector))),
        ("spec", "tolerations", (!info.tolerations.is_empty()).then(|| json!(merged.tolerations))),
        ("spec", "schedulingGates", (!info.scheduling_gates.is_empty()).then(|| json!(merged.scheduling_gates))),
    ];
    for (parent, field, value) in updates {
        let Some(value) = value else { continue };
        let parent = child_object(pod_template, parent)
            .map_err(|found| MergeError::Malformed(parent, format!("Invalid value: {found:?}: must be an object")))?;
        parent.insert(field.to_owned(), value);
    }
    Ok(())
}

/// `parent.key` decoded as `T`; the default when absent or null.
fn decode_field<T: DeserializeOwned + Default>(
    parent: Option<&Value>,
    key: &str,
    field: &'static str,
) -> Result<T, MergeError> {
    match parent.and_then(|p| p.get(key)) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|e| MergeError::Malformed(field, format!("Invalid value: {:?}: {e}", json_type(value)))),
    }
}
