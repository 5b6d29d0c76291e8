//! Benchmarks against peers measured in the same run (ratios, not absolute targets: the
//! machine is shared and noisy):
//!
//! - `up`: `up` of a manager + 2 workers vs kwokctl creating three bare clusters from the same
//!   binaries, and vs the same three with the CRDs `up` installs; wall time and the CPU seconds
//!   the clusters' processes spent (`up.rs`).
//! - `up-kind`: `up --runtime kind` of a manager + 2 workers (needs Docker) vs `kind create
//!   cluster` ×3 with the same node image and config, and vs `up --runtime process`
//!   (`kind_up.rs`).
//! - `single`: N ExternalJobs vs N batch/v1 Jobs of the same shape on one cluster, until all are
//!   admitted and all finished; the peak RSS of our controller vs Kueue's manager meanwhile; then
//!   WrappedJobs of a Job and a Deployment vs as many batch/v1 Jobs (`single.rs`).
//! - `scheduler-perf`: Kueue's scheduler-perf baseline mix (5 cohorts × 6 ClusterQueues, three
//!   classes of workloads) as ExternalJobs vs as batch/v1 Jobs, each on a fresh cluster
//!   (`scheduler_perf.rs`).
//! - `multikueue`: the same through a manager and two workers (`multikueue.rs`).
//! - `webhook`: p50/p99 of our webhook vs Kueue's under a fixed admission rate (`webhook.rs`).
//! - `wrappers`: N WrappedJobs vs N AppWrappers of the same Job on a kind cluster with AppWrapper's
//!   controller beside ours (needs Docker; `wrappers.rs`).
//!
//! `cargo bench --bench sandbox`. Sized by environment variables (defaults are the issue's):
//! `KUEUE_EXT_BENCH_ONLY` (comma list of the names above; all by default),
//! `KUEUE_EXT_BENCH_RUNS` (4: repeats of `up`, `up-kind` and `webhook`), `KUEUE_EXT_BENCH_JOB_RUNS` (2:
//! repeats of `single`, `scheduler-perf`, `multikueue` and `wrappers`); both are rounded up to
//! whole pairs, as every versus benchmark runs its sides in ABBA order (`order.rs`). `KUEUE_EXT_BENCH_JOBS` (1000),
//! `KUEUE_EXT_BENCH_MULTIKUEUE_JOBS` (500), `KUEUE_EXT_BENCH_WRAPPED_JOBS` (200),
//! `KUEUE_EXT_BENCH_RATE` (200 admissions/s), `KUEUE_EXT_BENCH_ADMISSIONS` (3000),
//! `KUEUE_EXT_BENCH_WRAPPERS` (200), `KUEUE_EXT_BENCH_SCHEDULER_PERF_WORKLOADS` (3000; the
//! baseline's is 15000).
//! Prints a table and writes target/bench/sandbox.json, and the same with the commit, machine and
//! date to benches/results/ (`kept.rs`), from which `cargo bench --bench results` writes the table
//! of docs/performance.md. An unknown name, or a row without samples, fails the run.

mod apiserver;
mod audit;
mod documented_setup;
#[path = "../results/figures.rs"]
mod figures;
mod jobs;
mod kept;
mod kind_up;
mod multikueue;
#[path = "../results/names.rs"]
mod names;
mod order;
mod pod_processes;
mod report;
mod sandbox;
mod scheduler_perf;
mod single;
mod throughput;
mod up;
mod webhook;
mod wrappers;

use std::path::PathBuf;
use std::process::Command;

use names::BENCHES;
use serde_json::json;

