//! `conformance --kind Kind.version.group`: Kueue's jobframework contract checked against an
//! integrated kind, on the sandbox or on any clusters by kubeconfig context; exits 1 when any
//! check fails.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::conformance::report::{json, table};
use crate::conformance::target::{Context, Target};
use crate::conformance::{self, Options};
use crate::model::snapshot::Role;

use super::watch::Clusters;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
    Yaml,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kind, as Kueue's externalFrameworks name it: `ExternalJob.v1alpha1.kueue-ext.dev`,
    /// `WrappedJob.v1alpha1.kueue-ext.dev`, `Job.v1.batch`, or one of the cluster's
    /// integrations file.
    #[arg(long, value_name = "Kind.version.group")]
    pub kind: String,
    /// One job of the kind to create in every check (its pods should run for 20 s or so) [default:
    /// the built-in sample of a built-in kind]
    #[arg(long, value_name = "FILE")]
    pub sample: Option<PathBuf>,
    /// Leave the run's namespaces and queues in place to look at (the run prints how to remove
    /// them).
    #[arg(long)]
    pub keep: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    #[command(flatten)]
    pub clusters: Clusters,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let targets = args.clusters.targets()?;
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
    match args.output {
        Output::Table => print!("{}", table(&report)),
        Output::Json => println!("{}", json(&report)),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&report)?),
    }
    Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
