//! Kueue's scheduler-perf baseline on one process-runtime cluster: N ExternalJobs (ours) against
//! N batch/v1 Jobs (Kueue's Go integration, their pods made by kube-controller-manager) in the
//! same mix, each side on a fresh cluster, in ABBA order over the runs (`order.rs`).
//!
//! The shape is kubernetes-sigs/kueue's `test/performance/scheduler/configs/baseline/
//! generator.yaml`: 5 cohorts of 6 ClusterQueues, each with 20 CPU of nominal quota, a borrowing
//! limit of 100, preemption `reclaimWithinCohort: Any` and `withinClusterQueue: LowerPriority`,
//! and a namespace and LocalQueue of its own. Into each queue three streams of one-pod workloads,
//! one per class, each creating one workload every interval (upstream's generator: wait, create,
//! wait …):
//!
//! | class  | per queue | every  | runs   | priority | CPU |
//! | ------ | --------- | ------ | ------ | -------- | --- |
//! | small  | 350       | 100 ms | 200 ms | 50       | 1   |
//! | medium | 100       | 500 ms | 500 ms | 100      | 5   |
//! | large  | 50        | 1.2 s  | 1 s    | 200      | 20  |
//!
//! That is 15,000 workloads, which upstream's `rangespec.yaml` holds to 425 s of wall time (a
//! mean of 351 s: minimalkueue on envtest, Workloads created directly, their runtime faked by
//! the runner). A smaller N keeps the queues, intervals and proportions (7:2:1), with fewer
//! workloads per queue. Here a workload is a job whose pod runs on kwok for its class's runtime
//! (`kueue-ext.dev/run-duration`), so a run also measures each integration's own work: creating
//! the Workload, running the pod, finishing the job.
//!
//! A workload's admission time counts from its job's submission (upstream: from its Workload's
//! creation, which here is the integration's work) to the admission that stuck: after a
//! preemption, the last one, as upstream's recorder keeps it. CPU seconds and peak RSS are each
//! side's own: every side starts its own cluster.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::future;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::watch;

use kueue_ext::kube_util::patiently;

use crate::jobs::Kind;
use crate::order;
use crate::report::{Row, count};
use crate::sandbox::{Sandbox, cpu_seconds, peak_rss_mib};
use crate::throughput::follow_workloads;

/// One cluster whose nodes never bound a run: the 30 queues share at most 600 CPU of quota, as up
/// to 600 pods of 1 CPU (kwok nodes hold 110 pods each). kube-controller-manager's client has no
/// rate limit, as our controller's has none (see `single.rs`).
const CLUSTER: [&str; 10] = [
    "--runtime",
    "process",
    "--workers",
    "0",
    "--nodes",
    "8",
    "--node-cpu",
    "128",
    "--component-arg",
    "kube-controller-manager=--kube-api-qps=-1",
];

const COHORTS: usize = 5;
const QUEUES_PER_COHORT: usize = 6;
const QUEUES: usize = COHORTS * QUEUES_PER_COHORT;
const FLAVOR: &str = "rf";

/// A workload class of the baseline.
struct Class {
    name: &'static str,
    /// Workloads of this class per queue in the baseline's 15,000.
    per_queue: usize,
    every: Duration,
    /// How long its pod runs (a Go duration, for kwok).
    runs: &'static str,
    priority: i64,
    cpu: u32,
}

const CLASSES: [Class; 3] = [
    Class { name: "small", per_queue: 350, every: Duration::from_millis(100), runs: "200ms", priority: 50, cpu: 1 },
    Class { name: "medium", per_queue: 100, every: Duration::from_millis(500), runs: "500ms", priority: 100, cpu: 5 },
    Class { name: "large", per_queue: 50, every: Duration::from_millis(1200), runs: "1s", priority: 200, cpu: 20 },
];

/// The processes of the cluster (`manager`, the only one) whose CPU and memory each side reports.
const WATCHED: [&str; 4] = ["kueue-ext-controller", "kueue", "kube-apiserver", "kube-controller-manager"];

