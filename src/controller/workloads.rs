//! The Workloads this process acts on, from one watch: those controlled by a kind it integrates.
//! Kueue's own jobs' Workloads (often most of a cluster's) are dropped as they arrive, and
//! managedFields, which no reconcile reads, are cut: the cache costs what our jobs cost. The same
//! watch feeds the reconcilers' cache (`Context::workloads`) and the orphan finalizer, which
//! only ever acts on a Workload being deleted.

use futures::channel::mpsc;
use futures::{StreamExt, future};
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
}

/// Starts the watch; `kinds` are the job kinds this process integrates.
pub fn watch(client: Client, kinds: Vec<ApiResource>) -> OurWorkloads {
    let (reader, writer) = reflector::store();
    let (deleting_tx, deleting) = mpsc::unbounded();
    let events = watcher(Api::<Workload>::all(client), watcher::Config::default())
        .default_backoff()
        .filter_map(move |event| future::ready(keep_ours(event, &kinds)));
    let stream = reflector::reflector(writer, events).applied_objects().for_each(move |workload| {
        if let Ok(workload) = workload
            && workload.metadata.deletion_timestamp.is_some()
        {
            // Nobody listens until this replica leads; deletions are few, so they wait.
            let _ = deleting_tx.unbounded_send(Ok(workload));
        }
        future::ready(())
    });
    tokio::spawn(stream);
    OurWorkloads { store: reader, deleting }
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
}
