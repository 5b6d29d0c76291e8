//! What really happened, from watches on every cluster kept for the whole run: every pod of a
//! job's work, every Workload, every WrappedJob component and every job copy (batch Jobs
//! included), by UID. Objects that MultiKueue or the garbage collector delete later stay in the
//! ledger, so a job that ran twice is caught even after its copies are gone.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::task::JoinHandle;

use kueue_ext::jobframework::multikueue_nudge::RETRY_ANNOTATION;
use kueue_ext::jobframework::watches::RetryBackoff;

use super::jobs::{Kind, Submitted};

/// One object as last seen; `succeeded` stays set once a pod was seen Succeeded, `nudged` once
/// a Workload was seen with our MultiKueue nudge's annotation.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub uid: String,
    pub cluster: String,
    pub kind: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// UID of its controller owner.
    pub owner: Option<String>,
    pub succeeded: bool,
    /// A pod that failed before any of its containers ran (`StartError`: the node could not
    /// start it): the node's doing, not the job's.
    pub never_started: bool,
    pub nudged: bool,
    /// Its creationTimestamp, in seconds since the epoch.
    pub created: Option<i64>,
    /// Its resourceVersion as last seen.
    pub version: Option<String>,
}

#[derive(Clone, Default)]
pub struct Ledger {
    /// By object UID (unique across clusters).
    seen: Arc<Mutex<HashMap<String, Seen>>>,
}

const EXTERNAL_JOB_POD: &str = "kueue-ext.dev/job-name";
const WRAPPED_JOB_LABEL: &str = "kueue-ext.dev/wrapped-job";
/// Set by the batch Job controller on the pods of a Job: tells a WrappedJob's work pods from
/// its Deployment's, and finds the peer batch Jobs' pods.
const BATCH_JOB_POD: &str = "batch.kubernetes.io/job-name";

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// What the ledger watches on each cluster: `(resource, label selector)`.
fn watched() -> Vec<(ApiResource, Option<&'static str>)> {
    vec![
        (resource("v1", "Pod", "pods"), Some(EXTERNAL_JOB_POD)),
        (resource("v1", "Pod", "pods"), Some(WRAPPED_JOB_LABEL)),
        (resource("v1", "Pod", "pods"), Some(BATCH_JOB_POD)),
        (resource("kueue.x-k8s.io/v1beta2", "Workload", "workloads"), None),
        (resource("batch/v1", "Job", "jobs"), None),
        (resource("apps/v1", "Deployment", "deployments"), Some(WRAPPED_JOB_LABEL)),
        (resource("kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs"), None),
        (resource("kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs"), None),
    ]
}

impl Ledger {
    /// Starts the watches on `cluster`; they run (resuming after any API server restart) until
    /// the returned tasks are aborted.
    pub fn watch(&self, cluster: &str, client: &Client) -> Vec<JoinHandle<()>> {
        watched()
            .into_iter()
            .map(|(resource, labels)| {
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
                let config = match labels {
                    Some(selector) => watcher::Config::default().labels(selector),
                    None => watcher::Config::default(),
                };
                let (ledger, cluster, kind) = (self.clone(), cluster.to_string(), resource.kind.clone());
                tokio::spawn(async move {
                    // Back within 2 s of an API server's return, as our controller is: a pod that
                    // succeeds and is collected while the watch waits is never seen succeeding.
                    let mut objects = watcher(api, config).backoff(RetryBackoff::default()).applied_objects().boxed();
                    while let Some(next) = objects.next().await {
                        if let Ok(object) = next {
                            ledger.record(&cluster, &kind, &object);
                        }
                    }
                })
            })
            .collect()
    }

    pub fn record(&self, cluster: &str, kind: &str, object: &DynamicObject) {
        let Some(uid) = object.uid() else { return };
        let owner = object.owner_references().iter().find(|o| o.controller == Some(true)).map(|o| o.uid.clone());
        let succeeded = kind == "Pod" && object.data["status"]["phase"] == "Succeeded";
        let never_started = kind == "Pod" && never_started(&object.data["status"]);
        let nudged = kind == "Workload" && object.annotations().contains_key(RETRY_ANNOTATION);
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = seen.entry(uid.clone()).or_default();
        entry.uid = uid;
        entry.cluster = cluster.to_string();
        entry.kind = kind.to_string();
        entry.name = object.name_any();
        entry.labels = object.labels().clone();
        entry.owner = owner.or(entry.owner.take());
        entry.succeeded |= succeeded;
        entry.never_started = never_started;
        entry.nudged |= nudged;
        entry.created = object.creation_timestamp().map(|t| t.0.as_second()).or(entry.created);
        entry.version = object.resource_version();
    }

