//! The `kind` runtime: every cluster is a kind cluster in Docker, with Kueue from its pinned
//! release manifests and this project's controller as an image built with bollard from this
//! (static) binary and loaded into the nodes. Docker and the kind CLI sit behind traits.

mod addons;
mod cli;
mod config;
mod dns;
mod docker;
mod download;
pub(super) mod error;
mod frozen;
mod image;
mod kubeconfig;
mod kueue;
pub mod local_images;
mod requests;
mod select;
mod versions;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use cli::{KindCli, KindTool};
pub use config::kind_config;
pub use docker::{BollardDocker, Docker};
pub use error::KindError;
pub use local_images::{LocalImages, ensure_kind_cli};
pub use select::select;

pub use addons::KindAddon;
use local_images::LocalImageError;

use super::cluster_setup::addons::{self as sandbox_addons, Addon};
use super::cluster_setup::{kueue::manifests::NAMESPACE as KUEUE_NAMESPACE, our_controller};
use super::error::SandboxError;
use super::kubeconfig::{ClientError, Credentials, Entry};
use super::progress::Progress;
use super::record::{Cluster, RuntimeKind, SandboxRecord, SandboxState};
use super::runtime::{AdminAccess, ClusterPlan, ClusterRuntime, ComponentHealth, StartedCluster};
use super::toolchain;
use crate::install;
use crate::kube_util::{self, KubeconfigError};
use crate::sandbox::toolchain::versions::KUEUE;

/// Where a kind sandbox's images come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ImageSource {
    /// The local image set when it is built or can be (root and debootstrap), else published.
    Auto,
    /// Built on this machine from pinned sources: no registry is needed.
    Local,
    /// kind's node image and Kueue's release, from their registries.
    Published,
}

/// What the user may change about the kind runtime; the defaults are the pins.
#[derive(Clone, Debug, PartialEq)]
pub struct KindOptions {
    pub images: ImageSource,
    /// The published node image.
    pub node_image: String,
    /// The kind release required (same minor line).
    pub kind_version: String,
    /// A static build of this plugin for the controller image [default: this executable].
    pub controller_binary: Option<PathBuf>,
    /// Kueue's release manifests: a URL or a local file.
    pub kueue_manifests: String,
    pub kueue_manifests_sha256: String,
}

impl Default for KindOptions {
    fn default() -> Self {
        KindOptions {
            images: ImageSource::Auto,
            node_image: versions::NODE_IMAGE.into(),
            kind_version: versions::KIND.into(),
            controller_binary: None,
            kueue_manifests: versions::KUEUE_MANIFESTS_URL.into(),
            kueue_manifests_sha256: versions::KUEUE_MANIFESTS_SHA256.into(),
        }
    }
}

pub use versions::{KIND as KIND_VERSION, KUEUE_MANIFESTS_SHA256, KUEUE_MANIFESTS_URL, NODE_IMAGE};

/// sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The kind `up` builds from its pinned module, else `kind` from `PATH`.
pub fn installed_kind_cli() -> Option<KindCli> {
    let built = local_images::kind_cli_path();
    if built.exists() {
        return Some(KindCli::new(built));
    }
    KindCli::from_path()
}

/// The images a kind sandbox uses (`None`: published) and why, in words for the runtime line.
pub async fn images_for(
    source: ImageSource,
    docker: &impl Docker,
    progress: &Progress,
) -> Result<(Option<LocalImages>, String), KindError> {
    let built = |images: LocalImages| (Some(images), "images built on this machine".to_string());
    match source {
        ImageSource::Published => Ok((None, "published images (--kind-images published)".into())),
        ImageSource::Local => Ok(built(local_images::ensure(docker, progress).await?)),
        ImageSource::Auto => match local_images::find(docker).await? {
            Some(images) => Ok(built(images)),
            None if local_images::can_build() => Ok(built(local_images::ensure(docker, progress).await?)),
            None => Ok((None, "published images (building them here needs root and debootstrap)".into())),
        },
    }
}

