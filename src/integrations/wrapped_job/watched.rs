//! What the WrappedJob controller sees of components and pods: one watch per component kind
//! every cluster serves, and one on pods, all selected by the job label. Each watch fills a
//! cache and triggers the job's reconcile, so `components::observe` reads memory instead of
//! listing through the API on every reconcile. The caches keep only what `observe` reads.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures::Stream;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::batch::v1::{Job as BatchJob, JobStatus};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::api::wrapped_job::{COMPONENT_INDEX_ANNOTATION, WRAPPED_JOB_LABEL, WrappedJob};
use crate::jobframework::own_writes::KEPT_FOR;
use crate::jobframework::readiness::Readiness;
use crate::jobframework::watches;

/// Cut an object down to what `observe` reads: identity, owners, labels, the component-index
/// annotation, deletion, and the status fields that tell how it is doing.
pub trait Slim {
    fn slim(&mut self);
}

fn slim_metadata(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(annotations) = &mut meta.annotations {
        annotations.retain(|key, _| key == COMPONENT_INDEX_ANNOTATION);
    }
}

impl Slim for BatchJob {
    fn slim(&mut self) {
        slim_metadata(&mut self.metadata);
        self.spec = None;
        self.status = self.status.take().map(|s| JobStatus { conditions: s.conditions, ..JobStatus::default() });
    }
}

impl Slim for Deployment {
    fn slim(&mut self) {
        slim_metadata(&mut self.metadata);
        self.spec = None;
        self.status =
            self.status.take().map(|s| DeploymentStatus { conditions: s.conditions, ..DeploymentStatus::default() });
    }
}

impl Slim for StatefulSet {
    fn slim(&mut self) {
        slim_metadata(&mut self.metadata);
        self.spec = None;
        self.status =
            self.status.take().map(|s| StatefulSetStatus { conditions: s.conditions, ..StatefulSetStatus::default() });
    }
}

impl Slim for Service {
    fn slim(&mut self) {
        slim_metadata(&mut self.metadata);
        self.spec = None;
        self.status = None;
    }
}

impl Slim for Pod {
    fn slim(&mut self) {
        slim_metadata(&mut self.metadata);
        self.spec = None;
        self.status = self.status.take().map(|s| PodStatus {
            phase: s.phase,
            reason: s.reason,
            message: s.message,
            container_statuses: s.container_statuses.map(|containers| {
                containers
                    .into_iter()
                    .map(|c| ContainerStatus { name: c.name, state: c.state, ..ContainerStatus::default() })
                    .collect()
            }),
            ..PodStatus::default()
        });
    }
}

/// The caches; each is complete once [`Caches::synced`] says so.
pub struct Caches {
    jobs: Store<BatchJob>,
    deployments: Store<Deployment>,
    stateful_sets: Store<StatefulSet>,
    services: Store<Service>,
    pods: Store<Pod>,
    /// Ready once every store has listed; never if a watch ends before that.
    synced: Readiness,
    /// Components this controller created, by job UID and index, until their watch brings them.
    created: Mutex<HashMap<(String, usize), (DynamicObject, Instant)>>,
}

/// A cache of `K` labelled for some WrappedJob, and the watch that fills it, to be driven by
/// the controller it triggers.
fn watched<K>(client: &Client) -> (Store<K>, impl Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Slim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let config = watcher::Config::default().labels(WRAPPED_JOB_LABEL);
    let events = watches::retrying(Api::<K>::all(client.clone()), config).modify(K::slim);
    (reader, reflector::reflector(writer, events).touched_objects())
}

/// Adds the component and pod watches to the WrappedJob controller; returns their caches.
pub fn watch(controller: Controller<WrappedJob>, client: &Client) -> (Controller<WrappedJob>, Arc<Caches>) {
    let (jobs, job_changes) = watched::<BatchJob>(client);
    let (deployments, deployment_changes) = watched::<Deployment>(client);
    let (stateful_sets, stateful_set_changes) = watched::<StatefulSet>(client);
    let (services, service_changes) = watched::<Service>(client);
    let (pods, pod_changes) = watched::<Pod>(client);
    let controller = controller
        .owns_stream(job_changes)
        .owns_stream(deployment_changes)
        .owns_stream(stateful_set_changes)
        .owns_stream(service_changes)
        // Pods of components (and Pod components) name their job by label.
        .watches_stream(pod_changes, |pod: Pod| {
            let job = pod.labels().get(WRAPPED_JOB_LABEL)?.clone();
            Some(ObjectRef::new(&job).within(&pod.namespace()?))
        });
    (controller, Arc::new(Caches::new(jobs, deployments, stateful_sets, services, pods)))
}

fn labelled_for<K: Resource<DynamicType = ()> + Clone>(store: &Store<K>, namespace: &str, job: &str) -> Vec<Arc<K>> {
    store.state_filter(|o| {
        let meta = o.meta();
        meta.namespace.as_deref() == Some(namespace)
            && meta.labels.as_ref().and_then(|l| l.get(WRAPPED_JOB_LABEL)).map(String::as_str) == Some(job)
    })
}

/// Cached objects as `observe` reads every kind.
fn dynamic<K: serde::Serialize>(objects: Vec<Arc<K>>) -> Vec<DynamicObject> {
    objects.iter().filter_map(|o| serde_json::from_value(serde_json::to_value(o.as_ref()).ok()?).ok()).collect()
}

