//! End-to-end, on clusters this project did not create: plain kind clusters (the kind binary and
//! node image built here, since no registry answers), Kueue's own manifests applied with kubectl
//! as Kueue's documentation says, queues made by hand — then this project's commands for a
//! user's own clusters.

mod cert_manager;
mod connect;
mod install;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kube::Client;
use kueue_ext::sandbox::KindAddon;
use kueue_ext::sandbox::progress::Progress;

use crate::common::{BIN, Turn, ensure_toolchain, plain_queues, text};

/// kind clusters made with the kind CLI into one kubeconfig, deleted when dropped.
pub struct PlainKindClusters {
    _turn: Turn,
    kind: PathBuf,
    pub kubeconfig: PathBuf,
    names: Vec<String>,
    /// Kueue's manifests, rendered from its module.
    pub kueue_manifests: PathBuf,
    _dir: tempfile::TempDir,
}

/// One of [`PlainKindClusters`], as kubectl and the plugin name it.
pub struct PlainKindCluster<'a> {
    pub kubeconfig: &'a Path,
    pub context: String,
}

impl PlainKindClusters {
    /// Clusters of these names, nothing on them yet, made in the lane `turn` waits for.
    pub async fn create(names: &[&str], turn: fn() -> Turn) -> PlainKindClusters {
        ensure_toolchain();
        let progress = Progress::stderr();
        let images = kueue_ext::sandbox::local_kind_images(&progress).await.expect("the local kind images build");
        let kind = kueue_ext::sandbox::ensure_kind_cli(&progress).await.expect("kind builds");
        let turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("kind.yaml");
        std::fs::write(&config, kueue_ext::sandbox::kind_config(None, true)).unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let clusters = PlainKindClusters {
            _turn: turn,
            kind,
            kubeconfig,
            names: names.iter().map(|n| n.to_string()).collect(),
            kueue_manifests: images.kueue_manifests.clone(),
            _dir: dir,
        };
        for name in names {
            // A cluster of this name left by an earlier, killed run.
            let _ = Command::new(&clusters.kind).args(["delete", "cluster", "--name", name]).output();
            let created = Command::new(&clusters.kind)
                .args(["create", "cluster", "--name", name, "--image", &images.node_image, "--config"])
                .arg(&config)
                .arg("--kubeconfig")
                .arg(&clusters.kubeconfig)
                .output()
                .unwrap();
            assert!(created.status.success(), "kind create cluster: {}", text(&created));
        }
        clusters
    }

    /// An add-on's release on cluster `name`, as the air-gapped user of `toolchain install --kind
    /// --addons` does it: its image archive loaded into the nodes, its release applied with
    /// kubectl, until its Deployments are available.
    pub fn install_addon(&self, name: &str, addon: &KindAddon) {
        let loaded = Command::new(&self.kind)
            .args(["load", "image-archive"])
            .arg(&addon.archive)
            .args(["--name", name])
            .output()
            .unwrap();
        ok(&loaded, "kind load image-archive");
        let cluster = self.cluster(name);
        let release = addon.release.to_str().unwrap();
        ok(&cluster.kubectl(&["apply", "--server-side", "-f", release]), "kubectl apply the add-on's release");
        let namespace = addon.built.addon.spec().kustomization.namespace;
        let wait = ["-n", namespace, "wait", "--for=condition=Available", "deploy", "--all", "--timeout=300s"];
        ok(&cluster.kubectl(&wait), "waiting for the add-on");
    }

    /// Only the CustomResourceDefinitions of an add-on's release, as Kueue's MultiKueue guide
    /// has a manager hold a kind whose jobs run on the workers.
    pub fn install_addon_crds(&self, name: &str, addon: &KindAddon) {
        let release = std::fs::read_to_string(&addon.release).unwrap();
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&release).unwrap();
        let crds: Vec<String> = docs
            .iter()
            .filter(|d| d["kind"] == "CustomResourceDefinition")
            .map(|d| serde_saphyr::to_string(d).unwrap())
            .collect();
        assert!(!crds.is_empty(), "the release has CRDs");
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), format!("---\n{}", crds.join("---\n"))).unwrap();
        let applied = self.cluster(name).kubectl(&["apply", "--server-side", "-f", file.path().to_str().unwrap()]);
        ok(&applied, "kubectl apply the add-on's CRDs");
    }

    pub fn cluster(&self, name: &str) -> PlainKindCluster<'_> {
        assert!(self.names.iter().any(|n| n == name), "no cluster {name}");
        PlainKindCluster { kubeconfig: &self.kubeconfig, context: format!("kind-{name}") }
    }
}

impl Drop for PlainKindClusters {
    fn drop(&mut self) {
        if std::thread::panicking() && std::env::var_os("KUEUE_EXT_KEEP_FAILED").is_some() {
            let kept = std::env::temp_dir().join("kueue-ext-kept.kubeconfig");
            let _ = std::fs::copy(&self.kubeconfig, &kept);
            eprintln!("KUEUE_EXT_KEEP_FAILED: kind clusters {:?} kept, kubeconfig {}", self.names, kept.display());
            return;
        }
        for name in &self.names {
            let _ = Command::new(&self.kind).args(["delete", "cluster", "--name", name]).output();
        }
    }
}

impl PlainKindCluster<'_> {
    pub async fn client(&self) -> Client {
        kueue_ext::kube_util::client_for(self.kubeconfig, &self.context).await.unwrap()
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        let kubeconfig = self.kubeconfig.to_str().unwrap();
        let context = ["--kubeconfig", kubeconfig, "--context", &self.context];
        Command::new(kubectl()).args(context).args(args).output().unwrap()
    }

    /// The plugin against this cluster, as a user names it.
    pub fn plugin(&self, command: &str, args: &[&str]) -> Output {
        let kubeconfig = self.kubeconfig.to_str().unwrap();
        let context = ["--kubeconfig", kubeconfig, "--context", &self.context];
        Command::new(BIN).arg(command).args(context).args(args).output().unwrap()
    }

    /// Kueue's release manifests applied with kubectl, as its documentation says, until Kueue's
    /// Deployment is available.
    pub fn apply_kueue(&self, manifests: &Path) {
        ok(
            &self.kubectl(&["apply", "--server-side", "-f", manifests.to_str().unwrap()]),
            "kubectl apply Kueue's manifests",
        );
        ok(&self.kubectl(&[&KUEUE_AVAILABLE[..], &["--timeout=300s"]].concat()), "waiting for Kueue");
    }

    /// Queues as Kueue's documentation has a user make them, applied with kubectl.
    pub fn make_queues(&self) {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), plain_queues("2", "2Gi")).unwrap();
        ok(&self.kubectl(&["apply", "--server-side", "-f", file.path().to_str().unwrap()]), "queues");
    }
}

/// `kubectl wait` arguments for Kueue's Deployment to be available.
pub const KUEUE_AVAILABLE: [&str; 5] =
    ["-n", "kueue-system", "wait", "--for=condition=Available", "deploy/kueue-controller-manager"];

pub fn kubectl() -> PathBuf {
    let path = Command::new(BIN).args(["toolchain", "path"]).output().unwrap();
    PathBuf::from(String::from_utf8_lossy(&path.stdout).trim()).join("kubectl")
}

pub fn ok(output: &Output, what: &str) -> String {
    assert!(output.status.success(), "{what} failed: {}", text(output));
    text(output)
}

pub fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path).display().to_string()
}
