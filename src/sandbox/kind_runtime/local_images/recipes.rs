//! What each locally built image holds: its name and its build context. Every image but the
//! node's own is `FROM scratch` or the Debian root filesystem, so nothing is ever pulled.

use std::path::{Path, PathBuf};

use super::context::Context;
use crate::sandbox::kind_runtime::versions::COREDNS;
use crate::sandbox::toolchain::versions::{ETCD, KUBERNETES, KUEUE};

/// The registry name of every locally built image: it resolves nowhere, so a node never
/// mistakes one for a published image or tries to pull it.
pub const REGISTRY: &str = "kueue-ext.local";
/// The pod sandbox image containerd is configured with (node_image/containerd.toml).
pub const PAUSE: &str = "kueue-ext.local/pause:1";
/// A small image for job pods on kind clusters: Debian's static busybox.
pub const BUSYBOX: &str = "kueue-ext.local/busybox:1";

/// The etcd image tag kubeadm is told to use (`etcd.local.imageTag`).
pub fn etcd_tag() -> String {
    ETCD.trim_start_matches('v').to_string()
}

/// Kueue's image, which the rendered manifests name.
pub fn kueue_image() -> String {
    format!("{REGISTRY}/kueue:{KUEUE}")
}

/// kube-apiserver, kube-controller-manager and kube-scheduler are one multi-call binary, so
/// one image under three names serves kubeadm's three static pods.
pub fn control_plane_images() -> [String; 3] {
    ["kube-apiserver", "kube-controller-manager", "kube-scheduler"].map(|c| format!("{REGISTRY}/{c}:{KUBERNETES}"))
}

pub fn control_plane(kube: &Path) -> Context {
    let mut context = Context::new("FROM scratch\nCOPY bin/ /usr/local/bin/\nENV PATH=/usr/local/bin\n")
        .disk("bin/kube", 0o755, kube);
    for component in ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] {
        context = context.symlink(&format!("bin/{component}"), "kube");
    }
    context
}

pub fn etcd_image() -> String {
    format!("{REGISTRY}/etcd:{}", etcd_tag())
}

pub fn etcd(etcd: &Path) -> Context {
    Context::new("FROM scratch\nCOPY bin/ /usr/local/bin/\nENV PATH=/usr/local/bin\n").disk("bin/etcd", 0o755, etcd)
}

pub fn pause(pause: &Path) -> Context {
    Context::new("FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT [\"/pause\"]\n")
        .disk("pause", 0o755, pause)
}

pub fn kube_proxy_image() -> String {
    format!("{REGISTRY}/kube-proxy:{KUBERNETES}")
}

/// kube-proxy programs iptables, so it runs on the Debian root filesystem that has it.
pub fn kube_proxy(rootfs: &str, node: &Path) -> Context {
    Context::new(format!("FROM {rootfs}\nCOPY bin/ /usr/local/bin/\n"))
        .disk("bin/node", 0o755, node)
        .symlink("bin/kube-proxy", "node")
}

/// A static controller-runtime manager (Kueue's, an add-on's), where their Deployments look for
/// it, run as a non-root user.
pub fn manager(manager: &Path) -> Context {
    Context::new("FROM scratch\nCOPY manager /manager\nUSER 65532:65532\nENTRYPOINT [\"/manager\"]\n")
        .disk("manager", 0o755, manager)
}

