//! How a run ends, as both soaks read it: each job's outcome on the manager, the objects left
//! behind on a cluster, and the manager Workloads not Finished.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Client;
use kube::api::{DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::jobs::{self, Kind, Submitted};
use crate::common::{api, condition_is};

fn jobs_api(client: &Client, kind: Kind) -> kube::Api<DynamicObject> {
    match kind {
        Kind::External => api(client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default")),
        Kind::Wrapped => api(client, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", Some("default")),
        Kind::Batch => api(client, "batch/v1", "Job", "jobs", Some("default")),
    }
}

/// Each job's outcome as the manager's copy says, by UID (`None`: still going), from watches:
/// listing every job every two seconds kept the manager's API server busy at soak size and
/// slowed the very run it waited for.
#[derive(Clone, Default)]
pub struct Outcomes(Arc<Mutex<HashMap<String, Option<bool>>>>);

impl Outcomes {
    /// Watches the manager's jobs of every kind until the returned tasks are aborted.
    pub fn watch(&self, manager: &Client) -> Vec<JoinHandle<()>> {
        Kind::ALL
            .into_iter()
            .map(|kind| {
                let (api, seen) = (jobs_api(manager, kind), self.0.clone());
                tokio::spawn(async move {
                    let mut jobs = watcher(api, watcher::Config::default()).default_backoff().applied_objects().boxed();
                    while let Some(job) = jobs.next().await {
                        let Ok(job) = job else { continue };
                        let job = serde_json::to_value(job).expect("object serializes");
                        let uid = job["metadata"]["uid"].as_str().unwrap_or_default().to_string();
                        seen.lock().unwrap_or_else(PoisonError::into_inner).insert(uid, jobs::outcome(kind, &job));
                    }
                })
            })
            .collect()
    }

    /// The outcome of each of `submitted` as last seen.
    pub fn of(&self, submitted: &[Submitted]) -> Vec<Option<bool>> {
        let seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        submitted.iter().map(|s| seen.get(&s.uid).copied().flatten()).collect()
    }

    /// The outcomes once all are done, or once none has finished for `stall` (`None`: stuck): a
    /// wait that fits any size of run, as long as jobs keep finishing.
    pub async fn settled(&self, submitted: &[Submitted], stall: Duration) -> Vec<Option<bool>> {
        let (mut done_before, mut progressed) = (0, Instant::now());
        loop {
            let now = self.of(submitted);
            let done = now.iter().filter(|o| o.is_some()).count();
            if done > done_before {
                (done_before, progressed) = (done, Instant::now());
            }
            if done == now.len() || progressed.elapsed() >= stall {
                return now;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
}

/// The outcomes of `submitted`, watched from now until they settled ([`Outcomes::settled`]).
pub async fn outcomes(manager: &Client, submitted: &[Submitted], stall: Duration) -> Vec<Option<bool>> {
    let outcomes = Outcomes::default();
    let watches = outcomes.watch(manager);
    let settled = outcomes.settled(submitted, stall).await;
    watches.iter().for_each(|w| w.abort());
    settled
}

/// Objects of ours on a cluster that nothing owns any more, or that still run for a finished
/// job: pods, WrappedJob components and Workloads.
pub async fn orphans_on(client: &Client) -> Result<Vec<String>, String> {
    let list = |api_version: &str, kind: &str, plural: &str, labels: Option<&str>| {
        let api = api(client, api_version, kind, plural, Some("default"));
        let params = labels.map_or_else(ListParams::default, |l| ListParams::default().labels(l));
        async move { api.list(&params).await.map(|l| l.items).map_err(|e| e.to_string()) }
    };
    let mut owners: HashSet<String> = HashSet::new();
    for (api_version, kind, plural) in [
        ("kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs"),
        ("kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs"),
        ("batch/v1", "Job", "jobs"),
        ("apps/v1", "ReplicaSet", "replicasets"),
    ] {
        owners.extend(list(api_version, kind, plural, None).await?.into_iter().filter_map(|o| o.metadata.uid));
    }
    let owner_gone = |o: &DynamicObject| {
        let owner = o.metadata.owner_references.iter().flatten().find(|r| r.controller == Some(true));
        owner.is_some_and(|r| !owners.contains(&r.uid))
    };
    let mut found = Vec::new();
    for selector in ["kueue-ext.dev/job-name", "kueue-ext.dev/wrapped-job"] {
        for pod in list("v1", "Pod", "pods", Some(selector)).await? {
            let phase = pod.data["status"]["phase"].as_str().unwrap_or("Pending").to_string();
            let active = !matches!(phase.as_str(), "Succeeded" | "Failed");
            if active || owner_gone(&pod) {
                found.push(format!("pod {} ({phase})", pod.metadata.name.unwrap_or_default()));
            }
        }
    }
    for deployment in list("apps/v1", "Deployment", "deployments", Some("kueue-ext.dev/wrapped-job")).await? {
        found.push(format!("deployment {} of a finished job", deployment.metadata.name.unwrap_or_default()));
    }
    for job in list("batch/v1", "Job", "jobs", Some("kueue-ext.dev/wrapped-job")).await? {
        if owner_gone(&job) {
            found.push(format!("job {}", job.metadata.name.unwrap_or_default()));
        }
    }
    for wl in list("kueue.x-k8s.io/v1beta2", "Workload", "workloads", None).await? {
        if owner_gone(&wl) {
            found.push(format!("workload {}", wl.metadata.name.unwrap_or_default()));
        }
    }
    Ok(found)
}

/// What `left` finds, once it finds nothing or `timeout` passed, looking every `pause`: the
/// wait of every end-state check, which the cluster may need time to settle into.
pub async fn left_after<F, Fut>(timeout: Duration, pause: Duration, mut left: F) -> Vec<String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let found = left().await;
        if found.is_empty() || Instant::now() >= deadline {
            return found;
        }
        tokio::time::sleep(pause).await;
    }
}

/// Orphans on every one of `clusters` once the garbage collectors had `timeout` to act.
pub async fn orphans(clusters: &[(&str, Client)], timeout: Duration) -> Vec<String> {
    left_after(timeout, Duration::from_secs(3), || async {
        let mut all = Vec::new();
        for (cluster, client) in clusters {
            match orphans_on(client).await {
                Ok(found) => all.extend(found.into_iter().map(|o| format!("{cluster}: {o}"))),
                Err(e) => all.push(format!("{cluster}: cannot list: {e}")),
            }
        }
        all
    })
    .await
}

/// Manager Workloads of the jobs that are not Finished.
pub async fn unfinished_workloads(manager: &Client, submitted: &[Submitted]) -> usize {
    let uids: HashSet<&str> = submitted.iter().map(|s| s.uid.as_str()).collect();
    let workloads =
        crate::common::workloads(manager, "default").list(&ListParams::default()).await.expect("list Workloads");
    let finished: HashSet<String> = workloads
        .items
        .iter()
        .filter(|w| condition_is(&serde_json::to_value(w).expect("serializes"), "Finished", "True"))
        .flat_map(|w| w.metadata.owner_references.iter().flatten().map(|o| o.uid.clone()))
        .collect();
    uids.iter().filter(|uid| !finished.contains(**uid)).count()
}
