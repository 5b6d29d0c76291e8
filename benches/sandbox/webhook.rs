//! Webhook latency under load: an open-loop generator on loopback sends real AdmissionReviews
//! over TLS — for each admission the mutating review, then the validating review of the mutated
//! object, as kube-apiserver does — at a fixed rate to our webhook (ExternalJobs) and to Kueue's
//! (batch/v1 Jobs). The endpoints and CA are read from the cluster's webhook configurations, so
//! the calls go exactly where the API server's go. Bounded in count and in time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use kube::api::{Api, ListParams};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::jobs::Kind;
use crate::order;
use crate::report::Row;
use crate::sandbox::Sandbox;

/// Admissions whose latency is not counted: connections and caches warm up.
const WARMUP: usize = 100;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

type Https = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One webhook server as the API server calls it for one kind.
struct Target {
    kind: Kind,
    mutate: http::Uri,
    validate: http::Uri,
    client: Https,
}

pub async fn bench(runs: usize, rate: usize, admissions: usize) -> Vec<Row> {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let api = sandbox.client("manager").await;
    let ours = Arc::new(
        target(
            &api,
            Kind::External,
            "/mutate-kueue-ext-dev-v1alpha1-externaljob",
            "/validate-kueue-ext-dev-v1alpha1-externaljob",
        )
        .await,
    );
    let kueue = Arc::new(target(&api, Kind::Batch, "/mutate-batch-v1-job", "/validate-batch-v1-job").await);
    let peer = "Kueue's webhook on batch/v1 Jobs";
    let mut p50 = Row::new(format!("webhook p50 at {rate} admissions/s"), "ms", peer);
    let mut p99 = Row::new(format!("webhook p99 at {rate} admissions/s"), "ms", peer);
    for run in 0..runs {
        let (ours_ms, kueue_ms) = if order::ours_first(run) {
            let o = load(&ours, rate, admissions).await;
            (o, load(&kueue, rate, admissions).await)
        } else {
            let k = load(&kueue, rate, admissions).await;
            (load(&ours, rate, admissions).await, k)
        };
        eprintln!(
            "run {}: webhook p50/p99 ours {:.2}/{:.2} ms, Kueue {:.2}/{:.2} ms",
            run + 1,
            ours_ms.0,
            ours_ms.1,
            kueue_ms.0,
            kueue_ms.1
        );
        p50.push(ours_ms.0, kueue_ms.0);
        p99.push(ours_ms.1, kueue_ms.1);
    }
    vec![p50, p99]
}

/// The URLs the cluster's webhook configurations name for these paths, and a client that
/// trusts their caBundle.
async fn target(api: &kube::Client, kind: Kind, mutate_path: &str, validate_path: &str) -> Target {
    let mutating =
        Api::<MutatingWebhookConfiguration>::all(api.clone()).list(&ListParams::default()).await.expect("list");
    let validating =
        Api::<ValidatingWebhookConfiguration>::all(api.clone()).list(&ListParams::default()).await.expect("list");
    let configs: Vec<WebhookClientConfig> = mutating
        .items
        .into_iter()
        .flat_map(|c| c.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config))
        .chain(
            validating
                .items
                .into_iter()
                .flat_map(|c| c.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config)),
        )
        .collect();
    let find = |path: &str| {
        configs
            .iter()
            .find(|c| c.url.as_deref().is_some_and(|u| u.ends_with(path)))
            .unwrap_or_else(|| panic!("no webhook is registered by URL for {path}"))
    };
    let (mutate, validate) = (find(mutate_path), find(validate_path));
    let ca = mutate.ca_bundle.as_ref().expect("a caBundle").0.clone();
    Target {
        kind,
        mutate: mutate.url.as_deref().unwrap_or_default().parse().expect("webhook URL"),
        validate: validate.url.as_deref().unwrap_or_default().parse().expect("webhook URL"),
        client: https_client(&ca),
    }
}

fn https_client(ca_pem: &[u8]) -> Https {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.expect("caBundle PEM")).expect("CA certificate");
    }
    let tls = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_only().enable_http1().build();
    Client::builder(TokioExecutor::new()).build(connector)
}

/// Sends `admissions` (after a warm-up) at `rate` per second, each started on schedule whatever
/// the others do (open loop), and returns the p50 and p99 of every review, in ms.
async fn load(target: &Arc<Target>, rate: usize, admissions: usize) -> (f64, f64) {
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = JoinSet::new();
    for i in 0..WARMUP + admissions {
        ticks.tick().await;
        let target = target.clone();
        tasks.spawn(async move { (i, admit(&target, i).await) });
    }
    let mut latencies = Vec::with_capacity(2 * admissions);
    while let Some(done) = tasks.join_next().await {
        let (i, reviews) = done.expect("admission task");
        if i >= WARMUP {
            latencies.extend(reviews);
        }
    }
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1)];
    (at(0.50), at(0.99))
}

/// One admission: the mutating review, then the validating review of what it made; the
/// latency of each, in ms.
async fn admit(target: &Target, i: usize) -> [f64; 2] {
    let object = target.kind.manifest(i);
    let (mutate_ms, response) = review(target, &target.mutate, &object, i).await;
    let mut mutated = object;
    if let Some(patch) = response["patch"].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD.decode(patch).expect("base64 patch");
        let patch: json_patch::Patch = serde_json::from_slice(&bytes).expect("JSON patch");
        json_patch::patch(&mut mutated, &patch).expect("patch applies");
    }
    let (validate_ms, _) = review(target, &target.validate, &mutated, i).await;
    [mutate_ms, validate_ms]
}

/// Sends one AdmissionReview; its latency in ms and the response, which must allow.
async fn review(target: &Target, uri: &http::Uri, object: &Value, i: usize) -> (f64, Value) {
    let body = Bytes::from(serde_json::to_vec(&admission_review(target.kind, object, i)).expect("JSON"));
    let request = http::Request::post(uri)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .expect("request");
    let started = Instant::now();
    let call = async {
        let response = target.client.request(request).await?;
        let body = response.into_body().collect().await?.to_bytes();
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(body)
    };
    let body = tokio::time::timeout(REQUEST_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| panic!("{uri}: no answer within {REQUEST_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let review: Value = serde_json::from_slice(&body).expect("an AdmissionReview");
    let response = review["response"].clone();
    assert_eq!(response["allowed"], true, "{uri} denied a benchmark job: {response}");
    (ms, response)
}

/// What kube-apiserver sends for a CREATE by a user.
fn admission_review(kind: Kind, object: &Value, i: usize) -> Value {
    let r = kind.resource();
    let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let gvr = json!({"group": r.group, "version": r.version, "resource": r.plural});
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": format!("00000000-0000-0000-0000-{i:012}"),
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": object["metadata"]["name"], "namespace": "default", "operation": "CREATE",
        "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        "object": object, "oldObject": null, "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }})
}
