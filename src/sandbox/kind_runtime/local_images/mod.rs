//! The kind runtime's images built on this machine, so a kind sandbox needs no registry: a node
//! image (Debian's packages for the system, Kubernetes' node binaries from the toolchain's
//! pinned module) that carries every image its clusters run — control plane, etcd, pause,
//! kube-proxy, Kueue and a busybox for job pods — plus kind itself from its pinned module and
//! Kueue's manifests rendered from its module. Cached under a key of every input, like the
//! toolchain; `ready.json` marks a complete entry.

mod context;
pub mod error;
mod go;
pub mod recipes;
pub mod release;
mod rootfs;

pub use error::LocalImageError;
pub use go::{ensure_kind_cli, kind_cli_path};

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::docker::Docker;
use super::error::KindError;
use super::versions::{COREDNS, KIND};
use crate::sandbox::progress::Progress;
use crate::sandbox::toolchain;
use crate::sandbox::toolchain::versions::{ETCD, KUBERNETES, KUEUE};

/// What `up` needs from a complete entry.
#[derive(Clone, Debug)]
pub struct LocalImages {
    pub node_image: String,
    /// Kueue's manifests, naming the local Kueue image.
    pub kueue_manifests: PathBuf,
}

/// Everything the entry is made from; a change to any gives a new entry.
pub fn cache_key(go: &str) -> String {
    let inputs = [
        recipes::NODE_FILES.iter().map(|(_, _, text)| *text).collect(),
        go::SOURCES.to_vec(),
        go::COREDNS_PLUGINS.to_vec(),
        rootfs::PACKAGES.to_vec(),
    ];
    let digest = super::sha256_hex(inputs.concat().join("\0").as_bytes());
    format!(
        "kind-{KIND}_k8s-{KUBERNETES}_kueue-{KUEUE}_etcd-{ETCD}_coredns-{COREDNS}_debian-{}_{go}_{}",
        rootfs::SUITE,
        &digest[..12]
    )
}

/// The node image's name for an entry: its Kubernetes version and a digest of the whole key, as
/// every pin there is in the image.
fn node_image(key: &str) -> String {
    let digest = super::sha256_hex(key.as_bytes());
    format!("{}/kind-node:{KUBERNETES}-{}", recipes::REGISTRY, &digest[..12])
}

/// Where a complete entry's files are.
struct Entry {
    root: PathBuf,
}

impl Entry {
    fn kueue_manifests(&self) -> PathBuf {
        self.root.join("kueue.yaml")
    }
    fn log(&self) -> PathBuf {
        self.root.join("build.log")
    }
    /// debootstrap's, apart: it runs beside the Go builds.
    fn rootfs_log(&self) -> PathBuf {
        self.root.join("rootfs.log")
    }
    fn ready(&self) -> PathBuf {
        self.root.join("ready.json")
    }
}

/// Whether this machine can build the image set: debootstrap needs root.
pub fn can_build() -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    nix::unistd::Uid::effective().is_root() && super::cli::find_on_path("debootstrap", &path).is_some()
}

/// The cached images, if complete and still in the Docker daemon, without building.
pub async fn find(docker: &impl Docker) -> Result<Option<LocalImages>, KindError> {
    let go = toolchain::go_version().await.map_err(LocalImageError::from)?;
    let key = cache_key(&go);
    let entry = Entry { root: toolchain::cache_root().join("kind").join(&key) };
    let images = LocalImages { node_image: node_image(&key), kueue_manifests: entry.kueue_manifests() };
    let complete = entry.ready().exists() && images.kueue_manifests.exists();
    Ok((complete && docker.has_image(&images.node_image).await?).then_some(images))
}

