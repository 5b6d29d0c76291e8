//! `connect` and `disconnect`: MultiKueue between clusters of the user's where `install` put
//! this project, chosen as kubectl chooses (`--kubeconfig`, `--context` for the manager) with a
//! `--worker-context` per worker.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, ListParams};
use kube::config::Kubeconfig;

use super::install::Target;
use super::targets::worker_target;
use super::watch::worker_context;
use crate::connect::{self, Options, Worker};
use crate::go_duration::parse_go_duration;
use crate::jobframework::webhook::dns1123_subdomain;
use crate::kube_util;
use crate::sandbox::{DEFAULT_NAME, cluster_setup::queues};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    /// Context of a worker cluster, as CONTEXT or NAME=CONTEXT where NAME is its
    /// MultiKueueCluster [default NAME: the context's] (repeatable)
    #[arg(long = "worker-context", value_name = "[NAME=]CONTEXT", value_parser = worker_context, required = true)]
    pub worker_contexts: Vec<String>,
    /// The API server of worker NAME as the manager's pods reach it [default: on kind, the
    /// control-plane node's address on kind's network; else the context's server] (repeatable)
    #[arg(long = "worker-server", value_name = "NAME=URL", value_parser = worker_server)]
    pub worker_servers: Vec<(String, String)>,
    /// The manager's ClusterQueue whose Workloads go to the workers; each worker gets a copy of
    /// it, its ResourceFlavors and its LocalQueues where it lacks them.
    #[arg(long, value_name = "NAME", default_value = queues::CLUSTER_QUEUE)]
    pub cluster_queue: String,
    /// The AdmissionCheck that sends the ClusterQueue's Workloads to the workers.
    #[arg(long, value_name = "NAME", default_value = connect::ADMISSION_CHECK)]
    pub admission_check: String,
    /// The MultiKueueConfig that lists the workers.
    #[arg(long, value_name = "NAME", default_value = connect::CONFIG)]
    pub config: String,
    /// How long each worker's token lasts (Go duration); a later connect renews one past half
    /// of it.
    #[arg(long, value_name = "DURATION", default_value = "8760h", value_parser = parse_go_duration)]
    pub token_validity: Duration,
    /// How long to wait for Kueue to report every worker connected (Go duration).
    #[arg(long, value_name = "DURATION", default_value = "3m", value_parser = parse_go_duration)]
    pub timeout: Duration,
}

#[derive(Debug, clap::Args)]
pub struct DisconnectArgs {
    #[command(flatten)]
    pub target: Target,
    /// Context of a worker to take connect's objects out of too, as CONTEXT or NAME=CONTEXT
    /// (repeatable) [default: the manager's only]
    #[arg(long = "worker-context", value_name = "[NAME=]CONTEXT", value_parser = worker_context)]
    pub worker_contexts: Vec<String>,
}

/// `NAME=URL`, both given.
fn worker_server(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, url)) if !name.is_empty() && url.starts_with("https://") => Ok((name.into(), url.into())),
        _ => Err("must be NAME=URL with an https:// URL (e.g. worker1=https://10.0.0.5:6443)".into()),
    }
}

/// A cluster named by a context of the kubeconfig, answering.
struct Cluster {
    name: String,
    context: String,
    client: Client,
}

async fn open(kubeconfig: &Kubeconfig, name: String, context: String) -> anyhow::Result<Cluster> {
    let client = kube_util::client_from(kubeconfig.clone(), &context).await?;
    kube_util::ensure_reachable(&client, kubeconfig, &context).await?;
    Ok(Cluster { name, context, client })
}

/// The kubeconfig, the manager and the workers the flags name; each worker named as its
/// MultiKueueCluster will be, once.
async fn clusters(target: &Target, specs: &[String]) -> anyhow::Result<(Kubeconfig, Cluster, Vec<Cluster>)> {
    let kubeconfig = kube_util::read_kubeconfig(target.kubeconfig.as_deref())?;
    let context = target
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| anyhow::anyhow!("no context: pass --context or set a current context"))?;
    let manager = open(&kubeconfig, "manager".into(), context).await?;
    let mut workers: Vec<Cluster> = Vec::new();
    for spec in specs {
        let target = worker_target(DEFAULT_NAME, spec);
        if let Err(why) = dns1123_subdomain(&target.name) {
            anyhow::bail!(
                "--worker-context {spec}: {} cannot name a MultiKueueCluster ({why}): pass NAME=CONTEXT",
                target.name
            );
        }
        if workers.iter().any(|w| w.name == target.name) {
            anyhow::bail!("--worker-context {spec}: a worker is already named {}", target.name);
        }
        if target.context == manager.context {
            anyhow::bail!("--worker-context {spec}: that is the manager's context");
        }
        workers.push(open(&kubeconfig, target.name, target.context).await?);
    }
    Ok((kubeconfig, manager, workers))
}

/// The CA (PEM) the kubeconfig trusts for `context`'s API server.
fn ca_pem(kubeconfig: &Kubeconfig, context: &str) -> anyhow::Result<String> {
    let cluster = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| kubeconfig.clusters.iter().find(|n| n.name == c.cluster))
        .and_then(|n| n.cluster.as_ref())
        .ok_or_else(|| anyhow::anyhow!("context {context}: its cluster is not in the kubeconfig"))?;
    if let Some(data) = &cluster.certificate_authority_data {
        let pem = base64::engine::general_purpose::STANDARD.decode(data.trim())?;
        return Ok(String::from_utf8(pem)?);
    }
    if let Some(file) = &cluster.certificate_authority {
        return std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("context {context}: reading its CA {file}: {e}"));
    }
    anyhow::bail!(
        "context {context}: the kubeconfig names no certificate authority for its server, which the manager's Kueue must trust"
    )
}