/// An add-on's static programs, as its release expects to find them.
pub enum AddonPrograms<'a> {
    /// A kubebuilder manager, at `/manager`.
    Manager(&'a Path),
    /// Programs by name, at `/ko-app/<name>` as ko lays them out; the first is the entrypoint.
    Ko(Vec<(&'a str, PathBuf)>),
}

/// The image of an add-on's programs, run as a non-root user.
pub fn addon(programs: &AddonPrograms) -> Context {
    match programs {
        AddonPrograms::Manager(binary) => manager(binary),
        AddonPrograms::Ko(programs) => {
            let first = programs.first().map_or("", |(name, _)| *name);
            let dockerfile =
                format!("FROM scratch\nCOPY ko-app/ /ko-app/\nUSER 65532:65532\nENTRYPOINT [\"/ko-app/{first}\"]\n");
            programs.iter().fold(Context::new(dockerfile), |context, (name, binary)| {
                context.disk(&format!("ko-app/{name}"), 0o755, binary)
            })
        }
    }
}

/// CoreDNS as kubeadm names it under our registry (`<imageRepository>/coredns:<dns.imageTag>`).
pub fn coredns_image() -> String {
    format!("{REGISTRY}/coredns:{COREDNS}")
}

/// CoreDNS runs as root: kubeadm's pod drops every capability but binding port 53, which the
/// node's containerd does not grant an unprivileged user.
pub fn coredns(coredns: &Path) -> Context {
    Context::new("FROM scratch\nCOPY coredns /coredns\nENTRYPOINT [\"/coredns\"]\n").disk("coredns", 0o755, coredns)
}

pub fn busybox(busybox: &Path) -> Context {
    let mut context = Context::new("FROM scratch\nCOPY bin/ /bin/\nENV PATH=/bin\nCMD [\"sh\"]\n").disk(
        "bin/busybox",
        0o755,
        busybox,
    );
    for applet in ["sh", "sleep", "echo", "true", "false", "cat", "env", "ls", "date", "hostname"] {
        context = context.symlink(&format!("bin/{applet}"), "busybox");
    }
    context
}

/// Every image the node image carries into its containerd.
pub fn preloaded_images() -> Vec<String> {
    let mut images = control_plane_images().to_vec();
    images.extend([
        etcd_image(),
        PAUSE.to_string(),
        kube_proxy_image(),
        coredns_image(),
        kueue_image(),
        BUSYBOX.to_string(),
    ]);
    images
}

/// The node's own files, at their paths in the base image's build context.
pub const NODE_FILES: [(&str, u32, &str); 6] = [
    ("overlay/usr/local/bin/entrypoint", 0o755, include_str!("../node_image/entrypoint.sh")),
    ("overlay/etc/containerd/config.toml", 0o644, include_str!("../node_image/containerd.toml")),
    ("overlay/etc/systemd/system/kubelet.service", 0o644, include_str!("../node_image/kubelet.service")),
    ("overlay/etc/systemd/system/kubelet.slice", 0o644, include_str!("../node_image/kubelet.slice")),
    (
        "overlay/etc/systemd/system/kueue-ext-images.service",
        0o644,
        include_str!("../node_image/kueue-ext-images.service"),
    ),
    ("overlay/etc/cni/net.d/10-kueue-ext.conflist", 0o644, include_str!("../node_image/cni.conflist")),
];

/// The files of a kind node on top of the Debian root filesystem: our entrypoint, containerd's
/// configuration, kubelet's units and a bridge network for the node's pods.
pub fn base(rootfs: &str) -> Context {
    let dockerfile = format!(
        "FROM {rootfs}\nCOPY overlay/ /\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\n\
         ENTRYPOINT [\"/usr/local/bin/entrypoint\", \"/sbin/init\"]\n"
    );
    let mut context = Context::new(dockerfile);
    for (path, mode, text) in NODE_FILES {
        context = context.bytes(path, mode, text);
    }
    for unit in ["kubelet.service", "kueue-ext-images.service"] {
        context = context
            .symlink(&format!("overlay/etc/systemd/system/multi-user.target.wants/{unit}"), &format!("../{unit}"));
    }
    context
}

/// The node image: kubelet, kubeadm and kubectl (one binary), the Kubernetes version kind
/// reads, and the archive of [`preloaded_images`].
pub fn node(base: &str, node: &Path, images: &Path) -> Context {
    let dockerfile = format!("FROM {base}\nCOPY bin/ /usr/bin/\nCOPY kind/ /kind/\n");
    let mut context = Context::new(dockerfile).disk("bin/kueue-ext-node", 0o755, node);
    for component in ["kubelet", "kubeadm", "kubectl"] {
        context = context.symlink(&format!("bin/{component}"), "kueue-ext-node");
    }
    context.bytes("kind/version", 0o644, format!("{KUBERNETES}\n")).disk("kind/images/images.tar", 0o644, images)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_image_preloads_every_image_kubeadm_and_the_sandbox_ask_for() {
        let images = preloaded_images();
        for component in ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"] {
            assert!(images.contains(&format!("kueue-ext.local/{component}:{KUBERNETES}")), "{component}");
        }
        assert!(images.contains(&format!("kueue-ext.local/etcd:{}", etcd_tag())));
        assert!(images.contains(&PAUSE.to_string()) && images.contains(&BUSYBOX.to_string()));
        assert!(images.contains(&kueue_image()));
        assert!(images.contains(&format!("kueue-ext.local/coredns:{COREDNS}")));
        assert!(include_str!("../node_image/containerd.toml").contains(&format!("sandbox_image = \"{PAUSE}\"")));
    }

    #[test]
    fn components_are_found_by_name_on_the_images_path() {
        let control_plane = control_plane(Path::new("/tc/kube"));
        assert_eq!(
            control_plane.paths(),
            ["Dockerfile", "bin/kube", "bin/kube-apiserver", "bin/kube-controller-manager", "bin/kube-scheduler"]
        );
        assert!(control_plane.dockerfile().contains("ENV PATH=/usr/local/bin"));
        let node = node("base", Path::new("/n"), Path::new("/i.tar"));
        assert!(node.paths().contains(&"bin/kubeadm") && node.paths().contains(&"kind/version"));
    }

    #[test]
    fn the_base_enables_kubelet_and_the_image_loader_and_boots_systemd() {
        let base = base("rootfs");
        let paths = base.paths();
        assert!(paths.contains(&"overlay/etc/systemd/system/multi-user.target.wants/kubelet.service"));
        assert!(paths.contains(&"overlay/etc/systemd/system/multi-user.target.wants/kueue-ext-images.service"));
        assert!(base.dockerfile().contains("ENTRYPOINT [\"/usr/local/bin/entrypoint\", \"/sbin/init\"]"));
    }
}
