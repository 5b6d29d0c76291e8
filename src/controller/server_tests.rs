use std::net::SocketAddr;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::integrations::declarative::config::IntegrationConfig;
use crate::jobframework::authorizer::fake::FakeAuthorizer;
use crate::jobframework::queue_cache::tests::unseen_multikueue_queue;

fn path(hook: Hook, kind: &str) -> String {
    webhook_path(hook, &kube::api::GroupVersionKind::gvk(crate::api::GROUP, crate::api::VERSION, kind))
}

fn state_with(ready: bool, authorizer: Arc<FakeAuthorizer>) -> Arc<ServerState> {
    Arc::new(ServerState {
        config: Config::default(),
        queues: None,
        metrics: Arc::new(Metrics::default()),
        authorizer,
        ready: AtomicBool::new(ready),
        trusted: Arc::new(AtomicBool::new(true)),
        integrations: Vec::new(),
    })
}

fn state(ready: bool) -> Arc<ServerState> {
    state_with(ready, Arc::new(FakeAuthorizer::new()))
}

fn state_with_queues(queues: QueueCache) -> Arc<ServerState> {
    let mut state = Arc::into_inner(state(true)).expect("a fresh state");
    state.queues = Some(queues);
    Arc::new(state)
}

/// The answer to creating the usual ExternalJob in queue `default/user-queue`.
async fn mutation_with(queues: QueueCache) -> Value {
    let review = review("CREATE", job(one_pod_set()), None).to_string();
    let (_, body) = call_with(state_with_queues(queues), &path(Hook::Mutate, "ExternalJob"), review).await;
    serde_json::from_slice(&body).unwrap()
}

async fn call_with(state: Arc<ServerState>, path: &str, body: impl Into<Body>) -> (StatusCode, Vec<u8>) {
    let request = Request::post(path).header("content-type", "application/json").body(body.into()).unwrap();
    let response = router(state).oneshot(request).await.unwrap();
    let status = response.status();
    (status, axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec())
}

async fn call(path: &str, body: impl Into<Body>) -> (StatusCode, Vec<u8>) {
    call_with(state(true), path, body).await
}

/// The AdmissionReview the API server sends when `user` writes `object`.
fn review_by(user: &str, operation: &str, object: Value, old: Option<Value>) -> Value {
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0b6c1d2e-0000-0000-0000-000000000001",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": format!("{}s", kind.to_lowercase())},
            "name": "train", "namespace": "default", "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": object, "oldObject": old, "dryRun": false,
        }
    })
}

fn review(operation: &str, object: Value, old: Option<Value>) -> Value {
    review_by("alice", operation, object, old)
}

/// The patch of a mutation answer, as JSON Patch operations.
fn patch_of(answer: &Value) -> Value {
    // kube-core sends the patch bytes as a JSON array, which the API server's decoder accepts.
    let bytes: Vec<u8> = serde_json::from_value(answer["response"]["patch"].clone()).expect("patch bytes");
    serde_json::from_slice(&bytes).unwrap()
}

fn denial(answer: &Value) -> &str {
    answer["response"]["status"]["message"].as_str().unwrap_or_default()
}

fn job(pod_sets: Value) -> Value {
    json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
        "metadata": {"name": "train", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"podSets": pod_sets, "futureField": {"kept": true}},
    })
}

fn one_pod_set() -> Value {
    json!([{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}])
}

#[tokio::test]
async fn mutation_suspends_queued_jobs_with_a_minimal_patch() {
    let (status, body) =
        call(&path(Hook::Mutate, "ExternalJob"), review("CREATE", job(one_pod_set()), None).to_string()).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], true);
    assert_eq!(answer["response"]["uid"], "0b6c1d2e-0000-0000-0000-000000000001");
    assert_eq!(
        patch_of(&answer),
        json!([{"op": "add", "path": "/spec/suspend", "value": true}]),
        "unknown fields are not touched"
    );
}

