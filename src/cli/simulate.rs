//! `simulate JOB.yaml… [--from FILE]`: would these jobs be admitted, and where? Kueue's own
//! scheduler answers, in a throwaway sandbox that replays a capture (the running sandbox's, or
//! the clusters the flags name, captured read-only when no `--from` is given).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::output::{self, Output};
use super::watch::{Clusters, aligned};
use crate::capture::{self, Options};
use crate::go_duration::parse_go_duration;
use crate::simulate::{Report, run::SimulateError, run::simulate};
use crate::submit::{Problem, documents};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Job files (.yaml, .yml, .json), every document submitted in order
    #[arg(value_name = "JOB.yaml", required = true)]
    pub files: Vec<PathBuf>,
    /// The capture to replay (`capture -o FILE`) [default: capture the clusters now]
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    #[command(flatten)]
    pub clusters: Clusters,
    /// How long Kueue may take to decide, and the replayed jobs to settle (Go duration)
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_go_duration)]
    pub timeout: Duration,
    /// Output format: json or yaml [default: a table]
    #[arg(short, long, value_name = "FORMAT", value_parser = output::accepting(&[Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // The files are checked before anything is captured or started.
    let mut docs = Vec::new();
    let mut problems: Vec<Problem> = Vec::new();
    for file in &args.files {
        let name = file.display().to_string();
        match std::fs::read(file) {
            Ok(bytes) => match documents::read(&name, &bytes) {
                Ok(read) => docs.extend(read),
                Err(found) => problems.extend(found),
            },
            Err(e) => {
                eprintln!("error: {name}: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    problems.extend(docs.iter().flat_map(documents::check_shape));
    if !problems.is_empty() {
        problems.iter().for_each(|p| eprintln!("error: {p}"));
        eprintln!("nothing was simulated ({} problem(s))", problems.len());
        return Ok(ExitCode::from(2));
    }
    let tmp = tempfile::tempdir()?;
    let archive = match &args.from {
        Some(file) => file.clone(),
        None => {
            let targets = args.clusters.targets()?;
            eprintln!("capturing {} cluster(s) ({}), read-only…", targets.clusters.len(), targets.origin);
            let local = super::capture::sandbox_files(&args.clusters.sandbox.dir(), &targets);
            let captured = capture::capture(&targets, &local, &Options::default()).await?;
            let path = tmp.path().join("capture.tgz");
            capture::write_atomically(&path, &capture::archive(&captured, 0)?)?;
            path
        }
    };
    let report = match simulate(&archive, docs, args.timeout).await {
        Ok(report) => report,
        Err(SimulateError::Interrupted) => {
            eprintln!("error: {}", SimulateError::Interrupted);
            return Ok(ExitCode::from(130));
        }
        Err(SimulateError::Documents(problems)) => {
            problems.iter().for_each(|p| eprintln!("error: {p}"));
            eprintln!("nothing was simulated ({} problem(s))", problems.len());
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e.into()),
    };
    match args.output.unwrap_or_default() {
        Output::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&report)?),
        _ => print!("{}", table(&report)),
    }
    Ok(if report.all_admitted() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A row per job with its answer, `explain`'s reasons under those that wait, then what the
/// replay could not reproduce.
fn table(report: &Report) -> String {
    let rows: Vec<Vec<String>> = report.jobs.iter().map(|j| vec![j.job.clone(), j.sentence()]).collect();
    let mut out = aligned(&["JOB", "SIMULATED"], &rows);
    for job in report.jobs.iter().filter(|j| !j.why.is_empty()) {
        out.push_str(&format!("\nwhy {} waits:\n", job.job));
        job.why.iter().for_each(|line| out.push_str(&format!("  {line}\n")));
    }
    out.push_str(&format!("\nsimulated against {}; not as captured:\n", report.capture));
    report.not_as_captured.iter().for_each(|line| out.push_str(&format!("  - {line}\n")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::Outcome;

    #[test]
    fn the_table_says_each_answer_and_the_caveats() {
        let report = Report {
            capture: "c.tgz".into(),
            jobs: vec![Outcome {
                job: "externaljob.kueue-ext.dev/big".into(),
                reason: Some("Pending".into()),
                message: Some("insufficient quota".into()),
                why: vec!["it waits for quota".into()],
                ..Outcome::default()
            }],
            not_as_captured: vec!["placeholders".into()],
        };
        let text = table(&report);
        let row = text.lines().nth(1).unwrap_or_default();
        assert!(row.starts_with("externaljob.kueue-ext.dev/big "), "{text}");
        assert!(row.ends_with(" not admitted: Pending: insufficient quota"), "{text}");
        assert!(text.contains("why externaljob.kueue-ext.dev/big waits:\n  it waits for quota\n"), "{text}");
        assert!(text.ends_with("simulated against c.tgz; not as captured:\n  - placeholders\n"), "{text}");
    }
}
