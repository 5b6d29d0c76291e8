//! End-to-end crash safety under load, on a MultiKueue sandbox (manager + 2 workers): while
//! ExternalJobs and WrappedJobs run, our controller is SIGKILLed at random moments on random
//! clusters and started again, then Kueue's manager process is restarted (once Workloads wait
//! for MultiKueue to nominate a worker), then a worker's kube-apiserver. Every job of ours that
//! was submitted must finish exactly once — counted from the pods that really ran, the
//! Workloads and the components that really existed (a ledger of watches), not from our own
//! status — with no orphan left and no job stuck. A job Kueue's MultiKueue left with no worker
//! after its restart counts like any other: bringing it back is our nudge's job
//! (`jobframework::multikueue_nudge`), and the summary shows how many needed it. The one
//! exception is a job that ran once on each of two workers, which Kueue's own log shows it
//! dispatched to the second, or whose two dispatches a restart of Kueue's manager separates
//! (`crash::by_kueue` says how it is told): counted in a column of its own and listed, it fails
//! nothing. Every fault must be seen to take effect (`crash::faults`): a kill that did nothing
//! fails the test.
//!
//! The default size suits the test command; `hack/soak.sh` runs the same test bigger through
//! KUEUE_EXT_CRASH_EXTERNAL_JOBS, KUEUE_EXT_CRASH_WRAPPED_JOBS, KUEUE_EXT_CRASH_ROUNDS and
//! KUEUE_EXT_CRASH_SEED (a failing run is replayed with its printed seed).
//! KUEUE_EXT_CRASH_BATCH_JOBS adds plain batch/v1 Jobs, which Kueue runs through its own
//! integration, under the same faults: their row shows what Kueue does with its own jobs.

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::Sandbox;
use crate::crash::Rng;
use crate::crash::by_kueue;
use crate::crash::end::{orphans, outcomes, unfinished_workloads};
use crate::crash::faults::{Injected, Injector, LeaseRenewals, WaitingForNomination};
use crate::crash::jobs::{self, Kind, Nodes, Planned, Submitted};
use crate::crash::ledger::{self, Evidence, Ledger};
use futures::StreamExt;
use kube::Client;
use kube::api::DynamicObject;

const WORKERS: usize = 2;
/// How long no job may finish before those left are counted as stuck: many times what our
/// nudge takes to bring back a Workload MultiKueue left with no worker (its waits double from
/// 30 s).
const STALL: Duration = Duration::from_secs(600);
/// How long a killed controller's successor may take to renew the Lease: the old Lease
/// expires 15 s after its last renewal.
const TAKEOVER: Duration = Duration::from_secs(120);
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
        let read = crate::crash::env_size;
        Size {
            external: read("KUEUE_EXT_CRASH_EXTERNAL_JOBS", 60) as usize,
            wrapped: read("KUEUE_EXT_CRASH_WRAPPED_JOBS", 10) as usize,
            batch: read("KUEUE_EXT_CRASH_BATCH_JOBS", 0) as usize,
            rounds: read("KUEUE_EXT_CRASH_ROUNDS", 1).max(1) as usize,
            seed: crate::crash::env_seed("KUEUE_EXT_CRASH_SEED"),
        }
    }
}

async fn watching_client(sandbox: &Sandbox, cluster: &str) -> Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(sandbox.kubeconfig()).expect("sandbox kubeconfig");
    kueue_ext::kube_util::watching_client_from(kubeconfig, &format!("kueue-ext-{cluster}"))
        .await
        .expect("client for the sandbox context")
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

/// How the jobs of one side fared.
#[derive(Default)]
struct Tally {
    submitted: usize,
    finished_once: usize,
    lost: usize,
    duplicated: usize,
    /// Finished, having run once on each of two workers, dispatched twice by Kueue's
    /// MultiKueue on its own word (see `crash::by_kueue`): reported, not held against our
    /// controller.
    dispatched_twice_by_kueue: usize,
    /// Of all of the above, those whose manager Workload our MultiKueue nudge asked for again.
    nudged: usize,
}

