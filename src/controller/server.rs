//! The HTTPS server of the controller: admission webhooks, health, readiness and metrics, on
//! one TLS port.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use futures::FutureExt;
use futures::future::BoxFuture;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use tokio::sync::watch;
use tracing::{info, warn};

use super::certs::ServingPair;
use super::error::ControllerError;
use super::metrics::Metrics;
use crate::integrations::declarative::ConfiguredJob;
use crate::integrations::declarative::config::Integration;
use crate::integrations::registry;
use crate::jobframework::admission::{Hook, answer};
use crate::jobframework::authorizer::Authorizer;
use crate::jobframework::queue_cache::QueueCache;
use crate::jobframework::reconciler::Config;
use crate::manifests::webhook_path;

/// Largest AdmissionReview accepted; the API server caps objects at 1.5 MiB (etcd's limit).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

pub struct ServerState {
    pub config: Config,
    pub queues: Option<QueueCache>,
    pub metrics: Arc<Metrics>,
    /// Asks the API server who may create what a WrappedJob wraps.
    pub authorizer: Arc<dyn Authorizer>,
    /// Set once the caches the webhook answers from have synced.
    pub ready: AtomicBool,
    /// Set while every one of our webhook configurations trusts the served certificate: until
    /// then the API server would fail every admission sent here.
    pub trusted: Arc<AtomicBool>,
    /// Kinds integrated by configuration, each with its own webhook paths.
    pub integrations: Vec<Arc<Integration>>,
}

pub fn router(state: Arc<ServerState>) -> Router {
    let mut router = Router::new();
    for hook in [Hook::Mutate, Hook::Validate] {
        for (description, compiled) in registry::compiled() {
            let admit = compiled.admit;
            let answer: Answer = Arc::new(move |state, request| {
                admit(hook, &state.config, state.queues.as_ref(), state.authorizer.as_ref(), request)
            });
            router = router.route(&webhook_path(hook, &description.gvk()), webhook(answer));
        }
        for integration in &state.integrations {
            let kind = integration.clone();
            let answer: Answer = Arc::new(move |state, request| {
                let kind = kind.clone();
                Box::pin(async move {
                    let authorizer = state.authorizer.as_ref();
                    answer::<ConfiguredJob>(hook, &state.config, state.queues.as_ref(), authorizer, &kind, request)
                        .await
                })
            });
            router = router.route(&webhook_path(hook, &integration.gvk()), webhook(answer));
        }
    }
    router
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn readyz(State(state): State<Arc<ServerState>>) -> Response {
    if !state.ready.load(Ordering::Relaxed) {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced").into_response()
    } else if !state.trusted.load(Ordering::Relaxed) {
        let why = "the caBundle of a webhook configuration does not trust the served certificate yet";
        (StatusCode::SERVICE_UNAVAILABLE, why).into_response()
    } else {
        "ok".into_response()
    }
}

async fn metrics(State(state): State<Arc<ServerState>>) -> String {
    state.metrics.encode()
}

/// One kind's admission answer, its kind's type erased.
type Answer = Arc<
    dyn for<'a> Fn(&'a ServerState, &'a AdmissionRequest<DynamicObject>) -> BoxFuture<'a, AdmissionResponse>
        + Send
        + Sync,
>;

/// The route of one admission webhook.
fn webhook(answer: Answer) -> MethodRouter<Arc<ServerState>> {
    post(move |State(state): State<Arc<ServerState>>, body: Bytes| {
        let answer = answer.clone();
        async move { review(&state, &body, answer).await }
    })
}

/// Decodes an AdmissionReview, answers it, and records the verdict. A body that is not an
/// AdmissionReview gets a 400: there is no request UID to answer to.
async fn review(state: &ServerState, body: &[u8], answer: Answer) -> Response {
    let started = Instant::now();
    if !state.ready.load(Ordering::Relaxed) {
        // Defaulting reads the queue caches: answering before they sync would leave a job on a
        // MultiKueue queue without managedBy, and Kueue would reject it for good. Failing
        // makes the API server refuse the request (failurePolicy Fail), so it is retried.
        return (StatusCode::SERVICE_UNAVAILABLE, "the queue caches have not synced yet; retry").into_response();
    }
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(err) => return (StatusCode::BAD_REQUEST, format!("not an AdmissionReview: {err}")).into_response(),
    };
    // The answer echoes these types, so anything else would get a malformed answer.
    let types = (review.types.api_version.as_str(), review.types.kind.as_str());
    if types != ("admission.k8s.io/v1", "AdmissionReview") {
        let message = format!("not an admission.k8s.io/v1 AdmissionReview: {}/{}", types.0, types.1);
        return (StatusCode::BAD_REQUEST, message).into_response();
    }
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(request) => request,
        Err(err) => {
            return (StatusCode::BAD_REQUEST, format!("AdmissionReview without a request: {err}")).into_response();
        }
    };
    let response = answer(state, &request).await;
    let operation = match request.operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    };
    state.metrics.admitted(&request.kind.kind, operation, response.allowed, started.elapsed());
    axum::Json(response.into_review()).into_response()
}

