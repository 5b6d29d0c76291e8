//! Pinned versions of the kind runtime, overridable with flags or environment variables.

/// The kind release the runtime is tested with (Kueue's own e2e and kwok pin the same).
pub const KIND: &str = "v0.32.0";
/// The node image kind v0.32.0 defaults to: Kubernetes 1.36, the line the toolchain builds.
pub const NODE_IMAGE: &str =
    "kindest/node:v1.36.1@sha256:3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5";
/// The CoreDNS release kubeadm v1.36 deploys (its `CoreDNSVersion`), built from its module for
/// the locally built node image and named to kubeadm as `dns.imageTag`.
pub const COREDNS: &str = "v1.14.2";
/// Kueue's release manifests, the same Kueue release the process runtime builds.
pub const KUEUE_MANIFESTS_URL: &str =
    "https://github.com/kubernetes-sigs/kueue/releases/download/v0.19.2/manifests.yaml";
/// sha256 of [`KUEUE_MANIFESTS_URL`]'s file, as pinned elsewhere for this release; the build
/// machines cannot download it to confirm, so a mismatch fails `up` naming both digests and the
/// flag that overrides the pin.
pub const KUEUE_MANIFESTS_SHA256: &str = "88881eb50734eb920b67486ebc2aa978ed325e1b12d99b22fc51a6d7e9e4d370";

/// `major.minor` of a version such as `v0.32.0` or `0.32.1-alpha`.
pub fn minor_line(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim_start_matches('v').split(['.', '-', '+']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// A kind CLI of another minor release may not boot the pinned node image.
pub fn compatible(found: &str, required: &str) -> bool {
    matches!((minor_line(found), minor_line(required)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::toolchain::versions::{KUBERNETES, KUEUE};

    #[test]
    fn pins_agree_with_the_toolchain() {
        assert!(KUEUE_MANIFESTS_URL.contains(&format!("/download/{KUEUE}/")));
        let k8s_minor = minor_line(KUBERNETES).unwrap();
        let image_version = NODE_IMAGE.split(':').nth(1).unwrap().trim_end_matches("@sha256");
        assert_eq!(minor_line(image_version), Some(k8s_minor), "node image {NODE_IMAGE} vs Kubernetes {KUBERNETES}");
        assert_eq!(KUEUE_MANIFESTS_SHA256.len(), 64);
    }

    #[test]
    fn same_minor_release_is_compatible() {
        assert!(compatible("v0.32.0", KIND));
        assert!(compatible("0.32.1", "v0.32.0"));
        assert!(!compatible("v0.31.0", KIND));
        assert!(!compatible("v1.32.0", KIND));
        assert!(!compatible("dev", KIND));
    }
}