impl Tally {
    fn count(&mut self, verdict: Verdict, nudged: bool) {
        self.submitted += 1;
        self.nudged += usize::from(nudged);
        match verdict {
            Verdict::FinishedOnce => self.finished_once += 1,
            Verdict::DispatchedTwiceByKueue => self.dispatched_twice_by_kueue += 1,
            Verdict::Duplicated => self.duplicated += 1,
            Verdict::Lost => self.lost += 1,
        }
    }
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
    /// Controller kills seen taking effect: the pid gone, a successor renewing the Lease.
    controller_kills_seen: usize,
    elapsed: Duration,
    /// What is held against our controller (or the peer's integration), listed first.
    problems: Vec<String>,
    /// Jobs Kueue's MultiKueue dispatched twice, listed after the problems: at soak size they
    /// are many and must not crowd a lost job out of the report.
    decided_by_kueue: Vec<String>,
}

impl Report {
    fn clean(&self) -> bool {
        self.ours.lost == 0
            && self.ours.duplicated == 0
            && self.orphans == 0
            && self.unfinished_workloads == 0
            && self.controller_kills_seen == self.faults.controller_kills
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "crash-safety summary (seed {}):", self.seed)?;
        writeln!(
            f,
            "| jobs | submitted | finished once | lost | duplicated | dispatched twice by Kueue | nudged | orphans | faults (controller kills / Kueue restarts / API server restarts) | controller kills seen taking effect | time |"
        )?;
        writeln!(f, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")?;
        let row = |f: &mut fmt::Formatter<'_>, jobs: &str, t: &Tally, orphans: &str| {
            writeln!(
                f,
                "| {jobs} | {} | {} | {} | {} | {} | {} | {orphans} | {} ({} / {} / {}) | {} of {} | {:.0} s |",
                t.submitted,
                t.finished_once,
                t.lost,
                t.duplicated,
                t.dispatched_twice_by_kueue,
                t.nudged,
                self.faults.total(),
                self.faults.controller_kills,
                self.faults.kueue_restarts,
                self.faults.api_server_restarts,
                self.controller_kills_seen,
                self.faults.controller_kills,
                self.elapsed.as_secs_f64()
            )
        };
        row(f, "ExternalJob + WrappedJob", &self.ours, &self.orphans.to_string())?;
        if self.peer.submitted > 0 {
            row(f, "peer: batch/v1 Job (Kueue's integration)", &self.peer, "-")?;
        }
        writeln!(
            f,
            "Kueue went down with {} Workload(s) holding quota and no worker nominated (those it may strand); {} job(s) of ours were nudged.",
            self.faults.waiting_at_kueue_restarts, self.ours.nudged
        )?;
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
            writeln!(f, "  … and {} more dispatched twice by Kueue", self.decided_by_kueue.len() - 10)?;
        }
        Ok(())
    }
}

/// What became of one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    FinishedOnce,
    /// Finished, having run once on each of two workers, which Kueue's log shows it
    /// dispatched to the second, or Kueue's manager restarted between the two dispatches of one
    /// reservation (`crash::by_kueue`).
    DispatchedTwiceByKueue,
    /// Ran more than once in any other way: twice on a worker, on the manager and a worker,
    /// from two Workloads or two incarnations of a component.
    Duplicated,
    /// Did not finish, or finished without its pods having run once: whatever held it up,
    /// a Workload MultiKueue left with no worker included.
    Lost,
}

/// The verdict on a job from its outcome on the manager (`None`: never finished), what the
/// ledger saw of it, and whether Kueue's log or restart shows it dispatched to a second worker.
fn verdict(outcome: Option<bool>, evidence: &Evidence, wanted_pods: usize, kueue_dispatched_twice: bool) -> Verdict {
    let finished = outcome == Some(true);
    if finished && evidence.ran_once(wanted_pods) {
        Verdict::FinishedOnce
    } else if finished && kueue_dispatched_twice && evidence.ran_once_on_two_workers(wanted_pods) {
        Verdict::DispatchedTwiceByKueue
    } else if evidence.duplicated(wanted_pods) {
        Verdict::Duplicated
    } else {
        Verdict::Lost
    }
}

