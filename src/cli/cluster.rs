//! Choosing the cluster a command talks to, the way kubectl users expect.

use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;

use super::SandboxArgs;
use crate::kube_util::read_kubeconfig;
use crate::sandbox::{KUBECONFIG_FILE, context_name};

#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Kubeconfig file [default: the sandbox's when one is up and has the context, else $KUBECONFIG
    /// or ~/.kube/config]
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
        let (config, origin) = choose_kubeconfig(self.kubeconfig.as_deref(), &sandbox, self.context.as_deref())?;
        let default_context =
            (origin == Origin::Sandbox).then(|| context_name(&self.sandbox.sandbox_name(), "manager"));
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
        if origin == Origin::Sandbox && self.context.is_none() {
            say_the_sandbox_is_chosen(&context, &sandbox);
        }
        let client = crate::kube_util::client_from(config.clone(), &context).await?;
        crate::kube_util::ensure_reachable(&client, &config, &context).await?;
        Ok((client, namespace))
    }
}

/// A user whose kubectl points at a cluster of their own is told that this command does not.
fn say_the_sandbox_is_chosen(context: &str, sandbox: &Path) {
    let current = read_kubeconfig(None).ok().and_then(|config| config.current_context);
    if let Some(current) = current.filter(|current| current != context) {
        eprintln!(
            "note: using context {context} of the running sandbox ({}), not kubectl's {current}; pass --context to choose",
            sandbox.display()
        );
    }
}

/// Where the kubeconfig a command reads came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Sandbox,
    Default,
}

/// The kubeconfig a command reads: `--kubeconfig`; else the running sandbox's, when `context` is
/// none or one of its contexts (they are in its own file, not in kubectl's unless `up
/// --merge-kubeconfig`); else kubectl's default.
pub fn choose_kubeconfig(
    flag: Option<&Path>,
    sandbox: &Path,
    context: Option<&str>,
) -> anyhow::Result<(Kubeconfig, Origin)> {
    if let Some(path) = flag {
        return Ok((read_kubeconfig(Some(path))?, Origin::Flag));
    }
    if sandbox.exists() {
        let config = read_kubeconfig(Some(sandbox))?;
        if context.is_none_or(|context| config.contexts.iter().any(|c| c.name == context)) {
            return Ok((config, Origin::Sandbox));
        }
    }
    Ok((read_kubeconfig(None)?, Origin::Default))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_of_the_sandbox_is_read_from_the_sandbox_s_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = dir.path().join("kubeconfig");
        let context = |name: &str| format!("- name: {name}\n  context: {{cluster: c, user: u}}\n");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"https://127.0.0.1:1\"}}}}]\n\
             users: [{{name: u, user: {{}}}}]\ncontexts:\n{}{}",
            context("kueue-ext-manager"),
            context("kueue-ext-worker1")
        );
        std::fs::write(&sandbox, text).unwrap();
        let origin = |context| choose_kubeconfig(None, &sandbox, context).map(|(_, origin)| origin).ok();
        assert_eq!(origin(None), Some(Origin::Sandbox));
        assert_eq!(origin(Some("kueue-ext-worker1")), Some(Origin::Sandbox));
        let flagged = choose_kubeconfig(Some(&sandbox), &dir.path().join("none"), Some("kueue-ext-manager")).unwrap();
        assert_eq!(flagged.1, Origin::Flag, "--kubeconfig wins");
        // Another context is kubectl's: not looked for in the sandbox's file.
        let other = choose_kubeconfig(None, &sandbox, Some("prod"));
        assert!(!matches!(other, Ok((_, Origin::Sandbox))), "{:?}", other.map(|(_, origin)| origin));
    }
}