/// Returns the cached images, building what is missing first.
pub async fn ensure(docker: &impl Docker, progress: &Progress) -> Result<LocalImages, KindError> {
    let toolchain = toolchain::ensure(progress).await.map_err(LocalImageError::from)?;
    let go = toolchain::go_version().await.map_err(LocalImageError::from)?;
    let key = cache_key(&go);
    let entry = Entry { root: toolchain::cache_root().join("kind").join(&key) };
    std::fs::create_dir_all(&entry.root).map_err(LocalImageError::io(&entry.root))?;
    let _lock = toolchain::lock(&entry.root).await.map_err(LocalImageError::from)?;
    if let Some(images) = find(docker).await? {
        return Ok(images);
    }
    let _ = std::fs::remove_file(entry.ready());
    progress.line(format!(
        "Building the kind node image and the images it carries (Kubernetes {KUBERNETES}, Kueue {KUEUE}, Debian {}); \
         a cold build takes about 10 minutes, later runs reuse {}",
        rootfs::SUITE,
        entry.root.display()
    ));
    build(docker, &toolchain, &entry, &key, progress).await?;
    std::fs::write(entry.ready(), format!("{{\"key\": \"{key}\"}}\n")).map_err(LocalImageError::io(&entry.ready()))?;
    Ok(LocalImages { node_image: node_image(&key), kueue_manifests: entry.kueue_manifests() })
}

async fn build(
    docker: &impl Docker,
    toolchain: &toolchain::Toolchain,
    entry: &Entry,
    key: &str,
    progress: &Progress,
) -> Result<(), KindError> {
    let log = entry.log();
    let bin = entry.root.join("bin");
    std::fs::create_dir_all(&bin).map_err(LocalImageError::io(&bin))?;
    // debootstrap waits mostly on Debian's archive, so it runs beside the Go builds.
    let programs = async {
        let step = progress.step("go build kubelet/kubeadm/kube-proxy/kubectl and pause");
        go::build(&entry.root.join("src"), &bin, &log).await?;
        step.done();
        let step = progress.step(format!("go build CoreDNS {COREDNS}"));
        go::build_coredns(&entry.root.join("coredns-src"), &bin, &log).await?;
        step.done();
        let step = progress.step("rendering Kueue's manifests from its module");
        release::render(toolchain, &entry.kueue_manifests(), &log).await?;
        step.done();
        Ok::<_, KindError>(())
    };
    let digest = key.rsplit('_').next().unwrap_or_default();
    let rootfs_image = format!("{}/kind-rootfs:{digest}", recipes::REGISTRY);
    let root_filesystem = async {
        // It also gives the job pods' busybox, which a new entry does not have yet.
        if docker.has_image(&rootfs_image).await? && bin.join("busybox").exists() {
            return Ok(());
        }
        let step = progress.step(format!("Debian {} root filesystem (debootstrap)", rootfs::SUITE));
        let archive = entry.root.join("rootfs.tar");
        rootfs::build(&entry.root.join("rootfs"), &archive, &bin.join("busybox"), &entry.rootfs_log()).await?;
        docker.import_rootfs(&rootfs_image, &archive).await?;
        std::fs::remove_file(&archive).map_err(LocalImageError::io(&archive))?;
        step.done();
        Ok::<_, KindError>(())
    };
    // Both run to their end, so that a failed one leaves no build of the other behind.
    let (programs, root_filesystem) = tokio::join!(programs, root_filesystem);
    programs.and(root_filesystem)?;

    let step = progress.step("control plane, etcd, pause, kube-proxy, CoreDNS, Kueue and busybox images");
    let [apiserver, rest @ ..] = recipes::control_plane_images();
    build_one(docker, &apiserver, &recipes::control_plane(&toolchain.bin("kube")), &entry.root).await?;
    for name in rest {
        docker.tag_image(&apiserver, &name).await?;
    }
    build_one(docker, &recipes::etcd_image(), &recipes::etcd(&toolchain.bin("etcd")), &entry.root).await?;
    build_one(docker, recipes::PAUSE, &recipes::pause(&bin.join("pause")), &entry.root).await?;
    let kube_proxy = recipes::kube_proxy(&rootfs_image, &bin.join("kueue-ext-node"));
    build_one(docker, &recipes::kube_proxy_image(), &kube_proxy, &entry.root).await?;
    build_one(docker, &recipes::coredns_image(), &recipes::coredns(&bin.join("coredns")), &entry.root).await?;
    build_one(docker, &recipes::kueue_image(), &recipes::manager(&toolchain.bin("kueue")), &entry.root).await?;
    build_one(docker, recipes::BUSYBOX, &recipes::busybox(&bin.join("busybox")), &entry.root).await?;
    step.done();

    let step = progress.step("node image");
    let base = format!("{}/kind-base:{digest}", recipes::REGISTRY);
    build_one(docker, &base, &recipes::base(&rootfs_image), &entry.root).await?;
    let archive = entry.root.join("images.tar");
    docker.save_images(&recipes::preloaded_images(), &archive).await?;
    let node = recipes::node(&base, &bin.join("kueue-ext-node"), &archive);
    build_one(docker, &node_image(key), &node, &entry.root).await?;
    std::fs::remove_file(&archive).map_err(LocalImageError::io(&archive))?;
    step.done();
    Ok(())
}

