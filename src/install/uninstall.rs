//! Takes out what `install` made: refused while jobs of our kinds exist (they would stay
//! suspended, or unmanaged, for ever), then the webhook configurations first (so that no create
//! is refused by a webhook that is going away), the controller, its RBAC and namespace, the CRDs
//! only when asked, and our entries in Kueue's Configuration, with Kueue restarted to read it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client};
use serde_json::Value;

use super::{
    InstallError, IntegrationsUnreadable, KueueDeployment, Options, cert_manager, installed_integrations, jobs_of,
    kueue_config, objects,
};
use crate::integrations::declarative::config::Integration;
use crate::integrations::registry;
use crate::kube_util::{self, ApplyError, wait};
use crate::manifests;

const GONE_TIMEOUT: Duration = Duration::from_secs(120);

pub struct UninstallOptions {
    /// Take out the controller even while jobs of our kinds exist.
    pub force: bool,
    /// Delete our CRDs too, and with them every job of our kinds.
    pub delete_crds: bool,
    /// Leave Kueue's Configuration as it is.
    pub kueue_config: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum UninstallError {
    #[error(
        "{total} job{s} of kinds kueue-ext manages still exist ({jobs}): delete them first, or uninstall with --force (they then stay as they are, unmanaged)",
        s = if *total == 1 { "" } else { "s" }
    )]
    JobsExist { total: usize, jobs: String },
    #[error("listing {kind}: {source}")]
    List {
        kind: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Integrations(#[from] IntegrationsUnreadable),
    #[error(transparent)]
    Delete(#[from] ApplyError),
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error(transparent)]
    KueueConfig(#[from] kueue_config::KueueConfigError),
    #[error("namespace {0} was not gone within {1}s")]
    NamespaceStays(&'static str, u64),
}

/// "3 ExternalJobs in team-a, 1 WrappedJob in team-b": every job of our kinds, counted.
async fn census(client: &Client, integrations: &[Integration]) -> Result<(usize, String), UninstallError> {
    let compiled = registry::compiled().iter().map(|(description, _)| description);
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for integration in compiled.chain(integrations) {
        let jobs = jobs_of(client, integration)
            .await
            .map_err(|source| UninstallError::List { kind: integration.kind.clone(), source })?;
        for job in jobs {
            let namespace = job.metadata.namespace.unwrap_or_default();
            *counts.entry((integration.gvk().kind, namespace)).or_default() += 1;
        }
    }
    let total = counts.values().sum();
    let said: Vec<String> = counts.iter().map(|((kind, namespace), n)| format!("{n} {kind} in {namespace}")).collect();
    Ok((total, said.join(", ")))
}

/// Uninstalls from the cluster, telling `say` what each step did.
pub async fn uninstall(
    client: &Client,
    options: &UninstallOptions,
    say: &dyn Fn(String),
) -> Result<(), UninstallError> {
    let integrations = installed_integrations(client).await?;
    let (total, jobs) = census(client, &integrations).await?;
    if total > 0 {
        if !options.force {
            return Err(UninstallError::JobsExist { total, jobs });
        }
        say(format!("--force: {jobs} stay, no longer managed by kueue-ext"));
    }
    // The objects' names do not depend on Kueue's ServiceAccount or the image.
    let any_kueue =
        KueueDeployment { namespace: String::new(), name: String::new(), service_account: String::new(), config: None };
    // cert-manager's Issuers and Certificates only where it issued ours: elsewhere their kinds
    // may not even be served.
    let cert_writer =
        cert_manager::installed_writer(client).await.map_err(|source| InstallError::ReadingDeployment { source })?;
    let plan = Options {
        image: String::new(),
        integrations,
        cert_validity: None,
        cert_writer: cert_writer.unwrap_or_default(),
        kueue_config: false,
        dry_run: false,
    };
    let ours = objects(&plan, &any_kueue)?;
    let (crds, rest): (Vec<Value>, Vec<Value>) =
        ours.into_iter().partition(|o| o["kind"] == "CustomResourceDefinition");
    // Webhooks first: nothing may call a webhook whose server is on its way out.
    let (webhooks, rest): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|o| o["kind"].as_str().is_some_and(|k| k.ends_with("WebhookConfiguration")));
    let mut order: Vec<Value> = webhooks;
    order.extend(rest.into_iter().rev());
    if options.delete_crds {
        order.extend(crds);
    }
    for obj in &order {
        let existed = kube_util::delete_if_present(client, obj).await?;
        let what = if existed { "deleted" } else { "not found" };
        say(format!("{} {what}", kube_util::object_ref(obj)));
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    wait::until(&format!("namespace {} to be gone", manifests::NAMESPACE), GONE_TIMEOUT, || async {
        match namespaces.get_opt(manifests::NAMESPACE).await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err(std::io::Error::other("still terminating")),
            Err(e) => Err(std::io::Error::other(e)),
        }
    })
    .await
    .map_err(|_| UninstallError::NamespaceStays(manifests::NAMESPACE, GONE_TIMEOUT.as_secs()))?;
    if !options.kueue_config {
        return Ok(());
    }
    let kueue = kueue_config::locate(client).await?;
    match kueue.removing(client).await {
        Ok(Some(change)) => {
            kueue.write(client, &change, false).await?;
            let (config_map, _) = kueue.config.clone().unwrap_or_default();
            say(format!(
                "configmap/{config_map} (Kueue's Configuration) configured: kueue-ext's entries taken out; Kueue {}/{} restarted to read it",
                kueue.namespace, kueue.name
            ));
        }
        Ok(None) | Err(kueue_config::KueueConfigError::NoConfigFile { .. }) => {
            say("Kueue's Configuration holds no entry an install added".into())
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