/// How long a side may take: generous, as a busy machine runs the 15,000 many times slower than
/// upstream's envtest.
fn run_timeout(n: usize) -> Duration {
    Duration::from_secs(600) + Duration::from_millis(300 * n as u64)
}

/// Workloads of each class when `n` keep the baseline's proportions; small takes what rounding
/// leaves, so they add up to `n`.
fn class_totals(n: usize) -> [usize; 3] {
    let baseline: usize = CLASSES.iter().map(|c| c.per_queue).sum();
    let mut totals = CLASSES.map(|c| n * c.per_queue / baseline);
    totals[0] += n - totals.iter().sum::<usize>();
    totals
}

/// A class's share of queue `queue`: spread evenly, the first queues taking the remainder.
fn per_queue(total: usize, queue: usize) -> usize {
    total / QUEUES + usize::from(queue < total % QUEUES)
}

/// Queue `queue`'s ClusterQueue, namespace and LocalQueue, named as upstream's generator names
/// them (`cq-<queue set>-<index>-cohort-<cohort>`).
fn queue_name(queue: usize) -> String {
    format!("cq-0-{}-{}", queue % QUEUES_PER_COHORT, cohort_name(queue))
}

fn cohort_name(queue: usize) -> String {
    format!("cohort-{}", queue / QUEUES_PER_COHORT)
}

const KUEUE_API: &str = "kueue.x-k8s.io/v1beta2";

/// The flavor, the classes' priorities and the 30 queues, in the order they must exist.
fn setup_objects() -> Vec<Value> {
    let mut objects = vec![json!({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}})];
    objects.extend(CLASSES.iter().map(|class| {
        json!({"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": class.name},
               "value": class.priority})
    }));
    objects.extend((0..QUEUES).flat_map(queue_objects));
    objects
}

/// Queue `queue`'s namespace, ClusterQueue and LocalQueue, all of one name, as upstream's
/// generator makes them.
fn queue_objects(queue: usize) -> [Value; 3] {
    let name = queue_name(queue);
    let quota = json!({"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100});
    let spec = json!({
        "cohortName": cohort_name(queue),
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [quota]}]}],
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
    });
    [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        json!({"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}),
        json!({"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": name},
               "spec": {"clusterQueue": name}}),
    ]
}

fn cluster_queue_resource() -> ApiResource {
    kueue_resource("ClusterQueue", "clusterqueues")
}

fn workload_resource() -> ApiResource {
    kueue_resource("Workload", "workloads")
}

