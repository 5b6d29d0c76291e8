use serde_json::json;

use super::*;
use crate::jobframework::authorizer::fake::{jobs, user};

#[test]
fn reviews_ask_for_the_requester_and_the_component() {
    let review = serde_json::to_value(user_review(&user("alice"), &jobs(), "team-a")).unwrap();
    assert_eq!(
        review["spec"],
        json!({
            "user": "alice", "uid": "u-1", "groups": ["team-a", "system:authenticated"],
            "extra": {"scopes": ["train"]},
            "resourceAttributes": {"verb": "create", "group": "batch", "version": "v1", "resource": "jobs", "namespace": "team-a"},
        })
    );
    let own = serde_json::to_value(controller_review("delete", &jobs(), "team-a")).unwrap();
    assert_eq!(
        own["spec"],
        json!({"resourceAttributes": {"verb": "delete", "group": "batch", "version": "v1", "resource": "jobs", "namespace": "team-a"}})
    );
}

#[test]
fn verdicts_keep_the_reason_and_count_a_missing_status_as_denied() {
    let status = |allowed, reason: Option<&str>, error: Option<&str>| SubjectAccessReviewStatus {
        allowed,
        reason: reason.map(String::from),
        evaluation_error: error.map(String::from),
        ..Default::default()
    };
    assert_eq!(verdict(Some(&status(true, Some("RBAC: allowed"), None))), Verdict::Allowed);
    assert_eq!(verdict(Some(&status(false, Some("no rule"), None))), Verdict::Denied("no rule".into()));
    assert_eq!(verdict(Some(&status(false, None, Some("webhook down")))), Verdict::Denied("webhook down".into()));
    assert!(matches!(verdict(None), Verdict::Denied(_)));
}

/// An authorizer whose API server answers each review as `allows` says of its path, and
/// records each review it is sent.
fn authorizer(allows: fn(&str) -> bool) -> (ApiAuthorizer, crate::test_api_server::Requests) {
    let (client, requests) = crate::test_api_server::scripted_client(move |_, path| {
        let kind =
            if path.ends_with("selfsubjectaccessreviews") { "SelfSubjectAccessReview" } else { "SubjectAccessReview" };
        Ok(
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": {}, "status": {"allowed": allows(path)}}),
        )
    });
    let kinds = Arc::new(ServedKinds::new(client.clone()));
    (ApiAuthorizer::new(client, kinds), requests)
}

fn reviews_sent(requests: &crate::test_api_server::Requests) -> Vec<String> {
    crate::test_api_server::requested(requests)
}

#[tokio::test]
async fn an_allowed_review_is_reused_and_a_denied_one_asked_again() {
    // The controller's own reviews are allowed, the user's denied.
    let (authorizer, requests) = authorizer(|path| path.ends_with("selfsubjectaccessreviews"));
    for _ in 0..3 {
        assert_eq!(authorizer.controller_may("create", &jobs(), "team-a").await.unwrap(), Verdict::Allowed);
    }
    assert_eq!(reviews_sent(&requests).len(), 1, "the controller's right asked once: {:?}", reviews_sent(&requests));
    authorizer.controller_may("delete", &jobs(), "team-a").await.unwrap();
    authorizer.controller_may("create", &jobs(), "team-b").await.unwrap();
    assert_eq!(reviews_sent(&requests).len(), 3, "another verb or namespace is another question");

    for _ in 0..2 {
        assert!(matches!(
            authorizer.user_may_create(&user("bob"), &jobs(), "team-a").await.unwrap(),
            Verdict::Denied(_)
        ));
    }
    assert_eq!(reviews_sent(&requests).len(), 5, "a denial is asked again: {:?}", reviews_sent(&requests));
    assert!(reviews_sent(&requests)[3].ends_with("/subjectaccessreviews"), "{:?}", reviews_sent(&requests));
}

#[tokio::test]
async fn a_user_review_is_reused_only_for_the_same_user_groups_and_resource() {
    let (authorizer, requests) = authorizer(|_| true);
    let alice = user("alice");
    let mut other_groups = user("alice");
    other_groups.groups = Some(vec!["team-b".into()]);
    for (who, namespace) in [(&alice, "team-a"), (&alice, "team-a"), (&other_groups, "team-a"), (&alice, "team-b")] {
        assert_eq!(authorizer.user_may_create(who, &jobs(), namespace).await.unwrap(), Verdict::Allowed);
    }
    assert_eq!(reviews_sent(&requests).len(), 3, "only the repeated question is answered from memory");
}
