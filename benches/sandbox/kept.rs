//! What a run leaves behind: `target/bench/sandbox.json` (the last run), and, when every row has
//! samples, the same kept under `benches/results/`, named by date, commit and benchmarks, from
//! which `cargo bench --bench results` writes the table of docs/performance.md. A file holds
//! what it takes to trust a row later: the commit (`-dirty` when tracked files had changes), the
//! machine and its load, the sizes and which of them the environment set, and every sample.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::report::{Row, Summary, load_average};

/// A results file of one run; `rows` are tagged with their benchmark's name.
pub struct Run<'a> {
    pub benchmarks: Vec<&'a str>,
    pub settings: Value,
    pub load_before: &'a str,
    pub rows: &'a [(&'a str, Row)],
}

fn side(samples: &[f64]) -> Value {
    match Summary::of(samples) {
        Some(s) => json!({"min": s.min, "median": s.median, "max": s.max, "samples": samples}),
        None => json!({"samples": samples}),
    }
}

fn row(bench: &str, r: &Row) -> Value {
    json!({"benchmark": bench, "name": r.name, "unit": r.unit, "n": r.ours.len().min(r.peer.len()),
           "ours": side(&r.ours), "peer": side(&r.peer), "ratio": r.ratio(), "peer_name": r.peer_name})
}

fn memory_gib() -> f64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = info.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1));
    kib.and_then(|k| k.parse::<f64>().ok()).map_or(0.0, |k| (k / 1024.0 / 1024.0 * 10.0).round() / 10.0)
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let line = info.lines().find(|l| l.starts_with("model name")).unwrap_or_default();
    line.split_once(':').map(|(_, m)| m.trim().to_string()).unwrap_or_default()
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// HEAD, marked `-dirty` when a tracked file differs from it: the binary measured is then not
/// that commit's. Untracked files (results of earlier runs among them) do not count.
fn commit() -> String {
    let Some(head) = git(&["rev-parse", "--short=12", "HEAD"]) else { return "unknown".into() };
    match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) if changes.is_empty() => head,
        _ => format!("{head}-dirty"),
    }
}

/// The `KUEUE_EXT_BENCH_*` variables this run was given, which made its sizes differ from the
/// issue's.
fn env_overrides() -> Value {
    let set = std::env::vars().filter(|(name, _)| name.starts_with("KUEUE_EXT_BENCH_"));
    Value::Object(set.map(|(name, value)| (name, Value::String(value))).collect())
}

impl Run<'_> {
    /// Writes the files; returns the path of `target/bench/sandbox.json` and, if kept, of the
    /// results file.
    pub fn write(&self) -> (PathBuf, Option<PathBuf>) {
        let now = k8s_openapi::jiff::Timestamp::now();
        let commit = commit();
        let report = json!({
            "commit": commit,
            "date": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "benchmarks": self.benchmarks,
            "machine": {
                "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
                "memory_gib": memory_gib(),
                "cpu": cpu_model(),
                "load_average_before": self.load_before,
                "load_average_after": load_average(),
            },
            "settings": self.settings,
            "env": env_overrides(),
            "rows": self.rows.iter().map(|(bench, r)| row(bench, r)).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&report).expect("JSON") + "\n";
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let last = root.join("target/bench/sandbox.json");
        std::fs::create_dir_all(root.join("target/bench")).expect("target/bench is writable");
        std::fs::write(&last, &text).expect("target/bench/sandbox.json written");
        // A row without samples fails the run; its file would break the table.
        if self.rows.iter().any(|(_, r)| Summary::of(&r.ours).is_none() || Summary::of(&r.peer).is_none()) {
            return (last, None);
        }
        let name = format!("{}-{commit}-{}.json", now.strftime("%Y-%m-%dT%H%M%SZ"), self.benchmarks.join("+"));
        let kept = root.join("benches/results").join(name);
        std::fs::write(&kept, &text).expect("benches/results/ is writable");
        (last, Some(kept))
    }
}
