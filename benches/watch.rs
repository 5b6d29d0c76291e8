//! `watch` at scale, without a cluster: N jobs (default 10,000) shaped like a busy MultiKueue
//! sandbox — every job with its Workload, a third dispatched to a worker with a copy, pods and
//! an event — joined by the real model and drawn by the real view on a test terminal.
//!
//! Measured, each against a reference in the same run:
//! 1. one frame of the jobs table with N jobs, against the same frame with 100 jobs (drawing
//!    is meant to cost what is on screen, not what is in the model: ratio ≈ 1), and one frame
//!    of the pending view of one of the 50 ClusterQueues the pending jobs wait in;
//! 2. a filter keystroke over N jobs;
//! 3. the join of a snapshot into the model (time);
//! 4. the model's memory (bytes held after the join, and the peak during it), against the
//!    objects the watch caches hold for the same jobs.
//!
//! `cargo bench --bench watch`; `KUEUE_EXT_BENCH_JOBS` (default 10000) and
//! `KUEUE_EXT_BENCH_RUNS` (default 30) size it. Prints a table, writes target/bench/watch.json.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kube::api::DynamicObject;
use kueue_ext::integrations::registry::KindRegistry;
use kueue_ext::model::snapshot::{
    ClusterSnapshot, EventLine, JobKind, JobObject, ObjectKey, PodCounts, Role, Snapshot,
};
use kueue_ext::model::{Model, join};
use kueue_ext::tui::app::App;
use kueue_ext::tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

/// Counts live and peak heap bytes, so memory is measured exactly rather than by RSS.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

const CREATED: &str = "2026-01-01T00:00:00Z";
const NOW: i64 = 1_767_225_600 + 3600;

fn object(value: Value) -> Arc<DynamicObject> {
    Arc::new(serde_json::from_value(value).expect("bench object"))
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": CREATED})
}

/// ClusterQueues the jobs are spread over, each fed by a LocalQueue of the same number in
/// every namespace.
const QUEUES: usize = 50;
const NAMESPACES: usize = 7;

/// Job `train-NNNNN`'s LocalQueue: by its number, so every ClusterQueue gets pending jobs.
fn queue_of(name: &str) -> String {
    let number: usize = name.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or_default();
    format!("lq-{}", number % QUEUES)
}

fn job(kind: &JobKind, name: &str, origin: bool) -> Value {
    let mut labels = json!({"kueue.x-k8s.io/queue-name": queue_of(name), "team": "ml"});
    if origin {
        labels["kueue.x-k8s.io/multikueue-origin"] = json!("multikueue");
    }
    json!({
        "apiVersion": kind.api_resource().api_version, "kind": kind.name(),
        "metadata": {"name": name, "namespace": format!("team-{}", name.len() % NAMESPACES), "uid": format!("uid-{name}"),
                     "creationTimestamp": CREATED, "labels": labels, "resourceVersion": "12345", "generation": 2},
        "spec": {"suspend": !origin, "managedBy": "kueue.x-k8s.io/multikueue", "podSets": [{"name": "main", "count": 4,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "registry.example/train:v1",
                 "args": ["--epochs", "10"], "resources": {"requests": {"cpu": "1", "memory": "4Gi"}}}]}}}]},
        "status": {"conditions": [condition("Suspended", if origin { "False" } else { "True" }, "JobSuspended", "")]},
    })
}

fn workload(job: &Value, state: usize) -> Value {
    let mut conditions = vec![condition(
        "QuotaReserved",
        "False",
        "Pending",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 4 more needed",
    )];
    let mut status = json!({"resourceRequests": [{"name": "main", "resources": {"cpu": "4", "memory": "16Gi"}}]});
    if state > 0 {
        conditions =
            vec![condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue")];
        status = json!({"admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [{"name": "main",
            "flavors": {"cpu": "default-flavor", "memory": "default-flavor"}, "count": 4}]},
            "admissionChecks": [{"name": "multikueue", "state": "Pending", "message": ""}]});
    }
    if state > 1 {
        conditions.push(condition("Admitted", "True", "Admitted", "The workload is admitted"));
        status["admissionChecks"][0] =
            json!({"name": "multikueue", "state": "Ready", "message": "The workload was admitted on \"worker1\""});
        status["clusterName"] = json!("worker1");
    }
    status["conditions"] = json!(conditions);
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": format!("wl-{}", job["metadata"]["name"].as_str().unwrap_or_default()),
                     "namespace": job["metadata"]["namespace"], "creationTimestamp": CREATED,
                     "ownerReferences": [{"apiVersion": job["apiVersion"], "kind": job["kind"], "name": job["metadata"]["name"],
                                          "uid": job["metadata"]["uid"], "controller": true}]},
        "spec": {"queueName": job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]},
        "status": status,
    })
}

