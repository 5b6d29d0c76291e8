//! WrappedJob against its reference, AppWrapper v1.2.2's own controller, on one kind cluster
//! where pods really run and exit: each case is submitted once as an AppWrapper and once as a
//! WrappedJob of the same components with the same settings (AppWrapper's annotations under
//! each kind's prefix), all cases at once. Per case the two must agree on the phases they went
//! through, the resets they counted, the quota their Workload held meanwhile and released at the
//! end, what their `Unhealthy` condition says, and that a grace both honour was waited out in
//! full (by the times the controllers wrote, so a busy node cannot fail it); where WrappedJob
//! differs by decision (docs/integrations.md, "WrappedJob beside AppWrapper"), the difference
//! itself is asserted. How long each took is printed, not asserted: the two controllers slow down
//! unequally on a busy node.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use serde_json::Value;

use crate::common::{Sandbox, api, apply_yaml, condition, condition_is, eventually, kind_images_built, workloads};
use crate::condition_timeline::listed_watch;
use crate::fixtures::BUSYBOX;

/// Settings every case sets, by annotation, on both kinds, unless it sets its own: short enough
/// that all cases end within a couple of minutes. The admission and warmup graces are long
/// enough for a pod to start on a busy node: a case that means to run out of them sets a short
/// one.
const SETTINGS: [(&str, &str); 7] = [
    ("admissionGracePeriodDuration", "60s"),
    ("warmupGracePeriodDuration", "60s"),
    ("failureGracePeriodDuration", "8s"),
    ("retryPausePeriodDuration", "2s"),
    ("forcefulDeletionGracePeriodDuration", "15s"),
    ("deletionOnFailureGracePeriodDuration", "0s"),
    ("successTTLDuration", "5m"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wrapper {
    AppWrapper,
    WrappedJob,
}

impl Wrapper {
    fn api(self, client: &Client) -> Api<DynamicObject> {
        match self {
            Wrapper::AppWrapper => {
                api(client, "workload.codeflare.dev/v1beta2", "AppWrapper", "appwrappers", Some("default"))
            }
            Wrapper::WrappedJob => api(client, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", Some("default")),
        }
    }

    fn name(self, case: &str) -> String {
        match self {
            Wrapper::AppWrapper => format!("aw-{case}"),
            Wrapper::WrappedJob => format!("wj-{case}"),
        }
    }

    /// The job and its settings' annotations; `components` are the same for both kinds.
    fn manifest(self, case: &Case) -> String {
        let (api_version, kind, prefix) = match self {
            Wrapper::AppWrapper => {
                ("workload.codeflare.dev/v1beta2", "AppWrapper", "workload.codeflare.dev.appwrapper/")
            }
            Wrapper::WrappedJob => ("kueue-ext.dev/v1alpha1", "WrappedJob", "kueue-ext.dev/"),
        };
        let name = self.name(case.name);
        let retry_limit = case.retry_limit.to_string();
        let own = |key: &str| case.settings.iter().any(|(k, _)| *k == key);
        let annotations: String = SETTINGS
            .iter()
            .filter(|(key, _)| !own(key))
            .chain(&[("retryLimit", retry_limit.as_str())])
            .chain(case.settings)
            .map(|(key, value)| format!("\n    {prefix}{key}: \"{value}\""))
            .collect();
        format!(
            r#"
apiVersion: {api_version}
kind: {kind}
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue}}
  annotations:{annotations}
spec:
  components:
  - template:{}
"#,
            (case.component)(&format!("{name}-c"))
        )
    }

    /// What the kind counts its resets in.
    fn resets(self, job: &Value) -> i64 {
        match self {
            // `omitempty`: absent until the first reset.
            Wrapper::AppWrapper => job["status"]["resettingCount"].as_i64().unwrap_or(0),
            Wrapper::WrappedJob => job["status"]["retries"].as_i64().unwrap_or(0),
        }
    }
}

/// A pod spec of busybox running `command`, quick to stop.
fn pod_spec(indent: &str, command: &str, extra: &str) -> String {
    let spec = format!(
        r#"
restartPolicy: Never
terminationGracePeriodSeconds: 1{extra}
containers:
- name: main
  image: {BUSYBOX}
  command: [sh, -c, "{command}"]
  resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}"#
    );
    spec.lines().map(|line| if line.is_empty() { String::new() } else { format!("\n{indent}{line}") }).collect()
}

fn job(name: &str, command: &str) -> String {
    format!(
        r#"
      apiVersion: batch/v1
      kind: Job
      metadata: {{name: {name}}}
      spec:
        backoffLimit: 0
        template:
          spec:{}"#,
        pod_spec("            ", command, "")
    )
}

