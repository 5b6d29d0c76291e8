//! The local sandbox: a manager cluster and worker clusters, each a real control plane with
//! Kueue, run as local processes (the `process` runtime) or as kind clusters (the `kind`
//! runtime), behind one `ClusterRuntime` trait (`runtime.rs`); `chosen_runtime.rs` picks one.

pub mod addons;
mod chosen_runtime;
pub mod fsutil;
pub mod health;
pub mod integration;
mod kind_runtime;
pub mod kubeconfig;
pub mod kueue;
pub mod kustomize;
pub mod kwok;
pub mod layout;
pub mod multikueue;
pub mod pki;
pub mod ports;
pub mod process;
mod process_runtime;
pub mod progress;
pub mod queues;
mod record;
mod revive;
mod runtime;
pub mod state;
pub mod toolchain;

mod down;
mod error;
mod status;
mod up;

pub use addons::Addon;
pub use down::{DownOutcome, down};
pub use error::SandboxError;
pub use kind_runtime::{
    ImageSource, KIND_VERSION, KUEUE_MANIFESTS_SHA256, KUEUE_MANIFESTS_URL, KindError, KindOptions, NODE_IMAGE,
    kind_config, local_images::kind_cli_path,
};
pub use runtime::ComponentHealth;
pub use state::RuntimeKind;

/// The label every node that runs a sandbox's pods carries, on either runtime.
pub const SANDBOX_NODE_LABEL: (&str, &str) = ("kueue-ext.dev/sandbox-node", "true");
pub use status::{ClusterStatus, StatusReport, status};
pub use up::{UpOptions, UpOutcome, up};

/// Context name of a cluster in the sandbox kubeconfig (`kueue-ext-manager`, `kueue-ext-worker1`).
pub fn context_name(cluster: &str) -> String {
    format!("kueue-ext-{cluster}")
}

/// Components of a process-runtime cluster, in start order.
pub const COMPONENTS: [&str; 7] =
    ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue", "kueue-ext-controller"];

/// Name of the sandbox's kubeconfig file inside its state dir.
pub const KUBECONFIG_FILE: &str = "kubeconfig";
