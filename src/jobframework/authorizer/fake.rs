//! An authorizer for tests and the fuzz target: an API server in memory.

use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::UserInfo;
use serde_json::Value;

use super::{Authorizer, InvalidFields, ServedResource, Unanswered, Verdict};

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
        [
            ("v1", "Pod", "pods", true),
            ("v1", "ConfigMap", "configmaps", true),
            ("v1", "Namespace", "namespaces", false),
            ("apps/v1", "Deployment", "deployments", true),
            ("batch/v1", "Job", "jobs", true),
            ("kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", true),
        ]
        .into_iter()
        .fold(FakeAuthorizer::default(), |fake, (api_version, kind, plural, namespaced)| {
            fake.serve(api_version, kind, plural, namespaced)
        })
    }

    /// Serves `kind` of `api_version` as `plural` too.
    pub fn serve(mut self, api_version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let resource =
            ServedResource { group: group.into(), version: version.into(), plural: plural.into(), namespaced };
        self.served.push((api_version.into(), kind.into(), resource));
        self
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

    fn answer(&self, denied: bool) -> Result<Verdict, Unanswered> {
        match (self.unreachable, denied) {
            (true, _) => Err(refused()),
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
    ) -> BoxFuture<'a, Result<Option<ServedResource>, Unanswered>> {
        let found = self.served.iter().find(|(v, k, _)| v == api_version && k == kind).map(|(_, _, r)| r.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn user_may_create<'a>(
        &'a self,
        user: &'a UserInfo,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, Unanswered>> {
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
    ) -> BoxFuture<'a, Result<Verdict, Unanswered>> {
        let denied = self.controller_lacks.contains(&resource.plural);
        Box::pin(std::future::ready(self.answer(denied)))
    }

    fn invalid_fields<'a>(
        &'a self,
        resource: &'a ServedResource,
        namespace: &'a str,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<InvalidFields, Unanswered>> {
        let metadata = &object["metadata"];
        let name = metadata["name"].as_str().or(metadata["generateName"].as_str()).unwrap_or_default();
        let run = format!("{} {name} {namespace}", resource.plural);
        self.dry_runs.lock().unwrap_or_else(PoisonError::into_inner).push(run);
        let found = self.invalid.iter().filter(|(plural, _, _)| *plural == resource.plural);
        let causes = found.map(|(_, field, message)| (field.clone(), message.clone())).collect();
        Box::pin(std::future::ready(if self.unreachable { Err(refused()) } else { Ok(causes) }))
    }
}

/// A user of team-a, with every field a review carries.
pub fn user(name: &str) -> UserInfo {
    UserInfo {
        username: Some(name.into()),
        uid: Some("u-1".into()),
        groups: Some(vec!["team-a".into(), "system:authenticated".into()]),
        extra: Some(std::collections::BTreeMap::from([("scopes".to_string(), vec!["train".to_string()])])),
    }
}

/// batch/v1 Jobs.
pub fn jobs() -> ServedResource {
    ServedResource { group: "batch".into(), version: "v1".into(), plural: "jobs".into(), namespaced: true }
}

/// What an API server that cannot be reached answers.
fn refused() -> Unanswered {
    let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
    Unanswered::Api(kube::Error::Service(Box::new(refused)))
}
