//! Admission requests made from arbitrary bytes, for the libFuzzer target
//! `fuzz/fuzz_targets/admission.rs` and for its bounded, seeded run in `cargo test`. Whatever
//! the bytes, the webhook server must answer: an AdmissionReview for the request (allowed, or
//! denied saying why) or a 4xx — never a panic, a 5xx, a patch the API server could not apply,
//! or no answer at all.
//!
//! The bytes are read as decisions: which endpoint, then either a raw body or a valid
//! ExternalJob/WrappedJob review with mutations (values replaced, keys removed, arrays grown,
//! deep nesting, huge strings, the other kind), so inputs reach defaulting and validation
//! instead of stopping at the JSON parser.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Map, Value, json};
use tower::ServiceExt;

use super::metrics::Metrics;
use super::server::{ServerState, router};
use crate::integrations::registry;
use crate::jobframework::authorizer::fake::FakeAuthorizer;
use crate::jobframework::reconciler::Config;
use crate::jobframework::webhook::Hook;
use crate::manifests::webhook_path;

/// Longer than any answer should take on a loaded machine: past it the server is hung.
const HUNG: Duration = Duration::from_secs(60);

/// The webhook server in memory, answering one input at a time.
pub struct Harness {
    runtime: tokio::runtime::Runtime,
    router: Router,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    pub fn new() -> Self {
        let state = Arc::new(ServerState {
            config: Config::default(),
            queues: None,
            metrics: Arc::new(Metrics::default()),
            authorizer: Arc::new(FakeAuthorizer::new().deny_user("mallory", "deployments")),
            ready: AtomicBool::new(true),
            trusted: Arc::new(AtomicBool::new(true)),
            integrations: Vec::new(),
        });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
        Harness { runtime, router: router(state) }
    }

    /// Sends the request `data` describes and panics if the answer is not clean.
    pub fn check(&self, data: &[u8]) {
        let (path, body) = request_from(data);
        let request = Request::post(&path).header("content-type", "application/json").body(Body::from(body.clone()));
        let request = request.expect("a well-formed HTTP request");
        let (status, answer) = self.runtime.block_on(async {
            let answered = tokio::time::timeout(HUNG, async {
                let response = self.router.clone().oneshot(request).await.expect("the router is infallible");
                let status = response.status();
                (status, axum::body::to_bytes(response.into_body(), usize::MAX).await)
            });
            match answered.await {
                Ok((status, Ok(bytes))) => (status, bytes.to_vec()),
                Ok((_, Err(e))) => panic!("{path}: the answer's body could not be read: {e}"),
                Err(_) => panic!("{path}: no answer within {HUNG:?}"),
            }
        });
        check_answer(&path, &body, status, &answer);
    }
}

/// A clean answer: 200 with an AdmissionReview answering the request, or a 4xx.
fn check_answer(path: &str, body: &[u8], status: StatusCode, answer: &[u8]) {
    if status.is_client_error() {
        return;
    }
    assert_eq!(status, StatusCode::OK, "{path}: status {status}: {}", String::from_utf8_lossy(answer));
    let answer: Value = serde_json::from_slice(answer).expect("a 200 answer is JSON");
    let response = &answer["response"];
    assert_eq!(answer["kind"], "AdmissionReview", "{path}: {answer}");
    assert!(response["allowed"].is_boolean(), "{path}: {answer}");
    // Read as the server reads it: fields it skips may nest deeper than a Value may.
    let request: Sent = serde_json::from_slice(body).expect("a 200 answer was to an AdmissionReview");
    assert_eq!(response["uid"], request.request.uid, "{path}: the answer names the request");
    if response["allowed"] == false {
        let message = response["status"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{path}: a denial says why: {answer}");
    }
    if let Some(patch) = response.get("patch").filter(|p| !p.is_null()) {
        // kube-core sends the patch as bytes (a JSON array of numbers or base64).
        let bytes: Vec<u8> = match patch {
            Value::String(b64) => {
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).expect("the patch is base64")
            }
            other => serde_json::from_value(other.clone()).expect("the patch is bytes"),
        };
        let patch: json_patch::Patch = serde_json::from_slice(&bytes).expect("the patch is a JSON Patch");
        let mut object = serde_json::to_value(request.request.object).expect("an object serializes");
        json_patch::patch(&mut object, &patch)
            .unwrap_or_else(|e| panic!("{path}: the API server could not apply {patch:?}: {e}"));
    }
}

/// What the checks need of the request sent.
#[derive(serde::Deserialize)]
struct Sent {
    request: SentRequest,
}

#[derive(serde::Deserialize)]
struct SentRequest {
    uid: String,
    object: Option<kube::core::DynamicObject>,
}

