//! Admission rules of `WrappedJob`: the framework's defaults and checks plus AppWrapper's (one
//! namespace, no nesting, pod sets that can be found, 1 to 8 of them, components fixed while
//! admitted).

use kube::ResourceExt;
use serde_json::Value;

use super::authz;
use super::podsets::{self, PodSetError};
use crate::api::kueue::MAX_POD_SETS;
use crate::api::wrapped_job::{WrappedComponent, WrappedJob};
use crate::jobframework::admission::{JobWebhook, compiled_gvk};
use crate::jobframework::authorizer::Authorizer;
use crate::jobframework::webhook::{self, FieldError, dns1123_label};
use kube::api::GroupVersionKind;
use kube::core::DynamicObject;
use kube::core::admission::AdmissionRequest;

/// Longest job name: pod set `k` (at most 7) is named `<name>-<k>`, and that must be a DNS label.
pub const MAX_NAME_LENGTH: usize = 61;

/// Wrappers that would be created by the controller and admitted again on their own.
const WRAPPER_KINDS: [(&str, &str); 2] = [(crate::api::GROUP, "WrappedJob"), ("workload.codeflare.dev", "AppWrapper")];

const IMMUTABLE_WHILE_ADMITTED: &str = "Forbidden: field is immutable while the job is admitted";

fn validate_spec(job: &WrappedJob) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = job.name_any();
    if !name.is_empty() {
        if let Err(why) = dns1123_label(&name) {
            errors.push(FieldError::invalid("metadata.name", &name, &why.to_string()));
        } else if name.len() > MAX_NAME_LENGTH {
            errors.push(FieldError::invalid(
                "metadata.name",
                &name,
                &format!("must be no more than {MAX_NAME_LENGTH} characters: pod sets are named \"<name>-<k>\""),
            ));
        }
    }
    let components = &job.spec.components;
    if components.is_empty() {
        errors.push(FieldError::new("spec.components", "Required value: at least one component"));
        return errors;
    }
    let namespace = job.namespace().unwrap_or_default();
    let mut pod_set_count = 0;
    let mut pod_sets_known = true;
    for (i, component) in components.iter().enumerate() {
        let path = format!("spec.components[{i}]");
        let Some(template) = component.template.as_object() else {
            errors.push(FieldError::invalid(
                format!("{path}.template"),
                podsets::json_type(&component.template),
                "must be an object",
            ));
            pod_sets_known = false;
            continue;
        };
        errors.extend(template_errors(&path, template, &namespace));
        let (pod_sets, pod_set_errors) = podsets::component_pod_sets_and_errors(i, component);
        pod_sets_known &= pod_set_errors.is_empty();
        errors.extend(pod_set_errors.into_iter().map(field_error));
        errors.extend(pod_set_infos_error(&path, component, pod_sets.len()));
        pod_set_count += pod_sets.len();
    }
    // A component whose pod sets are in error would make the count wrong.
    if pod_sets_known && !(1..=MAX_POD_SETS).contains(&pod_set_count) {
        errors.push(FieldError::new(
            "spec.components",
            format!(
                "Invalid value: {pod_set_count}: must contain 1 to {MAX_POD_SETS} pod templates, found {pod_set_count}"
            ),
        ));
    }
    errors
}

/// What the API server will need to create the component, and what a wrapper may not create.
fn template_errors(path: &str, template: &serde_json::Map<String, Value>, namespace: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let api_version = text(template.get("apiVersion"));
    let kind = text(template.get("kind"));
    if api_version.is_none() {
        errors.push(FieldError::new(format!("{path}.template.apiVersion"), "Required value: such as \"batch/v1\""));
    }
    if kind.is_none() {
        errors.push(FieldError::new(format!("{path}.template.kind"), "Required value: such as \"Job\""));
    }
    let metadata = template.get("metadata");
    let field = |name| text(metadata.and_then(|m| m.get(name)));
    if field("name").is_none() && field("generateName").is_none() {
        errors.push(FieldError::new(
            format!("{path}.template.metadata.name"),
            "Required value: name or generateName is required",
        ));
    }
    let group = api_version.and_then(|v| v.rsplit_once('/')).map_or("", |(group, _)| group);
    if WRAPPER_KINDS.contains(&(group, kind.unwrap_or_default())) {
        errors.push(FieldError::new(
            format!("{path}.template"),
            "Forbidden: nested WrappedJobs and AppWrappers are forbidden",
        ));
    }
    if let Some(other) = field("namespace").filter(|n| *n != namespace) {
        errors.push(FieldError::new(
            format!("{path}.template.metadata.namespace"),
            format!("Forbidden: a WrappedJob in {namespace:?} cannot create objects in {other:?}"),
        ));
    }
    errors
}

