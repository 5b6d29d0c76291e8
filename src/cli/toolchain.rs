use std::process::ExitCode;

use crate::sandbox::progress::Progress;
use crate::sandbox::toolchain;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Build the toolchain into the cache (a no-op when it is already there).
    Install,
    /// Print the directory holding kube-apiserver, kubectl, etcd, kwok and kueue.
    Path,
}

pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Install => {
            let toolchain = toolchain::ensure(&Progress::stderr()).await?;
            println!("{}", toolchain.bin_dir().display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Path => match toolchain::find().await? {
            Some(toolchain) => {
                println!("{}", toolchain.bin_dir().display());
                Ok(ExitCode::SUCCESS)
            }
            None => {
                eprintln!("error: the toolchain is not built yet; run `kubectl kueue-ext toolchain install`");
                Ok(ExitCode::FAILURE)
            }
        },
    }
}
