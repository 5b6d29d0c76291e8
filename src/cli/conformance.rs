//! `conformance --kind Kind.version.group`: Kueue's jobframework contract checked against an
//! integrated kind, on the sandbox or on any clusters by kubeconfig context; exits 1 when any
//! check fails.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::conformance::report::{json, table};
use crate::conformance::target::{Context, Target};
use crate::conformance::{self, Options};
use crate::integrations::declarative::config::split_kind;
use crate::model::snapshot::Role;

use super::output::{self, Output};
use super::watch::Clusters;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kind, as Kueue's externalFrameworks name it: `ExternalJob.v1alpha1.kueue-ext.dev`,
    /// `WrappedJob.v1alpha1.kueue-ext.dev`, `Job.v1.batch`, or one of the cluster's
    /// integrations file.
    #[arg(long, value_name = "Kind.version.group", value_parser = qualified_kind)]
    pub kind: String,
    /// One job of the kind to create in every check (its pods should run for 20 s or so) [default:
    /// the built-in sample of a built-in kind]
    #[arg(long, value_name = "FILE")]
    pub sample: Option<PathBuf>,
    /// Leave the run's namespaces and queues in place to look at (the run prints how to remove
    /// them).
    #[arg(long)]
    pub keep: bool,
    /// Output format: json or yaml [default: a table]
    #[arg(short, long, value_name = "FORMAT", value_parser = output::accepting(&[Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
    #[command(flatten)]
    pub clusters: Clusters,
}

/// Checked before any cluster is asked: a malformed kind is a usage error.
fn qualified_kind(text: &str) -> Result<String, String> {
    match split_kind(text) {
        Some(_) => Ok(text.to_string()),
        None => Err("must be Kind.version.group, as in Kueue's externalFrameworks (e.g. Job.v1.batch)".into()),
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let targets = args.clusters.reachable_targets().await?;
    let context = |role: Role| -> Vec<Context> {
        let chosen = targets.clusters.iter().filter(|c| c.role == role);
        chosen.map(|c| Context { name: c.name.clone(), context: c.context.clone() }).collect()
    };
    let manager = context(Role::Manager).into_iter().next().ok_or_else(|| anyhow::anyhow!("no manager context"))?;
    let target = Target::connect(&targets.kubeconfig, manager, context(Role::Worker)).await?;
    let where_ = match &target.multikueue {
        Some(multikueue) => format!("{}, MultiKueue on {}", target.single.name, multikueue.manager.name),
        None => target.single.name.clone(),
    };
    eprintln!("checking {} on {where_} ({}; each check in its own namespace, all at once)…", args.kind, targets.origin);
    let options = Options { kind: args.kind, sample: args.sample, keep: args.keep };
    let report = conformance::run(&target, &options).await?;
    match args.output.unwrap_or_default() {
        Output::Json => println!("{}", json(&report)),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&report)?),
        _ => print!("{}", table(&report)),
    }
    Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
