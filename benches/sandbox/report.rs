//! Rows of the benchmark table: our samples and the peer's, min/median/max, and the ratio of
//! the medians; printed as a table and written as JSON together with the machine and its load.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub struct Row {
    pub name: String,
    pub unit: &'static str,
    pub ours: Vec<f64>,
    pub peer: Vec<f64>,
    pub peer_name: String,
}

impl Row {
    pub fn new(name: impl Into<String>, unit: &'static str, peer_name: impl Into<String>) -> Row {
        Row { name: name.into(), unit, ours: Vec::new(), peer: Vec::new(), peer_name: peer_name.into() }
    }

    pub fn push(&mut self, ours: f64, peer: f64) {
        self.ours.push(ours);
        self.peer.push(peer);
    }

    fn ratio(&self) -> Option<f64> {
        Some(Summary::of(&self.ours)?.median / Summary::of(&self.peer)?.median)
    }
}

pub struct Summary {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        };
        Some(Summary { min: sorted[0], median, max: sorted[n - 1] })
    }

    fn text(&self, unit: &str) -> String {
        format!("{}/{}/{} {unit}", short(self.min), short(self.median), short(self.max))
    }
}

/// Three significant digits at most: `0.412`, `12.3`, `1204`.
fn short(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        a if a >= 1.0 => format!("{x:.2}"),
        _ => format!("{x:.3}"),
    }
}

/// The 1, 5 and 15 minute load averages: how busy the machine was.
pub fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let line = info.lines().find(|l| l.starts_with("model name")).unwrap_or_default();
    line.split_once(':').map(|(_, m)| m.trim().to_string()).unwrap_or_default()
}

/// Prints the table; returns the rows that have no sample on one side or both.
pub fn print(rows: &[Row]) -> Vec<String> {
    let width = rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
    println!(
        "\n{:<width$}  {:>3}  {:>26}  {:>26}  {:>6}  peer",
        "benchmark", "n", "ours min/median/max", "peer min/median/max", "ratio"
    );
    let mut empty = Vec::new();
    for row in rows {
        let (Some(ours), Some(peer), Some(ratio)) = (Summary::of(&row.ours), Summary::of(&row.peer), row.ratio())
        else {
            println!("{:<width$}  no samples", row.name);
            empty.push(row.name.clone());
            continue;
        };
        println!(
            "{:<width$}  {:>3}  {:>26}  {:>26}  {:>6.2}  {}",
            row.name,
            row.ours.len(),
            ours.text(row.unit),
            peer.text(row.unit),
            ratio,
            row.peer_name
        );
    }
    empty
}

fn memory_gib() -> f64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = info.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1));
    kib.and_then(|k| k.parse::<f64>().ok()).map_or(0.0, |k| k / 1024.0 / 1024.0)
}

fn commit() -> String {
    let out = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output();
    out.ok()
        .filter(|o| o.status.success())
        .map_or("unknown".into(), |o| String::from_utf8_lossy(&o.stdout).trim().into())
}

/// Writes `target/bench/sandbox.json` (the settings, the machine, and every sample), and the
/// same under `benches/results/` named by date and commit, so a table can be traced to its run.
pub fn write_json(rows: &[Row], settings: Value, load_before: &str) -> PathBuf {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"benchmark": r.name, "unit": r.unit, "ours": r.ours, "peer": r.peer,
                   "peer_name": r.peer_name, "median_ratio": r.ratio()})
        })
        .collect();
    let machine = json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "memory_gib": (memory_gib() * 10.0).round() / 10.0,
        "cpu": cpu_model(),
        "load_average_before": load_before,
        "load_average_after": load_average(),
    });
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&out).expect("target/bench is writable");
    let path = out.join("sandbox.json");
    let (commit, date) = (commit(), k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H%M%SZ").to_string());
    let report = json!({"commit": commit, "date": date, "settings": settings, "machine": machine, "rows": rows});
    let text = serde_json::to_string_pretty(&report).expect("JSON");
    std::fs::write(&path, &text).expect("sandbox.json written");
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/results");
    std::fs::create_dir_all(&kept).expect("benches/results is writable");
    std::fs::write(kept.join(format!("{date}-{commit}.json")), &text).expect("the kept results written");
    path
}