/// The server the manager's pods reach `worker` at, and why.
async fn server(
    kubeconfig: &Kubeconfig,
    worker: &Cluster,
    flags: &BTreeMap<&str, &str>,
) -> anyhow::Result<connect::ChosenServer> {
    let flag = flags.get(worker.name.as_str()).copied();
    let kind_node = match flag {
        Some(_) => None,
        None => {
            let nodes = Api::<Node>::all(worker.client.clone()).list(&ListParams::default()).await?;
            connect::kind_control_plane(&nodes.items)
        }
    };
    let from_kubeconfig = kube_util::server_of(kubeconfig, &worker.context);
    let node = kind_node.as_ref().map(|(name, address)| (name.as_str(), address.as_str()));
    connect::choose_server(flag, node, from_kubeconfig.as_deref())
        .ok_or_else(|| anyhow::anyhow!("context {}: the kubeconfig names no server", worker.context))
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (kubeconfig, manager, workers) = clusters(&args.target, &args.worker_contexts).await?;
    let flags: BTreeMap<&str, &str> = args.worker_servers.iter().map(|(n, u)| (n.as_str(), u.as_str())).collect();
    if let Some(unknown) = flags.keys().find(|name| !workers.iter().any(|w| w.name == **name)) {
        anyhow::bail!("--worker-server {unknown}=…: no --worker-context names a worker {unknown}");
    }
    let mut cas = Vec::new();
    let mut servers = Vec::new();
    for worker in &workers {
        cas.push(ca_pem(&kubeconfig, &worker.context)?);
        let chosen = server(&kubeconfig, worker, &flags).await?;
        println!(
            "{}: the manager reaches context {} at {} ({})",
            worker.name, worker.context, chosen.url, chosen.because
        );
        servers.push(chosen.url);
    }
    let wired: Vec<Worker<'_>> = workers
        .iter()
        .zip(&cas)
        .zip(servers)
        .map(|((w, ca_pem), server)| Worker { name: &w.name, client: &w.client, server, ca_pem })
        .collect();
    let options = Options {
        admission_check: args.admission_check.clone(),
        config: args.config.clone(),
        cluster_queue: args.cluster_queue.clone(),
        token_seconds: i64::try_from(args.token_validity.as_secs()).unwrap_or(i64::MAX),
        timeout: args.timeout,
    };
    let listed = connect::connect(&manager.client, &wired, &options, &|line| println!("{line}")).await?;
    println!(
        "MultiKueue on {} sends the Workloads of ClusterQueue {} to {}: every worker is connected",
        manager.context,
        args.cluster_queue,
        listed.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn disconnect(args: DisconnectArgs) -> anyhow::Result<ExitCode> {
    let (_, manager, workers) = clusters(&args.target, &args.worker_contexts).await?;
    let named: Vec<(&str, &Client)> = workers.iter().map(|w| (w.name.as_str(), &w.client)).collect();
    connect::disconnect(&manager.client, &named, &|line| println!("{line}")).await?;
    let contexts: Vec<&str> = workers.iter().map(|w| w.context.as_str()).collect();
    let names: Vec<&str> = workers.iter().map(|w| w.name.as_str()).collect();
    if workers.is_empty() {
        println!(
            "what connect made is taken out of {} (the workers keep their ServiceAccount and queues: name them \
             with --worker-context)",
            manager.context
        );
    } else {
        println!(
            "what connect made for {} is taken out of {} and of {}; other workers stay connected",
            names.join(", "),
            manager.context,
            contexts.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_server_is_a_name_and_an_https_url() {
        assert_eq!(worker_server("w1=https://10.0.0.5:6443").unwrap(), ("w1".into(), "https://10.0.0.5:6443".into()));
        assert!(worker_server("https://10.0.0.5:6443").is_err());
        assert!(worker_server("w1=10.0.0.5:6443").is_err());
        assert!(worker_server("=https://x").is_err());
    }

    #[test]
    fn the_ca_comes_from_the_workers_context() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.crt");
        std::fs::write(&file, "FILE-CA").unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode("DATA-CA");
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {{server: 'https://a', certificate-authority-data: {data}}}\n\
             - name: b\n  cluster: {{server: 'https://b', certificate-authority: {}}}\n- name: c\n  cluster: {{server: 'https://c'}}\n\
             contexts:\n- {{name: ca, context: {{cluster: a, user: u}}}}\n- {{name: cb, context: {{cluster: b, user: u}}}}\n\
             - {{name: cc, context: {{cluster: c, user: u}}}}\nusers: []\n",
            file.display()
        );
        let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
        assert_eq!(ca_pem(&kubeconfig, "ca").unwrap(), "DATA-CA");
        assert_eq!(ca_pem(&kubeconfig, "cb").unwrap(), "FILE-CA");
        assert!(ca_pem(&kubeconfig, "cc").unwrap_err().to_string().contains("names no certificate authority"));
        assert!(ca_pem(&kubeconfig, "nope").is_err());
    }
}
