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

#[test]
fn dry_run_answers_are_reused_until_they_expire_and_the_cache_stays_bounded() {
    let cache = DryRunCache::default();
    let refused = vec![("spec.containers[0].image".to_string(), "Required value".to_string())];
    cache.put("pods ns {}".into(), refused.clone());
    assert_eq!(cache.get("pods ns {}"), Some(refused));
    assert_eq!(cache.get("pods other {}"), None);
    for i in 0..DryRunCache::CAPACITY {
        cache.put(format!("pods ns {i}"), Vec::new());
    }
    let size = cache.0.lock().unwrap().len();
    assert!(size <= DryRunCache::CAPACITY, "{size}");
    let stale = Instant::now().checked_sub(DryRunCache::TTL + Duration::from_secs(1)).unwrap();
    cache.0.lock().unwrap().insert("old".into(), (stale, Vec::new()));
    assert_eq!(cache.get("old"), None, "an expired answer is asked again");
}
