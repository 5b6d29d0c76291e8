//! Defaulting and validation every integrated kind shares (Kueue's `ApplyDefaultForSuspend`,
//! `ApplyDefaultForManagedBy`, `ValidateJobOnCreate`, `ValidateJobOnUpdate`).

use std::fmt;

use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
use kube::ResourceExt;

use super::generic_job::GenericJob;
use super::reconciler::Config;
use crate::api::kueue::{MULTIKUEUE_CONTROLLER, PodSet, QUEUE_NAME_LABEL};

/// Which admission a webhook path answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    Mutate,
    Validate,
}

/// One rejected field, as the API server words it: `path: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub path: String,
    pub message: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { path: path.into(), message: message.into() }
    }

    pub fn invalid(path: impl Into<String>, value: &str, why: &str) -> Self {
        FieldError::new(path, format!("Invalid value: {value:?}: {why}"))
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// All errors in one message, for an admission response.
pub fn join(errors: &[FieldError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Suspends a job that Kueue must admit first; never unsuspends.
pub fn default_suspend<J: GenericJob>(job: &mut J, config: &Config) {
    if job.meta().deletion_timestamp.is_some() {
        return;
    }
    let managed = job.queue_name().is_some() || config.manage_jobs_without_queue_name;
    if managed && !job.is_suspended() {
        job.suspend();
    }
}

/// Hands a job to MultiKueue when its queue goes through a MultiKueue admission check (the
/// caller resolves that: LocalQueue → ClusterQueue → AdmissionChecks → controller name) and it
/// has not chosen a controller other than its kind's own.
pub fn default_managed_by<J: GenericJob>(job: &mut J, queue_uses_multikueue: bool) {
    if job.can_default_managed_by() && job.queue_name().is_some() && queue_uses_multikueue {
        job.set_managed_by(MULTIKUEUE_CONTROLLER);
    }
}

/// True when no container of any pod set asks for a resource (no requests, no limits, none at
/// the pod level). Kueue admits such a Workload on a MultiKueue manager without the check ever
/// dispatching it, so the job never runs; our webhook warns about it.
pub fn requests_nothing(pod_sets: &[PodSet]) -> bool {
    let asks = |resources: Option<&ResourceRequirements>| {
        resources.is_some_and(|r| {
            r.requests.as_ref().is_some_and(|m| !m.is_empty()) || r.limits.as_ref().is_some_and(|m| !m.is_empty())
        })
    };
    let pod_asks = |spec: &PodSpec| {
        asks(spec.resources.as_ref())
            || spec.containers.iter().chain(spec.init_containers.iter().flatten()).any(|c| asks(c.resources.as_ref()))
    };
    !pod_sets.is_empty() && !pod_sets.iter().any(|set| set.template.spec.as_ref().is_some_and(pod_asks))
}

/// The warning for a job in a MultiKueue queue whose pods ask for nothing.
pub const REQUESTS_NOTHING_THROUGH_MULTIKUEUE: &str = "no container requests resources: through MultiKueue such a job \
     is admitted on the manager and never dispatched to a worker; give its containers resource requests";

const QUEUE_PATH: &str = "metadata.labels[kueue.x-k8s.io/queue-name]";

pub fn validate_on_create<J: GenericJob>(job: &J) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(queue) = job.labels().get(QUEUE_NAME_LABEL)
        && let Err(why) = dns1123_subdomain(queue)
    {
        errors.push(FieldError::invalid(QUEUE_PATH, queue, &why.to_string()));
    }
    errors
}

pub fn validate_on_update<J: GenericJob>(old: &J, new: &J) -> Vec<FieldError> {
    let mut errors = validate_on_create(new);
    if !new.is_suspended() && old.queue_name() != new.queue_name() {
        let value = new.queue_name().unwrap_or_default();
        errors.push(FieldError::invalid(QUEUE_PATH, &value, "field is immutable while the job is not suspended"));
    }
    if old.managed_by() != new.managed_by() {
        errors.push(FieldError::invalid("spec.managedBy", new.managed_by().unwrap_or_default(), "field is immutable"));
    }
    errors
}

/// Why a name is not a DNS-1123 name, in the API server's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotDns1123 {
    #[error("must be 1 to 253 characters")]
    SubdomainLength,
    #[error(
        "must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character"
    )]
    Subdomain,
    #[error(
        "must be at most 63 lower case alphanumeric characters or '-', starting and ending with an alphanumeric character"
    )]
    Label,
}

/// A DNS-1123 subdomain, as Kubernetes object names.
pub fn dns1123_subdomain(value: &str) -> Result<(), NotDns1123> {
    if value.is_empty() || value.len() > 253 {
        return Err(NotDns1123::SubdomainLength);
    }
    if value.split('.').all(|part| dns1123_label(part).is_ok()) { Ok(()) } else { Err(NotDns1123::Subdomain) }
}

/// A DNS-1123 label, as pod set names and label values of object names.
pub fn dns1123_label(value: &str) -> Result<(), NotDns1123> {
    let ok_chars = value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let ok_ends = value.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && value.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
    if !value.is_empty() && value.len() <= 63 && ok_chars && ok_ends { Ok(()) } else { Err(NotDns1123::Label) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "user-queue", "a.b-c.d", "0abc"] {
            assert!(dns1123_subdomain(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Upper", "-a", "a-", "a..b", "under_score", &"a".repeat(254)] {
            assert!(dns1123_subdomain(bad).is_err(), "{bad}");
        }
        assert!(dns1123_label("a.b").is_err());
        assert!(dns1123_label(&"a".repeat(64)).is_err());
    }

    #[test]
    fn a_job_requests_nothing_only_when_no_container_and_no_pod_asks() {
        let pod_set = |spec: serde_json::Value| PodSet {
            name: "main".into(),
            count: 1,
            min_count: None,
            template: serde_json::from_value(serde_json::json!({"spec": spec})).unwrap(),
        };
        let bare = pod_set(serde_json::json!({"containers": [{"name": "c", "image": "i"}]}));
        let empty =
            pod_set(serde_json::json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {}}}]}));
        assert!(requests_nothing(&[bare.clone(), empty.clone()]));
        assert!(!requests_nothing(&[]), "no pod set, nothing to warn about");
        let asking = [
            serde_json::json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]}),
            serde_json::json!({"containers": [{"name": "c", "image": "i", "resources": {"limits": {"memory": "1Gi"}}}]}),
            serde_json::json!({"containers": [{"name": "c", "image": "i"}],
                               "initContainers": [{"name": "s", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}),
            serde_json::json!({"containers": [{"name": "c", "image": "i"}], "resources": {"requests": {"cpu": "1"}}}),
        ];
        for spec in asking {
            assert!(!requests_nothing(&[bare.clone(), pod_set(spec.clone())]), "{spec}");
        }
    }

    #[test]
    fn field_errors_read_like_the_api_server() {
        let e = FieldError::invalid("spec.podSets[0].name", "Main", "must be lower case");
        assert_eq!(e.to_string(), r#"spec.podSets[0].name: Invalid value: "Main": must be lower case"#);
    }
}
