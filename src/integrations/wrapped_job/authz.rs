//! Whether the submitting user, and this controller, may create each wrapped component: the
//! controller creates components with its own rights, so without this check a WrappedJob would
//! let anyone who may create one create anything the controller may (AppWrapper's
//! `userRBACAdmissionCheck`). The controller's own rights are checked too, so that a kind its
//! ClusterRole does not cover is refused at admission rather than stuck in `Resuming`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, join_all};
use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec, SubjectAccessReview,
    SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::{Client, Resource};
use serde_json::Value;

use super::kinds::{Kinds, Served};
use crate::api::wrapped_job::WrappedJob;
use crate::jobframework::api_error;
use crate::jobframework::webhook::{FieldError, dns1123_label, dns1123_subdomain};
use crate::manifests::CONTROLLER_ROLE;

/// A resource the API server serves, as discovery names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServedResource {
    pub group: String,
    pub version: String,
    /// The plural name, as RBAC rules name resources.
    pub plural: String,
    pub namespaced: bool,
}

impl fmt::Display for ServedResource {
    /// As kubectl and RBAC errors name resources: `deployments.apps`, `pods`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() { write!(f, "{}", self.plural) } else { write!(f, "{}.{}", self.plural, self.group) }
    }
}

/// An authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Denied, with the authorizer's reason (often empty: RBAC denies without one).
    Denied(String),
}

/// `(field, message)` of each field the API server's validation refuses.
pub type InvalidFields = Vec<(String, String)>;

/// What admission asks the API server. A trait so admission is tested without a cluster.
/// `Err` means the question could not be answered; callers deny then (fail closed).
pub trait Authorizer: Send + Sync {
    /// The resource serving `kind` in `api_version`; `None` when nothing serves it.
    fn resource<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<Option<ServedResource>, String>>;

    /// Whether `user` may create `resource` in `namespace` (a SubjectAccessReview).
    fn user_may_create<'a>(
        &'a self,
        user: &'a UserInfo,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, String>>;

    /// Whether this controller may `verb` `resource` in `namespace` (a SelfSubjectAccessReview).
    fn controller_may<'a>(
        &'a self,
        verb: &'a str,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, String>>;

    /// What the API server's own validation refuses in `object`, were it created as `resource`
    /// in `namespace` (a server-side dry run): the `(field, message)` causes of an `Invalid`
    /// answer. Nothing when it would be created, or is refused for a reason that may change
    /// before it really is (quota, policy, a ServiceAccount not created yet).
    fn invalid_fields<'a>(
        &'a self,
        resource: &'a ServedResource,
        namespace: &'a str,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<InvalidFields, String>>;
}

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
    let resolved: BTreeMap<(&str, &str), Result<Option<ServedResource>, String>> =
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

/// `(group, version)` of a well-formed apiVersion. Discovery puts it in a URL path, so nothing
/// else may reach it.
pub fn group_version(api_version: &str) -> Option<(&str, &str)> {
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (dns1123_subdomain(group).ok().map(|()| group)?, version),
        None => ("", api_version),
    };
    dns1123_label(version).ok().map(|()| (group, version))
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

fn attributes(verb: &str, resource: &ServedResource, namespace: &str) -> ResourceAttributes {
    ResourceAttributes {
        verb: Some(verb.into()),
        group: Some(resource.group.clone()),
        version: Some(resource.version.clone()),
        resource: Some(resource.plural.clone()),
        namespace: Some(namespace.into()),
        ..Default::default()
    }
}

/// The SubjectAccessReview for `user` creating `resource` in `namespace`.
pub fn user_review(user: &UserInfo, resource: &ServedResource, namespace: &str) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
            resource_attributes: Some(attributes("create", resource, namespace)),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The SelfSubjectAccessReview for this controller doing `verb` on `resource` in `namespace`.
pub fn controller_review(verb: &str, resource: &ServedResource, namespace: &str) -> SelfSubjectAccessReview {
    SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(attributes(verb, resource, namespace)),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A review's answer; a review without status counts as denied.
pub fn verdict(status: Option<&SubjectAccessReviewStatus>) -> Verdict {
    match status {
        Some(s) if s.allowed => Verdict::Allowed,
        Some(s) => Verdict::Denied(s.reason.clone().or_else(|| s.evaluation_error.clone()).unwrap_or_default()),
        None => Verdict::Denied("the API server returned no status".into()),
    }
}

/// The authorizer that asks the API server.
pub struct ApiAuthorizer {
    client: Client,
    kinds: Arc<Kinds>,
    dry_runs: DryRunCache,
}

/// Recent dry-run answers by what was asked: the same template submitted again (the common
/// case: many jobs of one shape) costs no round trip. Answers expire, since a LimitRange or
/// an API server upgrade can change them.
#[derive(Default)]
struct DryRunCache(Mutex<HashMap<String, (Instant, InvalidFields)>>);

impl DryRunCache {
    const TTL: Duration = Duration::from_secs(30);
    const CAPACITY: usize = 1024;

    fn get(&self, key: &str) -> Option<InvalidFields> {
        let entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        entries.get(key).filter(|(at, _)| at.elapsed() < Self::TTL).map(|(_, causes)| causes.clone())
    }

    fn put(&self, key: String, causes: InvalidFields) {
        let mut entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= Self::CAPACITY {
            entries.retain(|_, (at, _)| at.elapsed() < Self::TTL);
            if entries.len() >= Self::CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now(), causes));
    }
}