/// Kueue writes one info per pod set of the component, or none before admission.
fn pod_set_infos_error(path: &str, component: &WrappedComponent, pod_sets: usize) -> Option<FieldError> {
    let infos = component.pod_set_infos.len();
    (infos != 0 && infos != pod_sets).then(|| {
        FieldError::invalid(
            format!("{path}.podSetInfos"),
            &format!("{infos} entries"),
            &format!("must have one entry per pod set of the component ({pod_sets})"),
        )
    })
}

fn changes_while_admitted(old: &WrappedJob, new: &WrappedJob) -> Vec<FieldError> {
    let (old, new) = (&old.spec.components, &new.spec.components);
    if old.len() != new.len() {
        return vec![FieldError::new("spec.components", IMMUTABLE_WHILE_ADMITTED)];
    }
    let mut errors = Vec::new();
    for (i, (old, new)) in old.iter().zip(new).enumerate() {
        if old.template != new.template {
            errors.push(FieldError::new(format!("spec.components[{i}].template"), IMMUTABLE_WHILE_ADMITTED));
        }
        if old.pod_sets != new.pod_sets {
            errors.push(FieldError::new(format!("spec.components[{i}].podSets"), IMMUTABLE_WHILE_ADMITTED));
        }
    }
    errors
}

fn text(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn field_error(error: PodSetError) -> FieldError {
    FieldError::new(error.path, error.message)
}

impl JobWebhook for WrappedJob {
    type Kind = ();

    fn admits(_: &()) -> GroupVersionKind {
        compiled_gvk::<Self>()
    }

    fn decode(_: &(), object: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(object)
    }

    fn validate_create(&self) -> Vec<FieldError> {
        let job = self;
        let mut errors = webhook::validate_on_create(job);
        errors.extend(validate_spec(job));
        errors
    }

    fn validate_update(old: &Self, new: &Self) -> Vec<FieldError> {
        let mut errors = webhook::validate_on_update(old, new);
        // An unchanged spec (a finalizer removed, a label added) is not judged again: rules that
        // grew stricter since the job was admitted must never block its clean-up.
        if old.spec == new.spec {
            return errors;
        }
        errors.extend(validate_spec(new));
        // Kueue starts the job (suspended → running, writing podSetInfos) and stops it (the reverse);
        // what runs, or is about to run, must stay what was admitted.
        if !old.is_suspended() || !new.is_suspended() {
            errors.extend(changes_while_admitted(old, new));
        }
        errors
    }

    /// The controller creates the components with its own rights, so whoever creates a
    /// WrappedJob, or later changes what it wraps, must be allowed to create them.
    async fn authorize<'a>(
        old: Option<&'a Self>,
        new: &'a Self,
        request: &'a AdmissionRequest<DynamicObject>,
        authorizer: &'a dyn Authorizer,
    ) -> Vec<FieldError> {
        if old.is_some_and(|old| !authz::needs_review(old, new)) {
            return Vec::new();
        }
        let Some(namespace) = request.namespace.clone().or_else(|| new.namespace()) else {
            return vec![FieldError::new("metadata.namespace", "Required value")];
        };
        authz::authorize(new, &namespace, &request.user_info, authorizer).await
    }

    /// Each component as itself, whenever what it wraps is new.
    async fn dry_run<'a>(
        old: Option<&'a Self>,
        new: &'a Self,
        namespace: &'a str,
        authorizer: &'a dyn Authorizer,
    ) -> Vec<FieldError> {
        if old.is_some_and(|old| !authz::needs_review(old, new)) {
            return Vec::new();
        }
        super::dry_run::components(new, namespace, authorizer).await
    }
}

#[cfg(test)]
mod tests;
