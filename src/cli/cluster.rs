//! Choosing the cluster a command talks to, the way kubectl users expect.

use std::path::PathBuf;

use super::SandboxArgs;
use crate::kube_util::read_kubeconfig;
use crate::sandbox::{KUBECONFIG_FILE, context_name};

#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Kubeconfig file [default: the sandbox's when one is up, else $KUBECONFIG or ~/.kube/config]
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context [default: kueue-ext-manager in a sandbox, else the current context]
    #[arg(long)]
    pub context: Option<String>,
    /// Namespace [default: the context's, else default]
    #[arg(short, long)]
    pub namespace: Option<String>,
}

impl ClusterArgs {
    /// A client and the namespace to use: flags first, then a running sandbox, then kubectl's
    /// default kubeconfig.
    pub async fn connect(&self) -> anyhow::Result<(kube::Client, String)> {
        let sandbox = self.sandbox.dir().join(KUBECONFIG_FILE);
        let (config, default_context) = match &self.kubeconfig {
            Some(path) => (read_kubeconfig(Some(path))?, None),
            None if self.context.is_none() && sandbox.exists() => {
                (read_kubeconfig(Some(&sandbox))?, Some(context_name("manager")))
            }
            None => (read_kubeconfig(None)?, None),
        };
        let context = self
            .context
            .clone()
            .or(default_context)
            .or_else(|| config.current_context.clone())
            .ok_or_else(|| anyhow::anyhow!("no context: pass --context or set a current context"))?;
        let namespace = self
            .namespace
            .clone()
            .or_else(|| config.contexts.iter().find(|c| c.name == context)?.context.as_ref()?.namespace.clone())
            .unwrap_or_else(|| "default".into());
        Ok((crate::kube_util::client_from(config, &context).await?, namespace))
    }
}