struct Settings {
    only: Vec<String>,
    runs: usize,
    job_runs: usize,
    jobs: usize,
    multikueue_jobs: usize,
    wrapped_jobs: usize,
    rate: usize,
    admissions: usize,
    wrappers: usize,
    scheduler_perf_workloads: usize,
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

impl Settings {
    fn from_env() -> Settings {
        let only = std::env::var("KUEUE_EXT_BENCH_ONLY").unwrap_or_default();
        let only: Vec<String> = only.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        if let Some(unknown) = only.iter().find(|name| !BENCHES.contains(&name.as_str())) {
            eprintln!("KUEUE_EXT_BENCH_ONLY: no benchmark is named {unknown:?}; they are {}", BENCHES.join(", "));
            std::process::exit(2);
        }
        Settings {
            only,
            runs: order::whole_pairs(env_number("KUEUE_EXT_BENCH_RUNS", 4)),
            job_runs: order::whole_pairs(env_number("KUEUE_EXT_BENCH_JOB_RUNS", 2)),
            jobs: env_number("KUEUE_EXT_BENCH_JOBS", 1000),
            multikueue_jobs: env_number("KUEUE_EXT_BENCH_MULTIKUEUE_JOBS", 500),
            wrapped_jobs: env_number("KUEUE_EXT_BENCH_WRAPPED_JOBS", 200),
            rate: env_number("KUEUE_EXT_BENCH_RATE", 200).max(1),
            admissions: env_number("KUEUE_EXT_BENCH_ADMISSIONS", 3000).max(1),
            wrappers: env_number("KUEUE_EXT_BENCH_WRAPPERS", 200).max(1),
            scheduler_perf_workloads: env_number("KUEUE_EXT_BENCH_SCHEDULER_PERF_WORKLOADS", 3000).max(1),
        }
    }

    fn wants(&self, bench: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == bench)
    }

    /// The benchmarks this run measures, in the order it measures them.
    fn benchmarks(&self) -> Vec<&'static str> {
        BENCHES.into_iter().filter(|b| self.wants(b)).collect()
    }

    fn json(&self) -> serde_json::Value {
        json!({"only": self.only, "runs": self.runs, "job_runs": self.job_runs, "jobs": self.jobs,
               "multikueue_jobs": self.multikueue_jobs, "wrapped_jobs": self.wrapped_jobs,
               "rate": self.rate, "admissions": self.admissions, "wrappers": self.wrappers,
               "scheduler_perf_workloads": self.scheduler_perf_workloads})
    }
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // `cargo bench` passes `--bench`; anything else (e.g. `cargo test --benches`) runs nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let settings = Settings::from_env();
    let load_before = report::load_average();
    let bin_dir = PathBuf::from(
        sandbox::run(Command::new(sandbox::BIN).args(["toolchain", "install"]))
            .lines()
            .last()
            .unwrap_or_default()
            .trim(),
    );
    let toolchain_root = bin_dir.parent().expect("bin dir has a parent").to_path_buf();

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut rows = Vec::new();
    for bench in settings.benchmarks() {
        let measured = match bench {
            "up-kind" => kind_up::bench(settings.runs, &bin_dir.join("kubectl")),
            "up" => up::bench(settings.runs, &bin_dir, &up::kwokctl(&toolchain_root.join("src"), &toolchain_root)),
            "single" => runtime.block_on(single::bench(settings.job_runs, settings.jobs, settings.wrapped_jobs)),
            "scheduler-perf" => {
                runtime.block_on(scheduler_perf::bench(settings.job_runs, settings.scheduler_perf_workloads))
            }
            "multikueue" => runtime.block_on(multikueue::bench(settings.job_runs, settings.multikueue_jobs)),
            "webhook" => runtime.block_on(webhook::bench(settings.runs, settings.rate, settings.admissions)),
            "wrappers" => runtime.block_on(wrappers::bench(settings.job_runs, settings.wrappers)),
            other => unreachable!("{other} is in BENCHES but has no arm here"),
        };
        rows.extend(measured.into_iter().map(|row| (bench, row)));
    }
    let empty = report::print(rows.iter().map(|(_, row)| row));
    let run = kept::Run {
        benchmarks: settings.benchmarks(),
        settings: settings.json(),
        load_before: &load_before,
        rows: &rows,
    };
    let (last, kept) = run.write();
    println!("\nload average before {load_before}, after {}; wrote {}", report::load_average(), last.display());
    if let Some(kept) = kept {
        println!("kept {}: `cargo bench --bench results` puts it in docs/performance.md", kept.display());
    }
    if !empty.is_empty() {
        eprintln!("rows without samples (a side that measured nothing): {}", empty.join(", "));
        std::process::exit(1);
    }
}
