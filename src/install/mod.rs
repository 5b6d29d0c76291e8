//! This project's controller and webhook on any cluster that runs Kueue: checked first (Kueue
//! and the configured kinds served), applied server-side object by object in kubectl's words
//! (created, configured, unchanged), Kueue's Configuration told of our kinds, and waited for until
//! the webhook answers. `uninstall` takes out the same objects and entries. The kind sandbox
//! installs through here too.

pub mod cert_manager;
pub mod kueue_config;
pub mod preflight;
mod uninstall;

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::integrations::declarative::config::{self, Integration, IntegrationConfig};
use crate::kube_util::{self, Applied, ApplyError, wait};
use crate::manifests::{self, CertWriter, Endpoint};
pub use kueue_config::{KueueConfigError, KueueDeployment};
pub use preflight::PreflightError;
pub use uninstall::{UninstallError, UninstallOptions, uninstall};

const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// What to install.
#[derive(Clone, Debug)]
pub struct Options {
    /// The controller's image.
    pub image: String,
    /// Kinds integrated by configuration (an integrations file).
    pub integrations: Vec<Integration>,
    /// How long the controller's serving certificate lasts (Go duration), when not its default.
    pub cert_validity: Option<String>,
    /// Who keeps that certificate: the controller, or cert-manager (`--cert-manager`).
    pub cert_writer: CertWriter,
    /// Add our kinds to Kueue's Configuration and restart Kueue (else only say what to add).
    pub kueue_config: bool,
    /// Ask the API server to check every write without making it.
    pub dry_run: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error("writing the integrations ConfigMap: {0}")]
    Render(#[source] serde_saphyr::SerializeError),
    #[error(transparent)]
    KueueConfig(Box<KueueConfigError>),
    #[error("finding MultiKueue's workers: {0}")]
    MultiKueue(#[source] kube::Error),
    #[error(transparent)]
    Rollout(#[from] wait::TimedOut<wait::Unavailable>),
    #[error(transparent)]
    Webhook(#[from] wait::TimedOut<kube::Error>),
    #[error("{0}")]
    CertValidity(String),
    #[error("reading Deployment {}/{}: {source}", manifests::NAMESPACE, manifests::DEPLOYMENT)]
    ReadingDeployment {
        #[source]
        source: kube::Error,
    },
    #[error(
        "kueue-ext is installed with {}; switching in place to {} would have the API server refuse jobs of our kinds while the replicas roll: `uninstall` first (with --force while jobs of our kinds exist: they stay, and the new install manages them again), then install",
        cert_manager::describe(*installed),
        cert_manager::describe(*asked)
    )]
    SwitchingCertWriter { installed: CertWriter, asked: CertWriter },
}

impl From<KueueConfigError> for InstallError {
    fn from(error: KueueConfigError) -> Self {
        InstallError::KueueConfig(Box::new(error))
    }
}

/// Everything an install would write: our objects in the order they are applied, and the change
/// to Kueue's ConfigMap (`None`: none is needed, or it is left to the user).
pub struct Plan {
    pub kueue: KueueDeployment,
    pub objects: Vec<Value>,
    pub kueue_change: KueueChange,
    /// Kueue's external frameworks this install needs: every kind it integrates.
    pub frameworks: Vec<String>,
}

/// What an install does to Kueue's Configuration.
pub enum KueueChange {
    /// Adds our kinds to it.
    Needed(kueue_config::Change),
    /// Nothing: it lists them all.
    None,
    /// Nothing: the user keeps it (`--no-kueue-config`), or it was made for us (the sandbox).
    LeftAlone,
}

/// The objects of an install for Kueue running as `kueue`: definitions first, the webhook
/// configurations before the controller (which, or cert-manager's injector, fills in their
/// `caBundle`), every object labelled as ours.
pub fn objects(options: &Options, kueue: &KueueDeployment) -> Result<Vec<Value>, InstallError> {
    let mut objects = manifests::crds();
    objects.extend(manifests::rbac_for_kueue((&kueue.namespace, &kueue.service_account), options.cert_writer));
    objects.extend(manifests::configured_rbac(&options.integrations));
    let mut deployment = manifests::deployment(&options.image);
    if !options.integrations.is_empty() {
        objects.push(manifests::integrations_config_map(&options.integrations).map_err(InstallError::Render)?);
        manifests::read_integrations(&mut deployment);
    }
    let endpoint = Endpoint::Service { ca_bundle_b64: None };
    let mut webhooks = manifests::webhooks(&endpoint);
    webhooks.extend(manifests::configured_webhooks(&endpoint, &options.integrations));
    match options.cert_writer {
        CertWriter::Controller => {
            if let Some(validity) = &options.cert_validity {
                let args = &mut deployment["spec"]["template"]["spec"]["containers"][0]["args"];
                args.as_array_mut()
                    .into_iter()
                    .for_each(|args| args.push(format!("--cert-validity={validity}").into()));
            }
            objects.push(manifests::cert_secret());
        }
        // cert-manager makes the Secret: an install that made it too would own a field of it.
        CertWriter::CertManager => {
            cert_manager::serving_only(&mut deployment);
            objects.extend(cert_manager::objects(options.cert_validity.as_deref()));
            webhooks = webhooks.into_iter().map(cert_manager::injected).collect();
        }
    }
    objects.extend(webhooks);
    objects.extend([deployment, manifests::service(), manifests::disruption_budget()]);
    Ok(objects.into_iter().map(manifests::labelled).collect())
}

/// Checks the cluster and works out what an install would write, writing nothing.
pub async fn plan(client: &Client, options: &Options) -> Result<Plan, InstallError> {
    preflight::check(client, &options.integrations).await?;
    if options.cert_writer == CertWriter::CertManager {
        preflight::check_cert_manager(client).await?;
        if let Some(validity) = &options.cert_validity {
            cert_manager::check_validity(validity).map_err(InstallError::CertValidity)?;
        }
    }
    let installed =
        cert_manager::installed_writer(client).await.map_err(|source| InstallError::ReadingDeployment { source })?;
    if let Some(installed) = installed.filter(|installed| *installed != options.cert_writer) {
        return Err(InstallError::SwitchingCertWriter { installed, asked: options.cert_writer });
    }
    let kueue = kueue_config::locate(client).await?;
    let frameworks = manifests::external_frameworks(&options.integrations);
    let kueue_change = if options.kueue_config {
        // One owner per kind: Kueue's own integration of a kind configured here stands aside.
        let replaced: Vec<String> = options.integrations.iter().map(kueue_config::built_in_framework).collect();
        match kueue.adding(client, &frameworks, has_workers(client).await?, &replaced).await? {
            Some(change) => KueueChange::Needed(change),
            None => KueueChange::None,
        }
    } else {
        KueueChange::LeftAlone
    };
    Ok(Plan { objects: objects(options, &kueue)?, kueue, kueue_change, frameworks })
}

async fn namespace_exists(client: &Client, name: &str) -> Result<bool, InstallError> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let found = namespaces.get_opt(name).await.map_err(|source| ApplyError::Api {
        kind: "Namespace".into(),
        name: name.into(),
        source,
    })?;
    Ok(found.is_some())
}

