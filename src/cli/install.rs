//! `install` and `uninstall`: this project's controller and webhook on a cluster of the user's,
//! chosen as kubectl chooses (`--kubeconfig`, `--context`), never the sandbox's by default.

use std::path::PathBuf;
use std::process::ExitCode;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use super::output::{self, Output};
use super::submit::DryRun;
use crate::install::{self, InstallError, KueueChange, Options, Plan, UninstallOptions};
use crate::integrations::declarative::config::IntegrationConfig;
use crate::kube_util;
use crate::manifests::{self, CertWriter};
use crate::sandbox;
use crate::sandbox::progress::Progress;

/// The cluster, as kubectl's flags name it.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// Kubeconfig file [default: $KUBECONFIG or ~/.kube/config]
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context [default: the current context]
    #[arg(long)]
    pub context: Option<String>,
}

impl Target {
    async fn connect(&self) -> anyhow::Result<(Client, String)> {
        let config = kube_util::read_kubeconfig(self.kubeconfig.as_deref())?;
        let context = self
            .context
            .clone()
            .or_else(|| config.current_context.clone())
            .ok_or_else(|| anyhow::anyhow!("no context: pass --context or set a current context"))?;
        let client = kube_util::client_from(config.clone(), &context).await?;
        kube_util::ensure_reachable(&client, &config, &context).await?;
        Ok((client, context))
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    /// The controller's image [default on a kind cluster: built from this plugin and loaded into
    /// its nodes, as `up` does]
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Integrations file: further job kinds (their CRDs must be installed), as `up` takes.
    #[arg(long, value_name = "FILE")]
    pub integrations: Option<PathBuf>,
    /// How long the webhook's serving certificate lasts; the controller (or cert-manager) renews
    /// it at 2/3 of that (Go duration) [default: 8760h; with --cert-manager, cert-manager's 2160h]
    #[arg(long, value_name = "DURATION", value_parser = go_duration)]
    pub cert_validity: Option<String>,
    /// Have cert-manager issue the webhook's certificate (a Certificate from an Issuer chain in
    /// kueue-ext-system) and inject its CA, instead of the controller. cert-manager must be installed.
    #[arg(long)]
    pub cert_manager: bool,
    /// Leave Kueue's Configuration alone and print the entries to add to it instead.
    #[arg(long)]
    pub no_kueue_config: bool,
    /// none: install; client: print what would be applied (-o yaml); server: the API server
    /// checks every write and stores nothing.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "client", default_value_t)]
    pub dry_run: DryRun,
    /// Output format of --dry-run=client: yaml or json [default: yaml]
    #[arg(short, long, value_name = "FORMAT", value_parser = output::accepting(&[Output::Yaml, Output::Json]))]
    pub output: Option<Output>,
}

fn go_duration(text: &str) -> Result<String, crate::go_duration::NotADuration> {
    crate::go_duration::parse_go_duration(text).map(|_| text.to_string())
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub target: Target,
    /// Uninstall even while jobs of our kinds exist (they stay, unmanaged).
    #[arg(long)]
    pub force: bool,
    /// Delete this project's CRDs too, and with them every job of its kinds.
    #[arg(long)]
    pub delete_crds: bool,
    /// Leave Kueue's Configuration as it is.
    #[arg(long)]
    pub no_kueue_config: bool,
}

/// The kind cluster the nodes belong to, from their provider ID (`kind://docker/NAME/node`).
async fn kind_cluster(client: &Client) -> anyhow::Result<Option<String>> {
    let nodes = Api::<Node>::all(client.clone()).list(&ListParams::default()).await?;
    Ok(nodes.items.iter().find_map(crate::connect::kind_cluster_of))
}

/// The image to run: `--image`, else this plugin's own loaded into a kind cluster.
async fn image(args: &Args, client: &Client, context: &str) -> anyhow::Result<String> {
    if let Some(image) = &args.image {
        return Ok(image.clone());
    }
    if args.dry_run != DryRun::None {
        return Ok(manifests::DEFAULT_IMAGE.to_string());
    }
    match kind_cluster(client).await? {
        Some(cluster) => Ok(sandbox::load_controller_image(&cluster, &Progress::stderr()).await?),
        None => anyhow::bail!(
            "context {context} is not a kind cluster, so pass --image: no registry serves {}; push an image of this plugin's static build (entrypoint `kubectl-kueue_ext`) where the cluster pulls from",
            manifests::DEFAULT_IMAGE
        ),
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Read before connecting: a mistake in the file is the first thing to hear about.
    let integrations = match &args.integrations {
        Some(file) => IntegrationConfig::load(file)?.integrations,
        None => Vec::new(),
    };
    let (client, context) = args.target.connect().await?;
    let options = Options {
        image: image(&args, &client, &context).await?,
        integrations,
        cert_validity: args.cert_validity.clone(),
        cert_writer: if args.cert_manager { CertWriter::CertManager } else { CertWriter::Controller },
        kueue_config: !args.no_kueue_config,
        dry_run: args.dry_run == DryRun::Server,
    };
    let plan = install::plan(&client, &options).await.map_err(|e| match e {
        refused @ (InstallError::Preflight(_) | InstallError::SwitchingCertWriter { .. }) => {
            anyhow::Error::from(refused).context(format!("nothing was written to {context}"))
        }
        e => e.into(),
    })?;
    if args.dry_run == DryRun::Client {
        print_plan(&plan, args.output.unwrap_or(Output::Yaml))?;
        return Ok(ExitCode::SUCCESS);
    }
    install::apply(&client, &plan, options.dry_run, &|line| println!("{line}")).await?;
    if let KueueChange::LeftAlone = plan.kueue_change {
        say_what_to_add(&plan);
    }
    if !options.dry_run {
        println!("kueue-ext is installed on {context}: its webhook answers");
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--no-kueue-config` leaves to the user.
fn say_what_to_add(plan: &Plan) {
    let (namespace, name) = (&plan.kueue.namespace, &plan.kueue.name);
    let file = match &plan.kueue.config {
        Some((config_map, key)) => format!("ConfigMap {namespace}/{config_map}, key {key}"),
        None => format!("the configuration file of Deployment {namespace}/{name}"),
    };
    println!("Kueue's Configuration was left alone; add to integrations.externalFrameworks in {file}:");
    plan.frameworks.iter().for_each(|framework| println!("  - {framework}"));
    println!("(and to multiKueue.externalFrameworks as `- name: …` on a MultiKueue manager), then restart Kueue");
}

/// `--dry-run=client`: every object, then the change to Kueue's ConfigMap as a document of its own.
fn print_plan(plan: &Plan, format: Output) -> anyhow::Result<()> {
    let mut objects = plan.objects.clone();
    if let KueueChange::Needed(change) = &plan.kueue_change {
        let mut config_map: Value = change.config_map.clone();
        if let Some(metadata) = config_map["metadata"].as_object_mut() {
            metadata.remove("resourceVersion");
        }
        objects.push(config_map);
    }
    match format {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "List", "items": objects}))?
        ),
        _ => {
            for obj in objects {
                print!("---\n{}", serde_saphyr::to_string(&obj)?);
            }
        }
    }
    Ok(())
}

pub async fn uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let (client, context) = args.target.connect().await?;
    let options =
        UninstallOptions { force: args.force, delete_crds: args.delete_crds, kueue_config: !args.no_kueue_config };
    install::uninstall(&client, &options, &|line| println!("{line}")).await?;
    let crds = if args.delete_crds { "" } else { " (its CRDs stay: --delete-crds removes them)" };
    println!("kueue-ext is uninstalled from {context}{crds}");
    Ok(ExitCode::SUCCESS)
}
