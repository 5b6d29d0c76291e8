//! Benchmarks against peers measured in the same run (ratios, not absolute targets):
//!
//! 1. `up` of a manager + 2 workers (Kueue, MultiKueue Active, our controller ready) vs kwokctl
//!    creating three bare clusters from the same binaries (`--runtime binary`, in parallel).
//! 2. N ExternalJobs (this project's Rust integration) vs N batch/v1 Jobs (Kueue's Go
//!    integration) of the same shape on one cluster: time until all are admitted and all finished.
//! 3. N WrappedJobs, each a Job and a Deployment, until all succeeded (the Deployment stopped),
//!    against the batch/v1 Jobs of (2): what wrapping two components costs over Kueue's own Job.
//! 4. Peak RSS of our controller vs Kueue's manager during (2) and (3).
//!
//! `cargo bench --bench sandbox`; `KUEUE_EXT_BENCH_JOBS` (default 200) and
//! `KUEUE_EXT_BENCH_RUNS` (default 3) size it. Prints a table and writes target/bench/sandbox.json.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use futures::future::join_all;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-kueue_ext");

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn run(command: &mut Command) -> String {
    let output = command.output().expect("command runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{command:?} failed:\n{text}");
    text
}

/// min, median, max in seconds.
fn summary(samples: &[f64]) -> (f64, f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    (sorted[0], sorted[sorted.len() / 2], sorted[sorted.len() - 1])
}

struct Row {
    name: String,
    ours: Vec<f64>,
    peer: Vec<f64>,
    peer_name: String,
    unit: &'static str,
}

fn kwokctl(toolchain_src: &Path, cache: &Path) -> PathBuf {
    let path = cache.join("kwokctl");
    if !path.exists() {
        eprintln!("building kwokctl (the peer) from the toolchain module");
        run(Command::new("go")
            .current_dir(toolchain_src)
            .env("CGO_ENABLED", "0")
            .args(["build", "-trimpath", "-o"])
            .arg(&path)
            .arg("sigs.k8s.io/kwok/cmd/kwokctl"));
    }
    path
}

fn bench_up(runs: usize, bin_dir: &Path, kwokctl: &Path) -> Row {
    let mut ours = Vec::new();
    let mut peer = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let started = Instant::now();
        run(Command::new(BIN).args(["up", "--state-dir"]).arg(&state));
        ours.push(started.elapsed().as_secs_f64());
        run(Command::new(BIN).args(["down", "--state-dir"]).arg(&state));

        let workdir = dir.path().join("kwok");
        let config = dir.path().join("kwokctl.yaml");
        std::fs::write(&config, kwokctl_config(bin_dir)).unwrap();
        let started = Instant::now();
        let children: Vec<_> = (1..=3)
            .map(|i| {
                Command::new(kwokctl)
                    .env("KWOK_WORKDIR", &workdir)
                    .args(["create", "cluster", "--name", &format!("bench{i}"), "-c"])
                    .arg(&config)
                    .output()
            })
            .collect();
        peer.push(started.elapsed().as_secs_f64());
        for (i, child) in children.into_iter().enumerate() {
            let output = child.unwrap();
            assert!(output.status.success(), "kwokctl bench{}: {}", i + 1, String::from_utf8_lossy(&output.stderr));
            run(Command::new(kwokctl).env("KWOK_WORKDIR", &workdir).args([
                "delete",
                "cluster",
                "--name",
                &format!("bench{}", i + 1),
            ]));
        }
    }
    Row {
        name: "up: manager + 2 workers".into(), ours, peer, peer_name: "kwokctl create cluster ×3".into(), unit: "s"
    }
}

fn kwokctl_config(bin: &Path) -> String {
    let b = bin.display();
    format!(
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  runtime: binary\n  bindAddress: 127.0.0.1\n  kubeBinaryPrefix: {b}\n  kubectlBinary: {b}/kubectl\n  etcdBinary: {b}/etcd\n  kwokControllerBinary: {b}/kwok\ncomponentsPatches:\n- name: kube-apiserver\n  extraArgs:\n  - key: advertise-address\n    value: 127.0.0.1\n"
    )
}

