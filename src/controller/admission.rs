//! Admission answers: decode the object as its kind, apply the kind's rules, and patch only the
//! fields defaulting changed (a lossless defaulter: fields this version does not know survive).

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde_json::Value;

use super::server::ServerState;
use crate::api::external_job::ExternalJob;
use crate::integrations::external_job::webhook as external_job;
use crate::jobframework::webhook::{FieldError, QueueLookup, join};

/// No MultiKueue when the controller runs without queue caches (e.g. in tests).
struct NoQueues;

impl QueueLookup for NoQueues {
    fn uses_multikueue(&self, _: &str, _: &str) -> bool {
        false
    }
}

fn decode(object: Option<&DynamicObject>) -> Result<(Value, ExternalJob), String> {
    let object = object.ok_or("the request carries no object")?;
    let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
    let job = serde_json::from_value(value.clone()).map_err(|e| format!("cannot read it as an ExternalJob: {e}"))?;
    Ok((value, job))
}

pub fn mutate(state: &ServerState, request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    if request.operation != Operation::Create {
        return AdmissionResponse::from(request);
    }
    let (before, mut job) = match decode(request.object.as_ref()) {
        Ok(decoded) => decoded,
        Err(why) => return AdmissionResponse::from(request).deny(why),
    };
    let queues: &dyn QueueLookup = match &state.queues {
        Some(cache) => cache,
        None => &NoQueues,
    };
    external_job::default(&mut job, &state.config, queues);
    let mut after = before.clone();
    if let Some(spec) = after.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(suspend) = job.spec.suspend {
            spec.insert("suspend".into(), Value::Bool(suspend));
        }
        if let Some(managed_by) = &job.spec.managed_by {
            spec.insert("managedBy".into(), Value::String(managed_by.clone()));
        }
    }
    let patch = json_patch::diff(&before, &after);
    match AdmissionResponse::from(request).with_patch(patch) {
        Ok(response) => response,
        Err(err) => AdmissionResponse::from(request).deny(format!("cannot encode the defaulting patch: {err}")),
    }
}

pub fn validate(_: &ServerState, request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let errors: Vec<FieldError> = match request.operation {
        Operation::Create => match decode(request.object.as_ref()) {
            Ok((_, job)) => external_job::validate_create(&job),
            Err(why) => return AdmissionResponse::from(request).deny(why),
        },
        Operation::Update => match (decode(request.old_object.as_ref()), decode(request.object.as_ref())) {
            (Ok((_, old)), Ok((_, new))) => external_job::validate_update(&old, &new),
            (Err(why), _) | (_, Err(why)) => return AdmissionResponse::from(request).deny(why),
        },
        _ => Vec::new(),
    };
    if errors.is_empty() {
        AdmissionResponse::from(request)
    } else {
        AdmissionResponse::from(request).deny(join(&errors))
    }
}
