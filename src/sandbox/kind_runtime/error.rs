//! What can go wrong with the kind runtime; every message says what to do next.

use std::path::PathBuf;

use crate::kube_util::ApplyError;
use crate::kube_util::wait::{TimedOut, Unavailable};

/// Tells the user how to avoid the kind runtime altogether.
const OR_PROCESS: &str = "or run `kubectl kueue-ext up --runtime process`";

#[derive(Debug, thiserror::Error)]
pub enum KindError {
    #[error(
        "the kind runtime needs Docker, and there is no Docker daemon at {host} ({detail}): install and start Docker, {OR_PROCESS}"
    )]
    DockerMissing { host: String, detail: String },
    #[error(
        "the kind runtime needs Docker, but the Docker daemon at {host} does not answer ({detail}): start it (e.g. `sudo systemctl start docker`), {OR_PROCESS}"
    )]
    DockerNotRunning { host: String, detail: String },
    #[error(
        "no kind CLI is built or on PATH, and this sandbox's kind clusters {clusters} can only be deleted with it: run `up --runtime kind` once (it builds kind) or put kind on PATH, then run `down` again; or delete them with `kind delete cluster --name <name>`"
    )]
    KindMissingForDown { clusters: String },
    #[error("`kind version` printed {output:?}, which names no version; is `{program}` really kind?")]
    KindVersionUnreadable { program: PathBuf, output: String },
    #[error(
        "kind {found} is on PATH, but the kind runtime needs kind {required} (node image {image}): install kind {required}, or pass --kind-version {found} (or set KUEUE_EXT_KIND_VERSION) if you know this kind works with that image"
    )]
    KindVersion { found: String, required: String, image: String },
    #[error(
        "a kind cluster named {name} exists, and this sandbox did not create it: another sandbox of this name runs beside it? Give this one another name (`up --name NAME`: clusters NAME-manager …), or delete the cluster with `kind delete cluster --name {name}` if you no longer need it"
    )]
    ClusterExists { name: String },
    #[error("`{command}` failed ({status}):\n{output}")]
    Command { command: String, status: String, output: String },
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "kind could not create cluster {cluster} (a node that never becomes Ready within 3 minutes ends so): {detail}\n{}",
        where_logs_are(.logs)
    )]
    ClusterCreate { cluster: String, detail: String, logs: Result<PathBuf, Box<KindError>> },
    #[error("building the controller image {image} failed: {detail}")]
    ImageBuild { image: String, detail: String },
    #[error("saving the controller image {image} to {path} failed: {detail}")]
    ImageSave { image: String, path: PathBuf, detail: String },
    #[error(
        "loading the controller image {image} into kind cluster {cluster} failed: {detail}. Check that the cluster's nodes run (`docker ps --filter label=io.x-k8s.kind.cluster={cluster}`) and that the disk is not full"
    )]
    ImageLoad { image: String, cluster: String, detail: String },
    #[error(
        "{path} cannot be the controller: it is not a 64-bit ELF executable ({detail}); pass a Linux build of this plugin with --controller-binary (or KUEUE_EXT_CONTROLLER_BINARY)"
    )]
    ControllerNotElf { path: PathBuf, detail: String },
    #[error(
        "{binary} cannot run in the controller image: {needed_by} needs the shared library {library}, which is in none of {searched}; install it, or build a static binary with `hack/build-static.sh` and pass it with --controller-binary (or KUEUE_EXT_CONTROLLER_BINARY)"
    )]
    LibraryMissing { binary: PathBuf, library: String, needed_by: PathBuf, searched: String },
    #[error(
        "{binary} cannot run in the controller image: it loads {library}, which cannot be read as an ELF file ({detail}); build a static binary with `hack/build-static.sh` and pass it with --controller-binary (or KUEUE_EXT_CONTROLLER_BINARY)"
    )]
    LibraryUnreadable { binary: PathBuf, library: PathBuf, detail: String },
    #[error("Kueue's release manifests from {source_name}: {detail}")]
    KueueManifests { source_name: String, detail: String },
    #[error(
        "Kueue's release manifests from {source_name} have sha256 {actual}, not the pinned {expected}: the file is damaged or not Kueue {version}; pass the right file with --kueue-manifests, or its digest with --kueue-manifests-sha256 if you trust it"
    )]
    KueueDigest { source_name: String, expected: String, actual: String, version: &'static str },
    #[error("kind's kubeconfig for cluster {cluster}: {detail}")]
    Kubeconfig { cluster: String, detail: String },
    #[error(transparent)]
    LocalImages(#[from] super::local_images::error::LocalImageError),
    #[error(transparent)]
    Addon(Box<crate::sandbox::cluster_setup::addons::AddonError>),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why Kueue or an add-on did not come up in a kind cluster.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error(transparent)]
    Unavailable(#[from] TimedOut<Unavailable>),
    /// The webhook's dry run was never answered.
    #[error(transparent)]
    Webhook(#[from] TimedOut<kube::Error>),
}

impl From<crate::sandbox::cluster_setup::addons::AddonError> for KindError {
    fn from(err: crate::sandbox::cluster_setup::addons::AddonError) -> Self {
        KindError::Addon(Box::new(err))
    }
}

fn where_logs_are(logs: &Result<PathBuf, Box<KindError>>) -> String {
    match logs {
        Ok(dir) => format!("its nodes' logs (kubelet, containerd, control-plane pods) are in {}", dir.display()),
        Err(e) => format!("its nodes' logs could not be exported: {e}"),
    }
}

impl KindError {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> KindError {
        let path = path.into();
        move |source| KindError::Io { path, source }
    }
}