fn job(kind: &str, i: usize) -> Value {
    let template = json!({
        "metadata": {"annotations": {"kueue-ext.dev/run-duration": "1s"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "bench", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    });
    let labels = json!({"kueue.x-k8s.io/queue-name": "user-queue"});
    match kind {
        "Job" => json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": format!("go-{i}"), "namespace": "default", "labels": labels},
            "spec": {"parallelism": 1, "completions": 1, "template": template}}),
        // A Job and the Deployment serving it: succeeded once the Job has and the Deployment is gone.
        "WrappedJob" => json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
        "metadata": {"name": format!("wrapped-{i}"), "namespace": "default", "labels": labels},
        "spec": {"components": [
            {"template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": format!("wrapped-{i}-work")},
                "spec": {"template": template}}},
            {"template": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": format!("wrapped-{i}-server")},
                "spec": {"selector": {"matchLabels": {"app": format!("wrapped-{i}")}}, "template": {
                    "metadata": {"labels": {"app": format!("wrapped-{i}")}},
                    "spec": {"containers": [{"name": "s", "image": "bench", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}}},
        ]}}),
        _ => json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
            "metadata": {"name": format!("rust-{i}"), "namespace": "default", "labels": labels},
            "spec": {"podSets": [{"name": "main", "count": 1, "template": template}]}}),
    }
}

fn workload_prefix(kind: &str) -> &'static str {
    match kind {
        "Job" => "job-go-",
        "WrappedJob" => "wrappedjob-wrapped-",
        _ => "externaljob-rust-",
    }
}

