//! `conformance --kind Kind.version.group`: Kueue's jobframework contract checked on the
//! sandbox against an integrated kind; exits 1 when any check fails.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::conformance::report::{json, table};
use crate::conformance::target::Target;
use crate::conformance::{self, Options};

use super::SandboxArgs;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kind, as Kueue's externalFrameworks name it: `ExternalJob.v1alpha1.kueue-ext.dev`,
    /// `WrappedJob.v1alpha1.kueue-ext.dev`, `Job.v1.batch`, or one of the sandbox's
    /// integrations file.
    #[arg(long, value_name = "Kind.version.group")]
    pub kind: String,
    /// One job of the kind to create in every check (its pods should run for 20 s or so) [default:
    /// the built-in sample of a built-in kind]
    #[arg(long, value_name = "FILE")]
    pub sample: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let target = Target::from_sandbox(&args.sandbox.dir()).await?;
    let where_ = match &target.multikueue {
        Some(multikueue) => format!("{}, MultiKueue on {}", target.single.name, multikueue.manager.name),
        None => target.single.name.clone(),
    };
    eprintln!("checking {} on {where_} (each check in its own namespace, all at once)…", args.kind);
    let report = conformance::run(&target, &Options { kind: args.kind, sample: args.sample }).await?;
    match args.output {
        Output::Table => print!("{}", table(&report)),
        Output::Json => println!("{}", json(&report)),
    }
    Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
