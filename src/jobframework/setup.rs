//! How a kind's controllers are started (Kueue's `SetupWithManager`): the shared pieces each
//! kind's `start` is given, and the helpers that keep every controller alike — bounded
//! concurrency, a cache without managedFields, reconciles timed into the metrics, one error
//! policy, and a stop when the process stops.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt, TryStreamExt};
use kube::api::Api;
use kube::runtime::controller::{self as runtime_controller, Action, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tracing::warn;

use super::our_workloads::Changes;
use super::reconciler::{Context, Error};
use super::watches;

/// Reconciles in flight per controller. Unbounded, a burst of a thousand jobs queued our
/// requests behind the API server's priority-and-fairness seats (seconds per call, 429s) and
/// slowed Kueue's own requests in the same priority level; a few dozen keep the server busy.
const CONCURRENT_RECONCILES: u16 = 32;

/// Jobs a shared watch holds for a controller that has not taken them yet.
const SHARED_FEED_BUFFER: usize = 1024;

/// Records one reconcile: the controller's label, whether it succeeded, how long it took.
pub type Record = Arc<dyn Fn(&'static str, bool, Duration) + Send + Sync>;

/// What every kind's controllers are started with.
#[derive(Clone)]
pub struct Setup {
    pub client: Client,
    pub ctx: Arc<Context>,
    /// Changes of the Workloads of our kinds, for each controller to subscribe to its own.
    pub workload_changes: Changes,
    stop: watch::Receiver<bool>,
    record: Record,
}

impl Setup {
    pub fn new(ctx: Arc<Context>, workload_changes: Changes, stop: watch::Receiver<bool>, record: Record) -> Setup {
        Setup { client: ctx.client.clone(), ctx, workload_changes, stop, record }
    }

    /// Resolves once the process is stopping.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        stopped(self.stop.clone())
    }

    /// Runs `controller` with `reconcile` until the process stops, each reconcile timed into
    /// the metrics under `label`.
    pub fn run<K, F, Fut>(&self, controller: Controller<K>, label: &'static str, reconcile: F) -> BoxFuture<'static, ()>
    where
        K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
        K::DynamicType: Debug + Unpin + Eq + Hash + Clone + Send + Sync,
        F: Fn(Arc<K>, Arc<Context>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, Error>> + Send + 'static,
    {
        let record = self.record.clone();
        let reconcile = Arc::new(reconcile);
        controller
            .graceful_shutdown_on(self.stopped())
            .run(
                move |job: Arc<K>, ctx: Arc<Context>| {
                    let (record, reconcile) = (record.clone(), reconcile.clone());
                    async move {
                        let started = Instant::now();
                        let result = reconcile(job, ctx).await;
                        record(label, result.is_ok(), started.elapsed());
                        result
                    }
                },
                error_policy,
                self.ctx.clone(),
            )
            .for_each(|_| async {})
            .boxed()
    }
}

/// Resolves once `stop` turns true (or its sender is gone).
pub async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

/// A controller of the jobs of one kind whose cache leaves managedFields out: no reconcile reads
/// them, and a job written back without them keeps its own on the server. `seen` is shown each
/// job once its cache holds it.
pub fn jobs_controller<K>(api: Api<K>, kind: K::DynamicType, seen: impl Fn(&K) + Send + Sync + 'static) -> Controller<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let writer = reflector::store::Writer::new(kind.clone());
    let reader = writer.as_reader();
    let applied = reflector::reflector(writer, job_events(api)).applied_objects().inspect_ok(move |job| seen(job));
    Controller::for_stream_with(applied, reader, kind).with_config(bounded())
}

/// A watch of jobs for several controllers: its store, and the feed to subscribe them to and
/// then run. Its managedFields are left out, as in [`jobs_controller`].
pub fn shared_jobs<K>(api: Api<K>) -> (Store<K>, SharedFeed<K>)
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let (store, writer) = reflector::store_shared(SHARED_FEED_BUFFER);
    (store, SharedFeed { api, writer })
}

pub struct SharedFeed<K: Resource<DynamicType = ()> + Clone + 'static> {
    api: Api<K>,
    writer: reflector::store::Writer<K>,
}

impl<K> SharedFeed<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    /// A stream of the jobs that changed, for one more controller; subscribe all before [`Self::run`].
    pub fn subscribe(&self) -> reflector::ReflectHandle<K> {
        self.writer.subscribe().expect("a store made by store_shared dispatches")
    }

    /// Watches until the process ends. A subscriber that does not keep up holds the others back.
    pub async fn run(self) {
        reflector::reflector(self.writer, job_events(self.api)).for_each(|_| async {}).await;
    }
}

/// The watch of the jobs of one kind, managedFields left out.
fn job_events<K>(api: Api<K>) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    watches::retrying(api, watcher::Config::default()).modify(|job: &mut K| job.meta_mut().managed_fields = None)
}

/// A controller's settings: [`CONCURRENT_RECONCILES`] at a time.
pub fn bounded() -> runtime_controller::Config {
    runtime_controller::Config::default().concurrency(CONCURRENT_RECONCILES)
}

pub fn error_policy<K>(_: Arc<K>, error: &Error, _: Arc<Context>) -> Action {
    if error.is_conflict() {
        // Someone changed the object since we read it: retry at once with the fresh copy.
        return Action::requeue(Duration::from_millis(100));
    }
    warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(2))
}