/// A MultiKueue manager: MultiKueue's external frameworks must list our kinds there too.
async fn has_workers(client: &Client) -> Result<bool, InstallError> {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "MultiKueueCluster");
    let clusters: Api<DynamicObject> =
        Api::all_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, "multikueueclusters"));
    match clusters.list(&ListParams::default().limit(1)).await {
        Ok(list) => Ok(!list.items.is_empty()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(e) => Err(InstallError::MultiKueue(e)),
    }
}

/// Applies `plan`, telling `say` what each write did, and waits until the controller's webhook
/// answers (unless a dry run).
pub async fn apply(client: &Client, plan: &Plan, dry_run: bool, say: &dyn Fn(String)) -> Result<(), InstallError> {
    let suffix = if dry_run { " (server dry run)" } else { "" };
    let (crds, rest): (Vec<&Value>, Vec<&Value>) =
        plan.objects.iter().partition(|o| o["kind"] == "CustomResourceDefinition");
    let mut new_crds = Vec::new();
    for obj in crds {
        let applied = kube_util::apply_reporting(client, obj, dry_run).await?;
        say(format!("{} {applied}{suffix}", kube_util::object_ref(obj)));
        if applied != Applied::Unchanged && !dry_run {
            new_crds.push(obj.clone());
        }
    }
    kube_util::wait_established(client, &new_crds).await?;
    // A dry run creates no namespace, so the API server cannot check what would go into ours.
    let unchecked = dry_run && !namespace_exists(client, manifests::NAMESPACE).await?;
    let apply_one = async |obj: &Value| -> Result<(), InstallError> {
        if unchecked && obj["metadata"]["namespace"] == manifests::NAMESPACE {
            say(format!(
                "{} created{suffix}: not checked, namespace {} does not exist yet",
                kube_util::object_ref(obj),
                manifests::NAMESPACE
            ));
            return Ok(());
        }
        let applied = kube_util::apply_reporting(client, obj, dry_run).await?;
        say(format!("{} {applied}{suffix}", kube_util::object_ref(obj)));
        Ok(())
    };
    // Our controller's pods last: Kueue rolls first, while the node still has room for a
    // second Kueue replica beside the old one, and reads our kinds with its RBAC in place.
    let (deployments, rest): (Vec<&Value>, Vec<&Value>) = rest.into_iter().partition(|o| o["kind"] == "Deployment");
    for obj in rest {
        apply_one(obj).await?;
    }
    let (namespace, name) = (&plan.kueue.namespace, &plan.kueue.name);
    match &plan.kueue_change {
        KueueChange::Needed(change) => {
            let (config_map, _) = plan.kueue.config.clone().unwrap_or_default();
            plan.kueue.write(client, change, dry_run).await?;
            let added = plan.frameworks.join(", ");
            let kept = if change.edited.rewritten { " (written out whole: its comments are not kept)" } else { "" };
            let restarted =
                if dry_run { String::new() } else { format!("; Kueue {namespace}/{name} restarted to read it") };
            say(format!(
                "configmap/{config_map} (Kueue's Configuration) configured{suffix}: external frameworks {added}{kept}{restarted}"
            ));
        }
        KueueChange::None => {
            say(format!("Kueue's Configuration ({namespace}/{name}) already integrates {}", plan.frameworks.join(", ")))
        }
        KueueChange::LeftAlone => {}
    }
    for obj in deployments {
        apply_one(obj).await?;
    }
    if dry_run {
        return Ok(());
    }
    wait_until_serving(client).await
}

