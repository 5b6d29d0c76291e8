//! Admission rules of `ExternalJob`: the framework's defaults and checks plus the kind's own
//! (pod set count and names, quantities, name length, immutability while running).

use crate::quantity::check_quantity;
use std::collections::BTreeSet;

use kube::ResourceExt;

use crate::api::external_job::ExternalJob;
use crate::api::kueue::MAX_POD_SETS;
use crate::jobframework::admission::{JobWebhook, compiled_gvk};
use crate::jobframework::authorizer::Authorizer;
use crate::jobframework::dry_run::pod_templates;
use crate::jobframework::webhook::{self, FieldError, dns1123_label};
use kube::api::GroupVersionKind;
use serde_json::Value;

fn validate_spec(job: &ExternalJob) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = job.name_any();
    // Pods carry the job name in a label, and label values are DNS labels.
    if !name.is_empty()
        && let Err(why) = dns1123_label(&name)
    {
        errors.push(FieldError::invalid("metadata.name", &name, &why.to_string()));
    }
    let pod_sets = &job.spec.pod_sets;
    if pod_sets.is_empty() || pod_sets.len() > MAX_POD_SETS {
        errors.push(FieldError::invalid(
            "spec.podSets",
            &format!("{} pod sets", pod_sets.len()),
            &format!("must have 1 to {MAX_POD_SETS} pod sets"),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, pod_set) in pod_sets.iter().enumerate() {
        let path = format!("spec.podSets[{i}]");
        if let Err(why) = dns1123_label(&pod_set.name) {
            errors.push(FieldError::invalid(format!("{path}.name"), &pod_set.name, &why.to_string()));
        } else if !seen.insert(pod_set.name.as_str()) {
            errors.push(FieldError::new(format!("{path}.name"), format!("Duplicate value: {:?}", pod_set.name)));
        }
        if pod_set.count < 1 {
            errors.push(FieldError::invalid(format!("{path}.count"), &pod_set.count.to_string(), "must be at least 1"));
        }
        if let Some(min) = pod_set.min_count
            && !(1..=pod_set.count).contains(&min)
        {
            errors.push(FieldError::invalid(
                format!("{path}.minCount"),
                &min.to_string(),
                "must be between 1 and count",
            ));
        }
        let spec = pod_set.template.spec.as_ref();
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        if containers.is_empty() {
            errors.push(FieldError::new(
                format!("{path}.template.spec.containers"),
                "Required value: at least one container",
            ));
        }
        for (j, container) in containers.iter().enumerate() {
            let resources = container.resources.as_ref();
            for (kind, list) in [
                ("requests", resources.and_then(|r| r.requests.as_ref())),
                ("limits", resources.and_then(|r| r.limits.as_ref())),
            ] {
                for (resource, quantity) in list.into_iter().flatten() {
                    if let Err(why) = check_quantity(&quantity.0) {
                        errors.push(FieldError::invalid(
                            format!("{path}.template.spec.containers[{j}].resources.{kind}[{resource}]"),
                            &quantity.0,
                            &why.to_string(),
                        ));
                    }
                }
            }
        }
    }
    if job.spec.backoff_limit.is_some_and(|b| b < 0) {
        errors.push(FieldError::invalid("spec.backoffLimit", &job.backoff_limit().to_string(), "must be 0 or more"));
    }
    if let Some(deadline) = job.spec.active_deadline_seconds.filter(|d| *d < 1) {
        errors.push(FieldError::invalid("spec.activeDeadlineSeconds", &deadline.to_string(), "must be at least 1"));
    }
    errors
}

impl JobWebhook for ExternalJob {
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
        errors.extend(validate_spec(new));
        // Starting (suspended → running) injects the admission and stopping restores it; a job
        // that stays running keeps what it was admitted with.
        if !old.is_suspended() && !new.is_suspended() && old.spec.pod_sets != new.spec.pod_sets {
            errors.push(FieldError::new("spec.podSets", "Forbidden: pod sets are immutable while the job is running"));
        }
        errors
    }

    /// A Pod made from each pod set's template, at creation: the templates cannot change later.
    async fn dry_run<'a>(
        old: Option<&'a Self>,
        new: &'a Self,
        namespace: &'a str,
        authorizer: &'a dyn Authorizer,
    ) -> Vec<FieldError> {
        if old.is_some() {
            return Vec::new();
        }
        let templates: Vec<(String, &_)> = (new.spec.pod_sets.iter().enumerate())
            .map(|(i, pod_set)| (format!("spec.podSets[{i}].template"), &pod_set.template))
            .collect();
        pod_templates(&templates, namespace, authorizer).await
    }
}
