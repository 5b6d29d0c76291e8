//! `capture`: the manager and its workers (the sandbox's, or those the flags name) in one
//! archive a maintainer can read and the sandbox can replay; never a Secret.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use super::SandboxArgs;
use super::watch::{Clusters, aligned};
use crate::capture::{self, LocalFiles, Options, Summary};
use crate::model::source::Targets;
use crate::sandbox::record::{RuntimeKind, SandboxState};
use crate::sandbox::{process_runtime, toolchain};

/// The sandbox's components whose log files a capture keeps.
const LOGGED_COMPONENTS: [&str; 2] = ["kueue", "kueue-ext-controller"];

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub clusters: Clusters,
    /// The archive to write (tar, gzip-compressed), or - for stdout when it is not a terminal
    #[arg(short, long = "output", value_name = "FILE", required_unless_present = "summary")]
    pub output: Option<PathBuf>,
    /// Print what was captured: counts per cluster and kind, and why pending Workloads wait
    #[arg(long)]
    pub summary: bool,
    /// Only this namespace's LocalQueues, Workloads, jobs and events [default: all namespaces]
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// Only the jobs matching this label selector, as kubectl's -l, and their Workloads
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let to_stdout = args.output.as_deref() == Some(Path::new("-"));
    if to_stdout && std::io::stdout().is_terminal() {
        eprintln!(
            "error: -o - writes a compressed archive to stdout, which is a terminal: redirect it, or pass -o FILE"
        );
        return Ok(ExitCode::from(2));
    }
    let targets = args.clusters.targets()?;
    eprintln!("capturing {} cluster(s) ({})…", targets.clusters.len(), targets.origin);
    let local = sandbox_files(&args.clusters.sandbox.dir(), &targets);
    let options = Options { namespace: args.namespace.clone(), selector: args.selector.clone() };
    let started = Instant::now();
    let captured = capture::capture(&targets, &local, &options).await?;
    let mtime = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let bytes = capture::archive(&captured, mtime)?;
    match &args.output {
        Some(_) if to_stdout => std::io::stdout().write_all(&bytes)?,
        Some(path) => {
            capture::write_atomically(path, &bytes)?;
            eprintln!(
                "wrote {} ({} KiB, {} cluster(s), {:.1}s); capture.json in it says what it holds and left out",
                path.display(),
                bytes.len().div_ceil(1024),
                captured.clusters.len(),
                started.elapsed().as_secs_f64()
            );
        }
        None => {}
    }
    if args.summary {
        let text = table(&capture::summarize(&captured));
        // stdout may be the archive itself.
        if to_stdout { eprint!("{text}") } else { print!("{text}") }
    }
    Ok(ExitCode::SUCCESS)
}

/// The whole sandbox of `sandbox`, jobs included, into `file`, as `capture -o FILE` writes it.
pub async fn snapshot(sandbox: &SandboxArgs, file: &Path) -> anyhow::Result<()> {
    let clusters = Clusters { sandbox: sandbox.clone(), kubeconfig: None, context: None, worker_contexts: Vec::new() };
    let targets = clusters.targets()?;
    let local = sandbox_files(&sandbox.dir(), &targets);
    let captured = capture::capture(&targets, &local, &Options::default()).await?;
    let mtime = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    capture::write_atomically(file, &capture::archive(&captured, mtime)?)?;
    Ok(())
}

/// What a process sandbox keeps in files for the clusters of `targets` it runs: Kueue's
/// Configuration, its pinned version, and the logs of Kueue and our controller.
pub(super) fn sandbox_files(state_dir: &Path, targets: &Targets) -> BTreeMap<String, LocalFiles> {
    let Ok(Some(state)) = SandboxState::load(state_dir) else { return BTreeMap::new() };
    if state.runtime != RuntimeKind::Process {
        return BTreeMap::new();
    }
    let mut files = BTreeMap::new();
    for target in &targets.clusters {
        let Some(cluster) = state.clusters.iter().find(|c| c.context == target.context) else { continue };
        let logs = cluster.components.iter().filter(|c| LOGGED_COMPONENTS.contains(&c.name.as_str()));
        files.insert(
            target.name.clone(),
            LocalFiles {
                kueue_config: Some(process_runtime::kueue_config_file(&cluster.dir)),
                kueue_version: Some(toolchain::versions::KUEUE.to_string()),
                logs: logs.map(|c| c.process.log.clone()).collect(),
            },
        );
    }
    files
}

/// Counts (a row per kind, a column per cluster), then the pending Workloads' reasons.
fn table(summary: &Summary) -> String {
    let columns: Vec<String> = summary.clusters.iter().map(|c| c.to_uppercase()).collect();
    let headers: Vec<&str> = std::iter::once("KIND").chain(columns.iter().map(String::as_str)).collect();
    let rows: Vec<Vec<String>> = summary
        .counts
        .iter()
        .map(|(kind, counts)| std::iter::once(kind.clone()).chain(counts.iter().map(ToString::to_string)).collect())
        .collect();
    let mut out = aligned(&headers, &rows);
    out.push('\n');
    if summary.pending.is_empty() {
        out.push_str("No pending Workloads.\n");
        return out;
    }
    let rows: Vec<Vec<String>> = summary
        .pending
        .iter()
        .map(|g| {
            let example = match g.workloads.len() {
                1 => g.workloads[0].clone(),
                n => format!("{} (and {} more)", g.workloads[0], n - 1),
            };
            let reason = if g.reason.is_empty() { "-".to_string() } else { g.reason.clone() };
            vec![
                g.cluster.clone(),
                g.workloads.len().to_string(),
                format!("{}=False", g.condition),
                reason,
                example,
                g.message.clone(),
            ]
        })
        .collect();
    out.push_str(&aligned(&["CLUSTER", "PENDING", "CONDITION", "REASON", "WORKLOADS", "MESSAGE"], &rows));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::PendingGroup;

    #[test]
    fn an_archive_or_a_summary_must_be_asked_for() {
        use clap::Parser;

        let parse =
            |args: &[&str]| super::super::Cli::try_parse_from([&["kubectl-kueue_ext", "capture"], args].concat());
        assert_eq!(parse(&[]).unwrap_err().exit_code(), 2);
        assert!(parse(&["--summary"]).is_ok());
        let Some(super::super::Command::Capture(args)) =
            parse(&["-o", "c.tgz", "-n", "team", "-l", "app=x"]).unwrap().command
        else {
            panic!("not capture")
        };
        assert_eq!(
            (args.output, args.namespace, args.selector),
            (Some("c.tgz".into()), Some("team".into()), Some("app=x".into()))
        );
    }

    #[test]
    fn the_summary_reads_as_two_tables() {
        let summary = Summary {
            clusters: vec!["manager".into(), "worker1".into()],
            counts: BTreeMap::from([("ClusterQueue".into(), vec![1, 1]), ("Workload".into(), vec![3, 0])]),
            pending: vec![PendingGroup {
                cluster: "manager".into(),
                condition: "QuotaReserved".into(),
                reason: "Pending".into(),
                message: "insufficient quota".into(),
                workloads: vec!["default/a".into(), "default/b".into()],
            }],
        };
        let text = table(&summary);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["KIND", "MANAGER", "WORKER1"]);
        assert_eq!(lines[2].split_whitespace().collect::<Vec<_>>(), ["Workload", "3", "0"]);
        let pending = lines.iter().find(|l| l.starts_with("manager")).unwrap();
        for cell in ["2", "QuotaReserved=False", "Pending", "default/a (and 1 more)", "insufficient quota"] {
            assert!(pending.contains(cell), "{cell} missing in {pending}");
        }
    }
}