/// The controller image of `binary` (this executable by default) saved for kind to load, built
/// once per binary: its tag and archive.
async fn controller_image_archive(
    docker: &impl Docker,
    binary: Option<&Path>,
    cache: &Path,
    progress: &Progress,
) -> Result<(String, PathBuf), KindError> {
    let (binary_path, bundle) = image::controller_binary(binary)?;
    let tag = image::tag_for(&bundle);
    let dir = cache.join("images");
    let archive = image::archive_path(&dir, &tag);
    if archive.exists() {
        return Ok((tag, archive));
    }
    std::fs::create_dir_all(&dir).map_err(KindError::io(&dir))?;
    // Two `up`s at once (two sandboxes, or a sandbox and `install`) build the same tag: one builds
    // and saves it while the other waits, then finds the archive.
    let _lock = toolchain::lock(&dir).await.map_err(LocalImageError::from)?;
    if !archive.exists() {
        let step = progress.step(format!("controller image {tag} from {}", binary_path.display()));
        docker.build_image(&tag, image::build_context(&bundle)).await?;
        docker.save_images(std::slice::from_ref(&tag), &archive).await?;
        // kind loads the archive; the daemon's copy and older binaries' archives only fill the disk.
        docker.remove_image(&tag).await?;
        image::remove_other_archives(&dir, &archive).map_err(KindError::io(&dir))?;
        step.done();
    }
    Ok((tag, archive))
}

/// The controller's image built from this executable and loaded into the nodes of the kind
/// cluster `cluster` (one the user made), as `up` loads it into its own: its tag.
pub async fn load_controller_image(cluster: &str, progress: &Progress) -> Result<String, KindError> {
    let kind = match installed_kind_cli() {
        Some(kind) => kind,
        None => KindCli::new(ensure_kind_cli(progress).await?),
    };
    let docker = BollardDocker::connect();
    docker.ping().await?;
    let cache = toolchain::cache_root().join("kind");
    let (tag, archive) = controller_image_archive(&docker, None, &cache, progress).await?;
    let step = progress.step(format!("loading {tag} into kind cluster {cluster}"));
    kind.load_image_archive(cluster, &archive).await.map_err(|e| KindError::ImageLoad {
        image: tag.clone(),
        cluster: cluster.to_string(),
        detail: e.to_string(),
    })?;
    step.done();
    Ok(tag)
}

/// Thaws the cgroups a killed runc left frozen in the running nodes of kind cluster `cluster`
/// (`frozen`): how many. A node stuck so cannot be stopped or deleted until then.
pub async fn thaw_kind_cluster(cluster: &str) -> usize {
    thaw_nodes(&BollardDocker::connect(), cluster).await
}

async fn thaw_nodes(docker: &impl Docker, cluster: &str) -> usize {
    let mut thawed = 0;
    for node in docker.cluster_nodes(cluster).await.unwrap_or_default() {
        if let Ok(Some(pid)) = docker.container_pid(&node.name).await {
            thawed += frozen::thaw_under(pid).unwrap_or(0);
        }
    }
    thawed
}

/// The kind node image and Kueue's manifests rendered from its module, built on this machine
/// first if missing: what a kind cluster of the user's own needs where no registry answers.
pub async fn local_kind_images(progress: &Progress) -> Result<LocalImages, KindError> {
    local_images::ensure(&BollardDocker::connect(), progress).await
}

/// Everything a kind sandbox with `addons` builds on this machine, built now so that a later `up`
/// (or a cluster of the user's own) needs neither the network nor the build time: the kind CLI,
/// the node image with the images it carries, and each add-on's image.
pub async fn prepare_kind_images(
    addons: &[Addon],
    progress: &Progress,
) -> Result<(LocalImages, Vec<KindAddon>), KindError> {
    ensure_kind_cli(progress).await?;
    let docker = BollardDocker::connect();
    docker.ping().await?;
    let images = local_images::ensure(&docker, progress).await?;
    let toolchain = toolchain::ensure(progress).await.map_err(LocalImageError::from)?;
    let mut prepared = Vec::new();
    for built in sandbox_addons::ensure_built(&toolchain, addons, progress).await? {
        prepared.push(addons::prepare(&docker, &toolchain, &built, progress).await?);
    }
    Ok((images, prepared))
}

/// kind's own kubeconfig of a cluster, kept in the cluster's dir so the user's is never touched.
const KIND_KUBECONFIG: &str = "kind.kubeconfig";
/// Where a cluster that kind could not create leaves its nodes' logs, in the cluster's dir.
const KIND_LOGS: &str = "kind-logs";

/// Everything `prepare` readied for the clusters.
struct Prepared {
    node_image: String,
    /// The node image is the locally built one (kind's config differs for it).
    local_images: bool,
    /// The controller image's tag and its `docker save` archive.
    image: String,
    archive: PathBuf,
    /// Kueue's release documents, verified.
    kueue: Vec<Value>,
    /// kind's network does not exist yet: the first cluster creates it, and it is ours to remove.
    creates_network: bool,
    /// The add-ons every cluster runs, their images loaded like the controller's.
    addons: Vec<KindAddon>,
}

