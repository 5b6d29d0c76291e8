use std::process::ExitCode;

use crate::sandbox::{self, DownOutcome, RuntimeKind};

use super::SandboxArgs;

pub async fn run(args: SandboxArgs) -> anyhow::Result<ExitCode> {
    let dir = args.dir();
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
