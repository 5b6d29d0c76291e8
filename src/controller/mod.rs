//! The controller process: the controllers of every kind of the registry and of the integrations
//! file, on the jobframework; the Workload
//! clean-up loop, and the HTTPS server with the admission webhooks, health and metrics.

pub mod api_authorizer;
pub mod api_requests;
pub mod certs;
mod error;
#[cfg(any(test, fuzzing))]
pub mod fuzz;
pub mod leader;
pub mod metrics;
mod recent_answers;
pub mod server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use kube::api::{Api, ApiResource};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::watch;
use tracing::info;

use crate::api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueCluster, ResourceFlavor, Workload};
use crate::integrations::declarative::{self, config::Integration};
use crate::integrations::registry;
use crate::jobframework::events::EventSink;
use crate::jobframework::queue_cache::QueueCache;
use crate::jobframework::reconciler::{self, Config, Context};
use crate::jobframework::served_kinds::ServedKinds;
use crate::jobframework::setup::{Record, Setup, bounded, error_policy, stopped};
use crate::jobframework::{our_workloads, watches};
use api_authorizer::ApiAuthorizer;
pub use error::ControllerError;
use leader::Leadership;
use metrics::Metrics;
use server::{ServerState, Tls};

/// Name under which the controller writes events (and, as field manager, everything else).
pub use crate::jobframework::field_manager::MANAGER;

pub struct Options {
    /// A client made with [`api_requests::counting_client`] of `metrics.api_requests`.
    pub client: Client,
    pub metrics: Arc<Metrics>,
    /// The HTTPS server (webhooks, health, metrics).
    pub listen: Listen,
    pub certificate: ServingCertificate,
    pub config: Config,
    /// Reconcile only while holding this Lease (webhooks are served either way).
    pub election: Option<leader::Election>,
    /// ServedKinds integrated by configuration (`--integrations`).
    pub integrations: Vec<Integration>,
}

/// Where the HTTPS server listens, and how it stops.
#[derive(Clone, Copy, Debug)]
pub struct Listen {
    pub address: SocketAddr,
    /// After the stop signal, how long it goes on answering, each answer closing its
    /// connection: the API server keeps idle HTTP/1.1 connections to each replica, and a
    /// request written on one the server closes unasked fails ("broken pipe"), since the API
    /// server does not retry a POST. Answered connections end cleanly instead.
    pub drain: std::time::Duration,
}

/// Where the webhook server's certificate comes from.
pub enum ServingCertificate {
    /// `tls.crt` and `tls.key` in a directory, read once; whoever wrote them registers their CA
    /// in the webhook configurations (the sandbox's process runtime does).
    Dir(PathBuf),
    /// Kept by the controller in a Secret and in the webhook configurations' `caBundle`.
    Secret(certs::SecretSource),
}

/// Starts a reflector for `K` and returns its store.
fn cache<K>(api: Api<K>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watches::retrying(api, watcher::Config::default())).applied_objects();
    tokio::spawn(stream.for_each(|_| async {}));
    reader
}

