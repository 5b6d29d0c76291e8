//! The controller process: the ExternalJob and WrappedJob controllers on the jobframework, the Workload
//! clean-up loop, and the HTTPS server with the admission webhooks, health and metrics.

pub mod admission;
mod dry_run;
#[cfg(any(test, fuzzing))]
pub mod fuzz;
pub mod leader;
pub mod metrics;
pub mod queues;
pub mod server;
pub mod workloads;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::controller::{self as runtime_controller, Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::api::external_job::ExternalJob;
use crate::api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, ResourceFlavor, Workload};
use crate::api::wrapped_job::WrappedJob;
use crate::integrations::declarative::config::Integration;
use crate::integrations::wrapped_job::authz::ApiAuthorizer;
use crate::integrations::wrapped_job::kinds::Kinds;
use crate::integrations::{declarative, external_job, wrapped_job};
use crate::jobframework::events::EventSink;
use crate::jobframework::reconciler::{self, Config, Context, Error};
use crate::jobframework::watches;
use metrics::Metrics;
use queues::QueueCache;
use server::ServerState;

/// The metrics label of reconciles of kinds integrated by configuration.
const CONFIGURED: &str = "configured";

/// The metrics label of the ExternalJob runtime's reconciles (pods and status).
const EXTERNAL_JOB_PODS: &str = "ExternalJob pods";

/// Reconciles in flight per controller. Unbounded, a burst of a thousand jobs queued our
/// requests behind the API server's priority-and-fairness seats (seconds per call, 429s) and
/// slowed Kueue's own requests in the same priority level; a few dozen keep the server busy.
const CONCURRENT_RECONCILES: u16 = 32;

/// Reconciles in flight in the ExternalJob runtime. Fewer than the jobframework's: pods wait a
/// little (kube-controller-manager's Job controller runs 5), Workloads of new jobs do not.
const CONCURRENT_POD_RECONCILES: u16 = 8;

/// Jobs a shared watch holds for a controller that has not taken them yet.
const SHARED_FEED_BUFFER: usize = 1024;

/// Name under which the controller writes events.
pub const MANAGER: &str = "kueue-ext-controller";

pub struct Options {
    pub client: Client,
    /// Address of the HTTPS server (webhooks, health, metrics).
    pub listen: SocketAddr,
    /// Directory with `tls.crt` and `tls.key`.
    pub cert_dir: PathBuf,
    pub config: Config,
    /// Reconcile only while holding this Lease (webhooks are served either way).
    pub election: Option<leader::Election>,
    /// Kinds integrated by configuration (`--integrations`).
    pub integrations: Vec<Integration>,
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

/// A controller of the jobs of one kind whose cache leaves managedFields out: no reconcile reads
/// them, and a job written back without them keeps its own on the server.
fn jobs_controller<K>(api: Api<K>, kind: K::DynamicType) -> Controller<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    let writer = reflector::store::Writer::new(kind.clone());
    let reader = writer.as_reader();
    Controller::for_stream_with(reflector::reflector(writer, job_events(api)).applied_objects(), reader, kind)
        .with_config(bounded())
}

/// A watch of jobs for several controllers: its store, and the feed to subscribe them to and
/// then run. Its managedFields are left out, as in [`jobs_controller`].
fn shared_jobs<K>(api: Api<K>) -> (Store<K>, SharedFeed<K>)
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let (store, writer) = reflector::store_shared(SHARED_FEED_BUFFER);
    (store, SharedFeed { api, writer })
}

struct SharedFeed<K: Resource<DynamicType = ()> + Clone + 'static> {
    api: Api<K>,
    writer: reflector::store::Writer<K>,
}

impl<K> SharedFeed<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    /// A stream of the jobs that changed, for one more controller; subscribe all before [`Self::run`].
    fn subscribe(&self) -> reflector::ReflectHandle<K> {
        self.writer.subscribe().expect("a store made by store_shared dispatches")
    }

    /// Watches until the process ends. A subscriber that does not keep up holds the others back.
    async fn run(self) {
        reflector::reflector(self.writer, job_events(self.api)).for_each(|_| async {}).await;
    }
}

/// The watch of the jobs of one kind, managedFields left out.
fn job_events<K>(api: Api<K>) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    watches::retrying(api, watcher::Config::default()).modify(|job: &mut K| job.meta_mut().managed_fields = None)
}

