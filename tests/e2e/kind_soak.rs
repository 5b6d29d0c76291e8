//! End-to-end soak on kind clusters (a manager and a worker, through MultiKueue), where pods
//! really run. ExternalJobs, WrappedJobs (a Job and a Deployment) and, as the peer, batch Jobs
//! go in a few seconds apart while faults land one after another (`crash::kind_faults`): our
//! controller's leading pod deleted, Kueue's pod deleted, the worker's node container
//! restarted, the worker's kube-apiserver killed. Then, with at least 20 jobs in flight, our
//! controller is upgraded in place — a newer image loaded and `install --image` run on both
//! clusters — while admissions go on: not one may fail.
//!
//! Every job of ours must finish exactly once, counted from the ledger of what really ran
//! (`crash::ledger`): a pod that a node restart killed is made up for by the job's own retries,
//! and nothing else may run twice. At the end no object of ours is orphaned, no manager
//! Workload is left unfinished and no quota is held.
//!
//! KUEUE_EXT_KIND_SOAK_JOBS (40), KUEUE_EXT_KIND_SOAK_FAULTS (8),
//! KUEUE_EXT_KIND_SOAK_UPGRADE_JOBS (24) and KUEUE_EXT_KIND_SOAK_SEED size it; `hack/soak.sh
//! --kind` runs it bigger, and a failing run is replayed with the seed it printed.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Client;
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::Value;

use crate::common::{BIN, Sandbox, api, kind_images_built, text};
use crate::crash::Rng;
use crate::crash::end::{Outcomes, left_after, orphans, unfinished_workloads};
use crate::crash::jobs::{self, Kind, Nodes, Planned, Submitted};
use crate::crash::kind_faults::{self, Fault, Injected};
use crate::crash::ledger::{self, Ledger};
use crate::fixtures::{BUSYBOX, external_job};

const CLUSTERS: [&str; 2] = ["manager", "worker1"];
/// The soak's sandbox, named apart from the kind tests' sandboxes that run beside it.
const SANDBOX: &str = "kx-soak";
/// How long no job may finish before those left count as stuck.
const STALL: Duration = Duration::from_secs(600);
/// The jobs the upgrade must find in flight, as the issue asks.
const IN_FLIGHT_AT_UPGRADE: usize = 20;

/// The queues' CPU, fixed rather than measured at `up` (about 1 CPU there, the one kind node's
/// 2 cores less its control plane, Kueue and our controller) so that every run of a seed admits
/// alike. A quota above what the node runs would pile pods up unschedulable, and a WrappedJob's
/// servers could then hold the node while its work waits.
const QUOTA_CPU: &str = "800m";

struct Size {
    jobs: usize,
    faults: usize,
    upgrade_jobs: usize,
    seed: u64,
}

impl Size {
    fn from_env() -> Self {
        let read = crate::crash::env_size;
        Size {
            jobs: read("KUEUE_EXT_KIND_SOAK_JOBS", 40) as usize,
            faults: read("KUEUE_EXT_KIND_SOAK_FAULTS", 8) as usize,
            upgrade_jobs: read("KUEUE_EXT_KIND_SOAK_UPGRADE_JOBS", 24).max(IN_FLIGHT_AT_UPGRADE as u64) as usize,
            seed: crate::crash::env_seed("KUEUE_EXT_KIND_SOAK_SEED"),
        }
    }
}

/// ExternalJobs and WrappedJobs two fifths each, batch Jobs (the peer) the rest.
fn counts(jobs: usize) -> [usize; 3] {
    let ours = jobs * 2 / 5;
    [ours, ours, jobs - 2 * ours]
}

/// Submits `wave` one job at a time, a random 0.5 to 3 s apart, as a steady user would.
async fn submit_paced(client: Client, wave: Vec<Planned>, seed: u64) -> Vec<Submitted> {
    let mut rng = Rng::new(seed);
    let mut submitted = Vec::new();
    for job in wave {
        tokio::time::sleep(Duration::from_millis(rng.between(500, 3_000))).await;
        submitted.push(job.submit(&client).await);
    }
    submitted
}

/// The upgrade's jobs: named apart from the soak's, and running long enough to be in flight
/// through the roll.
fn upgrade_jobs(count: usize, rng: &mut Rng) -> Vec<Planned> {
    let mut planned = jobs::plan(counts(count), Nodes::Real, rng);
    for job in &mut planned {
        job.name = format!("up-{}", job.name);
        job.run_seconds = rng.between(30, 60);
    }
    planned
}

