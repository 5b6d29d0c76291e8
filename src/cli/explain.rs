//! `explain KIND/NAME`: the "Why" of the `watch` detail view, printed. It reads the clusters
//! through the same watches and the same join, so both always say the same thing.

use std::process::ExitCode;

use super::watch::{Clusters, SETTLE};
use crate::explain::explain;
use crate::tui::model::{join, problems_text};
use crate::tui::snapshot::{JobKind, Role};
use crate::tui::source::Source;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job: `NAME` (an ExternalJob), `externaljob/NAME`, `wrappedjob/NAME` (or `wj/NAME`) or
    /// `job/NAME` (batch/v1).
    pub job: String,
    #[command(flatten)]
    pub clusters: Clusters,
    /// Namespace [default: the context's, else default]
    #[arg(short, long)]
    pub namespace: Option<String>,
}

/// The kind and name of a job reference.
fn kind_of(reference: &str) -> Result<(JobKind, &str), String> {
    let (kind, name) = reference.split_once('/').unwrap_or(("externaljob", reference));
    match JobKind::from_alias(kind) {
        Some(kind) => Ok((kind, name)),
        None => Err(format!("unknown job kind {kind:?}: use externaljob/NAME, wrappedjob/NAME or job/NAME")),
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (kind, name) = kind_of(&args.job).map_err(anyhow::Error::msg)?;
    let targets = args.clusters.targets()?;
    let namespace = match &args.namespace {
        Some(namespace) => namespace.clone(),
        None => targets.manager_namespace().unwrap_or_else(|| "default".into()),
    };
    let mut source = Source::start(targets, Some(&namespace)).await;
    source.settle(SETTLE).await;
    let snapshot = source.snapshot();
    let model = join(&snapshot);
    let matching = |row: &&crate::tui::model::JobRow| {
        row.key.kind == kind && row.key.namespace == namespace && row.key.name == name
    };
    // The user's copy on the manager first; a job that lives only on a worker otherwise.
    let manager = model.clusters.iter().find(|c| c.role == Role::Manager).map(|c| c.name.as_str());
    let row = model
        .jobs
        .iter()
        .filter(matching)
        .find(|row| Some(row.key.cluster.as_str()) == manager)
        .or_else(|| model.jobs.iter().find(matching));
    let Some(row) = row else {
        eprintln!("{} {namespace}/{name} not found", kind.name());
        for cluster in snapshot.clusters.iter().filter(|c| !c.reachable) {
            eprintln!("(cluster {} could not be read: {})", cluster.name, problems_text(&cluster.problems));
        }
        return Ok(ExitCode::FAILURE);
    };
    for line in explain(row, &model) {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_references_resolve_like_kubectl() {
        assert_eq!(kind_of("train").unwrap(), (JobKind::ExternalJob, "train"));
        assert_eq!(kind_of("job/sample").unwrap(), (JobKind::Job, "sample"));
        for reference in ["wrappedjob/train", "wj/train", "WrappedJobs/train"] {
            assert_eq!(kind_of(reference).unwrap(), (JobKind::WrappedJob, "train"));
        }
        assert!(kind_of("pod/x").unwrap_err().contains("unknown job kind"));
    }
}
