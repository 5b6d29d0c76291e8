use std::path::PathBuf;
use std::process::ExitCode;

use super::output::{self, Output};
use crate::manifests;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write one file per part into this directory instead of printing.
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub write: Option<PathBuf>,
    /// Output format: yaml (one document per object), or json (a v1 List, as kubectl prints
    /// several objects) [default: yaml]
    #[arg(short, long, value_name = "FORMAT", value_parser = output::accepting(&[Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
}

/// Prints (or writes) the install: the Namespace, CRDs, RBAC, ServiceAccount, Deployment, Service
/// and webhook configurations.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(dir) = args.write {
        std::fs::create_dir_all(&dir)?;
        for (name, text) in manifests::files() {
            std::fs::write(dir.join(name), text)?;
            println!("wrote {}", dir.join(name).display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    match args.output.unwrap_or(Output::Yaml) {
        Output::Json => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": manifests::objects()});
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        _ => manifests::files().iter().for_each(|(_, text)| print!("{text}")),
    }
    Ok(ExitCode::SUCCESS)
}