/// Builds the image `tag` of an add-on's static programs and saves it to `archive` for kind to
/// load, leaving no copy in the daemon.
pub async fn save_addon_image(
    docker: &impl Docker,
    tag: &str,
    programs: &recipes::AddonPrograms<'_>,
    archive: &Path,
) -> Result<(), KindError> {
    let dir = archive.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(LocalImageError::io(dir))?;
    build_one(docker, tag, &recipes::addon(programs), dir).await?;
    docker.save_images(&[tag.to_string()], archive).await?;
    docker.remove_image(tag).await
}

/// Builds `tag` from `context`, written to a file in `dir` for the daemon to read.
async fn build_one(docker: &impl Docker, tag: &str, context: &context::Context, dir: &Path) -> Result<(), KindError> {
    let path = dir.join("context.tar");
    context.write(&path).map_err(LocalImageError::io(&path))?;
    let built = docker.build_image_from_file(tag, &path).await;
    std::fs::remove_file(&path).map_err(LocalImageError::io(&path))?;
    built
}

/// Runs `command` with its output appended to `log`; a failure carries the log's end.
async fn run_logged(mut command: Command, step: &str, log: &Path) -> Result<(), LocalImageError> {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(LocalImageError::io(log))?;
    let err = out.try_clone().map_err(LocalImageError::io(log))?;
    let program = command.as_std().get_program().to_string_lossy().into_owned();
    let status = command.stdin(Stdio::null()).stdout(out).stderr(err).status().await.map_err(|source| {
        let hint = match program.as_str() {
            "debootstrap" => "install debootstrap (e.g. `apt-get install debootstrap`)",
            "go" => "install Go 1.26 or newer and put `go` on PATH",
            _ => "check that it is installed and on PATH",
        };
        LocalImageError::Missing { program: program.clone(), hint, source }
    })?;
    if status.success() {
        return Ok(());
    }
    Err(LocalImageError::Step { step: step.into(), log: log.to_path_buf(), tail: toolchain::log_tail(log, 20) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_names_every_pin_and_changes_with_go() {
        let key = cache_key("go1.26.8");
        for pin in [KIND, KUBERNETES, KUEUE, ETCD, COREDNS, rootfs::SUITE, "go1.26.8"] {
            assert!(key.contains(pin), "{pin} in {key}");
        }
        assert_ne!(key, cache_key("go1.26.9"));
        assert_ne!(node_image(&key), node_image(&cache_key("go1.26.9")), "the image is named by every pin");
        assert!(node_image(&key).starts_with(&format!("kueue-ext.local/kind-node:{KUBERNETES}-")));
    }

    #[tokio::test]
    async fn a_failed_build_step_names_the_step_its_log_and_the_logs_end() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("build.log");
        let mut failing = Command::new("sh");
        failing.args(["-c", "echo compiling kubelet; echo 'cannot find module' >&2; exit 3"]);
        let err = run_logged(failing, "go build kubelet", &log).await.unwrap_err().to_string();
        assert!(err.starts_with(&format!("go build kubelet failed; see {}:", log.display())), "{err}");
        assert!(err.ends_with("compiling kubelet\ncannot find module"), "{err}");

        let missing = run_logged(Command::new("debootstrap-not-installed"), "rootfs", &log).await.unwrap_err();
        assert!(missing.to_string().starts_with("cannot run `debootstrap-not-installed`"), "{missing}");
    }
}
