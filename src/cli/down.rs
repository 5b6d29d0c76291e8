use std::process::ExitCode;

use crate::sandbox::{self, DownOutcome};

use super::SandboxArgs;

pub async fn run(args: SandboxArgs) -> anyhow::Result<ExitCode> {
    let dir = args.dir();
    match sandbox::down(&dir).await? {
        DownOutcome::Removed { processes } => {
            println!("sandbox at {} removed ({processes} process(es) stopped)", dir.display())
        }
        DownOutcome::NothingThere => println!("no sandbox at {}: nothing to do", dir.display()),
    }
    Ok(ExitCode::SUCCESS)
}
