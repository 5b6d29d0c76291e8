//! The HTTPS server of the controller: admission webhooks, health, readiness and metrics, on
//! one TLS port.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};

use super::admission;
use super::metrics::Metrics;
use super::queues::QueueCache;
use crate::jobframework::reconciler::Config;
use crate::manifests::{MUTATE_EXTERNAL_JOB, VALIDATE_EXTERNAL_JOB};

/// Largest AdmissionReview accepted; the API server caps objects at 1.5 MiB (etcd's limit).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

pub struct ServerState {
    pub config: Config,
    pub queues: Option<QueueCache>,
    pub metrics: Arc<Metrics>,
    /// Set once the caches the webhook answers from have synced.
    pub ready: AtomicBool,
}

pub fn router(state: Arc<ServerState>) -> Router {
    Router::new()
        .route(MUTATE_EXTERNAL_JOB, post(mutate))
        .route(VALIDATE_EXTERNAL_JOB, post(validate))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn readyz(State(state): State<Arc<ServerState>>) -> Response {
    if state.ready.load(Ordering::Relaxed) {
        "ok".into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced").into_response()
    }
}

async fn metrics(State(state): State<Arc<ServerState>>) -> String {
    state.metrics.encode()
}

async fn mutate(State(state): State<Arc<ServerState>>, body: Bytes) -> Response {
    review(&state, &body, admission::mutate)
}

async fn validate(State(state): State<Arc<ServerState>>, body: Bytes) -> Response {
    review(&state, &body, admission::validate)
}

/// Decodes an AdmissionReview, answers it, and records the verdict. A body that is not an
/// AdmissionReview gets a 400: there is no request UID to answer to.
fn review(
    state: &ServerState,
    body: &[u8],
    answer: fn(&ServerState, &AdmissionRequest<DynamicObject>) -> AdmissionResponse,
) -> Response {
    let started = Instant::now();
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(err) => return (StatusCode::BAD_REQUEST, format!("not an AdmissionReview: {err}")).into_response(),
    };
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(request) => request,
        Err(err) => {
            return (StatusCode::BAD_REQUEST, format!("AdmissionReview without a request: {err}")).into_response();
        }
    };
    let response = answer(state, &request);
    let operation = match request.operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    };
    state.metrics.admitted(&request.kind.kind, operation, response.allowed, started.elapsed());
    axum::Json(response.into_review()).into_response()
}

/// Serves `router` with TLS from `cert_dir/tls.crt` and `tls.key` until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    cert_dir: &Path,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let tls = axum_server::tls_rustls::RustlsConfig::from_pem_file(cert_dir.join("tls.crt"), cert_dir.join("tls.key"))
        .await
        .map_err(|e| anyhow::anyhow!("loading the serving certificate from {}: {e}", cert_dir.display()))?;
    let handle = axum_server::Handle::new();
    let stopper = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopper.graceful_shutdown(Some(std::time::Duration::from_secs(5)));
    });
    axum_server::bind_rustls(addr, tls).handle(handle).serve(router.into_make_service()).await?;
    Ok(())
}