/// Clusters as kind clusters, through the kind CLI `K` and the Docker API `D`.
pub struct KindRuntime<K, D> {
    kind: K,
    docker: D,
    prepared: Option<Prepared>,
}

impl<K: KindTool, D: Docker> KindRuntime<K, D> {
    /// For `status` and `down` of a recorded sandbox.
    pub fn recorded(kind: K, docker: D) -> Self {
        KindRuntime { kind, docker, prepared: None }
    }

    /// Checks kind, refuses clusters of our names that someone else made, builds and saves the
    /// controller image (once per binary), and fetches Kueue's release: all before any cluster
    /// exists, so a problem costs nothing to undo.
    #[allow(clippy::too_many_arguments)]
    pub async fn prepare(
        kind: K,
        docker: D,
        options: &KindOptions,
        images: Option<LocalImages>,
        plans: &[ClusterPlan],
        addons: &[Addon],
        cache: &Path,
        reason: &str,
        progress: &Progress,
    ) -> Result<Self, KindError> {
        let output = kind.version().await?;
        let found = cli::parse_version(&output).ok_or_else(|| KindError::KindVersionUnreadable {
            program: kind.program().to_path_buf(),
            output: output.trim().to_string(),
        })?;
        if !versions::compatible(&found, &options.kind_version) {
            return Err(KindError::KindVersion {
                found,
                required: options.kind_version.clone(),
                image: options.node_image.clone(),
            });
        }
        let existing = kind.clusters().await?;
        if let Some(name) = plans.iter().map(|p| p.context.clone()).find(|name| existing.contains(name)) {
            return Err(KindError::ClusterExists { name });
        }
        let node_image = images.as_ref().map_or(options.node_image.clone(), |i| i.node_image.clone());
        progress.line(format!("Runtime: kind ({reason}; kind {found}, node image {node_image})"));

        let (tag, archive) =
            controller_image_archive(&docker, options.controller_binary.as_deref(), cache, progress).await?;
        let kueue = match &images {
            Some(images) => kueue::load_rendered(&images.kueue_manifests)?,
            None => {
                kueue::load(&options.kueue_manifests, &options.kueue_manifests_sha256, &cache.join("kueue")).await?
            }
        };
        let mut kind_addons = Vec::new();
        if !addons.is_empty() {
            let toolchain = toolchain::ensure(progress).await.map_err(LocalImageError::from)?;
            for built in sandbox_addons::ensure_built(&toolchain, addons, progress).await? {
                kind_addons.push(addons::prepare(&docker, &toolchain, &built, progress).await?);
            }
        }
        let creates_network = !docker.has_network(docker::KIND_NETWORK).await?;
        let prepared = Prepared {
            node_image,
            local_images: images.is_some(),
            image: tag,
            archive,
            kueue,
            creates_network,
            addons: kind_addons,
        };
        Ok(KindRuntime { kind, docker, prepared: Some(prepared) })
    }

    /// The cluster's node address on kind's network.
    async fn node_address(&self, kind_name: &str) -> Result<String, KindError> {
        let nodes = self.docker.cluster_nodes(kind_name).await?;
        nodes.into_iter().find_map(|n| n.address).ok_or_else(|| KindError::Kubeconfig {
            cluster: kind_name.to_string(),
            detail: format!("its node has no address on Docker's network {:?}", "kind"),
        })
    }

    /// Creates the kind cluster, reads its admin access and loads the controller image into its
    /// nodes: everything before its API server is used.
    async fn boot(&self, plan: &ClusterPlan, dir: &Path, prepared: &Prepared) -> Result<AdminAccess, KindError> {
        let name = plan.context.clone();
        let kubeconfig = dir.join(KIND_KUBECONFIG);
        let config = config::cluster_config(plan, prepared.local_images);
        if let Err(e) = self.kind.create_cluster(&name, &config, &prepared.node_image, &kubeconfig).await {
            let logs = dir.join(KIND_LOGS);
            let exported = self.kind.export_logs(&name, &logs).await;
            let logs = exported.map(|()| logs).map_err(Box::new);
            return Err(KindError::ClusterCreate { cluster: name, detail: e.to_string(), logs });
        }
        let text = self.kind.kubeconfig(&name).await?;
        let admin = kubeconfig::admin_access(&text, &name)
            .map_err(|e| KindError::Kubeconfig { cluster: name.clone(), detail: e.to_string() })?;
        let images = std::iter::once((&prepared.image, &prepared.archive))
            .chain(prepared.addons.iter().map(|addon| (&addon.image, &addon.archive)));
        for (image, archive) in images {
            self.kind.load_image_archive(&name, archive).await.map_err(|e| KindError::ImageLoad {
                image: image.clone(),
                cluster: name.clone(),
                detail: e.to_string(),
            })?;
        }
        Ok(admin)
    }
}