fn pod(name: &str, command: &str) -> String {
    format!(
        r#"
      apiVersion: v1
      kind: Pod
      metadata: {{name: {name}}}
      spec:{}"#,
        pod_spec("        ", command, "")
    )
}

/// A Deployment of one pod; `extra` goes into its pod spec.
fn deployment(name: &str, extra: &str) -> String {
    format!(
        r#"
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: {name}}}
      spec:
        replicas: 1
        selector: {{matchLabels: {{app: {name}}}}}
        template:
          metadata: {{labels: {{app: {name}}}}}
          spec:{}"#,
        pod_spec("            ", "sleep 3600", extra).replace("restartPolicy: Never", "restartPolicy: Always")
    )
}

/// What both kinds are expected to do with one case, and where WrappedJob differs by decision.
struct Case {
    name: &'static str,
    component: fn(&str) -> String,
    retry_limit: u32,
    /// Settings of its own (exit codes, a short grace), in place of [`SETTINGS`]' of the same key.
    settings: &'static [(&'static str, &'static str)],
    /// The component is deleted by hand once the job runs.
    delete_by_hand: bool,
    phases: &'static [&'static str],
    resets: i64,
    /// `Unhealthy`'s reason at the end (AppWrapper's, WrappedJob's); `None`: not True.
    unhealthy: (Option<&'static str>, Option<&'static str>),
    /// A failed Pod: AppWrapper waits out the failure grace, seen Unhealthy while still Running;
    /// WrappedJob resets or fails in the write that finds it.
    only_appwrapper_waits_failure_grace: bool,
    /// The setting whose grace each run waits out in full, counted from its components'
    /// deployment, before it gives up.
    gives_up_after: Option<&'static str>,
}

impl Case {
    /// The case's own value of a setting, else the one every case sets.
    fn setting(&self, key: &str) -> &'static str {
        let found = self.settings.iter().chain(&SETTINGS).find(|(k, _)| *k == key);
        found.map(|(_, value)| *value).unwrap_or_else(|| panic!("{key} is set for every case"))
    }
}

const RESET_ONCE_THEN_FAIL: &[&str] =
    &["Suspended", "Resuming", "Running", "Resetting", "Resuming", "Running", "Failed"];
const FAIL_AT_ONCE: &[&str] = &["Suspended", "Resuming", "Running", "Failed"];

fn cases() -> Vec<Case> {
    let same = |reason| (Some(reason), Some(reason));
    vec![
        Case {
            name: "job-succeeds",
            component: |name| job(name, "sleep 2"),
            retry_limit: 1,
            settings: &[],
            delete_by_hand: false,
            phases: &["Suspended", "Resuming", "Running", "Succeeded"],
            resets: 0,
            unhealthy: (None, None),
            only_appwrapper_waits_failure_grace: false,
            gives_up_after: None,
        },
        Case {
            name: "job-exits-1",
            component: |name| job(name, "sleep 2; exit 1"),
            retry_limit: 1,
            settings: &[],
            delete_by_hand: false,
            phases: RESET_ONCE_THEN_FAIL,
            resets: 1,
            unhealthy: same("FailedComponent"),
            only_appwrapper_waits_failure_grace: false,
            gives_up_after: None,
        },
        Case {
            name: "pod-terminal-code",
            component: |name| pod(name, "sleep 2; exit 42"),
            retry_limit: 3,
            settings: &[("terminalExitCodes", "42")],
            delete_by_hand: false,
            phases: FAIL_AT_ONCE,
            resets: 0,
            unhealthy: (Some("FoundFailedPods"), Some("FailedComponent")),
            only_appwrapper_waits_failure_grace: true,
            gives_up_after: None,
        },
        Case {
            name: "pod-retryable-code",
            component: |name| pod(name, "sleep 2; exit 3"),
            retry_limit: 1,
            settings: &[("retryableExitCodes", "3")],
            delete_by_hand: false,
            phases: RESET_ONCE_THEN_FAIL,
            resets: 1,
            unhealthy: (Some("FoundFailedPods"), Some("FailedComponent")),
            only_appwrapper_waits_failure_grace: true,
            gives_up_after: None,
        },
        Case {
            name: "deleted-by-hand",
            component: |name| deployment(name, ""),
            retry_limit: 3,
            settings: &[],
            delete_by_hand: true,
            phases: FAIL_AT_ONCE,
            resets: 0,
            unhealthy: same("MissingComponent"),
            only_appwrapper_waits_failure_grace: false,
            gives_up_after: None,
        },
        Case {
            // No pod is ever created (its service account does not exist): the admission grace
            // runs out, in each of the two runs.
            name: "never-ready",
            component: |name| deployment(name, "\nserviceAccountName: no-such-account"),
            retry_limit: 1,
            settings: &[("admissionGracePeriodDuration", "10s")],
            delete_by_hand: false,
            phases: RESET_ONCE_THEN_FAIL,
            resets: 1,
            unhealthy: same("InsufficientPodsReady"),
            only_appwrapper_waits_failure_grace: false,
            gives_up_after: Some("admissionGracePeriodDuration"),
        },
    ]
}

