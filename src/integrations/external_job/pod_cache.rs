//! The pods of ExternalJobs as the controller sees them: one watch on pods with the job label
//! fills a cache and triggers their job's reconcile. A reconcile reads the cache instead of
//! listing the job's pods through the API server, a LIST on every reconcile that was about a
//! third of the API server's reads while a thousand jobs were admitted. The cache keeps only
//! what a reconcile reads.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateWaiting, ContainerStatus, Pod, PodCondition, PodStatus,
};
use kube::api::Api;
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use super::pods::{JOB_UID_LABEL, ObservedPod, POD_INDEX_LABEL, POD_SET_LABEL};
use crate::api::external_job::ExternalJob;
use crate::jobframework::readiness::Readiness;
use crate::jobframework::watches;

pub struct PodCache {
    store: Store<Pod>,
    listed: Readiness,
}

/// Adds the pod watch to the ExternalJob controller; returns its cache.
pub fn watch(controller: Controller<ExternalJob>, client: &Client) -> (Controller<ExternalJob>, PodCache) {
    let (store, writer) = reflector::store();
    let config = watcher::Config::default().labels(JOB_UID_LABEL);
    let events = watches::retrying(Api::<Pod>::all(client.clone()), config).modify(slim);
    let changes = reflector::reflector(writer, events).touched_objects();
    (controller.owns_stream(changes), PodCache::new(store))
}

/// Identity, owners (they route the pod's changes to its job), our labels, deletion, phase,
/// readiness and, while it is Pending, what tells that its node left it unstarted: what
/// [`ObservedPod`] reads.
fn slim(pod: &mut Pod) {
    let meta = &mut pod.metadata;
    meta.managed_fields = None;
    meta.annotations = None;
    if let Some(labels) = &mut meta.labels {
        labels.retain(|key, _| [JOB_UID_LABEL, POD_SET_LABEL, POD_INDEX_LABEL].contains(&key.as_str()));
    }
    pod.spec = None;
    pod.status = pod.status.take().map(|s| {
        let pending = s.phase.as_deref() == Some("Pending");
        PodStatus {
            conditions: s.conditions.map(|conditions| {
                let kept = conditions
                    .into_iter()
                    .filter(|c| c.type_ == "Ready" || (pending && c.type_ == "PodReadyToStartContainers"));
                kept.map(|c| PodCondition {
                    type_: c.type_,
                    status: c.status,
                    last_transition_time: c.last_transition_time,
                    ..PodCondition::default()
                })
                .collect()
            }),
            container_statuses: s
                .container_statuses
                .filter(|_| pending)
                .map(|statuses| statuses.into_iter().map(slim_container).collect()),
            phase: s.phase,
            ..PodStatus::default()
        }
    });
}

/// Whether a container was created, and whether it waits for a reason, runs or ran.
fn slim_container(status: ContainerStatus) -> ContainerStatus {
    let slim_state = |state: ContainerState| ContainerState {
        running: state.running.map(|_| Default::default()),
        terminated: state.terminated.map(|_| Default::default()),
        waiting: state.waiting.map(|w| ContainerStateWaiting { reason: w.reason, message: None }),
    };
    ContainerStatus {
        container_id: status.container_id,
        state: status.state.map(slim_state),
        last_state: status.last_state.map(slim_state),
        ..ContainerStatus::default()
    }
}

impl PodCache {
    fn new(store: Store<Pod>) -> PodCache {
        let listing = store.clone();
        PodCache { store, listed: Readiness::once(async move { listing.wait_until_ready().await.is_ok() }) }
    }

    /// The pods of the job with this uid, once the cache has listed every pod; `None` if the
    /// watch ended before that (the controller is stopping).
    pub async fn pods_of(&self, namespace: &str, uid: &str) -> Option<Vec<ObservedPod>> {
        if !self.listed.wait().await {
            return None;
        }
        let pods = self.store.state_filter(|p| {
            p.metadata.namespace.as_deref() == Some(namespace)
                && p.labels().get(JOB_UID_LABEL).map(String::as_str) == Some(uid)
        });
        Some(pods.iter().map(|p| ObservedPod::from_pod(p)).collect())
    }
}

