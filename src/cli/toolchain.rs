use std::process::ExitCode;

use crate::sandbox::progress::Progress;
use crate::sandbox::{self, Addon, toolchain};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Build the toolchain into the cache (a no-op when it is already there).
    Install(InstallArgs),
    /// Print the directory holding kube-apiserver, kubectl, etcd, kwok and kueue.
    Path,
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Also build what the kind runtime runs: the kind CLI and the node image with every image it
    /// carries (Kueue's too), so that a later `up --runtime kind` starts without a registry.
    #[arg(long)]
    kind: bool,
    /// Also build these add-ons (comma-separated), and their images with --kind.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ADDON")]
    addons: Vec<Addon>,
}

pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Install(args) => {
            let progress = Progress::stderr();
            let toolchain = toolchain::ensure(&progress).await?;
            if args.kind {
                let (images, addons) = sandbox::prepare_kind_images(&args.addons, &progress).await?;
                eprintln!("kind node image: {}", images.node_image);
                for addon in addons {
                    eprintln!(
                        "{}: image {}; on a kind cluster of your own: kind load image-archive {} --name CLUSTER && \
                         kubectl apply --server-side -f {}",
                        addon.built.addon.name(),
                        addon.image,
                        addon.archive.display(),
                        addon.release.display()
                    );
                }
            } else {
                sandbox::build_addons(&toolchain, &args.addons, &progress).await?;
            }
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