    /// Of `listed`, objects of `kind` as an API server lists them now, those the ledger has not
    /// seen at that resourceVersion, each told in a line.
    pub fn not_seen_as(&self, kind: &str, listed: &[DynamicObject]) -> Vec<String> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let at = |o: &DynamicObject| o.uid().and_then(|uid| seen.get(&uid)?.version.clone());
        listed
            .iter()
            .filter(|o| at(o).is_none() || at(o) != o.resource_version())
            .map(|o| format!("{kind} {} at resourceVersion {}", o.name_any(), o.resource_version().unwrap_or_default()))
            .collect()
    }

    /// What the watches on the cluster of `client` have yet to deliver: the objects they cover
    /// that the ledger has not seen as they are now. Empty once they have caught up.
    pub async fn behind(&self, client: &Client) -> Result<Vec<String>, String> {
        let mut behind = Vec::new();
        for (resource, labels) in watched() {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
            let params = labels.map_or_else(ListParams::default, |l| ListParams::default().labels(l));
            let listed = api.list(&params).await.map_err(|e| format!("listing {}: {e}", resource.plural))?;
            behind.extend(self.not_seen_as(&resource.kind, &listed.items));
        }
        Ok(behind)
    }

    /// What the ledger has yet to see on every one of `clusters`, once its watches caught up
    /// (every object they cover seen as its API server lists it now) or `timeout` passed: the
    /// verdicts are read from it.
    pub async fn behind_within(&self, clusters: &[(&str, Client)], timeout: Duration) -> Vec<String> {
        super::end::left_after(timeout, Duration::from_secs(1), || async {
            let mut all = Vec::new();
            for (cluster, client) in clusters {
                match self.behind(client).await {
                    Ok(behind) => all.extend(behind.into_iter().map(|b| format!("{cluster}: {b}"))),
                    Err(e) => all.push(format!("{cluster}: cannot list: {e}")),
                }
            }
            all
        })
        .await
    }

    pub fn snapshot(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }
}

/// A pod of a job's work never seen Succeeded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UnfinishedPod {
    pub cluster: String,
    /// Its creationTimestamp, in seconds since the epoch.
    pub created: Option<i64>,
    /// It failed before any of its containers ran.
    pub never_started: bool,
}

/// What the ledger says about one submitted job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// Pods of its work ever created, on any cluster.
    pub pods: usize,
    /// Those seen Succeeded.
    pub succeeded: usize,
    /// Clusters its pods ran on.
    pub ran_on: BTreeSet<String>,
    /// Its pods never seen Succeeded.
    pub unfinished_pods: Vec<UnfinishedPod>,
    /// Workloads on the manager owned by the job.
    pub manager_workloads: usize,
    /// The most Workloads owned by one copy of the job on one worker.
    pub workloads_per_copy: usize,
    /// WrappedJob components ever created, per component name.
    pub components_per_name: usize,
    /// When each copy of the job on a worker was created (seconds since the epoch), earliest
    /// first: MultiKueue creates them.
    pub copies_created: Vec<i64>,
    /// Whether our MultiKueue nudge (`jobframework::multikueue_nudge`) had to ask again for a
    /// manager Workload of the job: the jobs whose run depended on it.
    pub nudged: bool,
}

impl Evidence {
    /// Ran more than once somewhere: more pods than asked, two places, two Workloads, two
    /// incarnations of a component.
    pub fn duplicated(&self, wanted_pods: usize) -> bool {
        self.pods > wanted_pods || self.more_than_once(wanted_pods)
    }

    /// Ran more than once in a way no killed pod explains: more successes than asked, two
    /// places, two Workloads, two incarnations of a component.
    pub fn more_than_once(&self, wanted_pods: usize) -> bool {
        self.succeeded > wanted_pods
            || self.ran_on.len() > 1
            || self.manager_workloads > 1
            || self.workloads_per_copy > 1
            || self.components_per_name > 1
    }

    pub fn ran_once(&self, wanted_pods: usize) -> bool {
        !self.duplicated(wanted_pods) && self.succeeded == wanted_pods
    }

    /// Succeeded once, on one worker, though faults of its node may have killed some of its
    /// pods: every pod that never succeeded either was created before a restart of its
    /// cluster's node (`node_restarts`: the cluster, and when in seconds since the epoch) or
    /// failed before any of its containers ran, and the job's own retries made up for it — a
    /// Job's `backoffLimit`, or a WrappedJob's reset, which recreates its components as
    /// AppWrapper does after a failed pod and so runs again the pods of the first set that had
    /// succeeded or were still running (each set at most once). A second Workload or copy still
    /// counts as a second run, and so does a second set of components with no pod killed.
    pub fn ran_once_despite(&self, wanted_pods: usize, node_restarts: &[(String, i64)]) -> bool {
        let the_nodes_doing = |pod: &UnfinishedPod| {
            pod.never_started
                || node_restarts
                    .iter()
                    .any(|(restarted, at)| *restarted == pod.cluster && pod.created.is_some_and(|t| t <= *at))
        };
        let reset_by_a_fault = self.components_per_name > 1 && !self.unfinished_pods.is_empty();
        let succeeded_enough = if reset_by_a_fault {
            (wanted_pods..=wanted_pods * self.components_per_name).contains(&self.succeeded)
        } else {
            self.succeeded == wanted_pods && self.components_per_name <= 1
        };
        succeeded_enough
            && self.unfinished_pods.iter().all(the_nodes_doing)
            && self.ran_on.len() == 1
            && !self.ran_on.contains("manager")
            && self.manager_workloads == 1
            && self.workloads_per_copy <= 1
    }

