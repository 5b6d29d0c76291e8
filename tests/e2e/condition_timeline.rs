//! The conditions a job's Workload goes through over the job's life, each as the job stood when
//! it was written: what two integrations of one kind (Kueue's built-in and ours by
//! configuration) must agree on, `PodsReady` included.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt, stream};
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

use crate::common::{condition_is, workloads};

/// One value a Workload condition took: its status, reason and message, and the phase of the
/// job at the write (so `PodsReady=True` while the job's pods are not ready is told apart from
/// the same condition written once they are).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub status: String,
    pub reason: String,
    pub message: String,
    pub job: &'static str,
}

/// Each condition type's transitions, in the order they were written.
pub type Conditions = BTreeMap<String, Vec<Transition>>;

/// What a job says of itself, in a word.
pub type Phase = fn(&Value) -> &'static str;

/// A recording started before the job exists, so no write to its Workload is missed.
pub struct ConditionTimeline {
    recording: tokio::task::JoinHandle<Conditions>,
}

enum Seen {
    Workload(Value),
    Job(Value),
}

/// A watch of `api` that has listed once, so that every change from now on is in it: each
/// object it applies, as JSON. It backs off after an error: once the sandbox is down, a watch
/// retried at once never yields, and the test's runtime could never shut down.
pub async fn listed_watch(api: Api<DynamicObject>, config: watcher::Config) -> BoxStream<'static, Value> {
    let mut events = watcher(api, config).default_backoff().boxed();
    loop {
        match events.try_next().await {
            Ok(Some(watcher::Event::InitDone)) => break,
            Ok(Some(_)) => {}
            Ok(None) => panic!("a watch ended before its first list"),
            Err(e) => panic!("starting a watch: {e}"),
        }
    }
    let applied = |event: Result<watcher::Event<DynamicObject>, watcher::Error>| match event {
        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(serde_json::to_value(o).unwrap()),
        _ => None,
    };
    events.filter_map(move |e| std::future::ready(applied(e))).boxed()
}

impl ConditionTimeline {
    /// Watches the Workloads of `default` and the job `name` of `jobs`; returns once both
    /// watches are established. Submit the job after this.
    pub async fn watch(client: &Client, jobs: Api<DynamicObject>, kind: &str, name: &str, phase: Phase) -> Self {
        let selector = format!("metadata.name={name}");
        let workload_events = listed_watch(workloads(client, "default"), watcher::Config::default()).await;
        let job_events = listed_watch(jobs.clone(), watcher::Config::default().fields(&selector)).await;
        let (kind, name) = (kind.to_string(), name.to_string());
        let seen = stream::select(workload_events.map(Seen::Workload), job_events.map(Seen::Job));
        let recording = tokio::spawn(record(seen, jobs, kind, name, phase));
        ConditionTimeline { recording }
    }

    /// The recording, once the Workload is finished and the job side has let it go.
    pub async fn through_finish(self) -> Conditions {
        match tokio::time::timeout(Duration::from_secs(120), self.recording).await {
            Ok(recorded) => recorded.expect("the recording ran to the end"),
            Err(_) => panic!("the Workload did not finish and lose its finalizer within 2 minutes"),
        }
    }
}

/// Every Workload write carries its resourceVersion; a sandbox keeps all objects in one etcd,
/// whose revision orders every write (Kubernetes calls the version opaque across objects, but
/// a single etcd's revision is what it is), so each write is told the job's phase at the last job
/// version written before it.
async fn record(
    seen: impl futures::Stream<Item = Seen> + Unpin,
    jobs: Api<DynamicObject>,
    kind: String,
    name: String,
    phase: Phase,
) -> Conditions {
    let version = |o: &Value| o["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse::<u64>().ok());
    let mut seen = seen;
    let mut writes: Vec<(String, u64, Transition)> = Vec::new();
    let mut job_versions: Vec<(u64, &'static str)> = Vec::new();
    let mut last: BTreeMap<String, (String, String, String)> = BTreeMap::new();
    let mut wanted_job_version = None;
    while let Some(next) = seen.next().await {
        match next {
            Seen::Job(job) => job_versions.push((version(&job).unwrap(), phase(&job))),
            Seen::Workload(wl) => {
                let owners = wl["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
                if !owners.iter().any(|o| o["kind"] == kind.as_str() && o["name"] == name.as_str()) {
                    continue;
                }
                for c in wl["status"]["conditions"].as_array().into_iter().flatten() {
                    let text = |field: &str| c[field].as_str().unwrap_or_default().to_string();
                    let value = (text("status"), text("reason"), text("message"));
                    if last.get(&text("type")) != Some(&value) {
                        let (status, reason, message) = value.clone();
                        let transition = Transition { status, reason, message, job: "" };
                        writes.push((text("type"), version(&wl).unwrap(), transition));
                        last.insert(text("type"), value);
                    }
                }
                let held =
                    wl["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|f| f == RESOURCE_IN_USE));
                if condition_is(&wl, "Finished", "True") && !held {
                    // The job's versions up to now may still be on their way: wait for its latest.
                    let job = jobs.get(&name).await.expect("the job is still there");
                    wanted_job_version = version(&serde_json::to_value(job).unwrap());
                }
            }
        }
        if let Some(wanted) = wanted_job_version
            && job_versions.iter().any(|(v, _)| *v >= wanted)
        {
            break;
        }
    }
    let mut conditions = Conditions::new();
    for (type_, at, mut transition) in writes {
        let before = job_versions.iter().filter(|(v, _)| *v < at).max_by_key(|(v, _)| *v);
        transition.job = before.map_or("absent", |(_, phase)| phase);
        conditions.entry(type_).or_default().push(transition);
    }
    conditions
}

const RESOURCE_IN_USE: &str = "kueue.x-k8s.io/resource-in-use";

/// The recording as lines, one condition type each, for a failure message or a log.
pub fn show(conditions: &Conditions) -> String {
    let mut out = String::new();
    for (type_, transitions) in conditions {
        let steps: Vec<String> = transitions
            .iter()
            .map(|t| format!("{} {} ({:?}) while the job was {}", t.status, t.reason, t.message, t.job))
            .collect();
        out.push_str(&format!("{type_}: {}\n", steps.join(" -> ")));
    }
    out
}
