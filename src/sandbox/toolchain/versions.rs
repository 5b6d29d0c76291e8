//! Every pinned version of the sandbox toolchain, in one place.
//!
//! Kueue is the newest release the Go module proxy serves; Kubernetes and etcd are the versions
//! that Kueue release builds against (its go.mod pins the v0.36.2 staging modules, and
//! Kubernetes 1.36.2 pins etcd 3.6.8); kwok is the release built against Kubernetes 1.36.
//! `hack/toolchain/go.mod` must agree: a unit test checks it.

/// Kubernetes release of kube-apiserver, kube-controller-manager, kube-scheduler and kubectl.
pub const KUBERNETES: &str = "v1.36.2";
/// Kueue release (`sigs.k8s.io/kueue`), API `kueue.x-k8s.io/v1beta2`.
pub const KUEUE: &str = "v0.19.2";
/// etcd server release (`go.etcd.io/etcd/server/v3`).
pub const ETCD: &str = "v3.6.8";
/// kwok release (`sigs.k8s.io/kwok`).
pub const KWOK: &str = "v0.8.0";

/// JobSet release (`sigs.k8s.io/jobset`) that Kueue's go.mod requires: the `jobset` add-on.
pub const JOBSET: &str = "v0.12.0";

/// AppWrapper release (`github.com/project-codeflare/appwrapper`) that Kueue's go.mod requires:
/// the `appwrapper` add-on.
pub const APPWRAPPER: &str = "v1.2.2";

/// Kubeflow's training operator release (`github.com/kubeflow/training-operator`) that Kueue's
/// go.mod requires: the `kubeflow` add-on (PyTorchJob and the other v1 training jobs).
pub const TRAINING_OPERATOR: &str = "v1.9.3";

/// Tekton Pipelines release (`github.com/tektoncd/pipeline`): the `tekton` add-on. Not in Kueue's
/// module graph (Kueue has no PipelineRun integration); the first 1.x release.
pub const TEKTON: &str = "v1.0.0";

/// The Go module that provides each built binary, and the version it must report.
pub const MODULES: [(&str, &str, &str); 4] = [
    ("kube", "k8s.io/kubernetes", KUBERNETES),
    ("etcd", "go.etcd.io/etcd/server/v3", ETCD),
    ("kwok", "sigs.k8s.io/kwok", KWOK),
    ("kueue", "sigs.k8s.io/kueue", KUEUE),
];

/// The cache key of a toolchain: every pin plus the Go toolchain that builds it.
pub fn cache_key(go_version: &str) -> String {
    format!("k8s-{KUBERNETES}_kueue-{KUEUE}_etcd-{ETCD}_kwok-{KWOK}_{go_version}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::toolchain::sources::GO_MOD;

    fn required_version(module: &str) -> Option<String> {
        GO_MOD.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(module)).then(|| words.next().unwrap_or_default().to_string())
        })
    }

    #[test]
    fn go_mod_requires_the_pinned_versions() {
        for (_, module, version) in MODULES {
            assert_eq!(required_version(module).as_deref(), Some(version), "{module} in hack/toolchain/go.mod");
        }
    }

    #[test]
    fn add_ons_are_the_versions_kueue_requires() {
        assert_eq!(required_version("sigs.k8s.io/jobset").as_deref(), Some(JOBSET));
        assert_eq!(required_version("github.com/project-codeflare/appwrapper").as_deref(), Some(APPWRAPPER));
        assert_eq!(required_version("github.com/kubeflow/training-operator").as_deref(), Some(TRAINING_OPERATOR));
    }

    #[test]
    fn staging_modules_are_replaced_with_the_matching_tag() {
        let staging = KUBERNETES.replacen("v1.", "v0.", 1);
        let replaces: Vec<&str> = GO_MOD.lines().filter(|l| l.contains("=>")).collect();
        assert!(replaces.len() >= 30, "expected every staging module to be replaced");
        for line in replaces {
            assert!(line.trim_end().ends_with(&staging), "{line} should point at {staging}");
        }
    }

    #[test]
    fn cache_key_changes_with_go_version() {
        assert_ne!(cache_key("go1.26.8"), cache_key("go1.26.9"));
        assert!(cache_key("go1.26.8").contains(KUEUE));
    }
}