impl Caches {
    fn new(
        jobs: Store<BatchJob>,
        deployments: Store<Deployment>,
        stateful_sets: Store<StatefulSet>,
        services: Store<Service>,
        pods: Store<Pod>,
    ) -> Self {
        let stores = (jobs.clone(), deployments.clone(), stateful_sets.clone(), services.clone(), pods.clone());
        let synced = Readiness::once(async move {
            stores.0.wait_until_ready().await.is_ok()
                && stores.1.wait_until_ready().await.is_ok()
                && stores.2.wait_until_ready().await.is_ok()
                && stores.3.wait_until_ready().await.is_ok()
                && stores.4.wait_until_ready().await.is_ok()
        });
        Caches { jobs, deployments, stateful_sets, services, pods, synced, created: Mutex::default() }
    }

    /// Waits until every cache has listed once: before that a component would look missing.
    /// `false` if a watch ended first.
    pub async fn synced(&self) -> bool {
        self.synced.wait().await
    }

    /// The objects of this kind labelled for `job`; `None` for a kind not cached here.
    pub fn components(&self, api_version: &str, kind: &str, namespace: &str, job: &str) -> Option<Vec<DynamicObject>> {
        Some(match (api_version, kind) {
            ("batch/v1", "Job") => dynamic(labelled_for(&self.jobs, namespace, job)),
            ("apps/v1", "Deployment") => dynamic(labelled_for(&self.deployments, namespace, job)),
            ("apps/v1", "StatefulSet") => dynamic(labelled_for(&self.stateful_sets, namespace, job)),
            ("v1", "Service") => dynamic(labelled_for(&self.services, namespace, job)),
            ("v1", "Pod") => dynamic(labelled_for(&self.pods, namespace, job)),
            _ => return None,
        })
    }

    /// Records component `index` of the job `job_uid` as the API server answered its create: until
    /// the watch brings it, a reconcile would find it missing and create it again (refused as
    /// already there, each try through the cluster's webhooks).
    pub fn created(&self, job_uid: &str, index: usize, object: DynamicObject) {
        let mut created = self.created.lock().unwrap_or_else(PoisonError::into_inner);
        created.retain(|_, (_, at)| at.elapsed() < KEPT_FOR);
        created.insert((job_uid.to_string(), index), (object, Instant::now()));
    }

    /// The watch has brought component `index` of `job_uid`, or it is being deleted: the cache
    /// alone tells of it from now on.
    pub fn forget_created(&self, job_uid: &str, index: usize) {
        self.created.lock().unwrap_or_else(PoisonError::into_inner).remove(&(job_uid.to_string(), index));
    }

    /// The component recorded by [`Caches::created`] lately, if any.
    pub fn just_created(&self, job_uid: &str, index: usize) -> Option<DynamicObject> {
        let created = self.created.lock().unwrap_or_else(PoisonError::into_inner);
        let (object, at) = created.get(&(job_uid.to_string(), index))?;
        (at.elapsed() < KEPT_FOR).then(|| object.clone())
    }

    /// The pods labelled for `job`.
    pub fn pods(&self, namespace: &str, job: &str) -> Vec<Arc<Pod>> {
        labelled_for(&self.pods, namespace, job)
    }
}

/// Caches that have listed and hold nothing, for reconcile tests.
#[cfg(test)]
pub fn listed_empty() -> Caches {
    fn listed<K: Resource<DynamicType = ()> + Clone + 'static>() -> Store<K> {
        let (reader, mut writer) = reflector::store::<K>();
        writer.apply_watcher_event(&watcher::Event::InitDone);
        reader
    }
    Caches::new(listed(), listed(), listed(), listed(), listed())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kube::runtime::reflector::store::Writer;

    use super::*;

    fn listed<K>(writer: &mut Writer<K>)
    where
        K: Resource<DynamicType = ()> + Clone + 'static,
    {
        writer.apply_watcher_event(&watcher::Event::InitDone);
    }

    #[tokio::test]
    async fn every_reconcile_waiting_for_the_caches_is_released_once_they_listed() {
        let (jobs, mut jobs_writer) = reflector::store::<BatchJob>();
        let (deployments, mut deployments_writer) = reflector::store::<Deployment>();
        let (stateful_sets, mut stateful_sets_writer) = reflector::store::<StatefulSet>();
        let (services, mut services_writer) = reflector::store::<Service>();
        let (pods, mut pods_writer) = reflector::store::<Pod>();
        let caches = Arc::new(Caches::new(jobs, deployments, stateful_sets, services, pods));
        // Separate tasks, as the controller's reconciles are: each has its own waker.
        let waiting: Vec<_> = (0..6)
            .map(|_| {
                let caches = caches.clone();
                tokio::spawn(async move { caches.synced().await })
            })
            .collect();
        tokio::task::yield_now().await;
        listed(&mut jobs_writer);
        listed(&mut deployments_writer);
        listed(&mut stateful_sets_writer);
        listed(&mut services_writer);
        listed(&mut pods_writer);
        for waiter in waiting {
            let synced = tokio::time::timeout(Duration::from_secs(10), waiter).await;
            assert!(matches!(synced, Ok(Ok(true))), "a reconcile stayed waiting: {synced:?}");
        }
    }

    #[tokio::test]
    async fn caches_whose_watch_ended_before_listing_are_never_synced() {
        let (jobs, jobs_writer) = reflector::store::<BatchJob>();
        let (deployments, _d) = reflector::store::<Deployment>();
        let (stateful_sets, _s) = reflector::store::<StatefulSet>();
        let (services, _v) = reflector::store::<Service>();
        let (pods, _p) = reflector::store::<Pod>();
        let caches = Caches::new(jobs, deployments, stateful_sets, services, pods);
        drop(jobs_writer);
        assert!(!caches.synced().await);
    }
}
