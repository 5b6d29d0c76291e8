//! What admission asks the API server about a job's user and what the job would create:
//! which resource serves a kind, who may create it, and what its validation refuses. A trait,
//! so that admission is tested without a cluster.

use std::fmt;

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::UserInfo;
use serde_json::Value;

use super::api_error;

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

/// A question the API server did not answer; admission denies then (fails closed), except
/// for a dry run, which is a second opinion.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    #[error("{}", api_error::in_words(.0))]
    Api(#[from] kube::Error),
    #[error("cannot send it to the API server: {0}")]
    Encode(#[from] serde_json::Error),
}

/// What admission asks the API server. A trait so admission is tested without a cluster.
pub trait Authorizer: Send + Sync {
    /// The resource serving `kind` in `api_version`; `None` when nothing serves it.
    fn resource<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<Option<ServedResource>, Unanswered>>;

    /// Whether `user` may create `resource` in `namespace` (a SubjectAccessReview).
    fn user_may_create<'a>(
        &'a self,
        user: &'a UserInfo,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, Unanswered>>;

    /// Whether this controller may `verb` `resource` in `namespace` (a SelfSubjectAccessReview).
    fn controller_may<'a>(
        &'a self,
        verb: &'a str,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, Unanswered>>;

    /// What the API server's own validation refuses in `object`, were it created as `resource`
    /// in `namespace` (a server-side dry run): the `(field, message)` causes of an `Invalid`
    /// answer. Nothing when it would be created, or is refused for a reason that may change
    /// before it really is (quota, policy, a ServiceAccount not created yet).
    fn invalid_fields<'a>(
        &'a self,
        resource: &'a ServedResource,
        namespace: &'a str,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<InvalidFields, Unanswered>>;
}

#[cfg(any(test, fuzzing))]
pub mod fake;
