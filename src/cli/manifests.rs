use std::path::PathBuf;
use std::process::ExitCode;

use crate::manifests;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write one file per part into this directory instead of printing.
    #[arg(long, value_name = "DIR")]
    pub write: Option<PathBuf>,
}

/// Prints (or writes) the install YAML: CRDs, RBAC and webhook configurations.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.write {
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            for (name, text) in manifests::files() {
                std::fs::write(dir.join(name), text)?;
                println!("wrote {}", dir.join(name).display());
            }
        }
        None => {
            for (_, text) in manifests::files() {
                print!("{text}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