#[tokio::test]
async fn a_job_in_a_queue_the_caches_have_not_seen_is_still_handed_to_multikueue() {
    let answer = mutation_with(unseen_multikueue_queue("default", "user-queue", false)).await;
    assert_eq!(
        patch_of(&answer),
        json!([
            {"op": "add", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"},
            {"op": "add", "path": "/spec/suspend", "value": true},
        ])
    );
}

#[tokio::test]
async fn a_queue_that_cannot_be_read_denies_the_job_saying_why() {
    let answer = mutation_with(unseen_multikueue_queue("default", "user-queue", true)).await;
    assert_eq!(answer["response"]["allowed"], false);
    let why = denial(&answer);
    assert!(
        why.starts_with(
            "cannot tell whether LocalQueue default/user-queue goes through MultiKueue: cannot read ClusterQueue shared"
        ),
        "{why}"
    );
}

/// The answer to creating `object`, of a kind configured in `samples/{file}`, in
/// queue `default/user-queue`, which goes through MultiKueue.
async fn configured_mutation_in_a_multikueue_queue(file: &str, object: Value) -> Value {
    let path = format!("samples/{file}");
    let text = std::fs::read_to_string(&path).unwrap();
    let integration = IntegrationConfig::parse(&path, &text).unwrap().integrations.remove(0);
    let gvk = integration.gvk();
    let mut state = Arc::into_inner(state_with_queues(unseen_multikueue_queue("default", "user-queue", false)))
        .expect("a fresh state");
    state.integrations = vec![Arc::new(integration)];
    let review = review("CREATE", object, None).to_string();
    let (_, body) = call_with(Arc::new(state), &webhook_path(Hook::Mutate, &gvk), review).await;
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn a_configured_kind_multikueue_cannot_dispatch_is_refused_in_a_multikueue_queue() {
    let pytorch_job = json!({
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}}}},
    });
    let answer =
        configured_mutation_in_a_multikueue_queue("addons/kubeflow/pytorchjob-integration.yaml", pytorch_job).await;
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(
        denial(&answer),
        "LocalQueue user-queue goes through MultiKueue, which cannot hand a PyTorchJob to a worker: \
         spec.runPolicy.managedBy is not spec.managedBy, the one field Kueue's MultiKueue adapter for \
         configured kinds reads; submit it to a queue without a MultiKueue admission check"
    );

    let batch_job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}},
    });
    let answer = configured_mutation_in_a_multikueue_queue("integrations/job-integration.yaml", batch_job).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let patch = patch_of(&answer);
    assert!(
        patch
            .as_array()
            .unwrap()
            .contains(&json!({"op": "add", "path": "/spec/managedBy", "value": "kueue.x-k8s.io/multikueue"})),
        "{patch}"
    );
}

#[tokio::test]
async fn validation_denies_with_the_field_path() {
    let (_, body) =
        call(&path(Hook::Validate, "ExternalJob"), review("CREATE", job(json!([])), None).to_string()).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert!(answer["response"]["status"]["message"].as_str().unwrap().contains("spec.podSets"), "{answer}");
}

#[tokio::test]
async fn an_object_of_the_wrong_shape_is_denied_not_a_crash() {
    let wrong = json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob", "metadata": {"name": "x"}, "spec": {"podSets": "many"}});
    let (status, body) = call(&path(Hook::Validate, "ExternalJob"), review("CREATE", wrong, None).to_string()).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert!(answer["response"]["status"]["message"].as_str().unwrap().contains("cannot read it as ExternalJob"));
}

#[tokio::test]
async fn a_review_of_another_kind_is_denied_by_name() {
    let (_, body) =
        call(&path(Hook::Validate, "WrappedJob"), review("CREATE", job(one_pod_set()), None).to_string()).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(denial(&answer), "this webhook admits kueue-ext.dev/WrappedJob, not kueue-ext.dev/ExternalJob");
    let mut pod = review("CREATE", json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}), None);
    pod["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "Pod"});
    let (status, body) = call(&path(Hook::Mutate, "ExternalJob"), pod.to_string()).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((status, &answer["response"]["allowed"]), (StatusCode::OK, &json!(false)), "{answer}");
    assert!(denial(&answer).ends_with("not /Pod"), "{answer}");
}

