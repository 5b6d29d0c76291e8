//! Which clusters `watch`, `explain` and completion read: the ones the flags name, as kubectl
//! reads them, else the running sandbox's.

use std::path::{Path, PathBuf};

use super::cluster::{Origin, choose_kubeconfig};
use crate::kube_util::read_kubeconfig;
use crate::model::snapshot::Role;
use crate::model::source::{Target, Targets};
use crate::sandbox::record::SandboxState;
use crate::sandbox::{KUBECONFIG_FILE, context_name};

/// How the user chose the clusters; flags win over a running sandbox.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub state_dir: PathBuf,
    /// The sandbox whose contexts name their MultiKueueCluster by what follows its prefix.
    pub sandbox: String,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// `CONTEXT` or `NAME=CONTEXT` (NAME: the MultiKueueCluster the context reaches).
    pub worker_contexts: Vec<String>,
}

/// The MultiKueueCluster name of a worker context given without one: the sandbox's contexts
/// (`kueue-ext-worker1`) name `worker1`; other contexts name themselves.
pub(super) fn worker_target(sandbox: &str, spec: &str) -> Target {
    let (name, context) = match spec.split_once('=') {
        Some((name, context)) => (name.to_string(), context.to_string()),
        None => (spec.strip_prefix(&context_name(sandbox, "")).unwrap_or(spec).to_string(), spec.to_string()),
    };
    Target { name, context, role: Role::Worker }
}

/// The clusters `selection` names.
pub fn resolve(selection: &Selection) -> anyhow::Result<Targets> {
    let flags = selection.kubeconfig.is_some() || selection.context.is_some() || !selection.worker_contexts.is_empty();
    if !flags && let Some(state) = SandboxState::load(&selection.state_dir)? {
        return sandbox(&selection.state_dir, &state);
    }
    let sandbox_kubeconfig = selection.state_dir.join(KUBECONFIG_FILE);
    let chosen = choose_kubeconfig(selection.kubeconfig.as_deref(), &sandbox_kubeconfig, selection.context.as_deref())?;
    let (kubeconfig, origin, file) = match (chosen, &selection.kubeconfig) {
        ((config, Origin::Flag), Some(path)) => (config, format!("kubeconfig {}", path.display()), Some(path.clone())),
        ((config, Origin::Sandbox), _) => {
            (config, format!("kubeconfig {}", sandbox_kubeconfig.display()), Some(sandbox_kubeconfig))
        }
        ((config, _), _) => (config, "kubeconfig (default)".to_string(), None),
    };
    let context = selection
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| anyhow::anyhow!("no context: pass --context or set a current context"))?;
    let mut clusters = vec![Target { name: "manager".into(), context, role: Role::Manager }];
    clusters.extend(selection.worker_contexts.iter().map(|spec| worker_target(&selection.sandbox, spec)));
    Ok(Targets { origin, kubeconfig, file, clusters })
}

fn sandbox(dir: &Path, state: &SandboxState) -> anyhow::Result<Targets> {
    let path =
        if state.kubeconfig.as_os_str().is_empty() { dir.join(KUBECONFIG_FILE) } else { state.kubeconfig.clone() };
    let kubeconfig = read_kubeconfig(Some(&path))
        .map_err(|e| anyhow::anyhow!("{e} (is the sandbox up? kubectl kueue-ext status)"))?;
    let clusters = state
        .clusters
        .iter()
        .map(|c| Target { name: c.name.clone(), context: c.context.clone(), role: c.role })
        .collect();
    let origin = format!("sandbox {} ({})", state.name, dir.display());
    Ok(Targets { origin, kubeconfig, file: Some(path), clusters })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_contexts_name_their_multikueue_cluster() {
        assert_eq!(worker_target("kueue-ext", "kueue-ext-worker1").name, "worker1");
        assert_eq!(worker_target("dev", "dev-worker2").name, "worker2");
        assert_eq!(
            worker_target("kueue-ext", "gpu=kind-gpu-east"),
            Target { name: "gpu".into(), context: "kind-gpu-east".into(), role: Role::Worker }
        );
        assert_eq!(worker_target("kueue-ext", "kind-east").name, "kind-east");
    }

    #[test]
    fn a_sandbox_names_its_clusters_and_contexts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(KUBECONFIG_FILE),
            "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("state.json"),
            serde_json::json!({
                "name": "kueue-ext", "runtime": "process", "phase": "up", "workers": 1,
                "kubeconfig": dir.path().join(KUBECONFIG_FILE),
                "clusters": [
                    {"name": "manager", "role": "manager", "context": "kueue-ext-manager", "dir": "m", "api_server_port": 1, "components": []},
                    {"name": "worker1", "role": "worker", "context": "kueue-ext-worker1", "dir": "w", "api_server_port": 2, "components": []},
                ],
            })
            .to_string(),
        )
        .unwrap();
        let targets = resolve(&Selection { state_dir: dir.path().into(), ..Default::default() }).unwrap();
        assert!(targets.origin.starts_with("sandbox kueue-ext"), "{}", targets.origin);
        let names: Vec<(&str, &str, Role)> =
            targets.clusters.iter().map(|c| (c.name.as_str(), c.context.as_str(), c.role)).collect();
        assert_eq!(
            names,
            [("manager", "kueue-ext-manager", Role::Manager), ("worker1", "kueue-ext-worker1", Role::Worker)]
        );
    }

    #[test]
    fn flags_win_over_a_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("config");
        std::fs::write(
            &kubeconfig,
            "apiVersion: v1\nkind: Config\ncurrent-context: dev\nclusters: []\nusers: []\ncontexts: []\n",
        )
        .unwrap();
        let selection = Selection {
            state_dir: dir.path().into(),
            kubeconfig: Some(kubeconfig),
            worker_contexts: vec!["kind-w1".into()],
            ..Default::default()
        };
        let targets = resolve(&selection).unwrap();
        assert_eq!(targets.clusters[0], Target { name: "manager".into(), context: "dev".into(), role: Role::Manager });
        assert_eq!(targets.clusters[1].context, "kind-w1");
    }
}