/// What one job did, as the watch saw it.
#[derive(Debug, Clone)]
struct Outcome {
    phases: Vec<String>,
    /// When each phase began, seconds after the job was created.
    at: Vec<f64>,
    resets: i64,
    unhealthy: Option<String>,
    message: String,
    /// The statuses its Workload's QuotaReserved took before it finished.
    quota_reserved: Vec<String>,
    /// Seconds from components deployed to unhealthy, by the controller's own condition times,
    /// at each reset and at the failure.
    gave_up_after: Vec<i64>,
    /// It was seen Running while Unhealthy, as it is while it waits out a failure grace.
    waited_failure_grace: bool,
}

/// Everything the watches saw, by job name (the Workloads' by their owner's).
#[derive(Default)]
struct Seen {
    phases: BTreeMap<String, Vec<(String, Instant)>>,
    created: BTreeMap<String, Instant>,
    latest: BTreeMap<String, Value>,
    quota_reserved: BTreeMap<String, Vec<String>>,
    evicted: BTreeMap<String, bool>,
    finished: BTreeMap<String, bool>,
    gave_up_after: BTreeMap<String, Vec<i64>>,
    waited_failure_grace: BTreeMap<String, bool>,
}

impl Seen {
    fn job(&mut self, job: Value) {
        let name = job["metadata"]["name"].as_str().unwrap_or_default().to_string();
        self.created.entry(name.clone()).or_insert_with(Instant::now);
        let phase = job["status"]["phase"].as_str().unwrap_or_default().to_string();
        let unhealthy = condition(&job, "Unhealthy").filter(|c| c["status"] == "True");
        if phase == "Running" && unhealthy.is_some() {
            self.waited_failure_grace.insert(name.clone(), true);
        }
        let phases = self.phases.entry(name.clone()).or_default();
        if !phase.is_empty() && phases.last().is_none_or(|(last, _)| *last != phase) {
            let deployed = condition(&job, "ResourcesDeployed").filter(|c| c["status"] == "True");
            if let (true, Some(unhealthy), Some(deployed)) =
                (matches!(phase.as_str(), "Resetting" | "Failed"), unhealthy, deployed)
            {
                let seconds = transition_time(unhealthy) - transition_time(deployed);
                self.gave_up_after.entry(name.clone()).or_default().push(seconds);
            }
            phases.push((phase, Instant::now()));
        }
        self.latest.insert(name, job);
    }

    fn workload(&mut self, workload: Value) {
        let owners = workload["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
        let Some(owner) = owners.iter().find_map(|o| o["name"].as_str()) else { return };
        let finished = condition_is(&workload, "Finished", "True");
        if condition_is(&workload, "Evicted", "True") {
            self.evicted.insert(owner.to_string(), true);
        }
        if *self.finished.entry(owner.to_string()).or_default() {
            return;
        }
        self.finished.insert(owner.to_string(), finished);
        // What Kueue writes with Finished is no longer about the run.
        let reserved = condition(&workload, "QuotaReserved").and_then(|c| c["status"].as_str());
        if let (false, Some(reserved)) = (finished, reserved) {
            let statuses = self.quota_reserved.entry(owner.to_string()).or_default();
            if statuses.last().is_none_or(|last| last != reserved) {
                statuses.push(reserved.to_string());
            }
        }
    }

    /// The job's outcome once it is in a final phase, its own quota released and its Workload
    /// finished.
    fn outcome(&self, kind: Wrapper, name: &str) -> Option<Outcome> {
        let job = self.latest.get(name)?;
        let phases = self.phases.get(name)?;
        let (last, _) = phases.last()?;
        let done = matches!(last.as_str(), "Failed" | "Succeeded")
            && condition_is(job, "QuotaReserved", "False")
            && self.finished.get(name) == Some(&true);
        if !done {
            return None;
        }
        let unhealthy = condition(job, "Unhealthy").filter(|c| c["status"] == "True");
        Some(Outcome {
            phases: phases.iter().map(|(p, _)| p.clone()).collect(),
            at: phases.iter().map(|(_, t)| t.duration_since(self.created[name]).as_secs_f64()).collect(),
            resets: kind.resets(job),
            unhealthy: unhealthy.and_then(|c| c["reason"].as_str()).map(String::from),
            message: unhealthy.and_then(|c| c["message"].as_str()).unwrap_or_default().to_string(),
            quota_reserved: self.quota_reserved.get(name).cloned().unwrap_or_default(),
            gave_up_after: self.gave_up_after.get(name).cloned().unwrap_or_default(),
            waited_failure_grace: self.waited_failure_grace.get(name).copied().unwrap_or_default(),
        })
    }
}

/// A condition's `lastTransitionTime`, in whole seconds as the API stores it.
fn transition_time(condition: &Value) -> i64 {
    let text = condition["lastTransitionTime"].as_str().unwrap_or_default();
    let time = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339);
    time.unwrap_or_else(|e| panic!("lastTransitionTime {text:?}: {e}")).unix_timestamp()
}

