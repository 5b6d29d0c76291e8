//! `doctor`: one consistency report over the manager and its workers (the sandbox's, or those
//! the flags name); exits 1 when it finds an error.

use std::process::ExitCode;

use crate::doctor;

use super::output::{self, Output};
use super::watch::Clusters;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format: json or yaml [default: a table]
    #[arg(short, long, value_name = "FORMAT", value_parser = output::accepting(&[Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
    #[command(flatten)]
    pub clusters: Clusters,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A cluster that does not answer is a finding of the report, not a reason to stop.
    let targets = args.clusters.targets()?;
    eprintln!("checking {} cluster(s) ({})…", targets.clusters.len(), targets.origin);
    let facts = doctor::read(&targets).await;
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let report = doctor::check(&facts, now);
    match args.output.unwrap_or_default() {
        Output::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&report)?),
        _ => print!("{}", doctor::table(&report)),
    }
    Ok(if report.healthy() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