fn kueue_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: KUEUE_API.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn holds(object: &DynamicObject, condition: &str) -> bool {
    object.data["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == condition && c["status"] == "True"))
}

/// Creates the queues and waits until Kueue has made every ClusterQueue active, so that neither
/// side's first jobs wait for the queues.
async fn create_queues(client: &kube::Client) {
    for object in setup_objects() {
        kueue_ext::kube_util::apply(client, &object).await.unwrap_or_else(|e| panic!("scheduler-perf setup: {e}"));
    }
    let queues: Api<DynamicObject> = Api::all_with(client.clone(), &cluster_queue_resource());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = queues.list(&ListParams::default()).await.expect("ClusterQueues listed");
        let active = list.items.iter().filter(|q| q.metadata.name.as_deref().is_some_and(|n| n.starts_with("cq-0-")));
        if active.filter(|q| holds(q, "Active")).count() == QUEUES {
            return;
        }
        assert!(Instant::now() < deadline, "the {QUEUES} ClusterQueues were not all active after 2 minutes");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn job_name(kind: Kind, class: &Class, queue: usize, i: usize) -> String {
    let side = if kind == Kind::External { "rust" } else { "go" };
    format!("{side}-{}-{queue}-{i}", class.name)
}

/// A one-pod job of `class` on queue `queue`'s LocalQueue, at the class's priority.
fn manifest(kind: Kind, class: &Class, queue: usize, i: usize) -> Value {
    let resource = kind.resource();
    let metadata = json!({"name": job_name(kind, class, queue, i), "namespace": queue_name(queue),
        "labels": {"kueue.x-k8s.io/queue-name": queue_name(queue), "kueue.x-k8s.io/priority-class": class.name}});
    let template = json!({
        "metadata": {"annotations": {"kueue-ext.dev/run-duration": class.runs}},
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "bench", "resources": {"requests": {"cpu": class.cpu.to_string()}}},
        ]},
    });
    let spec = match kind {
        Kind::External => json!({"podSets": [{"name": "main", "count": 1, "template": template}]}),
        Kind::Batch => json!({"parallelism": 1, "completions": 1, "template": template}),
        other => unreachable!("scheduler-perf submits no {other:?}"),
    };
    json!({"apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata, "spec": spec})
}

/// A submitted job, by `namespace/name`: its class and when it was submitted.
type Submitted = HashMap<String, (usize, Instant)>;

/// One class's stream into one queue, as upstream's generator runs it: wait the interval,
/// create, wait again.
async fn submit_stream(client: &kube::Client, kind: Kind, class: usize, queue: usize, n: usize) -> Submitted {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &queue_name(queue), &kind.resource());
    let (params, mut submitted) = (PostParams::default(), Submitted::new());
    for i in 0..n {
        tokio::time::sleep(CLASSES[class].every).await;
        let object: DynamicObject =
            serde_json::from_value(manifest(kind, &CLASSES[class], queue, i)).expect("job manifest");
        let at = Instant::now();
        // A busy API server may shed a create (429) or miss a webhook for a moment, as under any
        // burst of clients; the job counts from its first try.
        patiently(|| api.create(&params, &object)).await.unwrap_or_else(|e| panic!("submitting {kind:?}: {e}"));
        let key = format!("{}/{}", queue_name(queue), job_name(kind, &CLASSES[class], queue, i));
        submitted.insert(key, (class, at));
    }
    submitted
}

/// All 90 streams at once, each with its share of `n`.
async fn submit(client: &kube::Client, kind: Kind, n: usize) -> Submitted {
    let totals = class_totals(n);
    let streams = (0..QUEUES).flat_map(|queue| (0..CLASSES.len()).map(move |class| (queue, class)));
    let streams =
        streams.map(|(queue, class)| submit_stream(client, kind, class, queue, per_queue(totals[class], queue)));
    future::join_all(streams).await.into_iter().flatten().collect()
}

/// What the Workload watch saw of one job's Workload.
#[derive(Clone, Default)]
struct Seen {
    admitted: bool,
    /// When it last became admitted: the admission that stuck once it has finished.
    admitted_at: Option<Instant>,
    evicted: bool,
    evictions: usize,
    finished: bool,
}

impl Seen {
    fn observe(&mut self, workload: &DynamicObject, now: Instant) {
        let admitted = holds(workload, "Admitted");
        if admitted && !self.admitted {
            self.admitted_at = Some(now);
        }
        let evicted = holds(workload, "Evicted");
        if evicted && !self.evicted {
            self.evictions += 1;
        }
        (self.admitted, self.evicted) = (admitted, evicted);
        self.finished |= holds(workload, "Finished");
    }

    fn ever_admitted(&self) -> bool {
        self.admitted_at.is_some() || self.finished
    }
}

#[derive(Clone, Default)]
struct Progress {
    /// By the job's `namespace/name`.
    workloads: HashMap<String, Seen>,
    /// Counted as they change: thousands of Workloads are too many to count on every event.
    admitted: usize,
    finished: usize,
    all_admitted: Option<Instant>,
    all_finished: Option<Instant>,
}

