//! End-to-end crash safety under load, on a MultiKueue sandbox (manager + 2 workers): while
//! ExternalJobs and WrappedJobs run, our controller is SIGKILLed at random moments on random
//! clusters and started again, then Kueue's manager process is restarted, then a worker's
//! kube-apiserver. Every job must finish exactly once — counted from the pods that really ran,
//! the Workloads and the components that really existed (a ledger of watches), not from our own
//! status — with no orphan left and no job stuck. The exceptions are jobs whose fate Kueue's
//! own MultiKueue decided alone (`crash::by_kueue` says how they are told): one it dispatched to
//! a second worker without evicting it, and one whose Workload it never nominated a worker
//! for. They are counted in columns of their own and listed, and fail nothing.
//!
//! The default size suits the test command; `hack/soak.sh` runs the same test bigger through
//! KUEUE_EXT_CRASH_EXTERNAL_JOBS, KUEUE_EXT_CRASH_WRAPPED_JOBS, KUEUE_EXT_CRASH_ROUNDS and
//! KUEUE_EXT_CRASH_SEED (a failing run is replayed with its printed seed).
//! KUEUE_EXT_CRASH_BATCH_JOBS adds plain batch/v1 Jobs, which Kueue runs through its own
//! integration, under the same faults: their row shows what Kueue does with its own jobs.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Sandbox, api, condition_is};
use crate::crash::Rng;
use crate::crash::by_kueue;
use crate::crash::faults::{Injected, Injector};
use crate::crash::jobs::{self, Kind, Planned, Submitted};
use crate::crash::ledger::{self, Evidence, Ledger};
use futures::StreamExt;
use kube::Client;
use kube::api::{DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, watcher};

const WORKERS: usize = 2;
/// How long no job may finish before those left are counted as stuck.
const STALL: Duration = Duration::from_secs(600);
const CLUSTERS: [&str; 3] = ["manager", "worker1", "worker2"];

struct Size {
    external: usize,
    wrapped: usize,
    /// Peer batch/v1 Jobs under the same faults; none by default.
    batch: usize,
    rounds: usize,
    seed: u64,
}

impl Size {
    fn from_env() -> Self {
        let read = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
        let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Size {
            external: read("KUEUE_EXT_CRASH_EXTERNAL_JOBS", 60) as usize,
            wrapped: read("KUEUE_EXT_CRASH_WRAPPED_JOBS", 10) as usize,
            batch: read("KUEUE_EXT_CRASH_BATCH_JOBS", 0) as usize,
            rounds: read("KUEUE_EXT_CRASH_ROUNDS", 1).max(1) as usize,
            seed: read("KUEUE_EXT_CRASH_SEED", clock.as_nanos() as u64),
        }
    }
}

async fn watching_client(sandbox: &Sandbox, cluster: &str) -> Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(sandbox.kubeconfig()).expect("sandbox kubeconfig");
    kueue_ext::kube_util::watching_client_from(kubeconfig, &format!("kueue-ext-{cluster}"))
        .await
        .expect("client for the sandbox context")
}