/// The line the report gives a job that did not finish exactly once.
fn told(submitted: &Submitted, verdict: Verdict, outcome: Option<bool>, evidence: &Evidence, why: &str) -> String {
    let (name, wanted) = (&submitted.job.name, submitted.job.pods);
    match verdict {
        Verdict::FinishedOnce => format!("{name}: finished once"),
        Verdict::DispatchedTwiceByKueue => {
            format!("{name}: ran once on each of two workers, wanted {wanted} pod(s): {evidence:?} ({why})")
        }
        Verdict::Duplicated => format!("{name}: DUPLICATED, wanted {wanted} pod(s): {evidence:?}"),
        Verdict::Lost => format!("{name}: LOST (outcome {outcome:?}), wanted {wanted} pod(s): {evidence:?}"),
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
    let renewals = LeaseRenewals::default();
    for (i, cluster) in CLUSTERS.into_iter().enumerate() {
        watches.push(renewals.watch(i, &watching_client(&sandbox, cluster).await));
    }
    let manager = sandbox.client("manager").await;
    let mut rng = Rng::new(size.seed);
    let planned = jobs::plan([size.external, size.wrapped, size.batch], Nodes::Kwok, &mut rng);
    let waiting = WaitingForNomination::default();
    watches.push(waiting.watch(&manager));
    let mut injector = Injector::new(&sandbox, WORKERS, waiting);
    let mut submitted = Vec::new();
    for (round, wave) in planned.chunks(planned.len().div_ceil(size.rounds).max(1)).enumerate() {
        // The wave goes in while the round's faults land, so they hit jobs in every phase: its
        // first half under the controller kills, its second half as Kueue restarts, so that
        // MultiKueue has Workloads waiting for a worker when it goes down.
        let (first, second) = wave.split_at(wave.len() / 2);
        let submitting = tokio::spawn(submit_all(manager.clone(), first.to_vec()));
        injector.controller_kills(&mut rng).await;
        let submitting_second = tokio::spawn(submit_all(manager.clone(), second.to_vec()));
        injector.kueue_and_api_server(round, &mut rng).await;
        submitted.extend(submitting.await.expect("submission task"));
        submitted.extend(submitting_second.await.expect("submission task"));
    }

    println!("{:>4.0} s: submitted and faults injected", started.elapsed().as_secs_f64());
    let outcomes = outcomes(&manager, &submitted, STALL).await;
    println!("{:>4.0} s: every job done (or none finished for {STALL:?})", started.elapsed().as_secs_f64());
    let mut clients = Vec::new();
    for cluster in CLUSTERS {
        clients.push((cluster, sandbox.client(cluster).await));
    }
    let orphans = orphans(&clients, Duration::from_secs(180)).await;
    println!("{:>4.0} s: no orphan left (or the deadline passed)", started.elapsed().as_secs_f64());
    let unseen_faults = injector.unseen_within(&renewals, TAKEOVER).await;
    println!("{:>4.0} s: every fault seen taking effect (or the deadline passed)", started.elapsed().as_secs_f64());
    let behind = ledger.behind_within(&clients, Duration::from_secs(60)).await;
    println!(
        "{:>4.0} s: the ledger saw everything as it is now (or the deadline passed)",
        started.elapsed().as_secs_f64()
    );
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
        controller_kills_seen: injector.controller_kills_seen(&renewals),
        elapsed: started.elapsed(),
        problems: unseen_faults.iter().map(|u| format!("fault not seen: {u}")).collect(),
        decided_by_kueue: Vec::new(),
    };
    report.problems.extend(orphans.iter().map(|o| format!("orphan: {o}")));
    report.problems.extend(behind.iter().map(|b| format!("not in the ledger as it is now: {b}")));
    let kueue_logs = [sandbox.dir.join("manager/logs/kueue.log"), sandbox.dir.join("kueue-0-restarted.log")];
    let second_dispatches = by_kueue::second_dispatches(&kueue_logs.each_ref().map(|p| p.as_path()));
    let kueue_started = injector.kueue_started_at();
    let now = time::OffsetDateTime::now_utc();
    // Every job submitted is counted, whatever held it up: none is left out as Kueue's doing
    // but a second dispatch Kueue's log or restart proves (`Verdict::DispatchedTwiceByKueue`).
    for (job, outcome) in submitted.iter().zip(&outcomes) {
        let evidence = ledger::evidence(job, &seen);
        let wanted = job.job.pods as usize;
        let mut why = "";
        if ledger::manager_workloads(job, &seen).any(|w| second_dispatches.contains(w)) {
            why = "Kueue logged dispatching it to a second worker";
        } else if evidence.ran_once_on_two_workers(wanted) {
            let workloads = crate::common::workloads_owned_by(&manager, "default", &job.uid).await.unwrap_or_default();
            let reserved = workloads.first().and_then(by_kueue::reserved_at).filter(|_| workloads.len() == 1);
            if by_kueue::dispatched_across_restart(&evidence.copies_created, reserved, &kueue_started) {
                why = "Kueue's manager restarted between its two dispatches of one reservation";
            }
        }
        let verdict = verdict(*outcome, &evidence, wanted, !why.is_empty());
        let tally = if job.job.kind.is_ours() { &mut report.ours } else { &mut report.peer };
        tally.count(verdict, evidence.nudged);
        let line = told(job, verdict, *outcome, &evidence, why);
        match verdict {
            Verdict::FinishedOnce => {}
            Verdict::DispatchedTwiceByKueue => report.decided_by_kueue.push(line),
            Verdict::Duplicated => report.problems.push(line),
            Verdict::Lost => {
                let story = match crate::common::workloads_owned_by(&manager, "default", &job.uid).await {
                    Ok(workloads) if workloads.len() == 1 && by_kueue::never_nominated(&workloads[0], now) => format!(
                        "manager Workload, left by MultiKueue with no worker nominated and not brought back by our nudge: {}",
                        workload_story(&workloads)
                    ),
                    Ok(workloads) => format!("manager Workload: {}", workload_story(&workloads)),
                    Err(e) => format!("cannot list its Workloads: {e}"),
                };
                report.problems.push(format!("{line}\n    {story}"));
            }
        }
    }
    let ours: Vec<Submitted> = submitted.iter().filter(|s| s.job.kind.is_ours()).cloned().collect();
    report.unfinished_workloads = unfinished_workloads(&manager, &ours).await;
    println!("{report}");
    // A passing test's output is captured: the suite prints this file after the tests.
    let summary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("crash-safety-summary.md");
    std::fs::write(&summary, report.to_string()).unwrap_or_else(|e| panic!("{}: {e}", summary.display()));
    assert!(unseen_faults.is_empty(), "faults not seen taking effect:\n{}", unseen_faults.join("\n"));
    assert!(behind.is_empty(), "the ledger's watches never caught up with:\n{}", behind.join("\n"));
    assert!(report.clean(), "{report}");
}