async fn admin_client(admin: &AdminAccess, context: &str) -> Result<kube::Client, ClientError> {
    let entry = Entry {
        context,
        server: admin.server.clone(),
        ca_pem: &admin.ca_pem,
        credentials: Credentials::ClientCert { cert_pem: &admin.cert_pem, key_pem: &admin.key_pem },
    };
    super::kubeconfig::client(entry).await
}

/// A component that is a Deployment: ready when one of its replicas is available.
async fn deployment_status(
    client: &Result<kube::Client, KubeconfigError>,
    name: &str,
    (namespace, deployment): (&str, &str),
    kubectl: &str,
) -> ComponentHealth {
    let reason = match client {
        Ok(client) => {
            kube_util::wait::deployment_available(client, namespace, deployment).await.err().map(|e| e.to_string())
        }
        Err(e) => Some(format!("API server unreachable: {e}")),
    };
    ComponentHealth {
        name: name.into(),
        ready: reason.is_none(),
        pid: None,
        log: format!("{kubectl} -n {namespace} logs deploy/{deployment}"),
        reason,
    }
}

impl<K: KindTool, D: Docker> ClusterRuntime for KindRuntime<K, D> {
    fn runtime_kind(&self) -> RuntimeKind {
        RuntimeKind::Kind
    }

    async fn start_cluster(
        &self,
        plan: &ClusterPlan,
        record: &SandboxRecord,
        progress: &Progress,
    ) -> Result<StartedCluster, SandboxError> {
        let name = plan.name.as_str();
        let Some(prepared) = &self.prepared else {
            return Err(SandboxError::step(name, "starting", "the kind runtime was not prepared"));
        };
        let kind_name = plan.context.clone();
        let dir = record.dir.join(name);
        std::fs::create_dir_all(&dir).map_err(SandboxError::io(&dir))?;
        // Recorded before kind runs: a half-created cluster is still ours to delete.
        record.add_cluster(Cluster {
            name: name.to_string(),
            role: plan.role,
            context: plan.context.clone(),
            dir: dir.clone(),
            api_server_port: plan.fixed_api_port.unwrap_or_default(),
            components: Vec::new(),
            kind_cluster: Some(kind_name.clone()),
        })?;
        if prepared.creates_network {
            record.update(|s| s.kind_network = Some(docker::KIND_NETWORK.to_string()))?;
        }
        let step = progress.step(format!("cluster {name}: kind cluster {kind_name}"));
        let admin = self.boot(plan, &dir, prepared).await.map_err(|e| SandboxError::step(name, "kind", e))?;
        let port = kubeconfig::server_port(&admin.server).unwrap_or_default();
        record.update(|s| {
            if let Some(cluster) = s.cluster_mut(name) {
                cluster.api_server_port = port;
            }
        })?;
        let client = admin_client(&admin, &plan.context)
            .await
            .map_err(|e| SandboxError::step(name, "connecting to its API server", e))?;
        let address = self.node_address(&kind_name).await.map_err(|e| SandboxError::step(name, "kind", e))?;
        step.done();

        let step = progress.step(format!("cluster {name}: Kueue {KUEUE}"));
        // Our kinds exist before Kueue starts, which is told to integrate them.
        our_controller::install_definitions(&client, &plan.integrations, &plan.crds)
            .await
            .map_err(|e| SandboxError::step(name, "installing kueue-ext's CRDs and RBAC", e))?;
        for addon in &prepared.addons {
            let what = format!("installing {}'s CRDs", addon.built.addon.name());
            addons::install_crds(&client, addon).await.map_err(|e| SandboxError::step(name, what, e))?;
        }
        let docs = kueue::configured(&prepared.kueue, plan.multikueue_manager, &plan.integrations, &plan.addons)
            .map_err(|e| SandboxError::step(name, "configuring Kueue", e))?;
        kueue::install(&client, &docs).await.map_err(|e| SandboxError::step(name, "installing Kueue", e))?;
        step.done();

        for addon in &prepared.addons {
            let spec = addon.built.addon.spec();
            let step = progress.step(format!("cluster {name}: add-on {} {}", spec.name, spec.version));
            let what = format!("installing add-on {}", spec.name);
            addons::install(&client, addon).await.map_err(|e| SandboxError::step(name, what, e))?;
            step.done();
        }

        let step = progress.step(format!("cluster {name}: kueue-ext controller {}", prepared.image));
        // As on any cluster, but Kueue was configured for our kinds before it started.
        let options = install::Options {
            image: prepared.image.clone(),
            integrations: plan.integrations.to_vec(),
            cert_validity: None,
            cert_writer: Default::default(),
            kueue_config: false,
            dry_run: false,
        };
        let installing = |e: install::InstallError| SandboxError::step(name, "installing kueue-ext", e);
        let install_plan = install::plan(&client, &options).await.map_err(installing)?;
        install::apply(&client, &install_plan, false, &|_| {}).await.map_err(installing)?;
        step.done();

        let step = progress.step(format!("cluster {name}: cluster DNS"));
        dns::ready(&client, prepared.local_images)
            .await
            .map_err(|e| SandboxError::step(name, "starting CoreDNS", e))?;
        step.done();
        Ok(StartedCluster {
            name: name.to_string(),
            role: plan.role,
            client,
            admin,
            internal_server: config::internal_server(&address),
        })
    }

