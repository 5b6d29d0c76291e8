//! Admission answers, one code path for every kind: decode the object as its kind, apply the
//! kind's rules and the checks only the API server can answer, and patch only the fields
//! defaulting changed (a lossless defaulter: fields this version does not know survive).

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use kube::ResourceExt;
use kube::api::GroupVersionKind;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde_json::Value;

use super::authorizer::Authorizer;
use super::generic_job::GenericJob;
use super::queue_cache::QueueCache;
use super::reconciler::Config;
pub use super::webhook::Hook;
use super::webhook::{self, FieldError, join};

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

    /// Kueue's base webhook: suspended until admitted, handed to MultiKueue when its queue
    /// goes through it.
    fn apply_defaults(&mut self, config: &Config, queue_uses_multikueue: bool) {
        webhook::default_suspend(self, config);
        webhook::default_managed_by(self, queue_uses_multikueue);
    }

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

/// The group, version and kind of a compiled kind `K`, for [`JobWebhook::admits`].
pub fn compiled_gvk<K: kube::Resource<DynamicType = ()>>() -> GroupVersionKind {
    GroupVersionKind::gvk(&K::group(&()), &K::version(&()), &K::kind(&()))
}

/// A kind's admission, its type erased so that one table holds every compiled kind:
/// [`answer`] for that kind.
pub type Admit = for<'a> fn(
    Hook,
    &'a Config,
    Option<&'a QueueCache>,
    &'a dyn Authorizer,
    &'a AdmissionRequest<DynamicObject>,
) -> BoxFuture<'a, AdmissionResponse>;

/// [`answer`] for a compiled kind, as an [`Admit`].
pub fn admit<'a, K: JobWebhook<Kind = ()>>(
    hook: Hook,
    config: &'a Config,
    queues: Option<&'a QueueCache>,
    authorizer: &'a dyn Authorizer,
    request: &'a AdmissionRequest<DynamicObject>,
) -> BoxFuture<'a, AdmissionResponse> {
    Box::pin(answer::<K>(hook, config, queues, authorizer, &(), request))
}

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

/// Why a request's object cannot be admitted as its kind; the request is denied saying so.
#[derive(Debug, thiserror::Error)]
enum Undecodable {
    #[error("the request carries no object")]
    NoObject,
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    #[error("cannot read it as {kind}: {source}")]
    AsKind {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
}

fn decode<K: JobWebhook>(kind: &K::Kind, object: Option<&DynamicObject>) -> Result<(Value, K), Undecodable> {
    let object = object.ok_or(Undecodable::NoObject)?;
    let value = serde_json::to_value(object)?;
    let job = K::decode(kind, value.clone()).map_err(|source| {
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("the kind").to_string();
        Undecodable::AsKind { kind, source }
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
                Ok(Err(why)) => return undecided(why.to_string()),
                Err(_) => return undecided(format!("no answer from the API server within {QUEUE_LOOKUP_TIMEOUT:?}")),
            }
        }
        // Without queue caches (tests) nothing goes through MultiKueue.
        _ => false,
    };
    if queue_uses_multikueue && let Some(why) = job.why_not_through_multikueue() {
        let queue = job.queue_name().unwrap_or_default();
        let kind = job.api_resource().kind;
        let why = format!(
            "LocalQueue {queue} goes through MultiKueue, which cannot hand a {kind} to a worker: {why}; \
             submit it to a queue without a MultiKueue admission check"
        );
        return AdmissionResponse::from(request).deny(why);
    }
    job.apply_defaults(config, queue_uses_multikueue);
    let patch = json_patch::diff(&before, &job.defaulted(&before));
    match AdmissionResponse::from(request).with_patch(patch) {
        Ok(mut response) => {
            if queue_uses_multikueue && webhook::requests_nothing(&job.pod_sets()) {
                response.warnings = Some(vec![webhook::REQUESTS_NOTHING_THROUGH_MULTIKUEUE.to_string()]);
            }
            response
        }
        Err(err) => AdmissionResponse::from(request).deny(format!("cannot encode the defaulting patch: {err}")),
    }
}

async fn validate<K: JobWebhook>(
    authorizer: &dyn Authorizer,
    kind: &K::Kind,
    request: &AdmissionRequest<DynamicObject>,
) -> Result<Vec<FieldError>, Undecodable> {
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