/// The watches of both kinds and of the Workloads, established before anything is submitted;
/// every event wakes the cases that wait on it.
struct Recorder {
    seen: Arc<Mutex<Seen>>,
    changed: tokio::sync::watch::Receiver<u64>,
}

enum Event {
    Job(Value),
    Workload(Value),
}

impl Recorder {
    async fn start(client: &Client) -> Recorder {
        let mut streams = Vec::new();
        for (kind, api) in [
            (0, Wrapper::AppWrapper.api(client)),
            (1, Wrapper::WrappedJob.api(client)),
            (2, workloads(client, "default")),
        ] {
            let events = listed_watch(api, watcher::Config::default()).await;
            streams.push(events.map(move |o| if kind == 2 { Event::Workload(o) } else { Event::Job(o) }));
        }
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (tell, changed) = tokio::sync::watch::channel(0);
        let recording = seen.clone();
        tokio::spawn(async move {
            let mut events = stream::select_all(streams);
            while let Some(event) = events.next().await {
                match event {
                    Event::Job(job) => recording.lock().unwrap().job(job),
                    Event::Workload(workload) => recording.lock().unwrap().workload(workload),
                }
                tell.send_modify(|n| *n += 1);
            }
        });
        Recorder { seen, changed }
    }

    /// Waits for `check` to hold of what was seen, woken by each event.
    async fn until<T>(&self, what: &str, timeout: Duration, check: impl Fn(&Seen) -> Option<T>) -> T {
        let mut changed = self.changed.clone();
        let wait = async {
            loop {
                changed.borrow_and_update();
                if let Some(found) = check(&self.seen.lock().unwrap()) {
                    return found;
                }
                changed.changed().await.expect("the recording runs");
            }
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(found) => found,
            Err(_) => {
                let seen = self.seen.lock().unwrap();
                let phases: BTreeMap<&String, Vec<&String>> =
                    seen.phases.iter().map(|(name, phases)| (name, phases.iter().map(|(p, _)| p).collect())).collect();
                panic!("timed out after {timeout:?} waiting for {what}; phases seen: {phases:#?}")
            }
        }
    }
}

/// Submits the case as both kinds at once and waits for both to end.
async fn run(client: &Client, recorder: &Recorder, case: &Case) -> (Outcome, Outcome) {
    let kinds = [Wrapper::AppWrapper, Wrapper::WrappedJob];
    for kind in kinds {
        apply_yaml(client, &kind.manifest(case)).await;
    }
    if case.delete_by_hand {
        let deployments = api(client, "apps/v1", "Deployment", "deployments", Some("default"));
        for kind in kinds {
            let name = kind.name(case.name);
            let component = format!("{name}-c");
            recorder
                .until(&format!("{name} to run"), Duration::from_secs(120), |seen| {
                    let running = seen.phases.get(&name)?.iter().any(|(p, _)| p == "Running");
                    let job = seen.latest.get(&name)?;
                    // Every component of a running WrappedJob exists; an AppWrapper's once Running.
                    let recorded = job["status"]["componentStatus"][0]["name"] == component.as_str();
                    (running && recorded).then_some(())
                })
                .await;
            eventually(&format!("{component} deleted"), Duration::from_secs(30), || async {
                deployments.delete(&component, &Default::default()).await.map(|_| ()).map_err(|e| e.to_string())
            })
            .await;
        }
    }
    let mut outcomes = Vec::new();
    for kind in kinds {
        let name = kind.name(case.name);
        let what = format!("{name} to end, its quota released and its Workload finished");
        outcomes.push(recorder.until(&what, Duration::from_secs(300), |seen| seen.outcome(kind, &name)).await);
    }
    let wrapped = outcomes.pop().expect("two outcomes");
    (outcomes.pop().expect("two outcomes"), wrapped)
}

