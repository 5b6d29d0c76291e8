//! Kueue's own Configuration on a cluster, told about the kinds an install integrates: found
//! from Kueue's Deployment (the ConfigMap its `--config` file is mounted from), changed only
//! where it lacks our kinds, with what was added recorded on the ConfigMap for `uninstall`, and
//! Kueue rolled so that it reads the change.

pub mod edit;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::kube_util::{self, FIELD_MANAGER, wait};
pub use edit::{Added, Edited, List};

/// The annotation on Kueue's ConfigMap recording what installs added.
pub const ADDED_ANNOTATION: &str = "kueue-ext.dev/added-to-kueue-configuration";
/// What `kubectl rollout restart` sets, so Kueue's pods are replaced as kubectl would.
const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";
const ROLL_TIMEOUT: Duration = Duration::from_secs(300);

/// Where Kueue runs on a cluster and reads its Configuration from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KueueDeployment {
    pub namespace: String,
    pub name: String,
    pub service_account: String,
    /// The ConfigMap and key its `--config` file is mounted from; `None` when Kueue runs
    /// without a file (on its defaults).
    pub config: Option<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum KueueConfigError {
    #[error("listing Deployments to find Kueue's: {0}")]
    List(#[source] kube::Error),
    #[error(
        "no Deployment of Kueue (labelled app.kubernetes.io/name=kueue, or named kueue-controller-manager) runs on this cluster"
    )]
    NoKueue,
    #[error("ConfigMap {namespace}/{name}: {source}")]
    ConfigMap {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("ConfigMap {namespace}/{name} has no key {key}, which Kueue's Deployment mounts as its --config file")]
    NoKey { namespace: String, name: String, key: String },
    #[error("ConfigMap {namespace}/{name}, {key}: {source}")]
    Edit {
        namespace: String,
        name: String,
        key: String,
        #[source]
        source: edit::EditError,
    },
    #[error("ConfigMap {namespace}/{name}: annotation {ADDED_ANNOTATION} is not what an install writes: {source}")]
    Record {
        namespace: String,
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("restarting Kueue's Deployment {namespace}/{name}: {source}")]
    Restart {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Rollout(#[from] wait::TimedOut<wait::Unavailable>),
    #[error(transparent)]
    Webhook(#[from] wait::TimedOut<kube::Error>),
    #[error(
        "Kueue's Deployment {namespace}/{name} reads no configuration file (no --config): add {frameworks} to integrations.externalFrameworks of the file you give it, or install with --no-kueue-config"
    )]
    NoConfigFile { namespace: String, name: String, frameworks: String },
}

/// How Kueue names its own integration of `integration`'s kind in `integrations.frameworks`
/// (`batch/job`, `jobset.x-k8s.io/jobset`; the core and apps kinds bare: `pod`, `deployment`).
pub fn built_in_framework(integration: &crate::integrations::declarative::config::Integration) -> String {
    let gvk = integration.gvk();
    let kind = gvk.kind.to_lowercase();
    match gvk.group.as_str() {
        "" | "apps" => kind,
        group => format!("{group}/{kind}"),
    }
}

/// Finds Kueue's Deployment: by Kueue's label, else by its release's name, in any namespace.
pub async fn locate(client: &Client) -> Result<KueueDeployment, KueueConfigError> {
    let api: Api<Deployment> = Api::all(client.clone());
    let labelled = api.list(&ListParams::default().labels("app.kubernetes.io/name=kueue")).await;
    let mut found = labelled.map_err(KueueConfigError::List)?.items;
    if found.is_empty() {
        let named = api.list(&ListParams::default().fields("metadata.name=kueue-controller-manager")).await;
        found = named.map_err(KueueConfigError::List)?.items;
    }
    // The manager is the Deployment that takes a --config (a chart may add others).
    let mut deployments: Vec<KueueDeployment> = found.iter().map(describe).collect();
    deployments.sort_by_key(|d| d.config.is_none());
    deployments.into_iter().next().ok_or(KueueConfigError::NoKueue)
}