impl ApiAuthorizer {
    pub fn new(client: Client, kinds: Arc<Kinds>) -> Self {
        ApiAuthorizer { client, kinds, dry_runs: DryRunCache::default() }
    }

    async fn discover(&self, api_version: &str, kind: &str) -> Result<Option<ServedResource>, String> {
        if group_version(api_version).is_none() {
            return Ok(None);
        }
        let served = self.kinds.served(api_version, kind).await.map_err(|e| api_error::in_words(&e))?;
        Ok(served.map(|Served { resource, namespaced }| ServedResource {
            group: resource.group,
            version: resource.version,
            plural: resource.plural,
            namespaced,
        }))
    }

    async fn dry_run(
        &self,
        resource: &ServedResource,
        namespace: &str,
        object: &Value,
    ) -> Result<InvalidFields, String> {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        let api_version = if resource.group.is_empty() {
            resource.version.clone()
        } else {
            format!("{}/{}", resource.group, resource.version)
        };
        let api_resource = ApiResource {
            group: resource.group.clone(),
            version: resource.version.clone(),
            api_version,
            kind: kind.to_string(),
            plural: resource.plural.clone(),
        };
        let key = format!("{resource} {namespace} {object}");
        if let Some(causes) = self.dry_runs.get(&key) {
            return Ok(causes);
        }
        let candidate: DynamicObject = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &api_resource);
        let causes = match api.create(&PostParams { dry_run: true, ..Default::default() }, &candidate).await {
            Ok(_) => Vec::new(),
            Err(kube::Error::Api(status)) if status.code == 422 => invalid_causes(&status),
            Err(kube::Error::Api(_)) => Vec::new(),
            Err(e) => return Err(api_error::in_words(&e)),
        };
        self.dry_runs.put(key, causes.clone());
        Ok(causes)
    }

    async fn review<K>(&self, review: K) -> Result<Verdict, String>
    where
        K: Resource<DynamicType = ()> + Clone + fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
        K: HasStatus,
    {
        let answer = Api::<K>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| api_error::in_words(&e))?;
        Ok(verdict(answer.status()))
    }
}

/// The fields an `Invalid` answer names, or its message alone when it names none.
fn invalid_causes(status: &kube::core::Status) -> InvalidFields {
    let causes = status.details.as_ref().map(|d| d.causes.as_slice()).unwrap_or_default();
    if causes.is_empty() {
        return vec![(String::new(), status.message.clone())];
    }
    causes.iter().map(|c| (c.field.clone(), c.message.clone())).collect()
}

/// The status both review kinds answer with.
trait HasStatus {
    fn status(&self) -> Option<&SubjectAccessReviewStatus>;
}

impl HasStatus for SubjectAccessReview {
    fn status(&self) -> Option<&SubjectAccessReviewStatus> {
        self.status.as_ref()
    }
}

impl HasStatus for SelfSubjectAccessReview {
    fn status(&self) -> Option<&SubjectAccessReviewStatus> {
        self.status.as_ref()
    }
}

impl Authorizer for ApiAuthorizer {
    fn resource<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<Option<ServedResource>, String>> {
        Box::pin(self.discover(api_version, kind))
    }

    fn user_may_create<'a>(
        &'a self,
        user: &'a UserInfo,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, String>> {
        Box::pin(self.review(user_review(user, resource, namespace)))
    }

    fn controller_may<'a>(
        &'a self,
        verb: &'a str,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, String>> {
        Box::pin(self.review(controller_review(verb, resource, namespace)))
    }

    fn invalid_fields<'a>(
        &'a self,
        resource: &'a ServedResource,
        namespace: &'a str,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<InvalidFields, String>> {
        Box::pin(self.dry_run(resource, namespace, object))
    }
}

/// An authorizer for tests and the fuzz target: an API server in memory.
#[cfg(any(test, fuzzing))]
pub mod fake {
    use std::sync::{Mutex, PoisonError};

    use super::*;