/// Reads decisions from the input; an exhausted input keeps answering 0.
struct Decisions<'a> {
    data: &'a [u8],
    at: usize,
}

impl Decisions<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { self.byte() as usize % n }
    }

    fn rest(&self) -> &[u8] {
        self.data.get(self.at..).unwrap_or_default()
    }
}

/// The paths of every compiled kind's webhooks.
fn webhook_paths() -> Vec<String> {
    let hooks = [Hook::Mutate, Hook::Validate];
    let kinds = registry::compiled().iter().map(|(description, _)| description.gvk());
    kinds.flat_map(|gvk| hooks.map(|hook| webhook_path(hook, &gvk))).collect()
}

/// The endpoint and body an input stands for.
pub fn request_from(data: &[u8]) -> (String, Vec<u8>) {
    let mut d = Decisions { data, at: 0 };
    let paths = webhook_paths();
    let path = paths[d.below(paths.len())].clone();
    if d.below(4) == 0 {
        return (path, d.rest().to_vec());
    }
    let external = match d.below(8) {
        // Mostly the endpoint's own kind; sometimes the other one.
        0 => !path.ends_with("externaljob"),
        _ => path.ends_with("externaljob"),
    };
    let operation = ["CREATE", "UPDATE", "DELETE", "CONNECT"][d.below(4)];
    let object = if external { external_job() } else { wrapped_job() };
    let mut review = review(operation, object.clone(), (operation == "UPDATE").then_some(object));
    for _ in 0..d.below(6) {
        mutate(&mut review, &mut d);
    }
    (path, serde_json::to_vec(&review).expect("a Value serializes"))
}

fn external_job() -> Value {
    json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
        "metadata": {"name": "train", "namespace": "default", "uid": "11111111-2222-3333-4444-555555555555",
                     "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"podSets": [{"name": "main", "count": 2, "template": {"spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}}],
            "backoffLimit": 1},
    })
}

fn wrapped_job() -> Value {
    json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
        "metadata": {"name": "train", "namespace": "default", "uid": "11111111-2222-3333-4444-555555555555",
                     "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                     "annotations": {"kueue-ext.dev/retryLimit": "2"}},
        "spec": {"components": [
            {"template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"},
                "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}},
            {"template": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "s"}}, "template": {
                    "metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "s", "image": "y"}]}}}}},
            {"template": {"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": {"name": "t"},
                "spec": {"template": {"spec": {"containers": [{"name": "t", "image": "z"}]}}}},
             "podSets": [{"path": "template.spec.template", "replicas": 1}]},
        ]},
    })
}

fn review(operation: &str, object: Value, old: Option<Value>) -> Value {
    let kind = object["kind"].clone();
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "0b6c1d2e-0000-0000-0000-000000000001",
            "kind": {"group": "kueue-ext.dev", "version": "v1alpha1", "kind": kind},
            "resource": {"group": "kueue-ext.dev", "version": "v1alpha1", "resource": "externaljobs"},
            "name": "train", "namespace": "default", "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object, "oldObject": old, "dryRun": false,
        }
    })
}

/// Strings that mean something somewhere in a review.
const WORDS: &[&str] = &[
    "",
    "main",
    "ExternalJob",
    "WrappedJob",
    "Pod",
    "Job",
    "Deployment",
    "v1",
    "batch/v1",
    "apps/v1",
    "kueue-ext.dev/v1alpha1",
    "kueue-ext.dev",
    "kueue.x-k8s.io/multikueue",
    "kueue.x-k8s.io/queue-name",
    "kueue-ext.dev/retryLimit",
    "Not_A_Queue",
    "template.spec.template",
    "template.spec.containers",
    "spec.template[0]",
    "..",
    "-1",
    "1e400",
    "9999999999999999999Ei",
    "500m",
    "NaN",
    "\u{0}",
    "ünïcødé",
    "mallory",
    "kube-system",
    "system:serviceaccount:kueue-system:kueue-controller-manager",
];

/// One mutation somewhere in the review.
fn mutate(review: &mut Value, d: &mut Decisions<'_>) {
    let start: &[&str] = match d.below(8) {
        0 => &[],
        1 => &["request"],
        2 => &["request", "oldObject"],
        _ => &["request", "object"],
    };
    // An earlier mutation may have replaced the way down: then start higher up.
    let mut target = review;
    for key in start {
        if target.get(key).is_none() {
            break;
        }
        target = target.get_mut(key).expect("checked just above");
    }
    let node = descend(target, d);
    match d.below(5) {
        0 => *node = value(d, 0),
        1 => {
            if let Some(map) = node.as_object_mut() {
                let key = map.keys().nth(d.below(map.len().max(1))).cloned();
                key.map(|k| map.remove(&k));
            }
        }
        2 => {
            if let Some(items) = node.as_array_mut().filter(|a| !a.is_empty()) {
                let copies = d.below(12);
                let item = items[d.below(items.len())].clone();
                items.extend(std::iter::repeat_n(item, copies));
            }
        }
        3 => {
            if let Some(map) = node.as_object_mut() {
                map.insert(WORDS[d.below(WORDS.len())].to_string(), value(d, 0));
            }
        }
        _ => {
            // Nesting deep enough to matter, mostly below the JSON parser's recursion limit.
            let depth = 1 + d.below(200);
            let inner = std::mem::take(node);
            *node = (0..depth).fold(inner, |v, i| if i.is_multiple_of(2) { json!([v]) } else { json!({"a": v}) });
        }
    }
}

