//! The clusters a run talks to, by kubeconfig context: a sandbox's or anyone's. Single-cluster
//! checks run on the first worker (or on the manager when there is none); MultiKueue checks on
//! the manager, through the MultiKueueClusters that reach the workers.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::config::Kubeconfig;

use crate::integrations::declarative::config::ConfigError;
use crate::integrations::registry::KindRegistry;
use crate::jobframework::api_error::in_words;
use crate::kube_util::KubeconfigError;
use crate::manifests::NAMESPACE;

/// The API every check speaks; Kueue serves it from v0.15 on, and this tool is built against v0.19.2.
const KUEUE_GROUP: &str = "kueue.x-k8s.io";
const KUEUE_VERSION: &str = "v1beta2";

/// A cluster as the user named it: for a worker, `name` is its MultiKueueCluster on the manager.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    pub name: String,
    pub context: String,
}

#[derive(Clone)]
pub struct Named {
    pub name: String,
    pub client: Client,
}

pub struct MultiKueue {
    pub manager: Named,
    pub workers: Vec<Named>,
}

pub struct Target {
    pub single: Named,
    pub multikueue: Option<MultiKueue>,
    /// The kinds the single cluster's controller runs: built in, plus its integrations file.
    pub kinds: KindRegistry,
}

impl Target {
    /// Connects to every cluster and refuses, naming the cluster, where Kueue is missing or too
    /// old or a worker has no MultiKueueCluster on the manager.
    pub async fn connect(
        kubeconfig: &Kubeconfig,
        manager: Context,
        workers: Vec<Context>,
    ) -> Result<Target, TargetError> {
        let manager = connect(kubeconfig, &manager).await?;
        let mut connected = Vec::new();
        for worker in &workers {
            connected.push(connect(kubeconfig, worker).await?);
        }
        for worker in &workers {
            require_multikueue_cluster(&manager, worker).await?;
        }
        let single = connected.first().unwrap_or(&manager).clone();
        let kinds = KindRegistry::discover(&single.client, NAMESPACE).await?;
        let multikueue = (!connected.is_empty()).then(|| MultiKueue { manager, workers: connected });
        Ok(Target { single, multikueue, kinds })
    }
}

impl Target {
    /// Every cluster the run touches, each once: the single-cluster one, then the workers and
    /// the manager.
    pub fn clusters(&self) -> Vec<&Named> {
        let mut all = vec![&self.single];
        if let Some(multikueue) = &self.multikueue {
            for cluster in multikueue.workers.iter().chain([&multikueue.manager]) {
                if !all.iter().any(|seen| seen.name == cluster.name) {
                    all.push(cluster);
                }
            }
        }
        all
    }
}

async fn connect(kubeconfig: &Kubeconfig, cluster: &Context) -> Result<Named, TargetError> {
    let client = crate::kube_util::client_from(kubeconfig.clone(), &cluster.context).await?;
    let groups = client.list_api_groups().await.map_err(|e| TargetError::Unreachable {
        cluster: cluster.name.clone(),
        context: cluster.context.clone(),
        message: in_words(&e),
    })?;
    let served: Vec<String> = groups
        .groups
        .iter()
        .filter(|g| g.name == KUEUE_GROUP)
        .flat_map(|g| g.versions.iter().map(|v| v.version.clone()))
        .collect();
    kueue_served(cluster, &served)?;
    Ok(Named { name: cluster.name.clone(), client })
}

/// Whether the versions of `kueue.x-k8s.io` a cluster serves are enough for the checks.
fn kueue_served(cluster: &Context, versions: &[String]) -> Result<(), TargetError> {
    if versions.is_empty() {
        return Err(TargetError::NoKueue { cluster: cluster.name.clone(), context: cluster.context.clone() });
    }
    if !versions.iter().any(|v| v == KUEUE_VERSION) {
        return Err(TargetError::OldKueue {
            cluster: cluster.name.clone(),
            context: cluster.context.clone(),
            served: versions.join(", "),
        });
    }
    Ok(())
}

async fn require_multikueue_cluster(manager: &Named, worker: &Context) -> Result<(), TargetError> {
    let resource = ApiResource {
        group: KUEUE_GROUP.into(),
        version: KUEUE_VERSION.into(),
        api_version: format!("{KUEUE_GROUP}/{KUEUE_VERSION}"),
        kind: "MultiKueueCluster".into(),
        plural: "multikueueclusters".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(manager.client.clone(), &resource);
    match api.get_opt(&worker.name).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(TargetError::NoMultiKueueCluster {
            manager: manager.name.clone(),
            worker: worker.name.clone(),
            context: worker.context.clone(),
        }),
        Err(e) => Err(TargetError::MultiKueueClusters { manager: manager.name.clone(), message: in_words(&e) }),
    }
}

/// Why the clusters named cannot be checked.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    #[error("cluster {cluster} (context {context}) does not answer: {message}")]
    Unreachable { cluster: String, context: String, message: String },
    #[error(
        "cluster {cluster} (context {context}) has no Kueue: it does not serve the API group {KUEUE_GROUP}. Install \
         Kueue (this tool is built against v0.19.2) or choose another context"
    )]
    NoKueue { cluster: String, context: String },
    #[error(
        "cluster {cluster} (context {context}) runs a Kueue too old for this tool: it serves {KUEUE_GROUP} {served} \
         and the checks need {KUEUE_GROUP}/{KUEUE_VERSION} (Kueue v0.15 or later; this tool is built against \
         v0.19.2). Upgrade Kueue"
    )]
    OldKueue { cluster: String, context: String, served: String },
    #[error(
        "the manager ({manager}) has no MultiKueueCluster {worker:?} for --worker-context {context}: pass \
         NAME={context} where NAME is the MultiKueueCluster that reaches it"
    )]
    NoMultiKueueCluster { manager: String, worker: String, context: String },
    #[error("cannot read MultiKueueClusters on the manager ({manager}): {message}")]
    MultiKueueClusters { manager: String, message: String },
    #[error(transparent)]
    Kinds(#[from] ConfigError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_without_kueue_or_with_an_old_one_is_refused_by_name() {
        let cluster = Context { name: "manager".into(), context: "prod".into() };
        let missing = kueue_served(&cluster, &[]).unwrap_err().to_string();
        assert!(missing.starts_with("cluster manager (context prod) has no Kueue"), "{missing}");
        let old = kueue_served(&cluster, &["v1beta1".into(), "v1alpha1".into()]).unwrap_err().to_string();
        assert!(old.contains("serves kueue.x-k8s.io v1beta1, v1alpha1"), "{old}");
        assert!(old.contains("need kueue.x-k8s.io/v1beta2"), "{old}");
        assert!(kueue_served(&cluster, &["v1beta2".into(), "v1beta1".into()]).is_ok());
    }
}
