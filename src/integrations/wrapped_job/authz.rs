//! Whether the submitting user, and this controller, may create each wrapped component: the
//! controller creates components with its own rights, so without this check a WrappedJob would
//! let anyone who may create one create anything the controller may (AppWrapper's
//! `userRBACAdmissionCheck`). The controller's own rights are checked too, so that a kind its
//! ClusterRole does not cover is refused at admission rather than stuck in `Resuming`.

use std::collections::{BTreeMap, BTreeSet};

use futures::future::join_all;
use k8s_openapi::api::authentication::v1::UserInfo;

use crate::api::CONTROLLER_ROLE;
use crate::api::wrapped_job::WrappedJob;
use crate::jobframework::api_error;
use crate::jobframework::authorizer::{Authorizer, ServedResource, Unanswered, Verdict};
use crate::jobframework::served_kinds::group_version;
use crate::jobframework::webhook::FieldError;

/// Whether an update must be authorized again: a changed template is a new object to create,
/// possibly by another user than the one checked at creation.
pub fn needs_review(old: &WrappedJob, new: &WrappedJob) -> bool {
    let (old, new) = (&old.spec.components, &new.spec.components);
    old.len() != new.len() || old.iter().zip(new).any(|(o, n)| o.template != n.template)
}

/// Every problem with creating the components of `job` in `namespace` on behalf of `user`,
/// as field errors of the components. Each kind and resource is asked about once.
pub async fn authorize(
    job: &WrappedJob,
    namespace: &str,
    user: &UserInfo,
    authorizer: &dyn Authorizer,
) -> Vec<FieldError> {
    // Templates without a usable apiVersion and kind create nothing; the webhook's own rules
    // report them.
    let types: Vec<Option<(&str, &str)>> = job.spec.components.iter().map(|c| type_of(&c.template)).collect();
    let kinds: BTreeSet<(&str, &str)> =
        types.iter().flatten().copied().filter(|(v, _)| group_version(v).is_some()).collect();
    let resolved: BTreeMap<(&str, &str), Result<Option<ServedResource>, Unanswered>> =
        join_all(kinds.into_iter().map(|(v, k)| async move { ((v, k), authorizer.resource(v, k).await) }))
            .await
            .into_iter()
            .collect();
    let resources: BTreeSet<&ServedResource> =
        resolved.values().filter_map(|r| r.as_ref().ok()?.as_ref()).filter(|r| r.namespaced).collect();
    let denials: BTreeMap<&ServedResource, Vec<String>> =
        join_all(resources.into_iter().map(|r| async move { (r, check(r, namespace, user, authorizer).await) }))
            .await
            .into_iter()
            .collect();

    let mut errors = Vec::new();
    for (i, found) in types.iter().enumerate() {
        let Some((api_version, kind)) = *found else { continue };
        let path = format!("spec.components[{i}].template");
        let Some(answer) = resolved.get(&(api_version, kind)) else {
            let why = "must be group/version, or a version alone for the core group";
            errors.push(FieldError::invalid(format!("{path}.apiVersion"), api_version, why));
            continue;
        };
        match answer {
            Err(why) => errors
                .push(FieldError::new(path, format!("Internal error: cannot look up {kind} in {api_version}: {why}"))),
            Ok(None) => errors.push(FieldError::invalid(
                format!("{path}.kind"),
                kind,
                &api_error::not_served(kind, api_version),
            )),
            Ok(Some(resource)) if !resource.namespaced => errors.push(FieldError::invalid(
                format!("{path}.kind"),
                kind,
                &format!("{resource} is cluster-scoped; a WrappedJob creates its components in its own namespace"),
            )),
            Ok(Some(resource)) => {
                let messages = denials.get(resource).into_iter().flatten();
                errors.extend(messages.map(|message| FieldError::new(path.clone(), message.clone())));
            }
        }
    }
    errors
}

/// The apiVersion and kind a template names, if both are non-empty strings.
pub fn type_of(template: &serde_json::Value) -> Option<(&str, &str)> {
    let api_version = template["apiVersion"].as_str().filter(|s| !s.is_empty())?;
    let kind = template["kind"].as_str().filter(|s| !s.is_empty())?;
    Some((api_version, kind))
}

/// The denials for one resource, as field-error messages.
async fn check(
    resource: &ServedResource,
    namespace: &str,
    user: &UserInfo,
    authorizer: &dyn Authorizer,
) -> Vec<String> {
    let (by_user, create, delete) = futures::join!(
        authorizer.user_may_create(user, resource, namespace),
        authorizer.controller_may("create", resource, namespace),
        authorizer.controller_may("delete", resource, namespace),
    );
    let name = user.username.as_deref().unwrap_or_default();
    let mut messages = Vec::new();
    match by_user {
        Ok(Verdict::Allowed) => {}
        Ok(Verdict::Denied(reason)) => messages.push(user_denied(name, resource, namespace, &reason)),
        Err(why) => messages.push(format!(
            "Internal error: cannot check whether user {name:?} may create {resource} in namespace {namespace:?}: {why}"
        )),
    }
    match (create, delete) {
        (Ok(Verdict::Allowed), Ok(Verdict::Allowed)) => {}
        (Err(why), _) | (_, Err(why)) => messages
            .push(format!("Internal error: cannot check the kueue-ext controller's rights on {resource}: {why}")),
        _ => messages.push(controller_denied(resource)),
    }
    messages
}

fn user_denied(user: &str, resource: &ServedResource, namespace: &str, reason: &str) -> String {
    let because = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
    format!("Forbidden: user {user:?} may not create {resource} in namespace {namespace:?}{because}")
}

fn controller_denied(resource: &ServedResource) -> String {
    format!(
        "Forbidden: the kueue-ext controller has no RBAC to create and delete {resource}; grant it in the \
         {CONTROLLER_ROLE} ClusterRole"
    )
}

#[cfg(test)]
#[path = "authz_tests.rs"]
mod tests;