fn local_queue(namespace: usize, n: usize) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
           "metadata": {"name": format!("lq-{n}"), "namespace": format!("team-{namespace}")},
           "spec": {"clusterQueue": format!("cq-{n}")}})
}

fn queue(name: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
           "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "default-flavor",
                    "resources": [{"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "256Gi"}]}]}]},
           "status": {"conditions": [condition("Active", "True", "Ready", "Can admit new workloads")],
                      "flavorsReservation": [{"name": "default-flavor", "resources": [{"name": "cpu", "total": "60"}]}]}})
}

/// A manager with `n` jobs (pending, reserved, admitted in turn) and a worker with the copies
/// of the admitted third.
fn snapshot(n: usize) -> Snapshot {
    let mut manager = ClusterSnapshot::empty("manager", "kueue-ext-manager", Role::Manager);
    let mut worker = ClusterSnapshot::empty("worker1", "kueue-ext-worker1", Role::Worker);
    for n in 0..QUEUES {
        manager.cluster_queues.push(object(queue(&format!("cq-{n}"))));
        for namespace in 0..NAMESPACES {
            manager.local_queues.push(object(local_queue(namespace, n)));
        }
    }
    worker.cluster_queues.push(object(queue("cluster-queue")));
    let registry = KindRegistry::built_in();
    for i in 0..n {
        let kind = registry.kinds()[i % 3].clone();
        let name = format!("train-{i:05}");
        let value = job(&kind, &name, false);
        let wl = workload(&value, i % 3);
        let namespace = value["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        manager.events.push(EventLine {
            object: ObjectKey::new("Workload", &namespace, &format!("wl-{name}")),
            type_: "Normal".into(),
            reason: "QuotaReserved".into(),
            message: "Quota reserved in ClusterQueue cluster-queue, wait time since queued was 1s".into(),
            time: Some(NOW - 60),
            count: 1,
        });
        if i % 3 == 2 {
            let mut copy = job(&kind, &name, true);
            copy["metadata"]["annotations"] = json!({"kueue.x-k8s.io/prebuilt-workload-name": format!("wl-{name}")});
            worker.jobs.push(JobObject { kind: kind.clone(), object: object(copy) });
            worker.workloads.push(object(wl.clone()));
            worker
                .pods
                .insert(ObjectKey::new(kind.name(), &namespace, &name), PodCounts { running: 4, ..Default::default() });
        }
        manager.jobs.push(JobObject { kind, object: object(value) });
        manager.workloads.push(object(wl));
    }
    Snapshot { clusters: vec![manager, worker] }
}

/// min, median, max.
fn summary(samples: &mut [f64]) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    (samples[0], samples[samples.len() / 2], samples[samples.len() - 1])
}

fn app_with(model: Model) -> App {
    let mut app = App::new("bench".into(), false);
    app.now = NOW;
    app.update(model);
    app
}

/// Milliseconds per frame of the current view, `runs` times, on a 200×50 terminal.
fn frames(app: &App, runs: usize) -> Vec<f64> {
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).expect("test terminal");
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            terminal.draw(|f| view::render(f, app)).expect("draws");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

