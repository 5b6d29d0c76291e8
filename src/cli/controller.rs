use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::controller::api_requests::counting_client;
use crate::controller::certs::{Renewal, SecretSource, parse_validity};
use crate::controller::metrics::Metrics;
use crate::controller::{self, Options, ServingCertificate};
use crate::go_duration::parse_go_duration;
use crate::integrations::declarative::config::IntegrationConfig;
use crate::jobframework::reconciler::Config;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("certificate").required(true).args(["cert_dir", "cert_secret"])))]
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
    /// Directory holding the serving certificate `tls.crt` and key `tls.key`, read once; whoever
    /// writes them registers their CA in the webhook configurations.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,
    /// Secret in which the controller keeps its own serving certificate, renewing it and the
    /// webhook configurations' caBundle (the install creates it empty).
    #[arg(long, value_name = "NAME")]
    pub cert_secret: Option<String>,
    /// Namespace of --cert-secret [default: the Lease's, --leader-elect-namespace]
    #[arg(long, value_name = "NAMESPACE")]
    pub cert_namespace: Option<String>,
    /// How long each certificate kept in --cert-secret is valid (a Go duration); it is renewed
    /// two thirds of the way through.
    #[arg(long, value_name = "DURATION", default_value = "8760h", value_parser = parse_validity)]
    pub cert_validity: Duration,
    /// cert-manager keeps --cert-secret and the webhook configurations' caBundle (`install
    /// --cert-manager`): serve what the Secret holds, reloading it on renewal, and write neither.
    #[arg(long, requires = "cert_secret", conflicts_with = "cert_validity")]
    pub cert_manager: bool,
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
    /// After SIGTERM, how long the server goes on answering, each answer closing its
    /// connection, before it stops (a Go duration; the in-cluster Deployment sets 5s).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_go_duration)]
    pub shutdown_drain: Duration,
}

const USER_AGENT: &str = concat!("kueue-ext-controller/v", env!("CARGO_PKG_VERSION"));

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Checked before connecting: a mistake in the file is the first thing to hear about.
    let integrations = match &args.integrations {
        Some(file) => IntegrationConfig::load(file)?.integrations,
        None => Vec::new(),
    };
    let (mut config, context) = match &args.kubeconfig {
        Some(path) => {
            let config = crate::kube_util::read_kubeconfig(Some(path))?;
            let context = args.context.clone().or_else(|| config.current_context.clone()).unwrap_or_default();
            (crate::kube_util::watching_config_from(config, &context).await?, context)
        }
        None => (kube::Config::infer().await?, "in-cluster".to_string()),
    };
    // The API server names a write's field manager after the user agent where the request does
    // not (kube's Events, the Lease): every write of the controller then says it is ours.
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(USER_AGENT)));
    let metrics = Arc::new(Metrics::default());
    let client = counting_client(config, metrics.api_requests.clone())
        .map_err(|e| anyhow::anyhow!("cannot make a client of context {context:?}: {e}"))?;
    let config = Config { manage_jobs_without_queue_name: args.manage_jobs_without_queue_name, ..Config::default() };
    let election = args.leader_elect.then(|| controller::leader::Election {
        namespace: args.leader_elect_namespace.clone(),
        identity: controller::leader::default_identity(),
        duration: args.lease_duration,
    });
    let certificate = match (args.cert_dir, args.cert_secret) {
        (Some(dir), _) => ServingCertificate::Dir(dir),
        (None, Some(name)) => ServingCertificate::Secret(SecretSource {
            namespace: args.cert_namespace.unwrap_or(args.leader_elect_namespace),
            name,
            renewal: if args.cert_manager {
                Renewal::ByCertManager
            } else {
                Renewal::ByLeader { validity: args.cert_validity }
            },
        }),
        (None, None) => anyhow::bail!("give --cert-dir or --cert-secret"),
    };
    let listen = controller::Listen { address: args.listen, drain: args.shutdown_drain };
    let options = Options { client, metrics, listen, certificate, config, election, integrations };
    controller::run(options).await?;
    Ok(ExitCode::SUCCESS)
}
