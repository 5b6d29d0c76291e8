use std::path::PathBuf;
use std::process::ExitCode;

use crate::sandbox::{self, DownOutcome, RuntimeKind};

use super::SandboxArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// First capture the whole sandbox into this archive (its jobs too), which `up --from FILE
    /// --with-jobs` brings back; nothing is stopped when the capture fails
    #[arg(long, value_name = "FILE")]
    pub keep_snapshot: Option<PathBuf>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = args.sandbox.dir();
    if let Some(file) = &args.keep_snapshot {
        if sandbox::record::SandboxState::load(&dir)?.is_none() {
            anyhow::bail!("no sandbox at {} to keep a snapshot of", dir.display());
        }
        super::capture::snapshot(&args.sandbox, file).await?;
        println!(
            "snapshot written to {}: `kubectl kueue-ext up --from {0} --with-jobs` brings it back",
            file.display()
        );
    }
    match sandbox::down(&dir).await? {
        DownOutcome::Removed { runtime: Some(RuntimeKind::Kind), stopped } => {
            println!("sandbox at {} removed ({stopped} kind cluster(s) deleted)", dir.display())
        }
        DownOutcome::Removed { stopped, .. } => {
            println!("sandbox at {} removed ({stopped} process(es) stopped)", dir.display())
        }
        DownOutcome::NothingThere => println!("no sandbox at {}: nothing to do", dir.display()),
    }
    Ok(ExitCode::SUCCESS)
}
