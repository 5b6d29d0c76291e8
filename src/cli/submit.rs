use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::cluster::ClusterArgs;
use super::output::{self, Output};
use crate::go_duration::{NotADuration, parse_go_duration};
use crate::integrations::declarative::config;
use crate::integrations::registry::KindRegistry;
use crate::manifests;
use crate::sandbox::Addon;
use crate::submit::{self, Defaults, Planned, Problem, appwrapper, documents};
use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DryRun {
    /// Apply.
    #[default]
    None,
    /// Check the files only; send nothing.
    Client,
    /// Check with the API server (webhooks included) but persist nothing.
    Server,
}

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("input").required(true).multiple(true).args(["paths", "filenames"]))]
pub struct Args {
    /// Files or directories (.yaml, .yml, .json), as with -f; `-` reads standard input.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A file or directory to submit, as kubectl's (repeatable; `-` reads standard input).
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<PathBuf>,
    /// Read directories' subdirectories too, as kubectl's -R.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// LocalQueue for jobs that carry no kueue.x-k8s.io/queue-name label.
    #[arg(long, value_name = "NAME")]
    pub queue: Option<String>,
    /// none: apply; client: check the files and send nothing; server: the API server checks
    /// (webhooks included) and stores nothing.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "client", default_value_t)]
    pub dry_run: DryRun,
    /// Output format: name, yaml or json, of the applied objects [default: kubectl's lines]
    #[arg(short, long, value_name = "FORMAT",
          value_parser = output::accepting(&[Output::Name, Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
    /// Wait until every submitted job finishes, at most DURATION (`--wait=5m`; bare: 10m); exit 1
    /// if any failed.
    #[arg(long, value_name = "DURATION", num_args = 0..=1, require_equals = true, default_missing_value = "10m", value_parser = parse_timeout)]
    pub wait: Option<Duration>,
}

impl Args {
    fn paths(&self) -> Vec<PathBuf> {
        self.paths.iter().chain(&self.filenames).cloned().collect()
    }
}

/// A Go duration (`90s`, `10m`, `1h30m`); a bare number is seconds.
fn parse_timeout(text: &str) -> Result<Duration, NotADuration> {
    match text.parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => parse_go_duration(text),
    }
}

fn print_problems(problems: &[Problem]) {
    for problem in problems {
        eprintln!("error: {problem}");
    }
    eprintln!("nothing was applied ({} problem(s))", problems.len());
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let files = match documents::collect_files(&args.paths(), args.recursive) {
        Ok(files) => files,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut docs = Vec::new();
    let mut problems = Vec::new();
    for file in &files {
        let (name, bytes) = if file.as_os_str() == "-" {
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes)?;
            ("<stdin>".to_string(), bytes)
        } else {
            let bytes = std::fs::read(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            (file.display().to_string(), bytes)
        };
        match documents::read(&name, &bytes) {
            Ok(parsed) => docs.extend(parsed),
            Err(found) => problems.extend(found),
        }
    }
    // Integrations files live next to the samples they describe, but configure the controller.
    docs.retain(|doc| {
        let config = doc.object["apiVersion"] == config::API_VERSION && doc.object["kind"] == config::KIND;
        if config {
            eprintln!("note: {}: skipped, an integrations file (give it to `up --integrations`)", doc.origin);
        }
        !config
    });
    problems.extend(docs.iter().flat_map(documents::check_shape));
    if !problems.is_empty() {
        print_problems(&problems);
        return Ok(ExitCode::FAILURE);
    }
    if args.dry_run == DryRun::Client {
        println!("{} document(s) from {} file(s) look well-formed (client dry run)", docs.len(), files.len());
        return Ok(ExitCode::SUCCESS);
    }

    let (client, namespace) = args.cluster.connect().await?;
    if docs.iter().any(|doc| appwrapper::is_appwrapper(&doc.object)) && !appwrapper::served(&client).await {
        for notice in appwrapper::convert(&mut docs) {
            eprintln!("note: {notice}");
        }
    }
    let kinds = KindRegistry::discover(&client, manifests::NAMESPACE).await?;
    let defaults =
        Defaults { namespace: &namespace, queue: args.queue.as_deref(), kinds: &kinds, serves_group: &addon_serving };
    let planned = match submit::plan(&client, docs, &defaults).await {
        Ok(planned) => planned,
        Err(problems) => {
            print_problems(&problems);
            return Ok(ExitCode::FAILURE);
        }
    };
    let dry_run = args.dry_run == DryRun::Server;
    for p in &planned {
        if p.already_submitted() {
            match args.output {
                Some(Output::Name) => println!("{}", p.display_name()),
                _ => println!("{} unchanged (already submitted)", p.display_name()),
            }
            continue;
        }
        let applied = submit::apply_one(&client, p, dry_run).await.map_err(|e| {
            anyhow::anyhow!(
                "{}: {}: {} (objects listed above were applied)",
                p.doc.origin,
                p.display_name(),
                submit::rejection(&e)
            )
        })?;
        let verb = if p.exists { "configured" } else { "created" };
        let suffix = if dry_run { " (server dry run)" } else { "" };
        match args.output.unwrap_or_default() {
            Output::Name => println!("{}", p.display_name()),
            Output::Yaml => print!("---\n{}", serde_saphyr::to_string(&applied)?),
            Output::Json => println!("{}", serde_json::to_string_pretty(&applied)?),
            Output::Human | Output::Wide => println!("{} {verb}{suffix}", p.display_name()),
        }
    }
    match args.wait {
        Some(timeout) if !dry_run => wait(&client, &planned, timeout).await,
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The sandbox's add-on that serves a group's job kind, and how to start a sandbox with it.
fn addon_serving(group: &str) -> Option<String> {
    let addon = Addon::value_variants().iter().find(|addon| addon.spec().job_kind().group == group)?;
    let name = addon.spec().name;
    Some(format!("in a sandbox, `kubectl kueue-ext up --addons {name}` runs its controller (see samples/addons/)"))
}

/// Jobs annotated `kueue-ext.dev/wait: "false"` are expected to stay pending: `--wait` reports
/// why instead of waiting for them.
const WAIT_ANNOTATION: &str = "kueue-ext.dev/wait";

async fn wait(client: &kube::Client, planned: &[Planned], timeout: Duration) -> anyhow::Result<ExitCode> {
    let (jobs, expected_pending): (Vec<&Planned>, Vec<&Planned>) = planned
        .iter()
        .filter(|p| p.job_kind.is_some())
        .partition(|p| p.doc.object["metadata"]["annotations"][WAIT_ANNOTATION] != "false");
    for p in expected_pending {
        println!("{} pending: {}", p.display_name(), pending_reason(client, p).await);
    }
    let deadline = Instant::now() + timeout;
    let mut pending: Vec<&Planned> = jobs.clone();
    let mut failed = 0;
    eprintln!("waiting for {} job(s) to finish (timeout {}s)", jobs.len(), timeout.as_secs());
    while !pending.is_empty() {
        let mut still = Vec::new();
        for p in pending {
            let obj = serde_json::to_value(p.api(client).get(p.name()).await?)?;
            let finished = p.job_kind.as_ref().and_then(|kind| kind.read(&obj)).and_then(|reading| reading.finished);
            match finished {
                Some(end) if end.success => println!("{} succeeded", p.display_name()),
                Some(end) => {
                    failed += 1;
                    let why = if end.message.is_empty() { String::new() } else { format!(": {}", end.message) };
                    println!("{} FAILED{why}", p.display_name());
                }
                None => still.push(p),
            }
        }
        pending = still;
        if !pending.is_empty() {
            if Instant::now() >= deadline {
                let names: Vec<String> = pending.iter().map(|p| p.display_name()).collect();
                eprintln!("error: timed out; not finished: {}", names.join(", "));
                return Ok(ExitCode::FAILURE);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Why a job's Workload holds no quota, in Kueue's words (waits a little for Kueue to decide).
async fn pending_reason(client: &kube::Client, p: &Planned) -> String {
    use kube::ResourceExt;

    use crate::api::kueue::{QUOTA_RESERVED, Workload};
    use crate::jobframework::naming::workload_name;

    let Ok(job) = p.api(client).get(p.name()).await else { return "the job is gone".into() };
    let name = workload_name(&p.resource.kind, &p.resource.group, p.name(), &job.uid().unwrap_or_default());
    let workloads: kube::Api<Workload> = kube::Api::namespaced(client.clone(), &job.namespace().unwrap_or_default());
    for _ in 0..40 {
        if let Ok(Some(wl)) = workloads.get_opt(&name).await
            && let Some(c) = crate::api::condition::find(wl.conditions(), QUOTA_RESERVED).filter(|c| !c.is_true())
        {
            return format!("{} ({})", c.message, c.reason);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    "waiting for Kueue to evaluate its Workload".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_like_kubectl() {
        assert_eq!(parse_timeout("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_timeout("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_timeout("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_timeout("soon").is_err());
    }
}