/// Where the server's certificate comes from.
pub enum Tls {
    /// `tls.crt` and `tls.key` in a directory, read once at start.
    Dir(PathBuf),
    /// Each pair the controller keeps in its Secret (`certs::keep`): the server listens from the
    /// first one, and takes up each next one without a restart.
    Pairs(watch::Receiver<Option<Arc<ServingPair>>>),
}

/// Serves `router` with the certificate `tls` gives, until `shutdown` resolves. Only TLS 1.3 and
/// 1.2 are spoken: those are all rustls implements, and axum-server takes its defaults (a test
/// checks them).
pub async fn serve(
    listen: super::Listen,
    mut tls: Tls,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ControllerError> {
    let shutdown = shutdown.shared();
    let config = tokio::select! {
        config = first_config(&mut tls) => config?,
        () = shutdown.clone() => return Ok(()),
    };
    if let Tls::Pairs(pairs) = tls {
        tokio::spawn(follow(config.clone(), pairs));
    }
    let listener = std::net::TcpListener::bind(listen.address).map_err(ControllerError::Serve)?;
    serve_on(listener, config, router, shutdown, listen.drain).await
}

/// The server's first TLS configuration: for a Secret, once it holds a pair (until then there
/// is nothing to answer the API server with).
async fn first_config(tls: &mut Tls) -> Result<RustlsConfig, ControllerError> {
    match tls {
        Tls::Dir(dir) => RustlsConfig::from_pem_file(dir.join("tls.crt"), dir.join("tls.key"))
            .await
            .map_err(|source| ControllerError::Certificate { dir: dir.clone(), source }),
        Tls::Pairs(pairs) => {
            let pair = pairs.wait_for(Option::is_some).await.ok().and_then(|pair| pair.clone());
            let pair = pair.ok_or(ControllerError::KeeperGone)?;
            let (cert, key) = (pair.cert_pem.clone().into_bytes(), pair.key_pem.clone().into_bytes());
            RustlsConfig::from_pem(cert, key).await.map_err(ControllerError::SecretCertificate)
        }
    }
}

/// Takes up each pair the Secret gets, for the connections accepted from then on.
async fn follow(config: RustlsConfig, mut pairs: watch::Receiver<Option<Arc<ServingPair>>>) {
    while pairs.changed().await.is_ok() {
        let Some(pair) = pairs.borrow_and_update().clone() else { continue };
        match reload(&config, &pair).await {
            Ok(()) => info!("serving the certificate renewed in the Secret"),
            Err(error) => warn!(%error, "the Secret's new certificate does not load; serving the previous one"),
        }
    }
}

async fn reload(config: &RustlsConfig, pair: &ServingPair) -> std::io::Result<()> {
    config.reload_from_pem(pair.cert_pem.clone().into_bytes(), pair.key_pem.clone().into_bytes()).await
}

/// Serves `router` on `listener` with `tls` until `shutdown` resolves and `drain` has passed.
async fn serve_on(
    listener: std::net::TcpListener,
    tls: RustlsConfig,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    drain: std::time::Duration,
) -> Result<(), ControllerError> {
    let handle = axum_server::Handle::new();
    let stopper = handle.clone();
    let draining = Arc::new(AtomicBool::new(false));
    let router = closing_connections_once(router, draining.clone());
    tokio::spawn(async move {
        shutdown.await;
        draining.store(true, Ordering::Relaxed);
        tokio::time::sleep(drain).await;
        // Long enough for the answers in flight; the API server is told (HTTP/2 GOAWAY) to send
        // the next ones elsewhere.
        stopper.graceful_shutdown(Some(std::time::Duration::from_secs(10)));
    });
    // No Nagle delay: a TLS record written after an unacknowledged one would wait for the ACK,
    // which shows in the latency tail of small admission answers (Go's servers disable it too).
    let acceptor = RustlsAcceptor::new(tls).acceptor(NoDelayAcceptor::new());
    let server = axum_server::from_tcp(listener).map_err(ControllerError::Serve)?.acceptor(acceptor).handle(handle);
    server.serve(router.into_make_service()).await.map_err(ControllerError::Serve)
}

/// Every answer asks its HTTP/1.1 client to close the connection once `draining` is set.
fn closing_connections_once(router: Router, draining: Arc<AtomicBool>) -> Router {
    router.layer(axum::middleware::map_response(move |mut response: Response| {
        let draining = draining.load(Ordering::Relaxed);
        async move {
            if draining {
                let close = axum::http::HeaderValue::from_static("close");
                response.headers_mut().insert(axum::http::header::CONNECTION, close);
            }
            response
        }
    }))
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