/// Submits `n` jobs of `kind` and returns (seconds to all admitted, seconds to all finished).
async fn throughput(client: &kube::Client, kind: &str, n: usize, pids: &[i32], peaks: &mut [u64]) -> (f64, f64) {
    let started = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(20) {
        let objects: Vec<Value> = chunk.iter().map(|i| job(kind, *i)).collect();
        for result in join_all(objects.iter().map(|o| kueue_ext::kube_util::apply(client, o))).await {
            result.expect("job applied");
        }
    }
    let resource = kube::api::ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "kueue.x-k8s.io/v1beta2".into(),
        kind: "Workload".into(),
        plural: "workloads".into(),
    };
    let workloads: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let (mut admitted_at, mut finished_at) = (None, None);
    while finished_at.is_none() {
        for (pid, peak) in pids.iter().zip(peaks.iter_mut()) {
            *peak = (*peak).max(peak_rss_kib(*pid));
        }
        let list = workloads.list(&ListParams::default()).await.expect("list workloads");
        let ours: Vec<Value> = list
            .items
            .into_iter()
            .map(|w| serde_json::to_value(w).unwrap())
            .filter(|w| w["metadata"]["name"].as_str().is_some_and(|n| n.starts_with(workload_prefix(kind))))
            .collect();
        let holds = |w: &Value, t: &str| {
            w["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == t && c["status"] == "True"))
        };
        let admitted = ours.iter().filter(|w| holds(w, "Admitted") || holds(w, "Finished")).count();
        let finished = ours.iter().filter(|w| holds(w, "Finished")).count();
        if admitted_at.is_none() && admitted == n {
            admitted_at = Some(started.elapsed().as_secs_f64());
        }
        if finished == n {
            finished_at = Some(started.elapsed().as_secs_f64());
        }
        assert!(started.elapsed() < Duration::from_secs(900), "{kind}: {finished}/{n} finished after 15 minutes");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (admitted_at.unwrap_or_default(), finished_at.unwrap_or_default())
}

fn peak_rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

async fn bench_throughput(runs: usize, n: usize) -> Vec<Row> {
    let mut rows = vec![
        Row {
            name: format!("{n} jobs: all admitted"),
            ours: vec![],
            peer: vec![],
            peer_name: "batch/v1 Job (Kueue, Go)".into(),
            unit: "s",
        },
        Row {
            name: format!("{n} jobs: all finished"),
            ours: vec![],
            peer: vec![],
            peer_name: "batch/v1 Job (Kueue, Go)".into(),
            unit: "s",
        },
        Row {
            name: format!("{n} WrappedJobs (Job + Deployment): all finished"),
            ours: vec![],
            peer: vec![],
            peer_name: "batch/v1 Job of 1 pod (Kueue, Go)".into(),
            unit: "s",
        },
        Row {
            name: "peak RSS during the run".into(),
            ours: vec![],
            peer: vec![],
            peer_name: "Kueue manager".into(),
            unit: "MiB",
        },
    ];
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        run(Command::new(BIN)
            .args(["up", "--workers", "0", "--nodes", "8", "--node-cpu", "64", "--state-dir"])
            .arg(&state));
        let saved: Value = serde_json::from_slice(&std::fs::read(state.join("state.json")).unwrap()).unwrap();
        let pid = |name: &str| {
            saved["clusters"][0]["components"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["process"]["pid"].as_i64().unwrap() as i32
        };
        let (controller, kueue) = (pid("kueue-ext-controller"), pid("kueue"));
        let client = kueue_ext::kube_util::client_for(&state.join("kubeconfig"), "kueue-ext-manager").await.unwrap();
        let mut peaks = [0u64, 0u64];
        let (go_admit, go_finish) = throughput(&client, "Job", n, &[controller, kueue], &mut peaks).await;
        let (rust_admit, rust_finish) = throughput(&client, "ExternalJob", n, &[controller, kueue], &mut peaks).await;
        let (_, wrapped_finish) = throughput(&client, "WrappedJob", n, &[controller, kueue], &mut peaks).await;
        rows[0].ours.push(rust_admit);
        rows[0].peer.push(go_admit);
        rows[1].ours.push(rust_finish);
        rows[1].peer.push(go_finish);
        rows[2].ours.push(wrapped_finish);
        rows[2].peer.push(go_finish);
        rows[3].ours.push(peaks[0] as f64 / 1024.0);
        rows[3].peer.push(peaks[1] as f64 / 1024.0);
        run(Command::new(BIN).args(["down", "--state-dir"]).arg(&state));
    }
    rows
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // `cargo bench` passes `--bench`; anything else (e.g. `cargo test --benches`) runs nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs = env_number("KUEUE_EXT_BENCH_RUNS", 3);
    let jobs = env_number("KUEUE_EXT_BENCH_JOBS", 200);
    let bin_dir =
        PathBuf::from(run(Command::new(BIN).args(["toolchain", "install"])).lines().last().unwrap_or_default().trim());
    let toolchain_root = bin_dir.parent().unwrap().to_path_buf();
    let kwokctl = kwokctl(&toolchain_root.join("src"), &toolchain_root);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut rows = vec![bench_up(runs, &bin_dir, &kwokctl)];
    rows.extend(runtime.block_on(bench_throughput(runs, jobs)));

    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    println!(
        "\n{:<width$} {:>26} {:>26} {:>7}  peer",
        "benchmark", "ours min/median/max", "peer min/median/max", "ratio"
    );
    let mut json_rows = Vec::new();
    for row in &rows {
        let (a, b, c) = summary(&row.ours);
        let (d, e, f) = summary(&row.peer);
        let ratio = b / e;
        println!(
            "{:<width$} {:>7.1}/{:>7.1}/{:>7.1} {} {:>7.1}/{:>7.1}/{:>7.1} {} {:>7.2}  {}",
            row.name, a, b, c, row.unit, d, e, f, row.unit, ratio, row.peer_name
        );
        json_rows.push(json!({"benchmark": row.name, "unit": row.unit, "ours": row.ours, "peer": row.peer, "peer_name": row.peer_name, "median_ratio": ratio}));
    }
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&out).unwrap();
    let report = json!({"runs": runs, "jobs": jobs, "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0), "rows": json_rows});
    std::fs::write(out.join("sandbox.json"), serde_json::to_string_pretty(&report).unwrap()).unwrap();
    println!("\nwrote {}", out.join("sandbox.json").display());
}