/// A newer build of the controller's image: the one that runs, taken from the manager's node,
/// with a label added (so a new image id) under a new tag, loaded into every cluster's node as a
/// user loads an image into kind.
async fn newer_image(sandbox: &Sandbox) -> String {
    let deployments = api(
        &sandbox.client("manager").await,
        "apps/v1",
        "Deployment",
        "deployments",
        Some(kueue_ext::manifests::NAMESPACE),
    );
    let deployment = deployments.get("kueue-ext-controller").await.expect("our controller's Deployment");
    let current = deployment.data["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap().to_string();
    let newer = format!("{current}-upgrade");
    let run = |program: &str, args: &[&str]| {
        let output = std::process::Command::new(program).args(args).output().expect("it runs");
        assert!(output.status.success(), "{program} {}: {}", args.join(" "), text(&output));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    // containerd names an image of no registry as Docker Hub's, as Docker does unsaid.
    let node = format!("{}-control-plane", sandbox.context("manager"));
    let export = format!("docker exec {node} ctr -n k8s.io images export - docker.io/{current} | docker load");
    run("sh", &["-c", &export]);
    let container = run("docker", &["create", &current]);
    run("docker", &["commit", "--change", "LABEL dev.kueue-ext.build=upgrade", &container, &newer]);
    run("docker", &["rm", &container]);
    let kind = kueue_ext::sandbox::ensure_kind_cli(&kueue_ext::sandbox::progress::Progress::stderr())
        .await
        .expect("the kind CLI");
    let kind = kind.to_str().expect("utf-8 path");
    for cluster in CLUSTERS {
        run(kind, &["load", "docker-image", &newer, "--name", &sandbox.context(cluster)]);
    }
    // The nodes have both now; the daemon's copies would only fill the disk.
    run("docker", &["rmi", &current, &newer]);
    newer
}

/// Dry-run admissions of an ExternalJob on every cluster, one after another until `stop`:
/// how many there were, and each that failed.
async fn admissions_until(clusters: Vec<(&'static str, Client)>, stop: Arc<AtomicBool>) -> (usize, Vec<String>) {
    let job: DynamicObject = serde_json::from_value(
        external_job("admission-probe").image(BUSYBOX).requests("10m", "16Mi").command("true").value(),
    )
    .expect("a job");
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let (mut tried, mut failed) = (0, Vec::new());
    while !stop.load(Ordering::Relaxed) {
        for (cluster, client) in &clusters {
            let jobs = api(client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
            tried += 1;
            if let Err(e) = jobs.create(&dry_run, &job).await {
                let seen = webhook_endpoints(client).await;
                failed.push(format!("{cluster}: admission {tried}: {e}\n    the Service's endpoints then: {seen}"));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (tried, failed)
}

/// What the webhook's Service routed to: each endpoint's pod with its ready, serving and
/// terminating conditions, and how often that pod's container restarted.
async fn webhook_endpoints(client: &Client) -> String {
    use kueue_ext::manifests::{NAMESPACE, WEBHOOK_SERVICE};
    let slices = api(client, "discovery.k8s.io/v1", "EndpointSlice", "endpointslices", Some(NAMESPACE));
    let selector = format!("kubernetes.io/service-name={WEBHOOK_SERVICE}");
    let pods = api(client, "v1", "Pod", "pods", Some(NAMESPACE));
    let (slices, pods) =
        match (slices.list(&ListParams::default().labels(&selector)).await, pods.list(&Default::default()).await) {
            (Ok(slices), Ok(pods)) => (slices, pods),
            (Err(e), _) | (_, Err(e)) => return format!("cannot read: {e}"),
        };
    let restarts = |pod: &str| {
        let pod = pods.items.iter().find(|p| p.metadata.name.as_deref() == Some(pod));
        pod.map_or(-1, |p| p.data["status"]["containerStatuses"][0]["restartCount"].as_i64().unwrap_or(-1))
    };
    let endpoints = slices.items.iter().flat_map(|s| s.data["endpoints"].as_array().cloned().unwrap_or_default());
    let described: Vec<String> = endpoints
        .map(|e| {
            let pod = e["targetRef"]["name"].as_str().unwrap_or("?");
            let c = &e["conditions"];
            format!(
                "{pod} ready={} serving={} terminating={} restarts={}",
                c["ready"],
                c["serving"],
                c["terminating"],
                restarts(pod)
            )
        })
        .collect();
    if described.is_empty() { "none".into() } else { described.join("; ") }
}

/// `install --image` on `cluster`, as a user upgrades: it returns once the roll is done.
async fn install(sandbox: &Sandbox, cluster: &str, image: &str) -> String {
    let (kubeconfig, context, image) = (sandbox.kubeconfig(), sandbox.context(cluster), image.to_string());
    let output = tokio::task::spawn_blocking(move || {
        let kubeconfig = kubeconfig.to_str().expect("utf-8 path").to_string();
        let args = ["install", "--kubeconfig", &kubeconfig, "--context", &context, "--image", &image];
        std::process::Command::new(BIN).args(args).output().expect("the plugin runs")
    })
    .await
    .expect("install's thread");
    assert!(output.status.success(), "install on {cluster}: {}", text(&output));
    text(&output)
}

/// The images our controller's ready pods on `client`'s cluster run, leaving out those on their
/// way out (deleted, still ready until they stop).
async fn controller_images(client: &Client) -> Vec<String> {
    let pods = api(client, "v1", "Pod", "pods", Some(kueue_ext::manifests::NAMESPACE));
    let listed = pods.list(&Default::default()).await.expect("list our pods");
    let ready = |p: &DynamicObject| {
        let conditions = p.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
        conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True")
    };
    let images = listed.items.iter().filter(|p| ready(p) && p.metadata.deletion_timestamp.is_none());
    images.map(|p| p.data["spec"]["containers"][0]["image"].as_str().unwrap_or_default().to_string()).collect()
}

/// What the upgrade saw.
struct Upgrade {
    image: String,
    in_flight: usize,
    admissions: usize,
    failed: Vec<String>,
    took: Duration,
}

/// Rolls our controller to a newer image on every cluster, worker first, with admissions going
/// on throughout.
async fn upgrade(sandbox: &Sandbox, clients: &[(&'static str, Client)], in_flight: usize) -> Upgrade {
    let image = newer_image(sandbox).await;
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let probing = tokio::spawn(admissions_until(clients.to_vec(), stop.clone()));
    for (cluster, client) in clients.iter().rev() {
        let said = install(sandbox, cluster, &image).await;
        assert!(said.contains("deployment.apps/kueue-ext-controller configured"), "{cluster}: {said}");
        let images = controller_images(client).await;
        assert!(!images.is_empty() && images.iter().all(|i| *i == image), "{cluster} runs {images:?}, not {image}");
    }
    stop.store(true, Ordering::Relaxed);
    let (admissions, failed) = probing.await.expect("the admissions task");
    Upgrade { image, in_flight, admissions, failed, took: started.elapsed() }
}

/// Quota still in use on a cluster's ClusterQueue (an empty list: none).
async fn quota_held(client: &Client) -> Result<Vec<String>, String> {
    let queues = api(client, "kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", None);
    let cq = queues.get(kueue_ext::sandbox::cluster_setup::queues::CLUSTER_QUEUE).await.map_err(|e| e.to_string())?;
    let status: &Value = &cq.data["status"];
    let mut held: Vec<String> = ["reservingWorkloads", "admittedWorkloads"]
        .into_iter()
        .filter(|field| status[field].as_i64().unwrap_or(0) > 0)
        .map(|field| format!("{field} {}", status[field]))
        .collect();
    for flavor in status["flavorsReservation"].as_array().into_iter().flatten() {
        for resource in flavor["resources"].as_array().into_iter().flatten() {
            if !matches!(resource["total"].as_str(), None | Some("0")) {
                held.push(format!("{} {} reserved", resource["total"], resource["name"]));
            }
        }
    }
    Ok(held)
}

#[derive(Default)]
struct Tally {
    submitted: usize,
    finished_once: usize,
    lost: usize,
    duplicated: usize,
    /// Finished once though its node killed one of its pods (a restart) or could not start it,
    /// which its retries made up for.
    retried_after_a_node_fault: usize,
}

struct Report {
    seed: u64,
    ours: Tally,
    peer: Tally,
    faults: Vec<Injected>,
    upgrade: Upgrade,
    orphans: usize,
    unfinished_workloads: usize,
    quota_held: Vec<String>,
    problems: Vec<String>,
    elapsed: Duration,
}

impl Report {
    fn clean(&self) -> bool {
        self.ours.lost == 0
            && self.ours.duplicated == 0
            && self.orphans == 0
            && self.unfinished_workloads == 0
            && self.quota_held.is_empty()
            && self.faults.iter().all(|f| f.seen.is_ok())
            && self.upgrade.failed.is_empty()
            && self.upgrade.in_flight >= IN_FLIGHT_AT_UPGRADE
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kind soak summary (seed {}):", self.seed)?;
        writeln!(f, "| jobs | submitted | finished once | of which retried after a node fault | lost | duplicated |")?;
        writeln!(f, "| --- | --- | --- | --- | --- | --- |")?;
        for (jobs, t) in
            [("ExternalJob + WrappedJob", &self.ours), ("peer: batch/v1 Job (Kueue's integration)", &self.peer)]
        {
            writeln!(
                f,
                "| {jobs} | {} | {} | {} | {} | {} |",
                t.submitted, t.finished_once, t.retried_after_a_node_fault, t.lost, t.duplicated
            )?;
        }
        let count = |fault| self.faults.iter().filter(|i| i.fault == fault).count();
        writeln!(
            f,
            "faults: {} ({} controller pods deleted, {} Kueue pods deleted, {} node restarts, {} API server kills), {} seen taking effect",
            self.faults.len(),
            count(Fault::ControllerPod),
            count(Fault::KueuePod),
            count(Fault::NodeRestart),
            count(Fault::ApiServerKill),
            self.faults.iter().filter(|i| i.seen.is_ok()).count()
        )?;
        for fault in &self.faults {
            let seen = match &fault.seen {
                Ok(after) => format!("seen after {:.0} s", after.as_secs_f64()),
                Err(why) => format!("NOT SEEN: {why}"),
            };
            writeln!(f, "  {:?} on {} ({}): {seen}", fault.fault, fault.cluster, fault.target)?;
        }
        let u = &self.upgrade;
        writeln!(
            f,
            "upgrade to {}: {} jobs in flight, {} admissions during the roll, {} failed, {:.0} s",
            u.image,
            u.in_flight,
            u.admissions,
            u.failed.len(),
            u.took.as_secs_f64()
        )?;
        writeln!(
            f,
            "orphans {}, manager Workloads of ours not Finished {}, quota held {:?}; {:.0} s in all",
            self.orphans,
            self.unfinished_workloads,
            self.quota_held,
            self.elapsed.as_secs_f64()
        )?;
        for line in self.problems.iter().chain(&u.failed).take(40) {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_job_finishes_exactly_once_on_kind_through_pod_deletions_node_restarts_and_an_upgrade() {
    let size = Size::from_env();
    println!(
        "kind soak: {} jobs under {} faults, then {} jobs through an upgrade; seed {}",
        size.jobs, size.faults, size.upgrade_jobs, size.seed
    );
    kind_images_built("");
    let sandbox = Sandbox::soak_on_kind(
        SANDBOX,
        &["--workers", "1", "--nodes", "1", "--node-cpu", QUOTA_CPU, "--node-memory", "4Gi"],
    );
    let started = Instant::now();
    let mut clients = Vec::new();
    for cluster in CLUSTERS {
        clients.push((cluster, sandbox.client(cluster).await));
    }
    let manager = clients[0].1.clone();
    let (ledger, outcomes) = (Ledger::default(), Outcomes::default());
    let mut watches = outcomes.watch(&manager);
    for (cluster, client) in &clients {
        watches.extend(ledger.watch(cluster, client));
    }

    let mut rng = Rng::new(size.seed);
    let planned = jobs::plan(counts(size.jobs), Nodes::Real, &mut rng);
    let names: Vec<String> = CLUSTERS.map(String::from).to_vec();
    let faults = kind_faults::plan(size.faults, &names, &mut rng);
    let waves = planned.chunks(planned.len().div_ceil(faults.len().max(1)).max(1));
    let (mut submitted, mut injected) = (Vec::new(), Vec::new());
    for (i, wave) in waves.enumerate() {
        let submitting = tokio::spawn(submit_paced(manager.clone(), wave.to_vec(), rng.next()));
        if let Some((fault, cluster)) = faults.get(i) {
            tokio::time::sleep(Duration::from_millis(rng.between(2_000, 8_000))).await;
            let client = &clients.iter().find(|(c, _)| c == cluster).expect("a sandbox cluster").1;
            let fault = kind_faults::inject(*fault, cluster, &sandbox.context(cluster), client).await;
            println!("{:>4.0} s: {:?} on {}: {:?}", started.elapsed().as_secs_f64(), fault.fault, cluster, fault.seen);
            injected.push(fault);
        }
        submitted.extend(submitting.await.expect("the submitting task"));
    }
    println!("{:>4.0} s: the soak's jobs submitted and its faults seen", started.elapsed().as_secs_f64());

    let through_upgrade = upgrade_jobs(size.upgrade_jobs, &mut rng);
    let upgrade_submitted: Vec<Submitted> = futures::stream::iter(through_upgrade)
        .map(|job| {
            let manager = manager.clone();
            async move { job.submit(&manager).await }
        })
        .buffer_unordered(4)
        .collect()
        .await;
    submitted.extend(upgrade_submitted);
    let in_flight = outcomes.of(&submitted).iter().filter(|o| o.is_none()).count();
    let upgrade = upgrade(&sandbox, &clients, in_flight).await;
    println!("{:>4.0} s: upgraded to {}", started.elapsed().as_secs_f64(), upgrade.image);

    let ours: Vec<Submitted> = submitted.iter().filter(|s| s.job.kind.is_ours()).cloned().collect();
    outcomes.settled(&ours, STALL).await;
    let settled = outcomes.of(&submitted);
    // The peer's jobs Kueue left unfinished count as lost in their row; they go, with the quota
    // they hold, before the end state is read.
    let unfinished_peers = submitted.iter().zip(&settled).filter(|(s, o)| !s.job.kind.is_ours() && o.is_none());
    let batch_jobs = api(&manager, "batch/v1", "Job", "jobs", Some("default"));
    for (job, _) in unfinished_peers {
        batch_jobs.delete(&job.job.name, &DeleteParams::foreground()).await.expect("delete an unfinished peer job");
    }
    let orphans = orphans(&clients, Duration::from_secs(180)).await;
    let behind = ledger.behind_within(&clients, Duration::from_secs(60)).await;
    let mut quota = Vec::new();
    for (cluster, client) in &clients {
        let held = left_after(Duration::from_secs(60), Duration::from_secs(2), || async {
            quota_held(client).await.unwrap_or_else(|e| vec![format!("cannot read: {e}")])
        });
        quota.extend(held.await.into_iter().map(|q| format!("{cluster}: {q}")));
    }
    let seen = ledger.snapshot();
    watches.iter().for_each(|w| w.abort());

    let node_restarts: Vec<(String, i64)> =
        injected.iter().filter(|i| i.fault == Fault::NodeRestart).map(|i| (i.cluster.clone(), i.at)).collect();
    let mut report = Report {
        seed: size.seed,
        ours: Tally::default(),
        peer: Tally::default(),
        faults: injected,
        upgrade,
        orphans: orphans.len(),
        unfinished_workloads: unfinished_workloads(&manager, &ours).await,
        quota_held: quota,
        problems: orphans.iter().map(|o| format!("orphan: {o}")).collect(),
        elapsed: started.elapsed(),
    };
    report.problems.extend(behind.iter().map(|b| format!("not in the ledger as it is now: {b}")));
    for (job, outcome) in submitted.iter().zip(&settled) {
        let evidence = ledger::evidence(job, &seen);
        let wanted = job.job.pods as usize;
        let tally = if job.job.kind == Kind::Batch { &mut report.peer } else { &mut report.ours };
        tally.submitted += 1;
        if *outcome == Some(true) && evidence.ran_once_despite(wanted, &node_restarts) {
            tally.finished_once += 1;
            tally.retried_after_a_node_fault += usize::from(!evidence.unfinished_pods.is_empty());
            continue;
        }
        let duplicated = evidence.more_than_once(wanted);
        if duplicated {
            tally.duplicated += 1;
        } else {
            tally.lost += 1;
        }
        let verdict = if duplicated { "DUPLICATED" } else { "LOST" };
        report
            .problems
            .push(format!("{}: {verdict} (outcome {outcome:?}), wanted {wanted} pod(s): {evidence:?}", job.job.name));
    }
    println!("{report}");
    // A passing test's output is captured: the suite prints this file after the tests.
    let summary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kind-soak-summary.md");
    std::fs::write(&summary, report.to_string()).unwrap_or_else(|e| panic!("{}: {e}", summary.display()));
    assert!(behind.is_empty(), "the ledger's watches never caught up with:\n{}", behind.join("\n"));
    assert!(report.clean(), "{report}");
}

#[test]
fn a_pod_never_started_is_one_whose_every_container_failed_to_start() {
    use serde_json::json;
    let start_error = json!({"state": {"terminated": {
        "exitCode": 128, "reason": "StartError", "startedAt": "1970-01-01T00:00:00Z",
        "message": "failed to create containerd task: failed to create shim task: OCI runtime create failed"}}});
    let ran = json!({"state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-28T08:11:05Z"}}});
    let failed = |containers: Vec<serde_json::Value>| json!({"phase": "Failed", "containerStatuses": containers});
    assert!(ledger::never_started(&failed(vec![start_error.clone()])));
    assert!(!ledger::never_started(&failed(vec![start_error.clone(), ran.clone()])), "one container ran");
    assert!(!ledger::never_started(&failed(vec![ran])), "the job's own failure");
    assert!(!ledger::never_started(&failed(vec![])), "nothing known of its containers");
    let pending = json!({"phase": "Pending", "containerStatuses": [start_error]});
    assert!(!ledger::never_started(&pending), "the kubelet may still start it");
}

#[test]
fn only_a_pod_that_its_node_killed_or_never_started_is_made_up_for() {
    use crate::crash::ledger::{Evidence, UnfinishedPod};
    let killed = UnfinishedPod { cluster: "worker1".into(), created: Some(100), never_started: false };
    let once = Evidence {
        pods: 2,
        succeeded: 1,
        ran_on: ["worker1".to_string()].into(),
        unfinished_pods: vec![killed.clone()],
        manager_workloads: 1,
        workloads_per_copy: 1,
        components_per_name: 1,
        ..Default::default()
    };
    let restarts = |at: i64| vec![("worker1".to_string(), at)];
    assert!(once.ran_once_despite(1, &restarts(100)), "created before the restart");
    assert!(!once.ran_once_despite(1, &restarts(99)), "created after it: not the restart's doing");
    assert!(!once.ran_once_despite(1, &[("manager".into(), 200)]), "a restart of another node");
    assert!(!once.ran_once_despite(1, &[]), "no restart at all");
    let never_started = UnfinishedPod { never_started: true, ..killed };
    let start_failed = Evidence { unfinished_pods: vec![never_started.clone()], ..once.clone() };
    assert!(start_failed.ran_once_despite(1, &[]), "a pod whose node could not start it");
    let start_failed_and_reset = Evidence { components_per_name: 2, succeeded: 2, pods: 3, ..start_failed };
    assert!(
        start_failed_and_reset.ran_once_despite(1, &[]),
        "the reset after it runs again a pod of the first set that was still running"
    );
    let twice = Evidence { succeeded: 2, unfinished_pods: vec![], ..once.clone() };
    assert!(!twice.ran_once_despite(1, &restarts(100)), "succeeded twice");
    let two_copies = Evidence { workloads_per_copy: 2, ..once.clone() };
    assert!(!two_copies.ran_once_despite(1, &restarts(100)));
    let reset = Evidence { components_per_name: 2, ..once.clone() };
    assert!(reset.ran_once_despite(1, &restarts(100)), "a WrappedJob reset after its pod was killed");
    let reset_after_a_pod_succeeded = Evidence { pods: 4, succeeded: 3, ..reset.clone() };
    assert!(reset_after_a_pod_succeeded.ran_once_despite(2, &restarts(100)), "the reset runs the whole set again");
    let three_sets_worth = Evidence { pods: 4, succeeded: 5, ..reset.clone() };
    assert!(!three_sets_worth.ran_once_despite(2, &restarts(100)), "more than each set once");
    let reset_for_nothing = Evidence { components_per_name: 2, pods: 1, unfinished_pods: vec![], ..once.clone() };
    assert!(!reset_for_nothing.ran_once_despite(1, &restarts(100)), "components recreated with no pod killed");
    let on_the_manager = Evidence { ran_on: ["manager".to_string()].into(), ..once.clone() };
    assert!(!on_the_manager.ran_once_despite(1, &restarts(100)));
    let clean = Evidence { pods: 1, unfinished_pods: vec![], ..once };
    assert!(clean.ran_once_despite(1, &[]));
}
