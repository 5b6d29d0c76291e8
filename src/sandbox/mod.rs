//! The local sandbox: a manager cluster and worker clusters, each a real control plane with
//! Kueue, run as local processes (the `process` runtime, `process_runtime/`) or as kind clusters
//! (the `kind` runtime, `kind_runtime/`), behind one `ClusterRuntime` trait (`runtime.rs`);
//! `chosen_runtime.rs` picks one. What every cluster is set up with, whichever runtime, is in
//! `cluster_setup/`; the sandbox's one record of itself, which `up` writes and `status` and
//! `down` read, in `record.rs`.

mod chosen_runtime;
pub mod cluster_setup;
pub mod from_capture;
pub mod fsutil;
mod kind_runtime;
pub mod kubeconfig;
pub mod process_runtime;
pub mod progress;
pub mod record;
mod runtime;
pub mod toolchain;

mod down;
mod error;
mod status;
mod up;

pub use cluster_setup::addons::{Addon, ensure_built as build_addons};
pub use down::{DownOutcome, down};
pub use error::SandboxError;
pub use kind_runtime::{
    ImageSource, KIND_VERSION, KUEUE_MANIFESTS_SHA256, KUEUE_MANIFESTS_URL, KindAddon, KindError, KindOptions,
    NODE_IMAGE, kind_config, load_controller_image, local_images::LocalImages, local_images::ensure_kind_cli,
    local_images::kind_cli_path, local_images::recipes::BUSYBOX as KIND_JOB_IMAGE, local_kind_images,
    prepare_kind_images, thaw_kind_cluster,
};
pub use record::RuntimeKind;
pub use runtime::{ComponentHealth, NodePool};

pub use crate::manifests::SANDBOX_NODE_LABEL;
pub use status::{ClusterStatus, StatusReport, status};
pub use up::{UpOptions, UpOutcome, up};

/// The name of a sandbox `up --name` does not name: the prefix of its contexts and kind clusters.
pub const DEFAULT_NAME: &str = "kueue-ext";

/// Context name of a cluster in a sandbox's kubeconfig (`kueue-ext-manager`, `dev-worker1`); its
/// kind cluster has the same name.
pub fn context_name(sandbox: &str, cluster: &str) -> String {
    format!("{sandbox}-{cluster}")
}

/// A sandbox name, checked before anything starts: it prefixes kind clusters (whose node
/// containers add `-worker1-control-plane`) and contexts, so a lowercase DNS label, kept short.
pub fn check_name(name: &str) -> Result<(), String> {
    if crate::jobframework::webhook::dns1123_label(name).is_err() {
        return Err(
            "a sandbox name is lowercase letters, digits and '-', starting and ending with a letter or digit".into()
        );
    }
    if name.len() > 32 {
        return Err(format!("a sandbox name is at most 32 characters ({} given)", name.len()));
    }
    Ok(())
}

/// Components of a process-runtime cluster, in start order.
pub const COMPONENTS: [&str; 7] =
    ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue", "kueue-ext-controller"];

/// Name of the sandbox's kubeconfig file inside its state dir.
pub const KUBECONFIG_FILE: &str = "kubeconfig";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_names_are_short_dns_labels() {
        for good in ["kueue-ext", "dev", "a1", "team-b-2"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "Dev", "-dev", "dev-", "dev_1", "dev.x", &"a".repeat(33)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(context_name("dev", "worker1"), "dev-worker1");
    }
}
