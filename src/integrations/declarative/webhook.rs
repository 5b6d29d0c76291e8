//! Admission rules of a configured kind: the framework's defaults and checks, plus what the
//! reconciler relies on — pod sets it can read, and templates that stay put while running.

use std::collections::BTreeSet;

use serde_json::Value;

use super::ConfiguredJob;
use super::config::Integration;
use super::count::Count;
use super::count::number;
use crate::api::kueue::MAX_POD_SETS;
use crate::jobframework::admission::JobWebhook;
use crate::jobframework::generic_job::GenericJob;
use crate::jobframework::reconciler::Config;
use crate::jobframework::webhook::{self, FieldError, dns1123_label};
use kube::api::GroupVersionKind;
use std::sync::Arc;

pub fn default(job: &mut ConfiguredJob, config: &Config, queue_uses_multikueue: bool) {
    job.prepare_copy();
    webhook::default_suspend(job, config);
    webhook::default_managed_by(job, queue_uses_multikueue);
}

/// Every pod set resolves to a name, a template (or requests) and a count Kueue can admit.
fn validate_pod_sets(job: &ConfiguredJob) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let resolved = job.resolve_pod_sets();
    let mut names = BTreeSet::new();
    for pod_set in &resolved {
        let pod_set = match pod_set {
            Ok(pod_set) => pod_set,
            Err((path, message)) => {
                errors.push(FieldError::new(path.clone(), message.clone()));
                continue;
            }
        };
        if let Err(why) = dns1123_label(&pod_set.name) {
            errors.push(FieldError::invalid(format!("podSet {:?}", pod_set.name), &pod_set.name, &why.to_string()));
        } else if !names.insert(pod_set.name.clone()) {
            errors.push(FieldError::new(
                format!("podSet {:?}", pod_set.name),
                "Duplicate value: pod set names must differ",
            ));
        }
        if let Err(error) = job.template(pod_set) {
            errors.push(error);
        }
        if let Some(count) = &pod_set.count {
            errors.extend(count_errors(job.object(), count));
        }
        if let Some(path) = &pod_set.min_count {
            errors.extend(count_errors(job.object(), &Count::Path(path.clone())));
        }
    }
    if resolved.len() > MAX_POD_SETS {
        errors.push(FieldError::invalid(
            pod_set_fields(job),
            &format!("{} pod sets", resolved.len()),
            &format!("must have 1 to {MAX_POD_SETS} pod sets"),
        ));
    }
    errors
}

/// Where the kind keeps its pod sets, for messages about all of them.
fn pod_set_fields(job: &ConfiguredJob) -> String {
    let rules = &job.integration().pod_sets;
    let paths: Vec<String> = rules
        .iter()
        .filter_map(|r| r.each.as_ref().or(r.template.as_ref()).or(r.requests.as_ref()).map(ToString::to_string))
        .collect();
    paths.join(", ")
}

/// What is wrong with a count: a field that holds no whole number, or a total below 1 (named at
/// its one field, or at all the fields it is computed from).
fn count_errors(object: &Value, count: &Count) -> Vec<FieldError> {
    const WHOLE: &str = "must be a whole number, at least 1";
    let unreadable: Vec<FieldError> = count
        .paths()
        .into_iter()
        .filter_map(|path| path.get(object).filter(|v| number(v).is_none()).map(|v| (path, v)))
        .map(|(path, value)| FieldError::invalid(path.to_string(), &value.to_string(), WHOLE))
        .collect();
    if !unreadable.is_empty() {
        return unreadable;
    }
    match count.eval(object) {
        Some(n) if n < 1 || n > i64::from(i32::MAX) => {
            let at = match count.field() {
                Some(path) => path.to_string(),
                None => count.paths().iter().map(ToString::to_string).collect::<Vec<_>>().join(" × "),
            };
            let shown = count.field().and_then(|p| p.get(object)).map_or_else(|| n.to_string(), |v| v.to_string());
            vec![FieldError::invalid(at, &shown, WHOLE)]
        }
        _ => Vec::new(),
    }
}

impl JobWebhook for ConfiguredJob {
    type Kind = Arc<Integration>;

    fn admits(kind: &Arc<Integration>) -> GroupVersionKind {
        kind.gvk()
    }

    fn decode(kind: &Arc<Integration>, object: Value) -> Result<Self, serde_json::Error> {
        ConfiguredJob::new(object, kind.clone())
    }

    /// The whole object: a configured job is kept as JSON, so nothing is lost by writing it out.
    fn defaulted(&self, _before: &Value) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn apply_defaults(&mut self, config: &Config, queue_uses_multikueue: bool) {
        default(self, config, queue_uses_multikueue);
    }

    fn validate_create(&self) -> Vec<FieldError> {
        let job = self;
        let mut errors = webhook::validate_on_create(job);
        if job.queue_name().is_some() {
            errors.extend(validate_pod_sets(job));
        }
        errors
    }

    fn validate_update(old: &Self, new: &Self) -> Vec<FieldError> {
        let mut errors = webhook::validate_on_update(old, new);
        if new.queue_name().is_some() {
            errors.extend(validate_pod_sets(new));
        }
        // Starting injects the admission and stopping restores it; in between the pods run with
        // what was admitted.
        if !old.is_suspended() && !new.is_suspended() && old.pod_sets() != new.pod_sets() {
            errors.push(FieldError::new(
                pod_set_fields(new),
                "Forbidden: pod templates and counts are immutable while the job runs",
            ));
        }
        errors
    }
}