/// One row of the table in docs/integrations.md.
fn row(case: &Case, aw: &Outcome, wj: &Outcome) -> String {
    let show = |o: &Outcome| {
        let phases: Vec<String> = o.phases.iter().zip(&o.at).map(|(p, at)| format!("{p} {at:.0}s")).collect();
        format!("{}; resets {}; {}", phases.join(" → "), o.resets, o.unhealthy.as_deref().unwrap_or("healthy"))
    };
    let same = aw.phases == wj.phases && aw.resets == wj.resets && aw.unhealthy == wj.unhealthy;
    format!("| {} | {} | {} | {} |", case.name, show(aw), show(wj), if same { "yes" } else { "no" })
}

#[tokio::test(flavor = "multi_thread")]
async fn wrapped_jobs_and_appwrappers_go_through_the_same_faults_alike() {
    kind_images_built("appwrapper");
    let sandbox = Sandbox::up_on_kind(&["--workers", "0", "--addons", "appwrapper"]);
    let client = sandbox.client("manager").await;
    let recorder = Recorder::start(&client).await;
    let cases = cases();
    let started = Instant::now();
    let outcomes = futures::future::join_all(cases.iter().map(|case| run(&client, &recorder, case))).await;
    eprintln!("all cases ended {:.0}s after the first was submitted", started.elapsed().as_secs_f64());

    eprintln!("| case | AppWrapper | WrappedJob | same? |\n|---|---|---|---|");
    for (case, (aw, wj)) in cases.iter().zip(&outcomes) {
        eprintln!("{}", row(case, aw, wj));
    }
    for (case, (aw, wj)) in cases.iter().zip(&outcomes) {
        let both = format!("{}:\nAppWrapper {aw:#?}\nWrappedJob {wj:#?}", case.name);
        for outcome in [aw, wj] {
            assert_eq!(outcome.phases, case.phases, "{both}");
            assert_eq!(outcome.resets, case.resets, "{both}");
            // The quota stays reserved through every reset, until the job has ended.
            let held: Vec<&String> = outcome.quota_reserved.iter().skip_while(|s| *s == "False").collect();
            assert_eq!(held, ["True"], "{both}");
        }
        assert_eq!((aw.unhealthy.as_deref(), wj.unhealthy.as_deref()), case.unhealthy, "{both}");
        let recorder_seen = recorder.seen.lock().unwrap();
        for kind in [Wrapper::AppWrapper, Wrapper::WrappedJob] {
            let name = kind.name(case.name);
            assert_eq!(recorder_seen.evicted.get(&name), None, "no Workload is evicted: {both}");
        }
        drop(recorder_seen);
        if case.only_appwrapper_waits_failure_grace {
            let waited = (aw.waited_failure_grace, wj.waited_failure_grace);
            assert_eq!(waited, (true, false), "the failure grace waited by (AppWrapper, WrappedJob): {both}");
        }
        if let Some(key) = case.gives_up_after {
            let grace = kueue_ext::go_duration::parse_go_duration(case.setting(key)).expect("a grace").as_secs() as i64;
            for outcome in [aw, wj] {
                // Once at each reset and once at the failure.
                assert_eq!(outcome.gave_up_after.len() as i64, case.resets + 1, "{both}");
                assert!(outcome.gave_up_after.iter().all(|s| *s >= grace), "{key} {grace}s waited out: {both}");
            }
        }
    }
    // What each says of the failure: AppWrapper counts, WrappedJob quotes the component.
    let ((aw_job, wj_job), (aw_pod, wj_pod)) = (&outcomes[1], &outcomes[2]);
    assert_eq!(aw_job.message, "Found 1 failed components", "{aw_job:#?}");
    assert!(wj_job.message.contains("failed: BackoffLimitExceeded: "), "the Job's own words: {wj_job:#?}");
    assert_eq!(aw_pod.message, "", "AppWrapper writes no message with FoundFailedPods: {aw_pod:#?}");
    assert!(wj_pod.message.ends_with("failed: Error: container main exited with code 42"), "{wj_pod:#?}");

    // Every job ended: nothing of the queue's quota is left in use.
    let cluster_queues = api(&client, "kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", None);
    eventually("cluster-queue to hold no Workload", Duration::from_secs(60), || async {
        let cq = serde_json::to_value(cluster_queues.get("cluster-queue").await.map_err(|e| e.to_string())?).unwrap();
        let held = cq["status"]["reservingWorkloads"].as_i64().unwrap_or(0);
        if held == 0 { Ok(()) } else { Err(format!("{:#}", cq["status"])) }
    })
    .await;
}
