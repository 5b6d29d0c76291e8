use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::controller::{self, Options};
use crate::integrations::declarative::config::IntegrationConfig;
use crate::jobframework::reconciler::Config;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Kubeconfig to use [default: $KUBECONFIG, ~/.kube/config, or the in-cluster ServiceAccount]
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig [default: its current context]
    #[arg(long)]
    pub context: Option<String>,
    /// Address of the HTTPS server: admission webhooks, /healthz, /readyz and /metrics.
    #[arg(long, default_value = "127.0.0.1:9443")]
    pub listen: SocketAddr,
    /// Directory holding the serving certificate `tls.crt` and key `tls.key`.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: PathBuf,
    /// Manage jobs that name no queue too (Kueue's manageJobsWithoutQueueName).
    #[arg(long)]
    pub manage_jobs_without_queue_name: bool,
    /// Reconcile only while holding a Lease, so several replicas can run (all serve webhooks).
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long, default_value = crate::manifests::NAMESPACE)]
    pub leader_elect_namespace: String,
    /// Seconds a leader keeps the Lease without renewing it.
    #[arg(long, default_value_t = 15)]
    pub lease_duration: u64,
    /// Integrations file: further job kinds, each described by where its fields are.
    #[arg(long, value_name = "FILE")]
    pub integrations: Option<PathBuf>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Checked before connecting: a mistake in the file is the first thing to hear about.
    let integrations = match &args.integrations {
        Some(file) => IntegrationConfig::load(file)?.integrations,
        None => Vec::new(),
    };
    let client = match &args.kubeconfig {
        Some(path) => {
            let config = crate::kube_util::read_kubeconfig(Some(path))?;
            let context = args.context.clone().or_else(|| config.current_context.clone()).unwrap_or_default();
            crate::kube_util::watching_client_from(config, &context).await?
        }
        None => kube::Client::try_default().await?,
    };
    let config = Config { manage_jobs_without_queue_name: args.manage_jobs_without_queue_name, ..Config::default() };
    let election = args.leader_elect.then(|| controller::leader::Election {
        namespace: args.leader_elect_namespace.clone(),
        identity: controller::leader::default_identity(),
        duration: args.lease_duration,
    });
    let options = Options { client, listen: args.listen, cert_dir: args.cert_dir, config, election, integrations };
    controller::run(options).await?;
    Ok(ExitCode::SUCCESS)
}