    /// Ran exactly once on each of two workers from one manager Workload: the shape of a
    /// second dispatch by MultiKueue, as opposed to a second run by our controller (twice on
    /// one cluster, or a second Workload).
    pub fn ran_once_on_two_workers(&self, wanted_pods: usize) -> bool {
        self.ran_on.len() == 2
            && !self.ran_on.contains("manager")
            && self.pods == 2 * wanted_pods
            && self.manager_workloads == 1
            && self.workloads_per_copy == 1
            && self.components_per_name <= 2
    }
}

/// A pod `status` that failed with no container ever running: each one terminated by a
/// `StartError` (the runtime could not create it), none with a start time.
pub fn never_started(status: &serde_json::Value) -> bool {
    let containers = status["containerStatuses"].as_array().map(Vec::as_slice).unwrap_or_default();
    status["phase"] == "Failed"
        && !containers.is_empty()
        && containers.iter().all(|c| {
            let terminated = &c["state"]["terminated"];
            terminated["reason"] == "StartError"
                && terminated["startedAt"].as_str().is_none_or(|t| t.starts_with("1970-"))
        })
}

/// Names of the manager Workloads owned by `job`.
pub fn manager_workloads<'a>(job: &'a Submitted, seen: &'a [Seen]) -> impl Iterator<Item = &'a str> {
    seen.iter()
        .filter(|s| s.kind == "Workload" && s.cluster == "manager" && s.owner.as_deref() == Some(&job.uid))
        .map(|s| s.name.as_str())
}

/// The evidence for `job` among everything seen.
pub fn evidence(job: &Submitted, seen: &[Seen]) -> Evidence {
    let name = job.job.name.as_str();
    let is_work_pod = |s: &Seen| {
        s.kind == "Pod"
            && match job.job.kind {
                Kind::External => s.labels.get(EXTERNAL_JOB_POD).map(String::as_str) == Some(name),
                Kind::Wrapped => {
                    s.labels.get(WRAPPED_JOB_LABEL).map(String::as_str) == Some(name)
                        && s.labels.contains_key(BATCH_JOB_POD)
                }
                Kind::Batch => {
                    s.labels.get(BATCH_JOB_POD).map(String::as_str) == Some(name)
                        && !s.labels.contains_key(WRAPPED_JOB_LABEL)
                }
            }
    };
    let copy_kind = match job.job.kind {
        Kind::External => "ExternalJob",
        Kind::Wrapped => "WrappedJob",
        Kind::Batch => "Job",
    };
    let copies: BTreeSet<&str> = seen
        .iter()
        .filter(|s| s.kind == copy_kind && s.name == name && s.cluster != "manager")
        .map(|s| s.uid.as_str())
        .collect();
    let mut copies_created: Vec<i64> =
        seen.iter().filter(|s| copies.contains(s.uid.as_str())).filter_map(|s| s.created).collect();
    copies_created.sort_unstable();
    let mut per_copy: HashMap<&str, usize> = HashMap::new();
    for s in seen.iter().filter(|s| s.kind == "Workload") {
        if let Some(owner) = s.owner.as_deref().filter(|o| copies.contains(o)) {
            *per_copy.entry(owner).or_default() += 1;
        }
    }
    let mut per_component: HashMap<(&str, &str), usize> = HashMap::new();
    for s in seen.iter().filter(|s| matches!(s.kind.as_str(), "Job" | "Deployment")) {
        if s.labels.get(WRAPPED_JOB_LABEL).map(String::as_str) == Some(name) {
            *per_component.entry((s.kind.as_str(), s.name.as_str())).or_default() += 1;
        }
    }
    let work: Vec<&Seen> = seen.iter().filter(|s| is_work_pod(s)).collect();
    Evidence {
        pods: work.len(),
        succeeded: work.iter().filter(|s| s.succeeded).count(),
        ran_on: work.iter().map(|s| s.cluster.clone()).collect(),
        unfinished_pods: work
            .iter()
            .filter(|s| !s.succeeded)
            .map(|s| UnfinishedPod { cluster: s.cluster.clone(), created: s.created, never_started: s.never_started })
            .collect(),
        manager_workloads: manager_workloads(job, seen).count(),
        workloads_per_copy: per_copy.values().copied().max().unwrap_or(0),
        components_per_name: per_component.values().copied().max().unwrap_or(0),
        copies_created,
        nudged: seen.iter().any(|s| {
            s.kind == "Workload" && s.cluster == "manager" && s.owner.as_deref() == Some(&job.uid) && s.nudged
        }),
    }
}