    /// Deletes exactly the kind clusters the state records, and nothing else.
    async fn teardown(&self, state: &SandboxState) -> Result<usize, SandboxError> {
        let mut deleted = 0;
        let mut failures = Vec::new();
        for cluster in &state.clusters {
            let Some(kind_name) = &cluster.kind_cluster else { continue };
            let kubeconfig = cluster.dir.join(KIND_KUBECONFIG);
            let mut outcome = self.kind.delete_cluster(kind_name, &kubeconfig).await;
            if outcome.is_err() {
                // Docker gives up on a node that has not exited within its kill's wait, and the
                // node may exit a moment later; or a killed runc left cgroups frozen, which
                // keep it from exiting until thawed. Either way, once more.
                thaw_nodes(&self.docker, kind_name).await;
                outcome = self.kind.delete_cluster(kind_name, &kubeconfig).await;
            }
            match outcome {
                Ok(()) => deleted += 1,
                Err(e) => failures.push(e.to_string()),
            }
        }
        // Another sandbox's or the user's clusters may have joined it since: it then stays.
        if let Some(network) = state.kind_network.as_deref().filter(|_| failures.is_empty())
            && let Err(e) = self.docker.remove_network(network).await
        {
            failures.push(format!("removing Docker network {network}: {e}"));
        }
        if failures.is_empty() {
            Ok(deleted)
        } else {
            Err(SandboxError::step("all", "deleting kind clusters", failures.join("; ")))
        }
    }

    async fn components(&self, state: &SandboxState, cluster: &Cluster) -> Vec<ComponentHealth> {
        let Some(kind_name) = &cluster.kind_cluster else { return Vec::new() };
        let mut out = Vec::new();
        let node = |name: String, reason: Option<String>| ComponentHealth {
            log: format!("docker logs {name}"),
            name,
            ready: reason.is_none(),
            pid: None,
            reason,
        };
        match self.docker.cluster_nodes(kind_name).await {
            Ok(nodes) if nodes.is_empty() => {
                out.push(node(format!("{kind_name}-control-plane"), Some("no such container".into())))
            }
            Ok(nodes) => out.extend(nodes.into_iter().map(|n| {
                let reason = (!n.running).then(|| "container is not running".to_string());
                node(n.name, reason)
            })),
            Err(e) => out.push(node(format!("{kind_name}-control-plane"), Some(e.to_string()))),
        }
        let client = self.admin_client(state, cluster).await;
        let kubectl = format!("kubectl --kubeconfig {} --context {}", state.kubeconfig.display(), cluster.context);
        out.push(deployment_status(&client, "coredns", dns::DEPLOYMENT_REF, &kubectl).await);
        out.push(deployment_status(&client, "kueue", (KUEUE_NAMESPACE, "kueue-controller-manager"), &kubectl).await);
        let ours = (crate::manifests::NAMESPACE, crate::manifests::DEPLOYMENT);
        out.push(deployment_status(&client, "kueue-ext-controller", ours, &kubectl).await);
        for addon in &state.addons {
            let spec = addon.spec();
            out.push(
                deployment_status(&client, spec.name, (spec.kustomization.namespace, spec.deployment), &kubectl).await,
            );
            for &other in spec.other_deployments {
                out.push(deployment_status(&client, other, (spec.kustomization.namespace, other), &kubectl).await);
            }
        }
        out
    }

    async fn admin_client(&self, state: &SandboxState, cluster: &Cluster) -> Result<kube::Client, KubeconfigError> {
        kube_util::client_for(&state.kubeconfig, &cluster.context).await
    }
}
