use serde_json::{Value, json};

use super::*;
use crate::jobframework::authorizer::fake::{FakeAuthorizer, jobs, user};

fn template(api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "c"}, "spec": {}})
}

fn job(templates: Vec<Value>) -> WrappedJob {
    let components: Vec<Value> = templates.into_iter().map(|t| json!({"template": t})).collect();
    serde_json::from_value(json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
        "metadata": {"name": "wj", "namespace": "team-a"},
        "spec": {"components": components},
    }))
    .unwrap()
}

async fn errors(templates: Vec<Value>, authorizer: &FakeAuthorizer) -> Vec<String> {
    authorize(&job(templates), "team-a", &user("alice"), authorizer).await.iter().map(ToString::to_string).collect()
}

#[test]
fn resources_and_denials_read_like_kubectl() {
    let pods = ServedResource { group: String::new(), version: "v1".into(), plural: "pods".into(), namespaced: true };
    assert_eq!(pods.to_string(), "pods");
    assert_eq!(jobs().to_string(), "jobs.batch");
    assert_eq!(
        user_denied("alice", &jobs(), "team-a", ""),
        r#"Forbidden: user "alice" may not create jobs.batch in namespace "team-a""#
    );
    assert!(user_denied("alice", &jobs(), "team-a", "no rule").ends_with(r#""team-a" (no rule)"#));
    assert_eq!(
        controller_denied(&jobs()),
        "Forbidden: the kueue-ext controller has no RBAC to create and delete jobs.batch; grant it in the \
         kueue-ext-controller ClusterRole"
    );
}

#[test]
fn the_named_cluster_role_is_the_one_bound_to_the_controller() {
    let bound = crate::manifests::rbac().into_iter().any(|o| {
        o["kind"] == "ClusterRoleBinding"
            && o["roleRef"]["name"] == CONTROLLER_ROLE
            && o["subjects"][0]["name"] == crate::manifests::SERVICE_ACCOUNT
    });
    assert!(bound, "manifests bind no {CONTROLLER_ROLE} ClusterRole to the controller");
}

#[test]
fn api_versions_are_checked_before_they_reach_a_url() {
    for (api_version, expected) in [
        ("v1", Some(("", "v1"))),
        ("batch/v1", Some(("batch", "v1"))),
        ("kueue-ext.dev/v1alpha1", Some(("kueue-ext.dev", "v1alpha1"))),
        ("/v1", None),
        ("batch/", None),
        ("a/b/c", None),
        ("../../api/v1", None),
        ("Batch/v1", None),
    ] {
        assert_eq!(group_version(api_version), expected, "{api_version}");
    }
}

#[tokio::test]
async fn every_problem_is_named_on_its_component() {
    let fake = || FakeAuthorizer::new();
    let cases: Vec<(&str, Vec<Value>, FakeAuthorizer, Vec<&str>)> = vec![
        ("allowed", vec![template("batch/v1", "Job"), template("v1", "ConfigMap")], fake(), vec![]),
        (
            "kind not served",
            vec![template("v1", "ConfigMap"), template("ray.io/v1", "RayCluster")],
            fake(),
            vec![
                r#"spec.components[1].template.kind: Invalid value: "RayCluster": the cluster does not serve RayCluster in ray.io/v1: is its CRD installed (kubectl get crds)?"#,
            ],
        ),
        (
            "user denied",
            vec![template("batch/v1", "Job")],
            fake().deny_user("alice", "jobs"),
            vec![
                r#"spec.components[0].template: Forbidden: user "alice" may not create jobs.batch in namespace "team-a""#,
            ],
        ),
        (
            "controller lacks RBAC",
            vec![template("v1", "Pod")],
            fake().without_controller_rbac("pods"),
            vec![
                "spec.components[0].template: Forbidden: the kueue-ext controller has no RBAC to create and delete pods; \
                 grant it in the kueue-ext-controller ClusterRole",
            ],
        ),
        (
            "cluster-scoped",
            vec![template("v1", "Namespace")],
            fake(),
            vec![
                r#"spec.components[0].template.kind: Invalid value: "Namespace": namespaces is cluster-scoped; a WrappedJob creates its components in its own namespace"#,
            ],
        ),
        (
            "bad apiVersion",
            vec![template("../v1", "Pod")],
            fake(),
            vec![
                r#"spec.components[0].template.apiVersion: Invalid value: "../v1": must be group/version, or a version alone for the core group"#,
            ],
        ),
        ("no kind: left to the webhook's rules", vec![json!({"apiVersion": "v1"})], fake(), vec![]),
    ];
    for (name, templates, authorizer, expected) in cases {
        assert_eq!(errors(templates, &authorizer).await, expected, "{name}");
    }
}

#[tokio::test]
async fn an_unanswered_review_denies() {
    let errors = errors(vec![template("batch/v1", "Job")], &FakeAuthorizer::new().unreachable()).await;
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains(r#"Internal error: cannot check whether user "alice" may create jobs.batch"#));
    assert!(errors[1].contains(
        "cannot check the kueue-ext controller's rights on jobs.batch: cannot reach the API server: connection refused"
    ));
}

#[tokio::test]
async fn each_resource_is_checked_once_and_reported_on_every_component() {
    let fake = FakeAuthorizer::new().deny_user("alice", "jobs");
    let errors =
        errors(vec![template("batch/v1", "Job"), template("v1", "Pod"), template("batch/v1", "Job")], &fake).await;
    let paths: Vec<&str> = errors.iter().filter_map(|e| e.split(':').next()).collect();
    assert_eq!(paths, ["spec.components[0].template", "spec.components[2].template"]);
    let mut checks = fake.user_checks();
    checks.sort();
    assert_eq!(checks, ["alice jobs.batch team-a", "alice pods team-a"]);
}

#[test]
fn only_template_changes_need_a_new_review() {
    let old = job(vec![template("batch/v1", "Job")]);
    let mut admitted = old.clone();
    admitted.spec.suspend = Some(false);
    admitted.spec.components[0].pod_set_infos = vec![Default::default()];
    assert!(!needs_review(&old, &admitted));
    let mut edited = old.clone();
    edited.spec.components[0].template["spec"]["parallelism"] = json!(100);
    assert!(needs_review(&old, &edited));
    let mut grown = old.clone();
    grown.spec.components.push(old.spec.components[0].clone());
    assert!(needs_review(&old, &grown));
}