/// A node of `root`, walking down by decisions (an exhausted input stops at once).
fn descend<'v>(mut node: &'v mut Value, d: &mut Decisions<'_>) -> &'v mut Value {
    loop {
        let inner = match &*node {
            Value::Object(map) => !map.is_empty(),
            Value::Array(items) => !items.is_empty(),
            _ => false,
        };
        if d.below(4) == 0 || !inner {
            return node;
        }
        node = match node {
            Value::Object(map) => {
                let index = d.below(map.len());
                map.values_mut().nth(index).expect("an index below the length")
            }
            Value::Array(items) => {
                let index = d.below(items.len());
                &mut items[index]
            }
            leaf => leaf,
        };
    }
}

fn value(d: &mut Decisions<'_>, depth: usize) -> Value {
    match d.below(10) {
        0 => Value::Null,
        1 => Value::Bool(d.byte().is_multiple_of(2)),
        2 => json!(d.byte() as i64 - 128),
        3 => [json!(i64::MIN), json!(-1), json!(0), json!(i32::MAX as i64 + 1), json!(u64::MAX)][d.below(5)].clone(),
        4 => [json!(1e308), json!(-0.0), json!(0.5), json!(-1e-300)][d.below(4)].clone(),
        5 | 6 => Value::String(WORDS[d.below(WORDS.len())].to_string()),
        7 => Value::String("a".repeat(d.byte() as usize * 1000)),
        8 if depth < 4 => Value::Array((0..d.below(5)).map(|_| value(d, depth + 1)).collect()),
        _ if depth < 4 => {
            let mut map = Map::new();
            for _ in 0..d.below(4) {
                map.insert(WORDS[d.below(WORDS.len())].to_string(), value(d, depth + 1));
            }
            Value::Object(map)
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded generator for the bounded run (xorshift64*).
    fn inputs(seed: u64, count: usize) -> impl Iterator<Item = Vec<u8>> {
        let mut state = seed;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        (0..count).map(move |_| {
            let len = (next() % 256) as usize;
            (0..len).map(|_| next() as u8).collect()
        })
    }

    /// The committed corpus of the fuzz target: its seeds and every input it once failed on.
    fn corpus() -> Vec<(String, Vec<u8>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/admission");
        let mut files: Vec<_> = std::fs::read_dir(&dir).expect("the fuzz corpus is committed").flatten().collect();
        files.sort_by_key(|f| f.file_name());
        files.into_iter().map(|f| (f.file_name().to_string_lossy().into(), std::fs::read(f.path()).unwrap())).collect()
    }

    #[test]
    fn every_endpoint_and_mode_is_reachable_from_bytes() {
        let paths: std::collections::BTreeSet<String> = (0..4u8).map(|b| request_from(&[b]).0).collect();
        assert_eq!(paths.len(), 4);
        let (_, raw) = request_from(&[0, 0, b'{', b'x']);
        assert_eq!(raw, b"{x", "mode 0 sends the rest as the body");
        let (_, structured) = request_from(&[1, 1, 1, 0]);
        let review: Value = serde_json::from_slice(&structured).unwrap();
        assert_eq!(review["request"]["object"]["kind"], "ExternalJob");
    }

    /// The fuzz target's CI-sized form on stable Rust: the committed corpus, then seeded
    /// inputs, through the same `Harness::check` libFuzzer calls.
    #[test]
    fn admission_survives_the_corpus_and_a_bounded_seeded_fuzz_run() {
        let harness = Harness::new();
        for (name, input) in corpus() {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness.check(&input)));
            assert!(outcome.is_ok(), "corpus input {name} broke the webhook");
        }
        let count = std::env::var("KUEUE_EXT_FUZZ_INPUTS").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000);
        for (i, input) in inputs(0x6b75_6575_652d_6578, count).enumerate() {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness.check(&input)));
            assert!(outcome.is_ok(), "seeded input {i} broke the webhook: {input:?}");
        }
    }
}
