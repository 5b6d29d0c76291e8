//! The Workloads this process acts on, from one watch: those controlled by a kind it integrates.
//! Kueue's own jobs' Workloads (often most of a cluster's) are dropped as they arrive, and
//! managedFields, which no reconcile reads, are cut: the cache costs what our jobs cost. The same
//! watch feeds the reconcilers' cache (`Context::workloads`), triggers each kind's controller
//! when one of its Workloads changes (one watch decoding every Workload, where a watch per
//! controller decoded each one once per integrated kind), and the orphan finalizer, which only
//! ever acts on a Workload being deleted.

use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::{Stream, StreamExt, future};
use kube::api::{Api, ApiResource};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::Event;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use crate::api::kueue::Workload;

pub struct OurWorkloads {
    pub store: Store<Workload>,
    /// Our Workloads as they get a deletionTimestamp.
    pub deleting: mpsc::UnboundedReceiver<Result<Workload, watcher::Error>>,
    pub changes: Changes,
}

type Trigger = Result<Workload, watcher::Error>;

/// A controller's kind, and where its triggers go.
type Subscriber = (ApiResource, mpsc::UnboundedSender<Trigger>);

/// Controllers subscribed to the changes of their kind's Workloads.
#[derive(Clone, Default)]
pub struct Changes(Arc<Mutex<Vec<Subscriber>>>);

impl Changes {
    /// Workloads controlled by a `kind` from now on, as they are applied or deleted: the
    /// trigger stream of that kind's controller (`Controller::owns_stream`). A controller
    /// subscribes once it leads, so a standby replica queues nothing.
    pub fn subscribe(&self, kind: ApiResource) -> impl Stream<Item = Trigger> + Send + 'static {
        let (tx, rx) = mpsc::unbounded();
        self.0.lock().expect("subscribers lock").push((kind, tx));
        rx
    }

    /// Hands `workload` to the subscriber of the kind that controls it; one whose controller
    /// has stopped is dropped.
    fn publish(&self, workload: &Workload) {
        let Some(owner) = workload.owner_references().iter().find(|o| o.controller == Some(true)) else {
            return;
        };
        self.0.lock().expect("subscribers lock").retain(|(kind, tx)| {
            if kind.kind != owner.kind || kind.api_version != owner.api_version {
                return !tx.is_closed();
            }
            tx.unbounded_send(Ok(workload.clone())).is_ok()
        });
    }
}

/// Starts the watch; `kinds` are the job kinds this process integrates.
pub fn watch(client: Client, kinds: Vec<ApiResource>) -> OurWorkloads {
    let (reader, writer) = reflector::store();
    let (deleting_tx, deleting) = mpsc::unbounded();
    let changes = Changes::default();
    // Short retries: the controllers' Workload triggers come from this watch.
    let events = watcher(Api::<Workload>::all(client), watcher::Config::default())
        .backoff(super::backoff::TriggerBackoff::default())
        .filter_map(move |event| future::ready(keep_ours(event, &kinds)));
    let subscribers = changes.clone();
    let stream = reflector::reflector(writer, events).for_each(move |event| {
        match &event {
            Ok(Event::Apply(workload) | Event::InitApply(workload)) => {
                if workload.metadata.deletion_timestamp.is_some() {
                    // Nobody listens until this replica leads; deletions are few, so they wait.
                    let _ = deleting_tx.unbounded_send(Ok(workload.clone()));
                }
                subscribers.publish(workload);
            }
            // A job whose Workload is gone gets a new one.
            Ok(Event::Delete(workload)) => subscribers.publish(workload),
            _ => {}
        }
        future::ready(())
    });
    tokio::spawn(stream);
    OurWorkloads { store: reader, deleting, changes }
}

/// Ours enter slimmed; others never enter, and one that stops being ours leaves.
fn keep_ours(
    event: Result<Event<Workload>, watcher::Error>,
    kinds: &[ApiResource],
) -> Option<Result<Event<Workload>, watcher::Error>> {
    match event {
        Ok(Event::Apply(w)) if is_ours(&w, kinds) => Some(Ok(Event::Apply(slim(w)))),
        Ok(Event::Apply(w)) => Some(Ok(Event::Delete(w))),
        Ok(Event::InitApply(w)) => is_ours(&w, kinds).then(|| Ok(Event::InitApply(slim(w)))),
        other => Some(other),
    }
}

fn is_ours(workload: &Workload, kinds: &[ApiResource]) -> bool {
    workload.owner_references().iter().any(|owner| {
        owner.controller == Some(true)
            && kinds.iter().any(|k| k.kind == owner.kind && k.api_version == owner.api_version)
    })
}

fn slim(mut workload: Workload) -> Workload {
    workload.metadata.managed_fields = None;
    workload
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workload(owner: Option<(&str, &str)>) -> Workload {
        let mut value = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "default",
                         "managedFields": [{"manager": "kueue", "operation": "Apply"}]},
            "spec": {"queueName": "user-queue", "podSets": []}});
        if let Some((api_version, kind)) = owner {
            value["metadata"]["ownerReferences"] =
                json!([{"apiVersion": api_version, "kind": kind, "name": "j", "uid": "u", "controller": true}]);
        }
        serde_json::from_value(value).unwrap()
    }

    fn kinds() -> Vec<ApiResource> {
        vec![ApiResource::erase::<crate::api::external_job::ExternalJob>(&())]
    }

    #[test]
    fn only_workloads_of_integrated_kinds_are_kept_and_slimmed() {
        let ours = workload(Some(("kueue-ext.dev/v1alpha1", "ExternalJob")));
        let kept = keep_ours(Ok(Event::InitApply(ours.clone())), &kinds());
        assert!(matches!(kept, Some(Ok(Event::InitApply(w))) if w.metadata.managed_fields.is_none()));
        let batch = workload(Some(("batch/v1", "Job")));
        assert!(keep_ours(Ok(Event::InitApply(batch.clone())), &kinds()).is_none());
        assert!(keep_ours(Ok(Event::InitApply(workload(None))), &kinds()).is_none());
        // One that is no longer ours leaves the cache.
        assert!(matches!(keep_ours(Ok(Event::Apply(batch)), &kinds()), Some(Ok(Event::Delete(_)))));
        assert!(matches!(keep_ours(Ok(Event::InitDone), &kinds()), Some(Ok(Event::InitDone))));
    }

    #[tokio::test]
    async fn a_workload_change_reaches_the_controller_of_its_kind_only() {
        let changes = Changes::default();
        let mut external = changes.subscribe(kinds()[0].clone());
        let mut wrapped = changes.subscribe(ApiResource::erase::<crate::api::wrapped_job::WrappedJob>(&()));
        changes.publish(&workload(Some(("kueue-ext.dev/v1alpha1", "ExternalJob"))));
        changes.publish(&workload(Some(("batch/v1", "Job"))));
        changes.publish(&workload(None));
        let got = external.next().await.expect("the ExternalJob controller is triggered").unwrap();
        assert_eq!(got.owner_references()[0].kind, "ExternalJob");
        drop(changes);
        assert!(external.next().await.is_none(), "nothing else reached the ExternalJob controller");
        assert!(wrapped.next().await.is_none(), "nothing reached the WrappedJob controller");
    }

    #[test]
    fn a_stopped_controller_is_unsubscribed() {
        let changes = Changes::default();
        drop(changes.subscribe(kinds()[0].clone()));
        changes.publish(&workload(Some(("kueue-ext.dev/v1alpha1", "ExternalJob"))));
        assert!(changes.0.lock().unwrap().is_empty());
    }
}
