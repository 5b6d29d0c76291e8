//! How a kind's controllers are started (Kueue's `SetupWithManager`): the shared pieces each
//! kind's `start` is given, and the helpers that keep every controller alike — bounded
//! concurrency, a cache without managedFields, reconciles timed into the metrics, one error
//! policy, and a stop when the process stops.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt, TryStreamExt, future};
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
    let writer = reflector::store::Writer::default();
    (writer.as_reader(), SharedFeed { api, writer, subscribers: Vec::new() })
}

/// Hands every subscriber the job itself, not kube's shared reference to look up in the store:
/// a subscriber that looked up a job deleted meanwhile answered "pending" without asking to be
/// woken, and its controller heard of no job again (a new ExternalJob got no Workload).
pub struct SharedFeed<K: Resource<DynamicType = ()> + Clone + 'static> {
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    subscribers: Vec<mpsc::UnboundedSender<K>>,
}

impl<K> SharedFeed<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    /// The jobs that changed, for one more controller (`Controller::for_stream`); subscribe all
    /// before [`Self::run`].
    pub fn subscribe(&mut self) -> impl Stream<Item = watcher::Result<K>> + Send + 'static {
        let (tx, rx) = mpsc::unbounded();
        self.subscribers.push(tx);
        rx.map(Ok)
    }

    /// Watches until the process ends.
    pub async fn run(self) {
        fan_out(self.writer, job_events(self.api), self.subscribers).await;
    }
}

/// Each job the store takes, handed to every subscriber once the store holds it.
async fn fan_out<K>(
    writer: reflector::store::Writer<K>,
    events: impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send,
    subscribers: Vec<mpsc::UnboundedSender<K>>,
) where
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    reflector::reflector(writer, events)
        .applied_objects()
        .for_each(|job| {
            if let Ok(job) = job {
                for subscriber in &subscribers {
                    let _ = subscriber.unbounded_send(job.clone());
                }
            }
            future::ready(())
        })
        .await;
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

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::ResourceExt;
    use kube::runtime::watcher::Event;

    use super::*;

    fn job(name: &str) -> ConfigMap {
        let mut job = ConfigMap::default();
        job.metadata.name = Some(name.into());
        job.metadata.namespace = Some("default".into());
        job
    }

    #[tokio::test]
    async fn a_subscriber_hears_of_new_jobs_after_one_deleted_before_it_looked() {
        let (events, watch) = mpsc::unbounded();
        let (subscriber, heard) = mpsc::unbounded();
        let writer = reflector::store::Writer::default();
        let store = writer.as_reader();
        tokio::spawn(fan_out(writer, watch, vec![subscriber]));
        // Created and deleted before the subscriber looks, then a new one.
        for event in [Event::Init, Event::InitDone, Event::Apply(job("gone")), Event::Delete(job("gone"))] {
            events.unbounded_send(Ok(event)).unwrap();
        }
        store.wait_until_ready().await.unwrap();
        events.unbounded_send(Ok(Event::Apply(job("new")))).unwrap();

        let names: Vec<String> =
            tokio::time::timeout(Duration::from_secs(10), heard.take(2).map(|job| job.name_any()).collect())
                .await
                .expect("the subscriber hears of both jobs");
        assert_eq!(names, ["gone", "new"]);
    }
}