#[test]
fn evidence_tells_a_job_that_ran_twice_from_one_that_ran_once() {
    use crate::crash::ledger::Seen;
    let job = Submitted {
        job: Planned { kind: Kind::External, name: "ej-1".into(), pods: 1, run_seconds: 1, nodes: Nodes::Kwok },
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
        ..Default::default()
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
    assert!(!ledger::evidence(&job, &once).nudged);
    let mut created = once.clone();
    created[3].created = Some(120);
    assert_eq!(ledger::evidence(&job, &created).copies_created, vec![120], "the copy on the worker");
    let mut nudged = once.clone();
    nudged[1].nudged = true;
    assert!(ledger::evidence(&job, &nudged).nudged);
}

#[test]
fn the_ledger_is_behind_until_it_saw_each_object_as_listed() {
    let pod = |version: &str| {
        let mut pod = DynamicObject::new("p1", &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()));
        pod.metadata.uid = Some("u1".into());
        pod.metadata.resource_version = Some(version.into());
        pod
    };
    let ledger = Ledger::default();
    assert_eq!(ledger.not_seen_as("Pod", &[pod("7")]), ["Pod p1 at resourceVersion 7"], "never seen");
    ledger.record("worker1", "Pod", &pod("7"));
    assert!(ledger.not_seen_as("Pod", &[pod("7")]).is_empty());
    assert_eq!(ledger.not_seen_as("Pod", &[pod("8")]), ["Pod p1 at resourceVersion 8"], "an update not seen yet");
    ledger.record("worker1", "Pod", &pod("8"));
    assert!(ledger.not_seen_as("Pod", &[pod("8")]).is_empty(), "the update seen");
}

