//! Command-line interface: one file per command; this one parses and dispatches.

mod capture;
mod cluster;
pub mod completion;
mod conformance;
mod connect;
mod controller;
mod doctor;
mod down;
mod examples;
mod explain;
mod install;
mod manifests;
mod output;
mod simulate;
mod status;
mod submit;
mod targets;
mod toolchain;
mod up;
mod version;
mod watch;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Kueue integration sandbox and framework for custom job kinds.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl kueue-ext",
    bin_name = "kubectl kueue-ext",
    version = version::LONG,
    about,
    after_help = EXAMPLES
)]
pub struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace; kubectl's -v=N too).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = "Global options")]
    pub verbose: u8,

    /// Log format: human-readable text, or JSON lines (for the controller).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, help_heading = "Global options")]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Option<Command>,
}

const EXAMPLES: &str = "\
Examples:
  kubectl kueue-ext up                          # a manager and 2 workers, MultiKueue wired
  kubectl kueue-ext submit -f samples/ --wait   # the samples, until they finish
  kubectl kueue-ext watch                       # every job across the clusters, live
  kubectl kueue-ext explain too-big             # why a job is not running
  kubectl kueue-ext down                        # stop what up started

Use \"kubectl kueue-ext COMMAND --help\" for more about a command.";