/// Runs until SIGINT/SIGTERM.
pub async fn run(options: Options) -> anyhow::Result<()> {
    let client = options.client;
    let integrations: Vec<Arc<Integration>> = options.integrations.into_iter().map(Arc::new).collect();
    let metrics = Arc::new(Metrics::default());
    let queues = QueueCache {
        local_queues: cache(Api::<LocalQueue>::all(client.clone())),
        cluster_queues: cache(Api::<ClusterQueue>::all(client.clone())),
        admission_checks: cache(Api::<AdmissionCheck>::all(client.clone())),
        client: client.clone(),
    };
    // The Workloads of the kinds this process integrates; nothing here acts on others.
    let orphan_kinds: Vec<ApiResource> =
        [ApiResource::erase::<ExternalJob>(&()), ApiResource::erase::<WrappedJob>(&())]
            .into_iter()
            .chain(integrations.iter().map(|i| i.api_resource()))
            .collect();
    let our_workloads = workloads::watch(client.clone(), orphan_kinds.clone());
    let workloads = our_workloads.store.clone();
    let workload_changes = our_workloads.changes.clone();
    // Component kinds, looked up by the webhook and the controller alike.
    let kinds = Arc::new(Kinds::new(client.clone()));
    let state = Arc::new(ServerState {
        config: options.config.clone(),
        queues: Some(queues.clone()),
        metrics: metrics.clone(),
        authorizer: Arc::new(ApiAuthorizer::new(client.clone(), kinds.clone())),
        ready: Default::default(),
        integrations: integrations.clone(),
    });

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let router = server::router(state.clone());
    let (listen, cert_dir, shutdown) = (options.listen, options.cert_dir.clone(), stopped(stop_rx.clone()));
    let server = on_own_thread("webhooks", async move { server::serve(listen, &cert_dir, router, shutdown).await })?;

    // The webhooks read only the queue caches: they serve as soon as those hold, without waiting
    // for the Workloads (thousands on a busy cluster). While they refuse, the API server refuses
    // every job of our kinds, MultiKueue's copies on a worker included.
    for (what, ready) in [
        ("LocalQueues", queues.local_queues.wait_until_ready().await.is_ok()),
        ("ClusterQueues", queues.cluster_queues.wait_until_ready().await.is_ok()),
        ("AdmissionChecks", queues.admission_checks.wait_until_ready().await.is_ok()),
    ] {
        anyhow::ensure!(ready, "the {what} cache never synced");
    }
    state.ready.store(true, Ordering::Relaxed);
    info!(listen = %options.listen, "queue caches synced; serving webhooks");
    anyhow::ensure!(workloads.wait_until_ready().await.is_ok(), "the Workloads cache never synced");

    // Every replica answers admissions; only the Lease holder writes.
    let mut lost_lease = None;
    if let Some(election) = &options.election {
        info!(identity = %election.identity, lease = leader::LEASE, "waiting to lead");
        let (leading, renewer) = leader::lead(client.clone(), election).await?;
        info!(identity = %election.identity, "leading");
        lost_lease = Some((leading, renewer));
    }
    let lease_lost = async move {
        match lost_lease {
            Some((mut leading, _renewer)) => {
                let _ = leading.wait_for(|leads| !*leads).await;
            }
            None => std::future::pending::<()>().await,
        }
    };

    let ctx = Arc::new(Context {
        client: client.clone(),
        config: options.config,
        workloads,
        flavors: cache(Api::<ResourceFlavor>::all(client.clone())),
        events: EventSink::start(client.clone(), Reporter { controller: MANAGER.into(), instance: None }),
        multikueue: Default::default(),
    });
    let reconciled = {
        let metrics = metrics.clone();
        move |kind: &'static str, result: &Result<Action, Error>, started: Instant| {
            metrics.reconciled(kind, result.is_ok(), started.elapsed());
        }
    };
    // One watch of ExternalJobs feeds two controllers, as kube-controller-manager's Job
    // controller and Kueue's job reconciler run apart: the jobframework keeps the Workloads, the
    // runtime runs the pods. With slots of their own, a burst of jobs gets its Workloads (and
    // its place in the queues) without waiting behind the pods of those already admitted.
    let (external_job_store, external_job_feed) = shared_jobs(Api::<ExternalJob>::all(client.clone()));
    let integration = Controller::for_shared_stream(external_job_feed.subscribe(), external_job_store.clone())
        .with_config(bounded())
        .owns_stream(workload_changes.subscribe(ApiResource::erase::<ExternalJob>(&())))
        .graceful_shutdown_on(stopped(stop_rx.clone()))
        .run(
            {
                let reconciled = reconciled.clone();
                move |job: Arc<ExternalJob>, ctx: Arc<Context>| {
                    let reconciled = reconciled.clone();
                    async move {
                        let started = Instant::now();
                        let result = reconciler::reconcile(job.as_ref(), &ctx).await;
                        reconciled("ExternalJob", &result, started);
                        result
                    }
                }
            },
            error_policy,
            ctx.clone(),
        )
        .for_each(|_| async {});
    let runtime = Controller::for_shared_stream(external_job_feed.subscribe(), external_job_store)
        .with_config(runtime_controller::Config::default().concurrency(CONCURRENT_POD_RECONCILES));
    let (runtime, pod_cache) = external_job::pod_cache::watch(runtime, &client);
    let pod_cache = Arc::new(pod_cache);
    tokio::spawn(external_job_feed.run());
    let runtime = runtime
        .graceful_shutdown_on(stopped(stop_rx.clone()))
        .run(
            {
                let reconciled = reconciled.clone();
                move |job: Arc<ExternalJob>, ctx: Arc<Context>| {
                    let (reconciled, pod_cache) = (reconciled.clone(), pod_cache.clone());
                    async move {
                        let started = Instant::now();
                        let result = external_job::runtime::reconcile(&job, &ctx.client, &pod_cache).await;
                        reconciled(EXTERNAL_JOB_PODS, &result, started);
                        result
                    }
                }
            },
            error_policy,
            ctx.clone(),
        )
        .for_each(|_| async {});
    let reconciled_configured = reconciled.clone();
    let wrapped_jobs = jobs_controller(Api::<WrappedJob>::all(client.clone()), ())
        .owns_stream(workload_changes.subscribe(ApiResource::erase::<WrappedJob>(&())));
    // Components of the kinds every cluster serves are watched; others are looked at on a timer.
    let (wrapped_jobs, component_caches) = wrapped_job::watched::watch(wrapped_jobs, &client);
    let wrapped_jobs = wrapped_jobs
        .graceful_shutdown_on(stopped(stop_rx.clone()))
        .run(
            move |job: Arc<WrappedJob>, ctx: Arc<Context>| {
                let (kinds, caches, reconciled) = (kinds.clone(), component_caches.clone(), reconciled.clone());
                async move {
                    let started = Instant::now();
                    let result = wrapped_job::controller::reconcile(&job, &ctx, &kinds, &caches).await;
                    reconciled("WrappedJob", &result, started);
                    result
                }
            },
            error_policy,
            ctx.clone(),
        )
        .for_each(|_| async {});
    let configured_jobs = futures::future::join_all(integrations.iter().map(|integration| {
        let resource = integration.api_resource();
        let kind = integration.gvk().kind;
        info!(%kind, "integrated by configuration");
        let (integration, reconciled) = (integration.clone(), reconciled_configured.clone());
        jobs_controller(Api::<DynamicObject>::all_with(client.clone(), &resource), resource)
            .owns_stream(workload_changes.subscribe(integration.api_resource()))
            .graceful_shutdown_on(stopped(stop_rx.clone()))
            .run(
                move |job: Arc<DynamicObject>, ctx: Arc<Context>| {
                    let (integration, reconciled) = (integration.clone(), reconciled.clone());
                    async move {
                        let started = Instant::now();
                        let result = declarative::controller::reconcile(&job, &integration, &ctx).await;
                        reconciled(CONFIGURED, &result, started);
                        result
                    }
                },
                error_policy,
                ctx.clone(),
            )
            .for_each(|_| async {})
    }));
    let orphans = Controller::for_stream(our_workloads.deleting, our_workloads.store)
        .with_config(bounded())
        .graceful_shutdown_on(stopped(stop_rx.clone()))
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

    let signal = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        Ok::<_, std::io::Error>(())
    };
    let outcome = tokio::select! {
        _ = async { tokio::join!(integration, runtime, wrapped_jobs, configured_jobs, orphans) } => Ok(()),
        result = signal => { info!("shutting down"); result.map_err(anyhow::Error::from) }
        // Another replica may already be writing: stop at once, as controller-runtime does.
        _ = lease_lost => Err(anyhow::anyhow!("lost the {} Lease; exiting so another replica leads", leader::LEASE)),
    };
    let _ = stop_tx.send(true);
    server.await??;
    outcome
}

/// Runs `task` on a runtime of its own, on a thread of its own. The webhooks run so: an
/// admission request then waits for a core, not behind the reconciles queued on the
/// controllers' runtime, and the API server holds every create of our kinds until it answers.
fn on_own_thread(
    name: &str,
    task: impl Future<Output = anyhow::Result<()>> + Send + 'static,
) -> anyhow::Result<tokio::sync::oneshot::Receiver<anyhow::Result<()>>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (done, finished) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name(name.to_string()).spawn(move || {
        let _ = done.send(runtime.block_on(task));
    })?;
    Ok(finished)
}

fn bounded() -> runtime_controller::Config {
    runtime_controller::Config::default().concurrency(CONCURRENT_RECONCILES)
}

fn error_policy<K>(_: Arc<K>, error: &Error, _: Arc<Context>) -> Action {
    if error.is_conflict() {
        // Someone changed the object since we read it: retry at once with the fresh copy.
        return Action::requeue(Duration::from_millis(100));
    }
    warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(2))
}
