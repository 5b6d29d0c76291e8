//! Admission answers, one code path for every kind: decode the object as its kind, apply the
//! kind's rules and the checks only the API server can answer, and patch only the fields
//! defaulting changed (a lossless defaulter: fields this version does not know survive).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::GroupVersionKind;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde_json::Value;

use super::dry_run;
use super::queues::QueueCache;
use crate::api::external_job::ExternalJob;
use crate::api::wrapped_job::WrappedJob;
use crate::integrations::declarative::ConfiguredJob;
use crate::integrations::declarative::config::Integration;
use crate::integrations::declarative::webhook as declarative;
use crate::integrations::external_job::webhook as external_job;
use crate::integrations::wrapped_job::authz::{self, Authorizer};
use crate::integrations::wrapped_job::webhook as wrapped_job;
use crate::jobframework::generic_job::GenericJob;
use crate::jobframework::reconciler::Config;
use crate::jobframework::webhook::{FieldError, join};

/// A kind's admission rules (Kueue's `Default`, `ValidateCreate`, `ValidateUpdate`) and the
/// checks it makes on behalf of the requesting user.
pub trait JobWebhook: GenericJob {
    /// What decoding needs besides the object: nothing for a compiled-in kind, the kind's
    /// description for a configured one.
    type Kind: Clone + Send + Sync + 'static;

    fn decode(kind: &Self::Kind, object: Value) -> Result<Self, serde_json::Error>;

    /// The group, version and kind this webhook admits.
    fn admits(kind: &Self::Kind) -> GroupVersionKind;

    /// `before` with the fields defaulting set taken from the defaulted job. Compiled-in kinds
    /// copy only `spec.suspend` and `spec.managedBy`, so fields this version does not know
    /// survive.
    fn defaulted(&self, before: &Value) -> Value {
        let mut after = before.clone();
        if let Some(spec) = after.get_mut("spec").and_then(Value::as_object_mut) {
            if self.is_suspended() {
                spec.insert("suspend".into(), Value::Bool(true));
            }
            if let Some(managed_by) = self.managed_by() {
                spec.insert("managedBy".into(), Value::String(managed_by.into()));
            }
        }
        after
    }

    fn apply_defaults(&mut self, config: &Config, queue_uses_multikueue: bool);

    fn validate_create(&self) -> Vec<FieldError>;

    fn validate_update(old: &Self, new: &Self) -> Vec<FieldError>;

    /// What the API server must answer about the request's user; `old` is set on UPDATE.
    fn authorize<'a>(
        _old: Option<&'a Self>,
        _new: &'a Self,
        _request: &'a AdmissionRequest<DynamicObject>,
        _authorizer: &'a dyn Authorizer,
    ) -> impl Future<Output = Vec<FieldError>> + Send + 'a {
        std::future::ready(Vec::new())
    }

    /// What the API server's own validation refuses in what the job will create (its pods, or
    /// the objects it wraps) in `namespace`; `old` is set on UPDATE.
    fn dry_run<'a>(
        _old: Option<&'a Self>,
        _new: &'a Self,
        _namespace: &'a str,
        _authorizer: &'a dyn Authorizer,
    ) -> impl Future<Output = Vec<FieldError>> + Send + 'a {
        std::future::ready(Vec::new())
    }
}

impl JobWebhook for ExternalJob {
    type Kind = ();

    fn admits(_: &()) -> GroupVersionKind {
        let version = <ExternalJob as kube::Resource>::version(&());
        GroupVersionKind::gvk(
            &<ExternalJob as kube::Resource>::group(&()),
            &version,
            &<ExternalJob as kube::Resource>::kind(&()),
        )
    }

    fn decode(_: &(), object: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(object)
    }

    fn apply_defaults(&mut self, config: &Config, queue_uses_multikueue: bool) {
        external_job::default(self, config, queue_uses_multikueue);
    }

    fn validate_create(&self) -> Vec<FieldError> {
        external_job::validate_create(self)
    }

    fn validate_update(old: &Self, new: &Self) -> Vec<FieldError> {
        external_job::validate_update(old, new)
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
        dry_run::pod_templates(&templates, namespace, authorizer).await
    }
}

impl JobWebhook for WrappedJob {
    type Kind = ();

    fn admits(_: &()) -> GroupVersionKind {
        let version = <WrappedJob as kube::Resource>::version(&());
        GroupVersionKind::gvk(
            &<WrappedJob as kube::Resource>::group(&()),
            &version,
            &<WrappedJob as kube::Resource>::kind(&()),
        )
    }

    fn decode(_: &(), object: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(object)
    }

    fn apply_defaults(&mut self, config: &Config, queue_uses_multikueue: bool) {
        wrapped_job::default(self, config, queue_uses_multikueue);
    }

    fn validate_create(&self) -> Vec<FieldError> {
        wrapped_job::validate_create(self)
    }

    fn validate_update(old: &Self, new: &Self) -> Vec<FieldError> {
        wrapped_job::validate_update(old, new)
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
        dry_run::components(new, namespace, authorizer).await
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
        declarative::default(self, config, queue_uses_multikueue);
    }

