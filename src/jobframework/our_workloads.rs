//! The Workloads this process acts on, from one watch: those controlled by a kind it integrates.
//! Kueue's own jobs' Workloads (often most of a cluster's) are dropped as they arrive, and
//! managedFields, which no reconcile reads, are cut: the cache costs what our jobs cost. The same
//! watch feeds the reconcilers' cache (`Context::workloads`), triggers each kind's controller
//! when one of its Workloads changes (one watch decoding every Workload, where a watch per
//! controller decoded each one once per integrated kind), and the orphan finalizer, which only
//! ever acts on a Workload being deleted.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::{Stream, StreamExt, future};
use kube::api::{Api, ApiResource};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::runtime::watcher::Event;
use kube::{Client, ResourceExt};

use super::own_writes::OwnWrites;
use super::watches;
use crate::api::kueue::Workload;

pub struct OurWorkloads {
    pub store: Store<Workload>,
    /// Our writes to them, each until the watch brings it back.
    pub own_writes: Arc<OwnWrites<Workload>>,
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

    /// Hands `workload` to the subscriber of the kind that controls it (our Workloads have one
    /// controller owner; `owns` would trigger every owner of the kind); one whose controller
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
    let events = watches::retrying(Api::<Workload>::all(client), watcher::Config::default())
        .filter_map(move |event| future::ready(keep_ours(event, &kinds)));
    let own_writes = Arc::new(OwnWrites::default());
    let mut triggers = Triggers {
        store: reader.clone(),
        deleting: deleting_tx,
        changes: changes.clone(),
        own_writes: own_writes.clone(),
        before: None,
    };
    let stream = reflector::reflector(writer, events).for_each(move |event| {
        if let Ok(event) = &event {
            triggers.after(event);
        }
        future::ready(())
    });
    tokio::spawn(stream);
    OurWorkloads { store: reader, own_writes, deleting, changes }
}

/// Turns what the cache applied into triggers, each sent once the store holds what it
/// announces: a reconcile it starts must not read the version from before the change.
struct Triggers {
    store: Store<Workload>,
    deleting: mpsc::UnboundedSender<Trigger>,
    changes: Changes,
    own_writes: Arc<OwnWrites<Workload>>,
    /// The store as a relist found it: the relist replaces it whole at its end.
    before: Option<Vec<Arc<Workload>>>,
}

impl Triggers {
    /// Called after the store has applied `event`.
    fn after(&mut self, event: &Event<Workload>) {
        match event {
            Event::Apply(workload) => self.applied(workload),
            // A job whose Workload is gone gets a new one.
            Event::Delete(workload) => self.changes.publish(workload),
            Event::Init => self.before = Some(self.store.state()),
            // Buffered by the store until InitDone.
            Event::InitApply(_) => {}
            Event::InitDone => {
                let now = self.store.state();
                let kept: HashSet<ObjectRef<Workload>> = now.iter().map(|w| ObjectRef::from_obj(w.as_ref())).collect();
                // Deleted while the watch was down: no Delete event ever comes for these.
                for gone in self.before.take().unwrap_or_default() {
                    if !kept.contains(&ObjectRef::from_obj(gone.as_ref())) {
                        self.changes.publish(&gone);
                    }
                }
                for workload in &now {
                    self.applied(workload);
                }
            }
        }
    }

    fn applied(&self, workload: &Workload) {
        self.own_writes.seen(workload);
        if workload.metadata.deletion_timestamp.is_some() {
            // Nobody listens until this replica leads; deletions are few, so they wait.
            let _ = self.deleting.unbounded_send(Ok(workload.clone()));
        }
        self.changes.publish(workload);
    }
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

    #[tokio::test]
    async fn a_relist_triggers_once_the_store_holds_it_and_announces_what_vanished_meanwhile() {
        let (reader, mut writer) = reflector::store();
        let (deleting, _) = mpsc::unbounded();
        let changes = Changes::default();
        let mut external = changes.subscribe(kinds()[0].clone());
        let mut triggers = Triggers {
            store: reader,
            deleting,
            changes: changes.clone(),
            own_writes: Default::default(),
            before: None,
        };
        let named = |name: &str, generation: i64| {
            let mut w = workload(Some(("kueue-ext.dev/v1alpha1", "ExternalJob")));
            w.metadata.name = Some(name.into());
            w.metadata.generation = Some(generation);
            w
        };
        let mut apply = |event: Event<Workload>| {
            writer.apply_watcher_event(&event);
            triggers.after(&event);
        };
        apply(Event::Apply(named("kept", 1)));
        apply(Event::Apply(named("deleted-while-down", 1)));
        apply(Event::Init);
        apply(Event::InitApply(named("kept", 2)));
        apply(Event::InitDone);
        drop(changes);
        drop(triggers);
        let seen: Vec<(String, Option<i64>)> =
            external.by_ref().map(|w| w.unwrap()).map(|w| (w.name_any(), w.metadata.generation)).collect().await;
        assert_eq!(
            seen,
            [
                ("kept".to_string(), Some(1)),
                ("deleted-while-down".to_string(), Some(1)),
                // After the relist: what vanished, then what the store now holds, never the
                // relisted object before the store has it.
                ("deleted-while-down".to_string(), Some(1)),
                ("kept".to_string(), Some(2)),
            ]
        );
    }

    #[test]
    fn a_stopped_controller_is_unsubscribed() {
        let changes = Changes::default();
        drop(changes.subscribe(kinds()[0].clone()));
        changes.publish(&workload(Some(("kueue-ext.dev/v1alpha1", "ExternalJob"))));
        assert!(changes.0.lock().unwrap().is_empty());
    }
}
