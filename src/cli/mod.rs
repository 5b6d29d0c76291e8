//! Command-line interface: one file per command; this one parses and dispatches.

mod cluster;
pub mod completion;
mod conformance;
mod controller;
mod down;
mod explain;
mod manifests;
mod status;
mod submit;
mod targets;
mod toolchain;
mod up;
mod version;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Kueue integration sandbox and framework for custom job kinds.
#[derive(Debug, Parser)]
#[command(name = "kubectl kueue-ext", bin_name = "kubectl kueue-ext", version, about)]
pub struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Log format: human-readable text, or JSON lines (for the controller).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the local sandbox: a manager cluster (and workers), each with Kueue.
    Up(up::Args),
    /// Stop every process of the sandbox and remove its state.
    Down(SandboxArgs),
    /// Show each cluster and component of the sandbox, ready or not.
    Status(status::Args),
    /// Build or locate the pinned Kubernetes, etcd, kwok and Kueue binaries.
    #[command(subcommand)]
    Toolchain(toolchain::Command),
    /// Run the Kueue integration controller and admission webhook for this project's kinds.
    Controller(controller::Args),
    /// Print the install manifests (CRDs, RBAC, webhook configurations).
    Manifests(manifests::Args),
    /// Apply jobs and queues from files or directories; nothing is applied if any is invalid.
    Submit(submit::Args),
    /// Say why a job is or is not running: its queue, Workload, quota, admission checks, worker.
    Explain(explain::Args),
    /// Watch every job across the manager and its workers: Workload, admission checks, worker, pods.
    Watch(watch::Args),
    /// Check Kueue's integration contract on the sandbox against a job kind: pass/fail per check.
    Conformance(conformance::Args),
    /// Print the plugin's version and every version the sandbox pins.
    Version(version::Args),
    /// Print a shell completion script (bash, zsh, fish, …).
    #[command(after_long_help = completion::INSTALL)]
    Completion(completion::Args),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Where the sandbox keeps its state.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// State directory of the sandbox [default: $KUEUE_EXT_HOME or the XDG state dir]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl SandboxArgs {
    pub fn dir(&self) -> PathBuf {
        self.state_dir.clone().unwrap_or_else(crate::sandbox::state::default_dir)
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Up(args) => up::run(args).await,
        Command::Down(args) => down::run(args).await,
        Command::Status(args) => status::run(args).await,
        Command::Toolchain(command) => toolchain::run(command).await,
        Command::Controller(args) => controller::run(args).await,
        Command::Manifests(args) => manifests::run(args).await,
        Command::Submit(args) => submit::run(args).await,
        Command::Explain(args) => explain::run(args).await,
        Command::Watch(args) => watch::run(args).await,
        Command::Conformance(args) => conformance::run(args).await,
        Command::Version(args) => version::run(args).await,
        Command::Completion(args) => completion::run(args),
    }
}

/// An error and its causes on one line, each said once: most of our errors already name their
/// cause in their own words, which printing the whole chain (`{:#}`) would repeat.
pub fn in_one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// Logs go to stderr; `RUST_LOG` overrides the level chosen with `-v`.
pub fn init_tracing(verbose: u8, format: LogFormat) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // kube-client logs every failed request as an error; readiness polling fails on purpose.
        .unwrap_or_else(|_| {
            let libraries = if verbose >= 2 { level } else { "off" };
            tracing_subscriber::EnvFilter::new(format!("kueue_ext={level},{libraries}"))
        });
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(Debug, thiserror::Error)]
    #[error("starting: {source}")]
    struct Says {
        source: std::io::Error,
    }

    #[test]
    fn an_error_says_each_cause_once() {
        let says = anyhow::Error::new(Says { source: std::io::Error::other("port taken") });
        assert_eq!(format!("{says:#}"), "starting: port taken: port taken", "what main printed before");
        assert_eq!(in_one_line(&says), "starting: port taken");
        let silent = anyhow::Error::new(std::io::Error::other("port taken")).context("cluster manager");
        assert_eq!(in_one_line(&silent), "cluster manager: port taken");
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn up_takes_workers_and_state_dir() {
        let cli = Cli::try_parse_from(["kubectl-kueue_ext", "up", "--workers", "0", "--state-dir", "/tmp/s"]).unwrap();
        let Command::Up(args) = cli.command else { panic!("parsed {:?}", cli.command) };
        assert_eq!(args.workers, 0);
        assert_eq!(args.sandbox.dir(), PathBuf::from("/tmp/s"));
    }

    #[test]
    fn unknown_output_format_is_a_usage_error() {
        let err = Cli::try_parse_from(["kubectl-kueue_ext", "status", "-o", "xml"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn watch_takes_kubectls_all_namespaces_but_not_with_a_namespace() {
        let cli = Cli::try_parse_from(["kubectl-kueue_ext", "watch", "-A", "--once"]).unwrap();
        let Command::Watch(args) = cli.command else { panic!("parsed {:?}", cli.command) };
        assert!(args.all_namespaces && args.namespace.is_none());
        let err = Cli::try_parse_from(["kubectl-kueue_ext", "watch", "-A", "-n", "team"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