impl Progress {
    fn observe(&mut self, key: String, workload: &DynamicObject, now: Instant, n: usize) {
        let seen = self.workloads.entry(key).or_default();
        let before = (seen.ever_admitted(), seen.finished);
        seen.observe(workload, now);
        self.admitted += usize::from(seen.ever_admitted() && !before.0);
        self.finished += usize::from(seen.finished && !before.1);
        if self.all_admitted.is_none() && self.admitted >= n {
            self.all_admitted = Some(now);
        }
        if self.all_finished.is_none() && self.finished >= n {
            self.all_finished = Some(now);
        }
    }
}

/// The job a Workload belongs to, as `namespace/name`.
fn owner_key(workload: &DynamicObject) -> Option<String> {
    let owner = workload.metadata.owner_references.as_ref()?.first()?;
    Some(format!("{}/{}", workload.metadata.namespace.as_deref()?, owner.name))
}

/// Follows every Workload of the cluster (only this side's jobs have any) and notes when `n`
/// were admitted and `n` finished.
fn track(client: &kube::Client, n: usize) -> watch::Receiver<Progress> {
    let (tx, rx) = watch::channel(Progress::default());
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &workload_resource());
    tokio::spawn(async move {
        follow_workloads(api, &tx, |workload| {
            if let Some(key) = owner_key(&workload) {
                tx.send_modify(|p| p.observe(key, &workload, Instant::now(), n));
            }
        })
        .await;
    });
    rx
}

/// What one side measured.
struct Outcome {
    submitted: f64,
    admitted: f64,
    finished: f64,
    /// Per class: seconds from each job's submission to its Workload's last admission.
    admission: [Vec<f64>; 3],
    evictions: [usize; 3],
    /// CPU seconds of [`WATCHED`] until all finished, in its order.
    cpu: Vec<f64>,
    cluster_cpu: f64,
    /// Peak RSS of [`WATCHED`], in MiB.
    rss: Vec<f64>,
}

/// Nearest-rank percentile `p` (0 to 1) of `samples`.
fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len() as f64
}

impl Outcome {
    /// Every figure a row shows, named by what it measures, in the table's order; classes with
    /// no workloads at this size have none.
    fn figures(&self) -> Vec<(String, &'static str, f64)> {
        let mut figures =
            vec![("all admitted".to_string(), "s", self.admitted), ("all finished".into(), "s", self.finished)];
        for (class, times) in CLASSES.iter().zip(&self.admission).filter(|(_, times)| !times.is_empty()) {
            for (label, p) in [("p50", 0.5), ("p95", 0.95)] {
                let name =
                    format!("{} ({} CPU, priority {}) admitted after, {label}", class.name, class.cpu, class.priority);
                figures.push((name, "s", percentile(times, p)));
            }
        }
        for (component, cpu) in WATCHED.iter().zip(&self.cpu) {
            figures.push((format!("CPU seconds of {component} until all finished"), "s", *cpu));
        }
        figures.push(("CPU seconds of the cluster until all finished".into(), "s", self.cluster_cpu));
        for (component, rss) in WATCHED.iter().zip(&self.rss) {
            figures.push((format!("peak RSS of {component}"), "MiB", *rss));
        }
        figures
    }
}

/// Seconds from each submission to the admission that stuck, per class; a Workload seen only
/// finished (its admission missed by a watch that restarted) has none.
fn admission_times(submitted: &Submitted, workloads: &HashMap<String, Seen>) -> [Vec<f64>; 3] {
    let mut times: [Vec<f64>; 3] = Default::default();
    for (key, (class, at)) in submitted {
        if let Some(admitted) = workloads.get(key).and_then(|s| s.admitted_at) {
            times[*class].push(admitted.saturating_duration_since(*at).as_secs_f64());
        }
    }
    times
}

fn evictions(submitted: &Submitted, workloads: &HashMap<String, Seen>) -> [usize; 3] {
    let mut evictions = [0; 3];
    for (key, (class, _)) in submitted {
        evictions[*class] += workloads.get(key).map_or(0, |s| s.evictions);
    }
    evictions
}