/// Runs until SIGINT/SIGTERM.
pub async fn run(options: Options) -> Result<(), ControllerError> {
    // Listened for from the start: a replica stopped while it waits for its caches or the Lease
    // still drains its webhook server; the default action would drop admissions mid-answer.
    let terminated = terminated().map_err(ControllerError::Signal)?;
    let client = options.client;
    let integrations: Vec<Arc<Integration>> = options.integrations.into_iter().map(Arc::new).collect();
    let metrics = options.metrics;
    let queues = QueueCache {
        local_queues: cache(Api::<LocalQueue>::all(client.clone())),
        cluster_queues: cache(Api::<ClusterQueue>::all(client.clone())),
        admission_checks: cache(Api::<AdmissionCheck>::all(client.clone())),
        client: client.clone(),
    };
    // The Workloads of the kinds this process integrates; nothing here acts on others.
    let orphan_kinds: Vec<ApiResource> = (registry::compiled().iter().map(|(description, _)| description))
        .chain(integrations.iter().map(|i| i.as_ref()))
        .map(Integration::api_resource)
        .collect();
    let our_workloads = our_workloads::watch(client.clone(), orphan_kinds.clone());
    let workloads = our_workloads.store.clone();
    let workload_changes = our_workloads.changes.clone();
    // Campaigned for from the start: the certificate every replica waits for is written by the
    // leader, so leading must not wait for serving, nor for the caches.
    let mut leadership = match &options.election {
        Some(election) => {
            info!(identity = %election.identity, lease = leader::LEASE, "campaigning for the Lease");
            Leadership::campaign(client.clone(), election).await?
        }
        None => Leadership::alone(),
    };
    let (tls, trusted) = match options.certificate {
        ServingCertificate::Dir(dir) => (Tls::Dir(dir), Arc::new(AtomicBool::new(true))),
        ServingCertificate::Secret(source) => {
            let kept = certs::keep(client.clone(), source, leadership.leading());
            (Tls::Pairs(kept.pairs), kept.trusted)
        }
    };
    let state = Arc::new(ServerState {
        config: options.config.clone(),
        queues: Some(queues.clone()),
        metrics: metrics.clone(),
        authorizer: Arc::new(ApiAuthorizer::new(client.clone(), Arc::new(ServedKinds::new(client.clone())))),
        ready: Default::default(),
        trusted,
        integrations: integrations.clone(),
    });

    let (stop_tx, stop_rx) = watch::channel(false);
    let router = server::router(state.clone());
    let (listen, shutdown) = (options.listen, stopped(stop_rx.clone()));
    let server = on_own_thread("webhooks", async move { server::serve(listen, tls, router, shutdown).await })?;

    let work = async {
        // The webhooks read only the queue caches: they serve as soon as those hold, without waiting
        // for the Workloads (thousands on a busy cluster). While they refuse, the API server refuses
        // every job of our kinds, MultiKueue's copies on a worker included.
        for (what, ready) in [
            ("LocalQueues", queues.local_queues.wait_until_ready().await.is_ok()),
            ("ClusterQueues", queues.cluster_queues.wait_until_ready().await.is_ok()),
            ("AdmissionChecks", queues.admission_checks.wait_until_ready().await.is_ok()),
        ] {
            if !ready {
                return Err(ControllerError::NeverSynced(what));
            }
        }
        state.ready.store(true, Ordering::Relaxed);
        info!(listen = %options.listen.address, "queue caches synced; serving webhooks");
        workloads.wait_until_ready().await.map_err(|_| ControllerError::NeverSynced("Workloads"))?;

        // Every replica answers admissions; only the Lease holder writes.
        if let Some(election) = &options.election {
            info!(identity = %election.identity, lease = leader::LEASE, "waiting to lead");
            leadership.until_leading().await?;
            info!(identity = %election.identity, "leading");
        }
        let lease_lost = leadership.until_lost();

        let ctx = Arc::new(Context {
            client: client.clone(),
            config: options.config,
            workloads,
            own_writes: our_workloads.own_writes.clone(),
            flavors: cache(Api::<ResourceFlavor>::all(client.clone())),
            events: EventSink::start(client.clone(), Reporter { controller: MANAGER.into(), instance: None }),
            multikueue: Default::default(),
            multikueue_clusters: cache(Api::<MultiKueueCluster>::all(client.clone())),
        });
        let record: Record = {
            let metrics = metrics.clone();
            Arc::new(move |label, ok, took| metrics.reconciled(label, ok, took))
        };
        let setup = Setup::new(ctx.clone(), workload_changes, stop_rx.clone(), record);
        let compiled = registry::COMPILED.iter().map(|kind| (kind.start)(&setup));
        let configured =
            integrations.iter().map(|integration| declarative::controller::start(&setup, integration.clone()));
        let jobs = futures::future::join_all(compiled.chain(configured).collect::<Vec<_>>());
        let orphans = Controller::for_stream(our_workloads.deleting, our_workloads.store)
            .with_config(bounded())
            .graceful_shutdown_on(setup.stopped())
            .run(
                move |wl: Arc<Workload>, ctx: Arc<Context>| {
                    let orphan_kinds = orphan_kinds.clone();
                    async move {
                        // Only a Workload being deleted can have lost its job for good.
                        if wl.metadata.deletion_timestamp.is_none() {
                            return Ok(Action::await_change());
                        }
                        for kind in &orphan_kinds {
                            reconciler::finalize_orphan(&wl, &ctx.client, kind).await?;
                        }
                        Ok(Action::await_change())
                    }
                },
                error_policy,
                ctx,
            )
            .for_each(|_| async {});

        tokio::select! {
            _ = async { tokio::join!(jobs, orphans) } => Ok(()),
            // Another replica may already be writing: stop at once, as controller-runtime does.
            _ = lease_lost => Err(ControllerError::LostLease(leader::LEASE)),
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        () = terminated => { info!("shutting down"); Ok(()) }
    };
    let _ = stop_tx.send(true);
    server.await.map_err(|_| ControllerError::ServerGone)??;
    outcome
}

/// Resolves at the first SIGINT or SIGTERM; both are caught from the call on.
fn terminated() -> std::io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut interrupt, mut terminate) = (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?);
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// Runs `task` on a runtime of its own, on a thread of its own. The webhooks run so: an
/// admission request then waits for a core, not behind the reconciles queued on the
/// controllers' runtime, and the API server holds every create of our kinds until it answers.
fn on_own_thread(
    name: &str,
    task: impl Future<Output = Result<(), ControllerError>> + Send + 'static,
) -> Result<tokio::sync::oneshot::Receiver<Result<(), ControllerError>>, ControllerError> {
    let failed = |source| ControllerError::Thread { name: name.to_string(), source };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(failed)?;
    let (done, finished) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let _ = done.send(runtime.block_on(task));
        })
        .map_err(failed)?;
    Ok(finished)
}