/// kubectl's `-v=N` (and klog's `--v=N`) as our `-v` count, by what klog logs at each level: 1-3
/// what changes (info), 4-5 what is asked (debug), 6 and up every request (trace). Everything
/// after `--` is left alone.
pub fn kubectl_verbosity(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for arg in args {
        rest |= arg == "--";
        let level = arg
            .to_str()
            .filter(|_| !rest)
            .and_then(|a| a.strip_prefix("-v=").or_else(|| a.strip_prefix("--v=")))
            .and_then(|n| n.parse::<u8>().ok());
        match level {
            Some(0) => {}
            Some(1..=3) => out.push("-v".into()),
            Some(4 | 5) => out.push("-vv".into()),
            Some(_) => out.push("-vvv".into()),
            None => out.push(arg),
        }
    }
    out
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the local sandbox: a manager cluster (and workers), each with Kueue.
    #[command(after_help = examples::UP)]
    Up(up::Args),
    /// Stop every process of the sandbox and remove its state.
    #[command(after_help = examples::DOWN)]
    Down(down::Args),
    /// Show each cluster and component of the sandbox, ready or not.
    #[command(after_help = examples::STATUS)]
    Status(status::Args),
    /// Build or locate the pinned Kubernetes, etcd, kwok and Kueue binaries.
    #[command(subcommand)]
    Toolchain(toolchain::Command),
    /// Run the Kueue integration controller and admission webhook for this project's kinds.
    #[command(after_help = examples::CONTROLLER)]
    Controller(controller::Args),
    /// Install the controller and webhook on a cluster that runs Kueue, and tell Kueue of our kinds.
    #[command(after_help = examples::INSTALL)]
    Install(install::Args),
    /// Take out what install made, and our entries in Kueue's Configuration.
    #[command(after_help = examples::UNINSTALL)]
    Uninstall(install::UninstallArgs),
    /// Wire MultiKueue from a manager to workers where install put this project, and wait until connected.
    #[command(after_help = examples::CONNECT)]
    Connect(connect::Args),
    /// Take out what connect made, on the manager and the workers named.
    #[command(after_help = examples::DISCONNECT)]
    Disconnect(connect::DisconnectArgs),
    /// Print the install manifests: Namespace, CRDs, RBAC, Deployment, Service, PodDisruptionBudget,
    /// the empty certificate Secret the controller fills, webhook configurations.
    #[command(after_help = examples::MANIFESTS)]
    Manifests(manifests::Args),
    /// Apply jobs and queues from files or directories; nothing is applied if any is invalid.
    #[command(after_help = examples::SUBMIT)]
    Submit(submit::Args),
    /// Say why a job is or is not running: its queue, Workload, quota, admission checks, worker.
    #[command(after_help = examples::EXPLAIN)]
    Explain(explain::Args),
    /// Watch every job across the manager and its workers: Workload, admission checks, worker, pods.
    #[command(after_help = examples::WATCH)]
    Watch(watch::Args),
    /// Check Kueue's integration contract on the sandbox against a job kind: pass/fail per check.
    #[command(after_help = examples::CONFORMANCE)]
    Conformance(conformance::Args),
    /// Check the manager and its workers agree: Kueue, our controller, kinds, MultiKueue, queues, jobs.
    #[command(after_help = examples::DOCTOR)]
    Doctor(doctor::Args),
    /// Capture the manager and its workers in one archive: Kueue's setup, jobs, Workloads, nodes, events, logs; never a Secret.
    #[command(after_help = examples::CAPTURE)]
    Capture(capture::Args),
    /// Would these jobs be admitted, and where? Kueue's own scheduler answers, in a throwaway
    /// sandbox that replays a capture with its jobs; nothing is written to the real clusters
    #[command(after_help = examples::SIMULATE)]
    Simulate(simulate::Args),
    /// Print the plugin's version and every version the sandbox pins.
    #[command(after_help = examples::VERSION)]
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

/// Which sandbox, and where it keeps its state.
#[derive(Clone, Debug, clap::Args)]
pub struct SandboxArgs {
    /// Sandbox name, as kind's --name: its contexts and kind clusters are NAME-manager,
    /// NAME-worker1 …, so sandboxes of different names run side by side [default: kueue-ext]
    #[arg(long, value_name = "NAME", env = "KUEUE_EXT_SANDBOX", value_parser = sandbox_name)]
    pub name: Option<String>,
    /// State directory of the sandbox [default: $KUEUE_EXT_HOME or the XDG state dir; another
    /// --name's beside it, suffixed -NAME]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

fn sandbox_name(text: &str) -> Result<String, String> {
    crate::sandbox::check_name(text).map(|()| text.to_string())
}

impl SandboxArgs {
    pub fn dir(&self) -> PathBuf {
        let name = self.name.as_deref().unwrap_or(crate::sandbox::DEFAULT_NAME);
        self.state_dir
            .clone()
            .unwrap_or_else(|| crate::sandbox::record::dir_of(crate::sandbox::record::default_dir(), name))
    }

    /// The sandbox's name: the one given, else the one its state dir records, else the default.
    pub fn sandbox_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        let recorded = crate::sandbox::record::SandboxState::load(&self.dir()).ok().flatten().map(|state| state.name);
        recorded.unwrap_or_else(|| crate::sandbox::DEFAULT_NAME.to_string())
    }
}

pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Up(args) => up::run(args).await,
        Command::Down(args) => down::run(args).await,
        Command::Status(args) => status::run(args).await,
        Command::Toolchain(command) => toolchain::run(command).await,
        Command::Controller(args) => controller::run(args).await,
        Command::Manifests(args) => manifests::run(args).await,
        Command::Install(args) => install::run(args).await,
        Command::Uninstall(args) => install::uninstall(args).await,
        Command::Connect(args) => connect::run(args).await,
        Command::Disconnect(args) => connect::disconnect(args).await,
        Command::Submit(args) => submit::run(args).await,
        Command::Explain(args) => explain::run(args).await,
        Command::Watch(args) => watch::run(args).await,
        Command::Conformance(args) => conformance::run(args).await,
        Command::Doctor(args) => doctor::run(args).await,
        Command::Capture(args) => capture::run(args).await,
        Command::Simulate(args) => simulate::run(args).await,
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
    fn kubectls_verbosity_levels_map_onto_ours() {
        let rewrite = |args: &[&str]| -> Vec<String> {
            let args = args.iter().map(OsString::from).collect();
            kubectl_verbosity(args).into_iter().map(|a| a.into_string().unwrap()).collect()
        };
        assert_eq!(rewrite(&["k", "-v=2", "status"]), ["k", "-v", "status"]);
        assert_eq!(rewrite(&["k", "--v=4", "status"]), ["k", "-vv", "status"]);
        assert_eq!(rewrite(&["k", "-v=9"]), ["k", "-vvv"]);
        assert_eq!(rewrite(&["k", "-v=0", "-vv"]), ["k", "-vv"]);
        assert_eq!(rewrite(&["k", "-v=x"]), ["k", "-v=x"], "not a level: clap refuses it");
        assert_eq!(rewrite(&["k", "--", "-v=4"]), ["k", "--", "-v=4"]);
        let cli = Cli::try_parse_from(rewrite(&["kubectl-kueue_ext", "-v=6", "version"])).unwrap();
        assert_eq!(cli.verbose, 3);
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn up_takes_workers_and_state_dir() {
        let cli = Cli::try_parse_from(["kubectl-kueue_ext", "up", "--workers", "0", "--state-dir", "/tmp/s"]).unwrap();
        let Some(Command::Up(args)) = cli.command else { panic!("parsed {:?}", cli.command) };
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
        let Some(Command::Watch(args)) = cli.command else { panic!("parsed {:?}", cli.command) };
        assert!(args.all_namespaces && args.namespace.is_none());
        let err = Cli::try_parse_from(["kubectl-kueue_ext", "watch", "-A", "-n", "team"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