fn main() {
    // `cargo bench` passes `--bench`; anything else (e.g. `cargo test --benches`) runs nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let jobs = env_number("KUEUE_EXT_BENCH_JOBS", 10_000);
    let runs = env_number("KUEUE_EXT_BENCH_RUNS", 30).max(1);

    let before_objects = LIVE.load(Ordering::Relaxed);
    let big = snapshot(jobs);
    let objects_bytes = LIVE.load(Ordering::Relaxed) - before_objects;

    let mut join_ms = Vec::new();
    let (mut model_bytes, mut join_peak) = (0, 0);
    let mut model = Model::default();
    for _ in 0..runs.min(5) {
        drop(std::mem::take(&mut model));
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let started = Instant::now();
        model = join(&big);
        join_ms.push(started.elapsed().as_secs_f64() * 1e3);
        model_bytes = LIVE.load(Ordering::Relaxed) - before;
        join_peak = PEAK.load(Ordering::Relaxed) - before;
    }
    assert_eq!(model.jobs.len(), jobs, "every job joined");

    let mut app = app_with(model);
    let mut big_frames = frames(&app, runs);
    let mut small_frames = frames(&app_with(join(&snapshot(100))), runs);
    let lines = app.model.pending.len();
    let longest = app.model.pending.iter().map(|l| l.workloads.len()).max().unwrap_or(0);
    for key in ":pending".chars().map(KeyCode::Char).chain([KeyCode::Enter]) {
        app.handle_key(KeyEvent::new(key, KeyModifiers::NONE));
    }
    let mut pending_frames = frames(&app, runs);
    for key in ":jobs".chars().map(KeyCode::Char).chain([KeyCode::Enter]) {
        app.handle_key(KeyEvent::new(key, KeyModifiers::NONE));
    }
    let mut filter_ms: Vec<f64> = (0..runs.min(10))
        .map(|_| {
            app.handle_key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::NONE));
            let started = Instant::now();
            app.handle_key(KeyEvent::new(KeyCode::Char('7'), KeyModifiers::NONE));
            let elapsed = started.elapsed().as_secs_f64() * 1e3;
            app.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
            elapsed
        })
        .collect();

    let (f_min, f_med, f_max) = summary(&mut big_frames);
    let (s_min, s_med, s_max) = summary(&mut small_frames);
    let (p_min, p_med, p_max) = summary(&mut pending_frames);
    let (k_min, k_med, k_max) = summary(&mut filter_ms);
    let (j_min, j_med, j_max) = summary(&mut join_ms);
    let mib = |b: usize| b as f64 / (1024.0 * 1024.0);
    println!("\nwatch with {jobs} jobs ({runs} runs; min/median/max)");
    println!("{:<34} {:>28} {:>26}", "measure", "value", "reference");
    println!(
        "{:<34} {:>7.2}/{:>7.2}/{:>7.2} ms {:>11.2} ms (100 jobs), ×{:.2}",
        "frame of the jobs table, 200×50",
        f_min,
        f_med,
        f_max,
        s_med,
        f_med / s_med
    );
    println!(
        "{:<34} {:>7.2}/{:>7.2}/{:>7.2} ms {:>11} queues, the longest {longest} pending",
        "frame of the pending view, 200×50", p_min, p_med, p_max, lines
    );
    println!("{:<34} {:>7.2}/{:>7.2}/{:>7.2} ms", "filter keystroke", k_min, k_med, k_max);
    println!("{:<34} {:>7.1}/{:>7.1}/{:>7.1} ms", "join snapshot → model", j_min, j_med, j_max);
    println!(
        "{:<34} {:>24.1} MiB {:>11.1} MiB objects, ×{:.2}",
        "model memory (held)",
        mib(model_bytes),
        mib(objects_bytes),
        model_bytes as f64 / objects_bytes as f64
    );
    println!("{:<34} {:>24.1} MiB", "model memory (peak during join)", mib(join_peak));
    println!("{:<34} {:>24} B", "model memory per job", model_bytes / jobs.max(1));

    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&out).expect("target/bench");
    let report = json!({
        "jobs": jobs, "runs": runs, "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "frame_ms": {"min": f_min, "median": f_med, "max": f_max},
        "frame_ms_100_jobs": {"min": s_min, "median": s_med, "max": s_max},
        "pending_frame_ms": {"min": p_min, "median": p_med, "max": p_max}, "queues": lines, "longest_line": longest,
        "filter_keystroke_ms": {"min": k_min, "median": k_med, "max": k_max},
        "join_ms": {"min": j_min, "median": j_med, "max": j_max},
        "model_bytes": model_bytes, "model_peak_bytes": join_peak, "objects_bytes": objects_bytes,
    });
    std::fs::write(out.join("watch.json"), serde_json::to_string_pretty(&report).expect("json")).expect("write");
    println!("\nwrote {}", out.join("watch.json").display());
}
