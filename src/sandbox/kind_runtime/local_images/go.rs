//! The node's Go binaries: kubelet, kubeadm, kube-proxy and kubectl as one multi-call binary and
//! the pod sandbox's pause, built from the toolchain's wrapper module (same pins, same Go build
//! cache); CoreDNS from its own module, for the cluster's DNS; and the kind CLI from its own
//! pinned module, so nobody needs kind on PATH.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::{LocalImageError, run_logged};
use crate::sandbox::kind_runtime::versions::{COREDNS, KIND};
use crate::sandbox::progress::Progress;
use crate::sandbox::toolchain::sources::FILES;
use crate::sandbox::toolchain::{self, ldflags};

const NODE_MAIN: &str = include_str!("../../../../hack/toolchain/cmd/node/main.go");
const PAUSE_MAIN: &str = include_str!("../../../../hack/toolchain/cmd/pause/main.go");
/// The sources of what [`build`] makes, for the cache key.
pub const SOURCES: [&str; 2] = [NODE_MAIN, PAUSE_MAIN];

/// Where the kind CLI built from its pinned module lives.
pub fn kind_cli_path() -> PathBuf {
    toolchain::cache_root().join("kind").join(format!("cli-{KIND}")).join("kind")
}

/// The kind CLI of the pinned release, built once with the local Go (`go install`).
pub async fn ensure_kind_cli(progress: &Progress) -> Result<PathBuf, LocalImageError> {
    let path = kind_cli_path();
    let dir = path.parent().expect("the kind CLI has a directory");
    std::fs::create_dir_all(dir).map_err(LocalImageError::io(dir))?;
    let _lock = toolchain::lock(dir).await?;
    if path.exists() {
        return Ok(path);
    }
    let step = progress.step(format!("go install sigs.k8s.io/kind@{KIND}"));
    let staging = dir.join("partial");
    let mut kind = Command::new("go");
    kind.env("GOBIN", &staging).env("CGO_ENABLED", "0").args(["install", &format!("sigs.k8s.io/kind@{KIND}")]);
    run_logged(kind, &format!("go install sigs.k8s.io/kind@{KIND}"), &dir.join("build.log")).await?;
    std::fs::rename(staging.join("kind"), &path).map_err(LocalImageError::io(&path))?;
    step.done();
    Ok(path)
}

/// Builds `kueue-ext-node` and `pause` into `bin`, using `src` as the module's copy.
pub async fn build(src: &Path, bin: &Path, log: &Path) -> Result<(), LocalImageError> {
    let files = FILES.into_iter().chain([("cmd/node/main.go", NODE_MAIN), ("cmd/pause/main.go", PAUSE_MAIN)]);
    for (name, text) in files {
        let path = src.join(name);
        let dir = path.parent().expect("a module file has a directory");
        std::fs::create_dir_all(dir).map_err(LocalImageError::io(dir))?;
        std::fs::write(&path, text).map_err(LocalImageError::io(&path))?;
    }
    std::fs::create_dir_all(bin).map_err(LocalImageError::io(bin))?;
    for (package, output) in [("./cmd/node", "kueue-ext-node"), ("./cmd/pause", "pause")] {
        let mut go = Command::new("go");
        go.current_dir(src)
            .env("CGO_ENABLED", "0")
            .args(["build", "-trimpath", "-tags", "selinux,notest,grpcnotrace", "-ldflags", &ldflags(), "-o"])
            .arg(bin.join(output))
            .arg(package);
        run_logged(go, &format!("go build {package}"), log).await?;
    }
    Ok(())
}

const COREDNS_MODULE: &str = "github.com/coredns/coredns";

/// Builds CoreDNS into `bin` from its module at [`COREDNS`], as released (its module holds the
/// generated plugin list, so nothing is generated here).
pub async fn build_coredns(bin: &Path, log: &Path) -> Result<(), LocalImageError> {
    let dir = log.parent().unwrap_or(Path::new("."));
    let module = toolchain::downloaded_module(COREDNS_MODULE, COREDNS, dir, log).await?;
    let mut go = Command::new("go");
    go.current_dir(&module)
        .env("CGO_ENABLED", "0")
        .args(["build", "-mod=readonly", "-trimpath", "-ldflags", "-s -w", "-o"])
        .arg(bin.join("coredns"))
        .arg(".");
    run_logged(go, &format!("go build {COREDNS_MODULE}@{COREDNS}"), log).await
}