fn jobs_api(client: &Client, kind: Kind) -> kube::Api<DynamicObject> {
    match kind {
        Kind::External => api(client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default")),
        Kind::Wrapped => api(client, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", Some("default")),
        Kind::Batch => api(client, "batch/v1", "Job", "jobs", Some("default")),
    }
}

/// Submits a wave a few at a time, as a busy user would.
async fn submit_all(client: Client, wave: Vec<Planned>) -> Vec<Submitted> {
    futures::stream::iter(wave)
        .map(|job| {
            let client = client.clone();
            async move { job.submit(&client).await }
        })
        .buffer_unordered(4)
        .collect()
        .await
}

/// Each job's outcome on the manager once all are done, or once none has finished for `stall`
/// (`None`: still going, i.e. stuck): a wait that fits any size of run, as long as jobs keep
/// finishing. Read from watches: listing every job every two seconds kept the manager's
/// API server busy at soak size and slowed the very run it waited for.
async fn outcomes(client: &Client, submitted: &[Submitted], stall: Duration) -> Vec<Option<bool>> {
    let seen: Arc<Mutex<HashMap<String, Option<bool>>>> = Arc::default();
    let watches: Vec<_> = Kind::ALL
        .into_iter()
        .map(|kind| {
            let (api, seen) = (jobs_api(client, kind), seen.clone());
            tokio::spawn(async move {
                let mut jobs = watcher(api, watcher::Config::default()).default_backoff().applied_objects().boxed();
                while let Some(job) = jobs.next().await {
                    let Ok(job) = job else { continue };
                    let job = serde_json::to_value(job).expect("object serializes");
                    let uid = job["metadata"]["uid"].as_str().unwrap_or_default().to_string();
                    seen.lock().unwrap().insert(uid, jobs::outcome(kind, &job));
                }
            })
        })
        .collect();
    let (mut done_before, mut progressed) = (0, Instant::now());
    let now = loop {
        let now: Vec<Option<bool>> = {
            let seen = seen.lock().unwrap();
            submitted.iter().map(|s| seen.get(&s.uid).copied().flatten()).collect()
        };
        let done = now.iter().filter(|o| o.is_some()).count();
        if done > done_before {
            (done_before, progressed) = (done, Instant::now());
        }
        if done == now.len() || progressed.elapsed() >= stall {
            break now;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    watches.iter().for_each(|w| w.abort());
    now
}

/// Objects of ours on `cluster` that nothing owns any more, or that still run for a finished
/// job: pods, WrappedJob components and Workloads.
async fn orphans_on(client: &Client) -> Result<Vec<String>, String> {
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

/// Orphans on every cluster once the garbage collectors had `timeout` to act.
async fn orphans(sandbox: &Sandbox, timeout: Duration) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut all = Vec::new();
        for cluster in CLUSTERS {
            match orphans_on(&sandbox.client(cluster).await).await {
                Ok(found) => all.extend(found.into_iter().map(|o| format!("{cluster}: {o}"))),
                Err(e) => all.push(format!("{cluster}: cannot list: {e}")),
            }
        }
        if all.is_empty() || Instant::now() >= deadline {
            return all;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

/// What Kueue last said about a job's Workloads on the manager, for the report of a lost job.
fn workload_story(workloads: &[serde_json::Value]) -> String {
    let conditions = |wl: &serde_json::Value| {
        let list = wl["status"]["conditions"].as_array().cloned().unwrap_or_default();
        let said: Vec<String> =
            list.iter().map(|c| format!("{}={} ({}: {})", c["type"], c["status"], c["reason"], c["message"])).collect();
        format!("{} [{}] checks {}", wl["metadata"]["name"], said.join("; "), wl["status"]["admissionChecks"])
    };
    workloads.iter().map(conditions).collect::<Vec<_>>().join(" | ")
}

/// Manager Workloads of the jobs that are not Finished.
async fn unfinished_workloads(client: &Client, submitted: &[Submitted]) -> usize {
    let uids: HashSet<&str> = submitted.iter().map(|s| s.uid.as_str()).collect();
    let workloads =
        crate::common::workloads(client, "default").list(&ListParams::default()).await.expect("list Workloads");
    let finished: HashSet<String> = workloads
        .items
        .iter()
        .filter(|w| condition_is(&serde_json::to_value(w).expect("serializes"), "Finished", "True"))
        .flat_map(|w| w.metadata.owner_references.iter().flatten().map(|o| o.uid.clone()))
        .collect();
    uids.iter().filter(|uid| !finished.contains(**uid)).count()
}

/// How the jobs of one side fared.
#[derive(Default)]
struct Tally {
    submitted: usize,
    finished_once: usize,
    lost: usize,
    duplicated: usize,
    /// Ran once on each of two workers, dispatched twice by Kueue's MultiKueue on its own
    /// word (see `crash::by_kueue`): reported, not held against our controller.
    dispatched_twice_by_kueue: usize,
    /// Never ran: its Workload kept its quota with no worker ever nominated by Kueue's
    /// MultiKueue (see `crash::by_kueue`): reported, not held against our controller.
    never_nominated_by_kueue: usize,
}

struct Report {
    seed: u64,
    /// ExternalJobs and WrappedJobs: what this test holds to exactly once.
    ours: Tally,
    /// batch/v1 Jobs run by Kueue's own integration under the same faults, for comparison.
    peer: Tally,
    orphans: usize,
    unfinished_workloads: usize,
    faults: Injected,
    elapsed: Duration,
    /// What is held against our controller (or the peer's integration), listed first.
    problems: Vec<String>,
    /// Jobs whose fate Kueue's MultiKueue decided alone, listed after the problems: at soak
    /// size they are many and must not crowd a lost job out of the report.
    decided_by_kueue: Vec<String>,
}

impl Report {
    fn clean(&self) -> bool {
        self.ours.lost == 0 && self.ours.duplicated == 0 && self.orphans == 0 && self.unfinished_workloads == 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "crash-safety summary (seed {}):", self.seed)?;
        writeln!(
            f,
            "| jobs | submitted | finished once | lost | duplicated | dispatched twice by Kueue | never nominated by Kueue | orphans | faults (controller kills / Kueue restarts / API server restarts) | time |"
        )?;
        writeln!(f, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")?;
        let row = |f: &mut fmt::Formatter<'_>, jobs: &str, t: &Tally, orphans: &str| {
            writeln!(
                f,
                "| {jobs} | {} | {} | {} | {} | {} | {} | {orphans} | {} ({} / {} / {}) | {:.0} s |",
                t.submitted,
                t.finished_once,
                t.lost,
                t.duplicated,
                t.dispatched_twice_by_kueue,
                t.never_nominated_by_kueue,
                self.faults.total(),
                self.faults.controller_kills,
                self.faults.kueue_restarts,
                self.faults.api_server_restarts,
                self.elapsed.as_secs_f64()
            )
        };
        row(f, "ExternalJob + WrappedJob", &self.ours, &self.orphans.to_string())?;
        if self.peer.submitted > 0 {
            row(f, "peer: batch/v1 Job (Kueue's integration)", &self.peer, "-")?;
        }
        if self.unfinished_workloads > 0 {
            writeln!(f, "{} manager Workload(s) of ours not Finished", self.unfinished_workloads)?;
        }
        for problem in self.problems.iter().take(40) {
            writeln!(f, "  {problem}")?;
        }
        for note in self.decided_by_kueue.iter().take(10) {
            writeln!(f, "  {note}")?;
        }
        if self.decided_by_kueue.len() > 10 {
            writeln!(f, "  … and {} more decided by Kueue", self.decided_by_kueue.len() - 10)?;
        }
        Ok(())
    }
}

fn judge(submitted: &Submitted, outcome: Option<bool>, evidence: &Evidence) -> Option<String> {
    let wanted = submitted.job.pods as usize;
    let name = &submitted.job.name;
    if evidence.duplicated(wanted) {
        Some(format!("{name}: DUPLICATED, wanted {wanted} pod(s): {evidence:?}"))
    } else if outcome != Some(true) || !evidence.ran_once(wanted) {
        Some(format!("{name}: LOST (outcome {outcome:?}), wanted {wanted} pod(s): {evidence:?}"))
    } else {
        None
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_job_finishes_exactly_once_through_controller_kueue_and_api_server_crashes() {
    let size = Size::from_env();
    println!(
        "crash-safety run: {} ExternalJobs + {} WrappedJobs (+ {} batch/v1 Jobs as the peer), {} round(s) of faults, seed {}",
        size.external, size.wrapped, size.batch, size.rounds, size.seed
    );
    let sandbox = Sandbox::up(&[]);
    let started = Instant::now();
    let ledger = Ledger::default();
    let mut watches = Vec::new();
    for cluster in CLUSTERS {
        watches.extend(ledger.watch(cluster, &watching_client(&sandbox, cluster).await));
    }
    let manager = sandbox.client("manager").await;
    let mut rng = Rng::new(size.seed);
    let planned = jobs::plan([size.external, size.wrapped, size.batch], &mut rng);
    let mut injector = Injector::new(&sandbox, WORKERS);
    let mut submitted = Vec::new();
    for (round, wave) in planned.chunks(planned.len().div_ceil(size.rounds).max(1)).enumerate() {
        // The wave goes in while the round's faults land, so they hit jobs in every phase.
        let submitting = tokio::spawn(submit_all(manager.clone(), wave.to_vec()));
        injector.round(round, &mut rng).await;
        submitted.extend(submitting.await.expect("submission task"));
    }

    println!("{:>4.0} s: submitted and faults injected", started.elapsed().as_secs_f64());
    let outcomes = outcomes(&manager, &submitted, STALL).await;
    println!("{:>4.0} s: every job done (or none finished for {STALL:?})", started.elapsed().as_secs_f64());
    let orphans = orphans(&sandbox, Duration::from_secs(180)).await;
    println!("{:>4.0} s: no orphan left (or the deadline passed)", started.elapsed().as_secs_f64());
    // Let the watches catch the last updates before reading the ledger.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen = ledger.snapshot();
    for watch in watches {
        watch.abort();
    }

    let mut report = Report {
        seed: size.seed,
        ours: Tally::default(),
        peer: Tally::default(),
        orphans: orphans.len(),
        unfinished_workloads: 0,
        faults: injector.injected,
        elapsed: started.elapsed(),
        problems: orphans.iter().map(|o| format!("orphan: {o}")).collect(),
        decided_by_kueue: Vec::new(),
    };
    let kueue_logs = [sandbox.dir.join("manager/logs/kueue.log"), sandbox.dir.join("kueue-0-restarted.log")];
    let second_dispatches = by_kueue::second_dispatches(&kueue_logs.each_ref().map(|p| p.as_path()));
    // Jobs of ours whose fate Kueue decided alone: not held against the controller.
    let mut decided_uids = HashSet::new();
    let now = time::OffsetDateTime::now_utc();
    for (job, outcome) in submitted.iter().zip(&outcomes) {
        let evidence = ledger::evidence(job, &seen);
        let tally = if job.job.kind.is_ours() { &mut report.ours } else { &mut report.peer };
        tally.submitted += 1;
        match judge(job, *outcome, &evidence) {
            None => tally.finished_once += 1,
            Some(problem) => {
                let wanted = job.job.pods as usize;
                let kueue_said_so = ledger::manager_workloads(job, &seen).any(|w| second_dispatches.contains(w));
                if evidence.ran_once_on_two_workers(wanted) && kueue_said_so {
                    tally.dispatched_twice_by_kueue += 1;
                    decided_uids.insert(job.uid.clone());
                    report.decided_by_kueue.push(format!("{problem} (Kueue logged dispatching it to a second worker)"));
                    continue;
                }
                if evidence.duplicated(wanted) {
                    tally.duplicated += 1;
                    report.problems.push(problem);
                    continue;
                }
                let workloads = match crate::common::workloads_owned_by(&manager, "default", &job.uid).await {
                    Ok(workloads) => workloads,
                    Err(e) => {
                        tally.lost += 1;
                        report.problems.push(format!("{problem}\n    cannot list its Workloads: {e}"));
                        continue;
                    }
                };
                if evidence.pods == 0 && workloads.len() == 1 && by_kueue::never_nominated(&workloads[0], now) {
                    tally.never_nominated_by_kueue += 1;
                    decided_uids.insert(job.uid.clone());
                    report
                        .decided_by_kueue
                        .push(format!("{problem} (Kueue's MultiKueue never nominated a worker for it)"));
                } else {
                    tally.lost += 1;
                    report.problems.push(format!("{problem}\n    manager Workload: {}", workload_story(&workloads)));
                }
            }
        }
    }
    let ours: Vec<Submitted> =
        submitted.iter().filter(|s| s.job.kind.is_ours() && !decided_uids.contains(&s.uid)).cloned().collect();
    report.unfinished_workloads = unfinished_workloads(&manager, &ours).await;
    println!("{report}");
    // A passing test's output is captured: the suite prints this file after the tests.
    let summary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("crash-safety-summary.md");
    std::fs::write(&summary, report.to_string()).unwrap_or_else(|e| panic!("{}: {e}", summary.display()));
    assert!(report.faults.controller_kills >= 5, "at least five controller kills");
    assert!(report.clean(), "{report}");
}

#[test]
fn evidence_tells_a_job_that_ran_twice_from_one_that_ran_once() {
    use crate::crash::ledger::Seen;
    let job = Submitted {
        job: Planned { kind: Kind::External, name: "ej-1".into(), pods: 1, run_seconds: 1 },
        uid: "u-manager".into(),
    };
    let pod = |uid: &str, cluster: &str, succeeded| Seen {
        uid: uid.into(),
        cluster: cluster.into(),
        kind: "Pod".into(),
        name: uid.into(),
        labels: [("kueue-ext.dev/job-name".to_string(), "ej-1".to_string())].into(),
        owner: Some("u-copy".into()),
        succeeded,
    };
    let workload = |uid: &str, cluster: &str, owner: &str| Seen {
        uid: uid.into(),
        cluster: cluster.into(),
        kind: "Workload".into(),
        owner: Some(owner.into()),
        ..Default::default()
    };
    let copy = Seen {
        uid: "u-copy".into(),
        cluster: "worker1".into(),
        kind: "ExternalJob".into(),
        name: "ej-1".into(),
        ..Default::default()
    };
    let once = vec![
        pod("p1", "worker1", true),
        workload("w1", "manager", "u-manager"),
        workload("w2", "worker1", "u-copy"),
        copy.clone(),
    ];
    assert!(ledger::evidence(&job, &once).ran_once(1));
    let mut twice_in_two_places = once.clone();
    twice_in_two_places.push(pod("p2", "worker2", true));
    assert!(ledger::evidence(&job, &twice_in_two_places).duplicated(1));
    assert!(ledger::evidence(&job, &twice_in_two_places).ran_once_on_two_workers(1));
    let mut twice_on_one_worker = once.clone();
    twice_on_one_worker.push(pod("p2", "worker1", true));
    assert!(ledger::evidence(&job, &twice_on_one_worker).duplicated(1));
    assert!(!ledger::evidence(&job, &twice_on_one_worker).ran_once_on_two_workers(1));
    let mut two_workloads = once.clone();
    two_workloads.push(workload("w3", "worker1", "u-copy"));
    assert_eq!(ledger::evidence(&job, &two_workloads).workloads_per_copy, 2);
    assert!(ledger::evidence(&job, &two_workloads).duplicated(1));
    two_workloads.push(pod("p2", "worker2", true));
    assert!(!ledger::evidence(&job, &two_workloads).ran_once_on_two_workers(1));
    let never_ran = vec![workload("w1", "manager", "u-manager"), copy];
    assert!(!ledger::evidence(&job, &never_ran).ran_once(1));
}

/// After a kube-apiserver restart every watch fails a few times while the server comes back;
/// the controller must hear about new jobs as soon as it serves again. (With kube-runtime's
/// default trigger backoff, up to 30 s after each error of any watch, it stayed deaf for 4 to 7
/// minutes; while a watch's errors still paused the controller's other watches, the WrappedJob
/// once waited more than 2 minutes behind its component watches.)
#[tokio::test(flavor = "multi_thread")]
async fn jobs_created_just_after_an_api_server_restart_are_run() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    let job = |kind, name: &str| Planned { kind, name: name.into(), pods: 1, run_seconds: 2 };
    let first = job(Kind::External, "before-restart").submit(&client).await;
    let done = |submitted: Vec<Submitted>, timeout: Duration| {
        let client = client.clone();
        async move {
            let outcomes = outcomes(&client, &submitted, timeout).await;
            assert!(outcomes.iter().all(|o| *o == Some(true)), "{submitted:?}: {outcomes:?}");
        }
    };
    done(vec![first], Duration::from_secs(60)).await;

    let mut api_server = crate::common::Restarts::of(&sandbox, 0, "kube-apiserver");
    api_server.kill();
    tokio::time::sleep(Duration::from_secs(2)).await;
    api_server.start();
    let after = vec![
        job(Kind::External, "after-restart").submit(&client).await,
        job(Kind::Wrapped, "after-restart-wrapped").submit(&client).await,
    ];
    done(after, Duration::from_secs(120)).await;
}

#[test]
fn a_plan_has_the_jobs_asked_for_with_every_kind_spread_along_the_run() {
    let planned = jobs::plan([6, 3, 3], &mut Rng::new(7));
    let count = |kind| planned.iter().filter(|p| p.kind == kind).count();
    assert_eq!((count(Kind::External), count(Kind::Wrapped), count(Kind::Batch)), (6, 3, 3));
    for half in planned.chunks(6) {
        assert!(Kind::ALL.iter().all(|k| half.iter().any(|p| p.kind == *k)), "{half:?}");
    }
    let names: HashSet<&str> = planned.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), 12);
    assert!(names.contains("ej-6") && names.contains("wj-3") && names.contains("bj-3"));
    assert!(jobs::plan([2, 0, 0], &mut Rng::new(7)).iter().all(|p| p.kind == Kind::External));
}
