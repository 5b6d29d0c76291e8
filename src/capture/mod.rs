//! `capture`: a multi-cluster Kueue setup in one archive, for a maintainer to read or for the
//! sandbox to replay: per cluster, Kueue's Configuration and version, its queue objects,
//! Workloads, the jobs of every integrated kind, nodes' labels, taints and resources, recent
//! events of those objects, kueue-ext's integrations file, and bounded logs of Kueue and our
//! controller. Never a Secret: none is read. [`read`] asks the clusters; what each object keeps ([`scrub`]), what the manifest
//! says was left out ([`manifest`]) and the summary ([`summary`]) are pure and tested alone;
//! [`open`] reads an archive back for `up --from`.

mod archive;
mod manifest;
mod open;
mod read;
mod scrub;
mod summary;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use serde_json::Value;

use crate::kube_util::{KubeconfigError, Unreachable};

pub use archive::{archive, write_atomically};
pub use manifest::{ClusterEntry, FORMAT, LeftOut, Manifest};
pub use open::{CapturedCluster, OpenError, Opened, open};
pub use read::capture;
pub use summary::{PendingGroup, Summary, summarize};

/// The manifest's file name, first in the archive.
pub const MANIFEST_FILE: &str = "capture.json";

/// Where a cluster's Kueue Configuration is, in its directory.
pub const CONFIGURATION_FILE: &str = "kueue/configuration.yaml";

/// Where a cluster's kueue-ext integrations file (its ConfigMap's content) is, in its directory.
pub const INTEGRATIONS_FILE: &str = "kueue-ext/integrations.yaml";

/// Logs are kept to their last lines, and to at most this many bytes, per container or file.
pub const LOG_LINES: usize = 2000;
pub const LOG_BYTES: usize = 1 << 20;

/// Events kept per cluster, the newest.
pub const MAX_EVENTS: usize = 2000;

/// What narrows a capture.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Namespaced objects (LocalQueues, Workloads, jobs, events) of this namespace only.
    pub namespace: Option<String>,
    /// Jobs matching this label selector only, with their Workloads.
    pub selector: Option<String>,
}

/// What a sandbox keeps outside the API for one cluster (the process runtime runs Kueue and our
/// controller as processes, not as pods): given by whoever knows the sandbox's layout.
#[derive(Clone, Debug, Default)]
pub struct LocalFiles {
    /// Kueue's Configuration file.
    pub kueue_config: Option<PathBuf>,
    /// The Kueue version the sandbox pins.
    pub kueue_version: Option<String>,
    /// Component logs, each kept as `logs/<file name>`.
    pub logs: Vec<PathBuf>,
}

/// One cluster's files, under the directory of its name.
#[derive(Clone, Debug, Default)]
pub struct ClusterCapture {
    pub name: String,
    /// Path in the cluster's directory, and content.
    pub files: Vec<(String, Vec<u8>)>,
    /// Its Workloads as captured, for the summary.
    workloads: Vec<Value>,
}

impl ClusterCapture {
    pub fn workloads(&self) -> &[Value] {
        &self.workloads
    }
}

/// A capture, before it is written.
#[derive(Clone, Debug)]
pub struct Capture {
    pub manifest: Manifest,
    pub clusters: Vec<ClusterCapture>,
}

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    #[error("cannot write the capture to {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
