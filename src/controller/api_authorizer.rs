//! The [`Authorizer`] that asks the API server: discovery for the resource of a kind, access
//! reviews for the user and for this controller, server-side dry runs for validation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec, SubjectAccessReview,
    SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::{Client, Resource};
use serde_json::Value;

use super::recent_answers::RecentAnswers;
use crate::jobframework::authorizer::{Authorizer, InvalidFields, ServedResource, Unanswered, Verdict};
use crate::jobframework::served_kinds::group_version;
use crate::jobframework::served_kinds::{Served, ServedKinds};

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

/// The authorizer that asks the API server, and reuses what it answered recently.
pub struct ApiAuthorizer {
    client: Client,
    kinds: Arc<ServedKinds>,
    dry_runs: RecentAnswers<InvalidFields>,
    allowed: RecentAnswers<()>,
}

/// How long a dry run's answer is reused: long enough for a burst of jobs of one shape.
const DRY_RUN_TTL: Duration = Duration::from_secs(30);

/// How long an access review that allowed is reused, so a revoked right is honoured within this
/// time (the API server's own webhook authorizer keeps an allowed answer for 5 minutes by
/// default). A denial is asked again each time: the user fixes RBAC and retries at once.
const ALLOWED_TTL: Duration = Duration::from_secs(30);

impl ApiAuthorizer {
    pub fn new(client: Client, kinds: Arc<ServedKinds>) -> Self {
        ApiAuthorizer {
            client,
            kinds,
            dry_runs: RecentAnswers::new(DRY_RUN_TTL),
            allowed: RecentAnswers::new(ALLOWED_TTL),
        }
    }

    async fn discover(&self, api_version: &str, kind: &str) -> Result<Option<ServedResource>, Unanswered> {
        if group_version(api_version).is_none() {
            return Ok(None);
        }
        let served = self.kinds.served(api_version, kind).await?;
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
    ) -> Result<InvalidFields, Unanswered> {
        // Only a question not answered recently builds its request.
        let ask = async {
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
            let candidate: DynamicObject = serde_json::from_value(object.clone())?;
            let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, &api_resource);
            match api.create(&PostParams { dry_run: true, ..Default::default() }, &candidate).await {
                Ok(_) => Ok(Vec::new()),
                Err(kube::Error::Api(status)) if status.code == 422 => Ok(invalid_causes(&status)),
                Err(kube::Error::Api(_)) => Ok(Vec::new()),
                Err(e) => Err(e.into()),
            }
        };
        self.dry_runs.get_or_ask(format!("{resource} {namespace} {object}"), ask).await
    }

    async fn review<K>(&self, review: K) -> Result<Verdict, Unanswered>
    where
        K: Resource<DynamicType = ()> + Clone + fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
        K: HasStatus,
    {
        // The whole review is the question: user, groups, extra, verb, resource and namespace.
        let question = format!("{} {}", K::kind(&()), serde_json::to_string(&review)?);
        if self.allowed.get(&question).is_some() {
            return Ok(Verdict::Allowed);
        }
        let answer = Api::<K>::all(self.client.clone()).create(&PostParams::default(), &review).await?;
        let verdict = verdict(answer.status());
        if verdict == Verdict::Allowed {
            self.allowed.put(question, ());
        }
        Ok(verdict)
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
    ) -> BoxFuture<'a, Result<Option<ServedResource>, Unanswered>> {
        Box::pin(self.discover(api_version, kind))
    }

    fn user_may_create<'a>(
        &'a self,
        user: &'a UserInfo,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, Unanswered>> {
        Box::pin(self.review(user_review(user, resource, namespace)))
    }

    fn controller_may<'a>(
        &'a self,
        verb: &'a str,
        resource: &'a ServedResource,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Verdict, Unanswered>> {
        Box::pin(self.review(controller_review(verb, resource, namespace)))
    }

    fn invalid_fields<'a>(
        &'a self,
        resource: &'a ServedResource,
        namespace: &'a str,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<InvalidFields, Unanswered>> {
        Box::pin(self.dry_run(resource, namespace, object))
    }
}

#[cfg(test)]
#[path = "api_authorizer_tests.rs"]
mod tests;