fn total_cpu(pids: &[i32]) -> f64 {
    pids.iter().map(|pid| cpu_seconds(*pid)).sum()
}

/// Brings up a cluster, submits the mix as `kind` and waits until all finished.
async fn side(kind: Kind, n: usize) -> Outcome {
    let sandbox = Sandbox::up(&CLUSTER);
    let client = sandbox.client("manager").await;
    create_queues(&client).await;
    let watched = WATCHED.map(|component| sandbox.pid("manager", component));
    let everything = sandbox.pids();
    let (cpu_before, cluster_before) = (watched.map(cpu_seconds), total_cpu(&everything));
    let mut progress = track(&client, n);
    let started = Instant::now();
    let submitted = submit(&client, kind, n).await;
    let submitted_after = started.elapsed().as_secs_f64();
    let timeout = run_timeout(n);
    let done =
        tokio::time::timeout(timeout, progress.wait_for(|p| p.all_finished.is_some())).await.is_ok_and(|r| r.is_ok());
    let seen = progress.borrow().clone();
    assert!(done, "{kind:?}: {} of {n} admitted, {} finished after {timeout:?}", seen.admitted, seen.finished);
    let cpu: Vec<f64> = watched.iter().zip(cpu_before).map(|(pid, before)| cpu_seconds(*pid) - before).collect();
    let cluster_cpu = total_cpu(&everything) - cluster_before;
    let since = |t: Option<Instant>| t.map(|t| t.duration_since(started).as_secs_f64()).unwrap_or_default();
    Outcome {
        submitted: submitted_after,
        admitted: since(seen.all_admitted),
        finished: since(seen.all_finished),
        admission: admission_times(&submitted, &seen.workloads),
        evictions: evictions(&submitted, &seen.workloads),
        cpu,
        cluster_cpu,
        rss: watched.map(peak_rss_mib).to_vec(),
    }
}

/// Measures one side and says how it went, class by class (the mean is what upstream's
/// rangespec bounds).
async fn timed(kind: Kind, n: usize, run: usize) -> Outcome {
    let outcome = side(kind, n).await;
    eprintln!(
        "run {}: {n} {kind:?} (scheduler-perf mix): all submitted {:.1} s, all admitted {:.1} s, all finished {:.1} s; \
         CPU until all finished {:.1} s",
        run + 1,
        outcome.submitted,
        outcome.admitted,
        outcome.finished,
        outcome.cluster_cpu
    );
    for ((class, times), evictions) in CLASSES.iter().zip(&outcome.admission).zip(outcome.evictions) {
        if times.is_empty() {
            continue;
        }
        eprintln!(
            "run {}: {n} {kind:?}: {} ×{}: admitted after mean {:.1} s, p50 {:.1} s, p95 {:.1} s; {evictions} evictions",
            run + 1,
            class.name,
            times.len(),
            mean(times),
            percentile(times, 0.5),
            percentile(times, 0.95)
        );
    }
    outcome
}

pub async fn bench(runs: usize, n: usize) -> Vec<Row> {
    let what = format!("Kueue's scheduler-perf mix, {} ExternalJobs", count(n));
    let peer =
        format!("{} batch/v1 Jobs in the same mix (Kueue's Go integration), each side on a fresh cluster", count(n));
    let mut rows: Vec<Row> = Vec::new();
    for run in 0..runs {
        let (ours, theirs) = if order::ours_first(run) {
            let ours = timed(Kind::External, n, run).await;
            (ours, timed(Kind::Batch, n, run).await)
        } else {
            let theirs = timed(Kind::Batch, n, run).await;
            (timed(Kind::External, n, run).await, theirs)
        };
        let figures = ours.figures().into_iter().zip(theirs.figures());
        for (i, ((name, unit, ours), (_, _, theirs))) in figures.enumerate() {
            if rows.len() == i {
                rows.push(Row::new(format!("{what}: {name}"), unit, &peer));
            }
            rows[i].push(ours, theirs);
        }
    }
    rows
}