/// Kueue's Deployment as [`KueueDeployment`]: the ConfigMap volume mounted where `--config` points.
fn describe(deployment: &Deployment) -> KueueDeployment {
    let pod = deployment.spec.as_ref().and_then(|s| s.template.spec.clone()).unwrap_or_default();
    let config_arg = |args: &[String]| {
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if let Some(path) = arg.strip_prefix("--config=") {
                return Some(path.to_string());
            }
            if arg == "--config" {
                return args.next().cloned();
            }
        }
        None
    };
    let config = pod.containers.iter().find_map(|container| {
        let path = config_arg(container.args.as_deref().unwrap_or_default())?;
        container.volume_mounts.as_deref().unwrap_or_default().iter().find_map(|mount| {
            let key = if mount.mount_path == path {
                mount.sub_path.clone()?
            } else {
                path.strip_prefix(&format!("{}/", mount.mount_path.trim_end_matches('/')))?.to_string()
            };
            let volume = pod.volumes.as_deref().unwrap_or_default().iter().find(|v| v.name == mount.name)?;
            Some((volume.config_map.as_ref()?.name.clone(), key))
        })
    });
    KueueDeployment {
        namespace: deployment.namespace().unwrap_or_default(),
        name: deployment.name_any(),
        service_account: pod.service_account_name.clone().unwrap_or_else(|| "default".into()),
        config,
    }
}

/// A change to Kueue's ConfigMap: the ConfigMap as it will be, and what it changes.
pub struct Change {
    pub config_map: Value,
    pub edited: Edited,
    /// The record after the change (what all installs added).
    pub added: Added,
}

impl KueueDeployment {
    fn config_map_api(&self, client: &Client) -> Api<ConfigMap> {
        Api::namespaced(client.clone(), &self.namespace)
    }

    /// The ConfigMap, its file's text and the record of earlier installs.
    async fn read(
        &self,
        client: &Client,
        frameworks: &[String],
    ) -> Result<(ConfigMap, String, Added), KueueConfigError> {
        let Some((name, key)) = &self.config else {
            return Err(KueueConfigError::NoConfigFile {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                frameworks: frameworks.join(", "),
            });
        };
        let failed =
            |source| KueueConfigError::ConfigMap { namespace: self.namespace.clone(), name: name.clone(), source };
        let config_map = self.config_map_api(client).get(name).await.map_err(failed)?;
        let text = config_map.data.as_ref().and_then(|d| d.get(key)).cloned().ok_or_else(|| {
            KueueConfigError::NoKey { namespace: self.namespace.clone(), name: name.clone(), key: key.clone() }
        })?;
        let record = match config_map.annotations().get(ADDED_ANNOTATION) {
            Some(json) => serde_json::from_str(json).map_err(|source| KueueConfigError::Record {
                namespace: self.namespace.clone(),
                name: name.clone(),
                source,
            })?,
            None => Added::default(),
        };
        Ok((config_map, text, record))
    }

    /// Kueue's own integrations it enables (`integrations.frameworks`): Kueue's default,
    /// `batch/job`, when its Configuration names none or it runs without one.
    pub async fn built_in_frameworks(&self, client: &Client) -> Result<Vec<String>, KueueConfigError> {
        if self.config.is_none() {
            return Ok(edit::built_in_frameworks("").unwrap_or_default());
        }
        let (_, text, _) = self.read(client, &[]).await?;
        edit::built_in_frameworks(&text).map_err(|e| self.edit_failed(e))
    }

    fn edit_failed(&self, source: edit::EditError) -> KueueConfigError {
        let (name, key) = self.config.clone().unwrap_or_default();
        KueueConfigError::Edit { namespace: self.namespace.clone(), name, key, source }
    }

    /// The change that adds `frameworks` to Kueue's external frameworks (and MultiKueue's when
    /// `multikueue`) and takes Kueue's own integrations `replaced` out, or `None` when there is
    /// nothing to do.
    pub async fn adding(
        &self,
        client: &Client,
        frameworks: &[String],
        multikueue: bool,
        replaced: &[String],
    ) -> Result<Option<Change>, KueueConfigError> {
        let (config_map, text, record) = self.read(client, frameworks).await?;
        let mut wanted = vec![(List::Integrations, frameworks.to_vec())];
        if multikueue {
            wanted.push((List::MultiKueue, frameworks.to_vec()));
        }
        let Some((edited, added)) = edit::add(&text, &wanted, replaced).map_err(|e| self.edit_failed(e))? else {
            return Ok(None);
        };
        let added = record.merged(added);
        Ok(Some(self.change(config_map, edited, added)))
    }

    /// The change that takes out what installs added, or `None` when none of it is there.
    pub async fn removing(&self, client: &Client) -> Result<Option<Change>, KueueConfigError> {
        let (config_map, text, record) = self.read(client, &[]).await?;
        let edited = edit::remove(&text, &record).map_err(|e| self.edit_failed(e))?;
        if edited.is_none() && !config_map.annotations().contains_key(ADDED_ANNOTATION) {
            return Ok(None);
        }
        let edited = edited.unwrap_or(Edited { text, rewritten: false });
        Ok(Some(self.change(config_map, edited, Added::default())))
    }