/// Waits until every replica of the controller runs this install's template and its webhook
/// answers through the Service.
pub async fn wait_until_serving(client: &Client) -> Result<(), InstallError> {
    let (namespace, name) = (manifests::NAMESPACE, manifests::DEPLOYMENT);
    wait::until("the kueue-ext controller to roll out", READY_TIMEOUT, || {
        wait::deployment_rolled_out(client, namespace, name)
    })
    .await?;
    // A ready pod is not yet a Service endpoint: until kube-proxy has it, a job is refused
    // because the webhook cannot be called.
    let probe = webhook_probe();
    Ok(wait::until("the kueue-ext webhook to answer", READY_TIMEOUT, || kube_util::webhooks_answer(client, &probe))
        .await?)
}

/// An ExternalJob created in a dry run only to see that our webhook answers: whatever serves it
/// (a Deployment, or a sandbox's process), the API server has to call it.
pub fn webhook_probe() -> Value {
    serde_json::json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
        "metadata": {"name": "kueue-ext-webhook-probe"}, "spec": {},
    })
}

/// The integrations ConfigMap an install wrote, unreadable.
#[derive(Debug, thiserror::Error)]
#[error("reading the integrations ConfigMap {namespace}/{name}: {detail}", namespace = manifests::NAMESPACE, name = config::CONFIG_MAP)]
pub struct IntegrationsUnreadable {
    detail: String,
}

/// The kinds integrated by configuration on this cluster, from the ConfigMap `install` wrote
/// (none without one).
pub async fn installed_integrations(client: &Client) -> Result<Vec<Integration>, IntegrationsUnreadable> {
    let failed = |detail: String| IntegrationsUnreadable { detail };
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), manifests::NAMESPACE);
    let Some(config_map) = config_maps.get_opt(config::CONFIG_MAP).await.map_err(|e| failed(e.to_string()))? else {
        return Ok(Vec::new());
    };
    let text = config_map.data.and_then(|mut d| d.remove(config::CONFIG_MAP_KEY)).unwrap_or_default();
    let file = IntegrationConfig::parse(config::CONFIG_MAP_KEY, &text).map_err(|e| failed(e.to_string()))?;
    Ok(file.integrations)
}

/// Jobs of `kind` (`Kind.version.group` with its resource) on the cluster, by namespace.
async fn jobs_of(client: &Client, integration: &Integration) -> Result<Vec<DynamicObject>, kube::Error> {
    let gvk: GroupVersionKind = integration.gvk();
    let resource = ApiResource::from_gvk_with_plural(&gvk, &integration.resource);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}