#[test]
fn every_job_gets_a_verdict_and_only_a_second_dispatch_kueue_logged_is_not_held_against_us() {
    let on = |clusters: &[&str], pods| Evidence {
        pods,
        succeeded: pods,
        ran_on: clusters.iter().map(|c| c.to_string()).collect(),
        manager_workloads: 1,
        workloads_per_copy: 1,
        ..Default::default()
    };
    let once = on(&["worker1"], 1);
    assert_eq!(verdict(Some(true), &once, 1, false), Verdict::FinishedOnce);
    assert_eq!(verdict(Some(true), &Evidence { nudged: true, ..on(&["worker1"], 1) }, 1, false), Verdict::FinishedOnce);
    // A Workload MultiKueue left with no worker, not brought back: nothing ran. Nothing excuses it.
    let never_ran = Evidence { manager_workloads: 1, ..Default::default() };
    assert_eq!(verdict(None, &never_ran, 1, false), Verdict::Lost);
    assert_eq!(verdict(None, &never_ran, 1, true), Verdict::Lost);
    assert_eq!(verdict(Some(false), &once, 1, false), Verdict::Lost, "failed");
    assert_eq!(verdict(None, &once, 1, false), Verdict::Lost, "ran, but never finished on the manager");
    assert_eq!(verdict(Some(true), &Evidence { succeeded: 0, ..on(&["worker1"], 1) }, 1, false), Verdict::Lost);
    let two_workers = on(&["worker1", "worker2"], 2);
    assert_eq!(verdict(Some(true), &two_workers, 1, true), Verdict::DispatchedTwiceByKueue);
    assert_eq!(verdict(Some(true), &two_workers, 1, false), Verdict::Duplicated, "without Kueue's word");
    assert_eq!(verdict(None, &two_workers, 1, true), Verdict::Duplicated, "and never finished");
    assert_eq!(verdict(Some(true), &on(&["manager", "worker1"], 2), 1, true), Verdict::Duplicated);
    assert_eq!(verdict(Some(true), &on(&["worker1"], 2), 1, true), Verdict::Duplicated, "twice on one worker");
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
    let job = |kind, name: &str| Planned { kind, name: name.into(), pods: 1, run_seconds: 2, nodes: Nodes::Kwok };
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
    let planned = jobs::plan([6, 3, 3], Nodes::Kwok, &mut Rng::new(7));
    let count = |kind| planned.iter().filter(|p| p.kind == kind).count();
    assert_eq!((count(Kind::External), count(Kind::Wrapped), count(Kind::Batch)), (6, 3, 3));
    for half in planned.chunks(6) {
        assert!(Kind::ALL.iter().all(|k| half.iter().any(|p| p.kind == *k)), "{half:?}");
    }
    let names: HashSet<&str> = planned.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), 12);
    assert!(names.contains("ej-6") && names.contains("wj-3") && names.contains("bj-3"));
    assert!(jobs::plan([2, 0, 0], Nodes::Kwok, &mut Rng::new(7)).iter().all(|p| p.kind == Kind::External));
}