#[cfg(test)]
impl PodCache {
    /// A cache that has listed `pods`, as slimmed by the watch.
    pub(super) fn listed(pods: Vec<Pod>) -> PodCache {
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        for mut pod in pods {
            slim(&mut pod);
            writer.apply_watcher_event(&watcher::Event::InitApply(pod));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        PodCache::new(store)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::PodSpec;
    use serde_json::json;

    use super::*;

    fn pod(name: &str, uid: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "labels": {JOB_UID_LABEL: uid}},
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn reconciles_wait_for_the_first_listing_then_read_their_jobs_pods() {
        let (store, mut writer) = reflector::store::<Pod>();
        let cache = Arc::new(PodCache::new(store));
        let waiting: Vec<_> = (0..6)
            .map(|_| {
                let cache = cache.clone();
                tokio::spawn(async move { cache.pods_of("default", "u1").await })
            })
            .collect();
        tokio::task::yield_now().await;
        for event in [
            watcher::Event::Init,
            watcher::Event::InitApply(pod("train-main-0-0", "u1")),
            watcher::Event::InitApply(pod("other-main-0-0", "u2")),
            watcher::Event::InitDone,
        ] {
            writer.apply_watcher_event(&event);
        }
        for waiter in waiting {
            let pods = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("every reconcile wakes");
            let names: Vec<String> = pods.unwrap().unwrap().into_iter().map(|p| p.name).collect();
            assert_eq!(names, ["train-main-0-0"]);
        }
    }

    #[tokio::test]
    async fn a_watch_that_ended_before_listing_reads_nothing() {
        let (store, writer) = reflector::store::<Pod>();
        let cache = PodCache::new(store);
        drop(writer);
        assert_eq!(cache.pods_of("default", "u1").await, None);
    }

    #[test]
    fn slim_keeps_what_a_reconcile_reads() {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": "train-main-0-1", "namespace": "default",
                "labels": {JOB_UID_LABEL: "u1", POD_SET_LABEL: "main", POD_INDEX_LABEL: "0", "team": "a"},
                "annotations": {"note": "long text"},
                "ownerReferences": [{"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
                                     "name": "train", "uid": "u1", "controller": true}],
                "deletionTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {"containers": [{"name": "main"}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "message": "all ready"},
                {"type": "PodScheduled", "status": "True"},
            ]},
        }))
        .unwrap();
        let before = ObservedPod::from_pod(&pod);
        slim(&mut pod);
        assert_eq!(ObservedPod::from_pod(&pod), before);
        assert_eq!(pod.spec, None::<PodSpec>);
        assert_eq!(pod.metadata.annotations, None);
        assert_eq!(pod.labels().len(), 3);
        assert_eq!(pod.owner_references().len(), 1, "owners route the pod's changes to its job");
        assert_eq!(pod.status.unwrap().conditions.unwrap().len(), 1);
    }

    #[test]
    fn slim_keeps_what_tells_a_pod_its_node_left_unstarted() {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "train-main-0-0", "namespace": "default", "labels": {JOB_UID_LABEL: "u1"}},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodReadyToStartContainers", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            ], "containerStatuses": [{
                "name": "main", "image": "busybox", "imageID": "sha256:1", "ready": false, "restartCount": 0,
                "containerID": "containerd://1e14", "lastState": {}, "state": {"waiting": {}},
            }]},
        }))
        .unwrap();
        let before = ObservedPod::from_pod(&pod);
        assert!(before.stranded_since.is_some());
        slim(&mut pod);
        assert_eq!(ObservedPod::from_pod(&pod), before);
        let status = pod.status.unwrap();
        assert_eq!(status.container_statuses.unwrap()[0].image, "", "only what tells the state is kept");
    }
}