    fn change(&self, config_map: ConfigMap, edited: Edited, added: Added) -> Change {
        let (name, key) = self.config.clone().unwrap_or_default();
        let mut annotations = config_map.metadata.annotations.clone().unwrap_or_default();
        annotations.remove(ADDED_ANNOTATION);
        if !added.is_empty() {
            annotations.insert(ADDED_ANNOTATION.into(), serde_json::to_string(&added).expect("a record serializes"));
        }
        let mut data = config_map.data.clone().unwrap_or_default();
        data.insert(key, edited.text.clone());
        let config_map = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": self.namespace, "annotations": annotations,
                         "resourceVersion": config_map.metadata.resource_version},
            "data": data,
        });
        Change { config_map, edited, added }
    }

    /// Writes `change` (refused if the ConfigMap changed since it was read) and rolls Kueue so
    /// it reads it, waiting until every replica runs the new configuration.
    pub async fn write(&self, client: &Client, change: &Change, dry_run: bool) -> Result<(), KueueConfigError> {
        let (name, _) = self.config.clone().unwrap_or_default();
        let failed =
            |source| KueueConfigError::ConfigMap { namespace: self.namespace.clone(), name: name.clone(), source };
        let mut params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        params.dry_run = dry_run;
        let mut patch = change.config_map.clone();
        if !patch["metadata"]["annotations"].as_object().is_some_and(|a| a.contains_key(ADDED_ANNOTATION)) {
            patch["metadata"]["annotations"][ADDED_ANNOTATION] = Value::Null;
        }
        self.config_map_api(client).patch(&name, &params, &Patch::Merge(&patch)).await.map_err(failed)?;
        if dry_run {
            return Ok(());
        }
        self.restart(client).await
    }

    async fn restart(&self, client: &Client) -> Result<(), KueueConfigError> {
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let patch = json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}});
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        Api::<Deployment>::namespaced(client.clone(), &self.namespace)
            .patch(&self.name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|source| KueueConfigError::Restart {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                source,
            })?;
        let what = format!("Kueue's Deployment {}/{} to roll out", self.namespace, self.name);
        wait::until(&what, ROLL_TIMEOUT, || wait::deployment_rolled_out(client, &self.namespace, &self.name)).await?;
        // Kueue's pods are available before its webhook certificate reaches them.
        let probe = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "kueue-ext-webhook-probe"},
        });
        wait::until("Kueue's webhook to answer", ROLL_TIMEOUT, || kube_util::webhooks_answer(client, &probe)).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kueue(args: Value, mounts: Value, volumes: Value) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
            "spec": {"selector": {}, "template": {"spec": {
                "serviceAccountName": "kueue-controller-manager",
                "containers": [{"name": "manager", "args": args, "volumeMounts": mounts}],
                "volumes": volumes,
            }}},
        }))
        .unwrap()
    }

    #[test]
    fn the_configuration_is_the_configmap_mounted_where_config_points() {
        let release = kueue(
            json!(["--config=/controller_manager_config.yaml", "--zap-log-level=2"]),
            json!([{"name": "cert", "mountPath": "/tmp/certs"},
                   {"name": "manager-config", "mountPath": "/controller_manager_config.yaml", "subPath": "controller_manager_config.yaml"}]),
            json!([{"name": "cert", "secret": {"secretName": "x"}}, {"name": "manager-config", "configMap": {"name": "kueue-manager-config"}}]),
        );
        let found = describe(&release);
        assert_eq!(found.config, Some(("kueue-manager-config".into(), "controller_manager_config.yaml".into())));
        assert_eq!(
            (found.namespace.as_str(), found.service_account.as_str()),
            ("kueue-system", "kueue-controller-manager")
        );

        // A chart that mounts the whole ConfigMap as a directory and passes --config apart.
        let chart = kueue(
            json!(["--config", "/etc/kueue/config.yaml"]),
            json!([{"name": "config", "mountPath": "/etc/kueue/"}]),
            json!([{"name": "config", "configMap": {"name": "my-kueue"}}]),
        );
        assert_eq!(describe(&chart).config, Some(("my-kueue".into(), "config.yaml".into())));
        assert_eq!(describe(&kueue(json!([]), json!([]), json!([]))).config, None);
    }
}