    fn validate_create(&self) -> Vec<FieldError> {
        declarative::validate_create(self)
    }

    fn validate_update(old: &Self, new: &Self) -> Vec<FieldError> {
        declarative::validate_update(old, new)
    }
}

pub use crate::jobframework::webhook::Hook;

/// The answer to one admission request for kind `K`; a request that cannot be read as `K` is
/// denied, saying why. Defaulting reads `config` and `queues`; validation asks `authorizer`.
pub async fn answer<K: JobWebhook>(
    hook: Hook,
    config: &Config,
    queues: Option<&QueueCache>,
    authorizer: &dyn Authorizer,
    kind: &K::Kind,
    request: &AdmissionRequest<DynamicObject>,
) -> AdmissionResponse {
    let gvk = K::admits(kind);
    if request.kind.group != gvk.group || request.kind.kind != gvk.kind {
        // A misconfigured webhook registration sends other kinds here: refuse, never guess.
        let asked = format!("{}/{}", request.kind.group, request.kind.kind);
        return AdmissionResponse::from(request)
            .deny(format!("this webhook admits {}/{}, not {asked}", gvk.group, gvk.kind));
    }
    match hook {
        Hook::Mutate => mutate::<K>(config, queues, kind, request).await,
        Hook::Validate => match validate::<K>(authorizer, kind, request).await {
            Ok(errors) if errors.is_empty() => AdmissionResponse::from(request),
            Ok(errors) => AdmissionResponse::from(request).deny(join(&errors)),
            Err(why) => AdmissionResponse::from(request).deny(why),
        },
    }
}

fn decode<K: JobWebhook>(kind: &K::Kind, object: Option<&DynamicObject>) -> Result<(Value, K), String> {
    let object = object.ok_or("the request carries no object")?;
    let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
    let job = K::decode(kind, value.clone()).map_err(|e| {
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("the kind");
        format!("cannot read it as {kind}: {e}")
    })?;
    Ok((value, job))
}

/// How long defaulting may wait on the API server for a queue the caches have not seen: well
/// inside the webhook's own timeout, so the user reads why rather than a timeout.
const QUEUE_LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

async fn mutate<K: JobWebhook>(
    config: &Config,
    queues: Option<&QueueCache>,
    kind: &K::Kind,
    request: &AdmissionRequest<DynamicObject>,
) -> AdmissionResponse {
    if request.operation != Operation::Create {
        return AdmissionResponse::from(request);
    }
    let (before, mut job) = match decode::<K>(kind, request.object.as_ref()) {
        Ok(decoded) => decoded,
        Err(why) => return AdmissionResponse::from(request).deny(why),
    };
    let queue_uses_multikueue = match (queues, job.queue_name(), job.namespace()) {
        (Some(queues), Some(queue), Some(namespace)) if job.managed_by().is_none() => {
            let undecided = |why: String| {
                let why = format!("cannot tell whether LocalQueue {namespace}/{queue} goes through MultiKueue: {why}");
                AdmissionResponse::from(request).deny(why)
            };
            match tokio::time::timeout(QUEUE_LOOKUP_TIMEOUT, queues.uses_multikueue(&namespace, &queue)).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(why)) => return undecided(why),
                Err(_) => return undecided(format!("no answer from the API server within {QUEUE_LOOKUP_TIMEOUT:?}")),
            }
        }
        // Without queue caches (tests) nothing goes through MultiKueue.
        _ => false,
    };
    job.apply_defaults(config, queue_uses_multikueue);
    let patch = json_patch::diff(&before, &job.defaulted(&before));
    match AdmissionResponse::from(request).with_patch(patch) {
        Ok(response) => response,
        Err(err) => AdmissionResponse::from(request).deny(format!("cannot encode the defaulting patch: {err}")),
    }
}

async fn validate<K: JobWebhook>(
    authorizer: &dyn Authorizer,
    kind: &K::Kind,
    request: &AdmissionRequest<DynamicObject>,
) -> Result<Vec<FieldError>, String> {
    let (old, new) = match request.operation {
        Operation::Create => (None, decode::<K>(kind, request.object.as_ref())?.1),
        Operation::Update => {
            let old = decode::<K>(kind, request.old_object.as_ref())?.1;
            (Some(old), decode::<K>(kind, request.object.as_ref())?.1)
        }
        Operation::Delete | Operation::Connect => return Ok(Vec::new()),
    };
    let mut errors = match &old {
        Some(old) => K::validate_update(old, &new),
        None => new.validate_create(),
    };
    errors.extend(K::authorize(old.as_ref(), &new, request, authorizer).await);
    // Only a job valid by its own rules is worth a round trip per template.
    if errors.is_empty()
        && let Some(namespace) = request.namespace.clone().or_else(|| new.namespace())
    {
        errors.extend(K::dry_run(old.as_ref(), &new, &namespace, authorizer).await);
    }
    Ok(errors)
}
