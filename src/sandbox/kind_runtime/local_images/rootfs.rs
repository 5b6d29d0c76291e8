//! The Debian root filesystem of a kind node, made with debootstrap from Debian's packages:
//! systemd to boot, containerd and runc to run pods, the CNI plugins for their network, and
//! the tools kubeadm and kube-proxy call.

use std::path::Path;

use tokio::process::Command;

use super::LocalImageError;

/// The Debian release the node is made of.
pub const SUITE: &str = "bookworm";
/// Where packages come from unless `KUEUE_EXT_DEBIAN_MIRROR` names another mirror.
const MIRROR: &str = "http://deb.debian.org/debian";

/// Packages on top of debootstrap's minimal base.
pub const PACKAGES: [&str; 19] = [
    "systemd",
    "systemd-sysv",
    "dbus",
    "iptables",
    "iproute2",
    "ethtool",
    "conntrack",
    "util-linux",
    "mount",
    "kmod",
    "procps",
    "ca-certificates",
    "containerd",
    "runc",
    "containernetworking-plugins",
    "socat",
    "bash",
    "libseccomp2",
    "busybox-static",
];

/// What a node never reads: documentation, translations and package lists.
const TRIMMED: [&str; 6] =
    ["usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/info", "var/lib/apt/lists", "var/cache/apt"];

pub fn mirror() -> String {
    std::env::var("KUEUE_EXT_DEBIAN_MIRROR").ok().filter(|m| !m.is_empty()).unwrap_or_else(|| MIRROR.into())
}

/// The debootstrap command line for `dir`.
pub fn debootstrap_args(dir: &Path, mirror: &str) -> Vec<String> {
    vec![
        "--variant=minbase".into(),
        format!("--include={}", PACKAGES.join(",")),
        SUITE.into(),
        dir.display().to_string(),
        mirror.into(),
    ]
}

/// Makes the root filesystem in `dir`, writes it as the tar `archive` and keeps its static
/// busybox at `busybox` (for the job pods' image); `log` gets the commands' output.
pub async fn build(dir: &Path, archive: &Path, busybox: &Path, log: &Path) -> Result<(), LocalImageError> {
    if !nix::unistd::Uid::effective().is_root() {
        return Err(LocalImageError::NeedsRoot);
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(LocalImageError::io(dir))?;
    }
    let mut debootstrap = Command::new("debootstrap");
    debootstrap.args(debootstrap_args(dir, &mirror()));
    super::run_logged(debootstrap, "debootstrap of the node's root filesystem", log).await?;
    for path in TRIMMED {
        let path = dir.join(path);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(LocalImageError::io(&path))?;
        }
    }
    let static_busybox = dir.join("bin/busybox");
    std::fs::copy(&static_busybox, busybox).map_err(LocalImageError::io(&static_busybox))?;
    let mut tar = Command::new("tar");
    tar.arg("--numeric-owner").arg("-C").arg(dir).arg("-cf").arg(archive).arg(".");
    super::run_logged(tar, "archiving the node's root filesystem", log).await?;
    std::fs::remove_dir_all(dir).map_err(LocalImageError::io(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debootstrap_makes_a_minimal_system_with_the_node_packages() {
        let args = debootstrap_args(Path::new("/cache/rootfs"), "http://mirror.example/debian");
        assert_eq!(args[0], "--variant=minbase");
        for package in ["systemd", "containerd", "runc", "containernetworking-plugins", "iptables", "busybox-static"] {
            assert!(args[1].split([',', '=']).any(|p| p == package), "{package} in {}", args[1]);
        }
        assert_eq!(&args[2..], ["bookworm", "/cache/rootfs", "http://mirror.example/debian"]);
    }
}