#[tokio::test]
async fn garbage_deep_nesting_and_huge_bodies_are_refused_cleanly() {
    assert_eq!(call(&path(Hook::Mutate, "ExternalJob"), "{not json").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(
        call(&path(Hook::Mutate, "ExternalJob"), r#"{"kind": "AdmissionReview"}"#).await.0,
        StatusCode::BAD_REQUEST
    );
    let mut other_types = review("CREATE", job(one_pod_set()), None);
    other_types["kind"] = json!("spec.template[0]");
    assert_eq!(call(&path(Hook::Mutate, "ExternalJob"), other_types.to_string()).await.0, StatusCode::BAD_REQUEST);
    other_types["kind"] = json!("AdmissionReview");
    other_types["apiVersion"] = json!("admission.k8s.io/v1beta1");
    assert_eq!(call(&path(Hook::Mutate, "ExternalJob"), other_types.to_string()).await.0, StatusCode::BAD_REQUEST);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(call(&path(Hook::Validate, "ExternalJob"), deep).await.0, StatusCode::BAD_REQUEST);
    let huge = vec![b' '; MAX_BODY_BYTES + 1];
    assert_eq!(call(&path(Hook::Validate, "ExternalJob"), huge).await.0, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn admission_waits_for_the_caches() {
    let body = review("CREATE", job(one_pod_set()), None).to_string();
    let (status, _) = call_with(state(false), &path(Hook::Mutate, "ExternalJob"), body.clone()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "no defaulting from empty caches");
    assert_eq!(call_with(state(true), &path(Hook::Mutate, "ExternalJob"), body).await.0, StatusCode::OK);
}

#[tokio::test]
async fn answers_close_their_connection_once_the_server_drains() {
    let draining = Arc::new(AtomicBool::new(false));
    let app = closing_connections_once(router(state(true)), draining.clone());
    let ask = || Request::get("/healthz").body(Body::empty()).unwrap();
    let before = app.clone().oneshot(ask()).await.unwrap();
    assert_eq!(before.headers().get("connection"), None, "connections are kept while serving");
    draining.store(true, Ordering::Relaxed);
    let after = app.oneshot(ask()).await.unwrap();
    assert_eq!(after.status(), StatusCode::OK, "still answered while draining");
    assert_eq!(after.headers()["connection"], "close");
}

#[tokio::test]
async fn readiness_waits_for_the_caches() {
    let get = |state| async move {
        router(state).oneshot(Request::get("/readyz").body(Body::empty()).unwrap()).await.unwrap().status()
    };
    assert_eq!(get(state(false)).await, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(get(state(true)).await, StatusCode::OK);
    let untrusted = state(true);
    untrusted.trusted.store(false, Ordering::Relaxed);
    assert_eq!(get(untrusted).await, StatusCode::SERVICE_UNAVAILABLE, "the API server would fail admissions");
}

/// What a client trusting `bundle` is served at `addr`, under the name the API server dials.
async fn served_certificate(addr: SocketAddr, bundle: &str) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(CertificateDer::pem_slice_iter(bundle.as_bytes()).map(Result::unwrap));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = "kueue-ext-webhook.kueue-ext-system.svc".try_into().unwrap();
    tokio::task::spawn_blocking(move || {
        let mut tls = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let mut socket = std::net::TcpStream::connect(addr).unwrap();
        while tls.is_handshaking() {
            tls.complete_io(&mut socket).unwrap();
        }
        tls.peer_certificates().unwrap()[0].to_vec()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_renewed_pair_is_served_without_a_restart() {
    use crate::manifests::webhook_dns_names;
    let (now, validity) = (time::OffsetDateTime::now_utc(), std::time::Duration::from_secs(3600));
    let first = ServingPair::issue(&webhook_dns_names(), validity, now, None).unwrap();
    let second = ServingPair::issue(&webhook_dns_names(), validity, now, Some(&first.ca_bundle)).unwrap();
    let der = |pair: &ServingPair| {
        use rustls::pki_types::pem::PemObject;
        rustls::pki_types::CertificateDer::from_pem_slice(pair.cert_pem.as_bytes()).unwrap().to_vec()
    };
    let (_keeper, pairs) = watch::channel(Some(Arc::new(first.clone())));
    let config = first_config(&mut Tls::Pairs(pairs)).await.unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let drain = std::time::Duration::ZERO;
    tokio::spawn(serve_on(listener, config.clone(), router(state(true)), std::future::pending(), drain));

    assert_eq!(served_certificate(addr, &first.ca_bundle).await, der(&first));
    reload(&config, &second).await.unwrap();
    assert_eq!(served_certificate(addr, &second.ca_bundle).await, der(&second));
}

#[test]
fn nothing_older_than_tls_1_2_is_spoken() {
    let versions: Vec<_> = rustls::DEFAULT_VERSIONS.iter().map(|v| v.version).collect();
    assert_eq!(versions, [rustls::ProtocolVersion::TLSv1_3, rustls::ProtocolVersion::TLSv1_2]);
}

fn batch_job(image: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": image}]}}},
    })
}

fn wrapped(templates: Vec<Value>) -> Value {
    let components: Vec<Value> = templates.into_iter().map(|t| json!({"template": t})).collect();
    json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
        "metadata": {"name": "train", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"components": components, "futureField": 1},
    })
}

#[tokio::test]
async fn a_wrapped_job_is_suspended_with_a_minimal_patch() {
    let (_, body) =
        call(&path(Hook::Mutate, "WrappedJob"), review("CREATE", wrapped(vec![batch_job("x")]), None).to_string())
            .await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(patch_of(&answer), json!([{"op": "add", "path": "/spec/suspend", "value": true}]));
}

#[tokio::test]
async fn a_nested_wrapped_job_is_denied_with_its_field_path() {
    let nested = wrapped(vec![batch_job("x"), wrapped(vec![batch_job("y")])]);
    let (_, body) = call(&path(Hook::Validate, "WrappedJob"), review("CREATE", nested, None).to_string()).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert!(denial(&answer).contains("spec.components[1].template"), "{answer}");
}

#[tokio::test]
async fn a_component_the_user_may_not_create_is_denied_with_the_users_name() {
    let fake = Arc::new(FakeAuthorizer::new().deny_user("bob", "jobs"));
    let job = wrapped(vec![batch_job("x")]);
    let (_, body) = call_with(
        state_with(true, fake.clone()),
        &path(Hook::Validate, "WrappedJob"),
        review_by("bob", "CREATE", job.clone(), None).to_string(),
    )
    .await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert!(
        denial(&answer).contains(
            r#"spec.components[0].template: Forbidden: user "bob" may not create jobs.batch in namespace "default""#
        ),
        "{answer}"
    );
    let (_, body) =
        call_with(state_with(true, fake), &path(Hook::Validate, "WrappedJob"), review("CREATE", job, None).to_string())
            .await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], true, "alice may: {answer}");
}

#[tokio::test]
async fn an_update_that_changes_a_template_is_authorized_again() {
    let fake = Arc::new(FakeAuthorizer::new().deny_user("bob", "jobs"));
    let (old, new) = (wrapped(vec![batch_job("x")]), wrapped(vec![batch_job("y")]));
    let request = review_by("bob", "UPDATE", new, Some(old));
    let (_, body) =
        call_with(state_with(true, fake.clone()), &path(Hook::Validate, "WrappedJob"), request.to_string()).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert!(denial(&answer).contains(r#"user "bob" may not create jobs.batch"#), "{answer}");
    assert_eq!(fake.user_checks(), ["bob jobs.batch default"]);
}

#[tokio::test]
async fn kueue_writing_pod_set_infos_is_not_authorized_again() {
    let kueue = "system:serviceaccount:kueue-system:kueue-controller-manager";
    let fake = Arc::new(FakeAuthorizer::new().deny_user(kueue, "jobs"));
    let mut old = wrapped(vec![batch_job("x")]);
    old["spec"]["suspend"] = json!(true);
    let mut admitted = old.clone();
    admitted["spec"]["suspend"] = json!(false);
    admitted["spec"]["components"][0]["podSetInfos"] = json!([{"nodeSelector": {"pool": "gpu"}}]);
    let request = review_by(kueue, "UPDATE", admitted, Some(old));
    let (_, body) =
        call_with(state_with(true, fake.clone()), &path(Hook::Validate, "WrappedJob"), request.to_string()).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(fake.user_checks().is_empty());
}
