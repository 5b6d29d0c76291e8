//! A stand-in API server for unit tests of what a reconcile asks for: it answers each request
//! as the test's script says and records it, so a test sees every request a decision made.

use std::sync::{Arc, Mutex};

use http::{Method, Request, Response};
use http_body_util::BodyExt;
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};

/// Each request as "METHOD path" (with "?query" when it has parameters), with its body (`Null`
/// without one).
pub type Requests = Arc<Mutex<Vec<(String, Value)>>>;

/// A client whose API server answers a request (method, path) with the object `answer` gives,
/// or refuses it with the status code it gives instead, worded as the API server words it.
pub fn scripted_client(
    answer: impl Fn(&Method, &str) -> Result<Value, u16> + Clone + Send + 'static,
) -> (Client, Requests) {
    let requests = Requests::default();
    let log = requests.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (log, answer) = (log.clone(), answer.clone());
        async move {
            let (parts, body) = request.into_parts();
            let body = body.collect().await.expect("a request body").to_bytes();
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock().unwrap().push((format!("{} {}", parts.method, request_target(&parts.uri)), body));
            let (code, body) = match answer(&parts.method, parts.uri.path()) {
                Ok(object) => (200, object),
                Err(code) => (code, failure(code)),
            };
            let response = Response::builder().status(code).body(Body::from(serde_json::to_vec(&body).unwrap()));
            Ok::<_, std::convert::Infallible>(response.unwrap())
        }
    });
    (Client::new(service, "default"), requests)
}

/// The path, and the query if it says anything (kube writes "path?" or "path?&a=b").
fn request_target(uri: &http::Uri) -> String {
    match uri.query().map(|q| q.trim_start_matches('&')).filter(|q| !q.is_empty()) {
        Some(query) => format!("{}?{query}", uri.path()),
        None => uri.path().to_string(),
    }
}

/// The Status the API server sends with a refusal; the reason is what kube's error helpers
/// (`is_not_found`, `is_conflict`, ...) read.
fn failure(code: u16) -> Value {
    let reason = match code {
        404 => "NotFound",
        409 => "Conflict",
        // A refused JSON patch test is a 422 "Invalid".
        422 => "Invalid",
        _ => "InternalError",
    };
    json!({"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": reason})
}

/// The requests made, as "METHOD path" or "METHOD path?query".
pub fn requested(requests: &Requests) -> Vec<String> {
    requests.lock().unwrap().iter().map(|(request, _)| request.clone()).collect()
}