    /// Serves a few kinds and allows everything unless told otherwise; records the user checks.
    #[derive(Default)]
    pub struct FakeAuthorizer {
        /// `(apiVersion, kind, resource)`.
        served: Vec<(String, String, ServedResource)>,
        /// `(user, plural)` pairs denied.
        denied: InvalidFields,
        /// Plurals the controller has no RBAC for.
        controller_lacks: Vec<String>,
        /// Every review fails, as when the API server cannot be reached.
        unreachable: bool,
        user_checks: Mutex<Vec<String>>,
        /// `(plural, field, message)`: what validation refuses in every object of that plural.
        invalid: Vec<(String, String, String)>,
        /// `plural name-or-generateName namespace` of every dry run so far.
        dry_runs: Mutex<Vec<String>>,
    }

    impl FakeAuthorizer {
        /// Serves pods, configmaps, deployments, batch jobs, WrappedJobs and (cluster-scoped)
        /// namespaces.
        pub fn new() -> Self {
            let mut fake = FakeAuthorizer::default();
            for (api_version, kind, plural, namespaced) in [
                ("v1", "Pod", "pods", true),
                ("v1", "ConfigMap", "configmaps", true),
                ("v1", "Namespace", "namespaces", false),
                ("apps/v1", "Deployment", "deployments", true),
                ("batch/v1", "Job", "jobs", true),
                ("kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", true),
            ] {
                let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
                let resource =
                    ServedResource { group: group.into(), version: version.into(), plural: plural.into(), namespaced };
                fake.served.push((api_version.into(), kind.into(), resource));
            }
            fake
        }

        pub fn deny_user(mut self, user: &str, plural: &str) -> Self {
            self.denied.push((user.into(), plural.into()));
            self
        }

        pub fn without_controller_rbac(mut self, plural: &str) -> Self {
            self.controller_lacks.push(plural.into());
            self
        }

        pub fn unreachable(mut self) -> Self {
            self.unreachable = true;
            self
        }

        /// Every object of `plural` is refused as invalid, `field` with `message`.
        pub fn refuse(mut self, plural: &str, field: &str, message: &str) -> Self {
            self.invalid.push((plural.into(), field.into(), message.into()));
            self
        }

        pub fn dry_runs(&self) -> Vec<String> {
            self.dry_runs.lock().unwrap_or_else(PoisonError::into_inner).clone()
        }

        /// `user resource namespace` of every user check so far.
        pub fn user_checks(&self) -> Vec<String> {
            self.user_checks.lock().unwrap_or_else(PoisonError::into_inner).clone()
        }

        fn answer(&self, denied: bool) -> Result<Verdict, String> {
            match (self.unreachable, denied) {
                (true, _) => Err("connection refused".into()),
                (false, true) => Ok(Verdict::Denied(String::new())),
                (false, false) => Ok(Verdict::Allowed),
            }
        }
    }

    impl Authorizer for FakeAuthorizer {
        fn resource<'a>(
            &'a self,
            api_version: &'a str,
            kind: &'a str,
        ) -> BoxFuture<'a, Result<Option<ServedResource>, String>> {
            let found = self.served.iter().find(|(v, k, _)| v == api_version && k == kind).map(|(_, _, r)| r.clone());
            Box::pin(std::future::ready(Ok(found)))
        }

        fn user_may_create<'a>(
            &'a self,
            user: &'a UserInfo,
            resource: &'a ServedResource,
            namespace: &'a str,
        ) -> BoxFuture<'a, Result<Verdict, String>> {
            let name = user.username.clone().unwrap_or_default();
            let check = format!("{name} {resource} {namespace}");
            self.user_checks.lock().unwrap_or_else(PoisonError::into_inner).push(check);
            let denied = self.denied.iter().any(|(u, p)| *u == name && *p == resource.plural);
            Box::pin(std::future::ready(self.answer(denied)))
        }

        fn controller_may<'a>(
            &'a self,
            _verb: &'a str,
            resource: &'a ServedResource,
            _namespace: &'a str,
        ) -> BoxFuture<'a, Result<Verdict, String>> {
            let denied = self.controller_lacks.contains(&resource.plural);
            Box::pin(std::future::ready(self.answer(denied)))
        }

        fn invalid_fields<'a>(
            &'a self,
            resource: &'a ServedResource,
            namespace: &'a str,
            object: &'a Value,
        ) -> BoxFuture<'a, Result<InvalidFields, String>> {
            let metadata = &object["metadata"];
            let name = metadata["name"].as_str().or(metadata["generateName"].as_str()).unwrap_or_default();
            let run = format!("{} {name} {namespace}", resource.plural);
            self.dry_runs.lock().unwrap_or_else(PoisonError::into_inner).push(run);
            let found = self.invalid.iter().filter(|(plural, _, _)| *plural == resource.plural);
            let causes = found.map(|(_, field, message)| (field.clone(), message.clone())).collect();
            Box::pin(std::future::ready(if self.unreachable { Err("connection refused".into()) } else { Ok(causes) }))
        }
    }
}

#[cfg(test)]
#[path = "authz_tests.rs"]
mod tests;
