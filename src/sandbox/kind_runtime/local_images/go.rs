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

/// CoreDNS's plugins in the local build, by package name under its `plugin/` (`prometheus` is
/// `metrics`): those of kubeadm's Corefile and of ours ([`super::super::dns`]), and a few light
/// ones a user adds to a Corefile. A Corefile naming another fails at start with "missing a
/// plugin?". The cloud back ends (route53, azure, clouddns, etcd, nomad …) and their SDKs take
/// most of a full build's time.
pub const COREDNS_PLUGINS: [&str; 18] = [
    "bind",
    "cache",
    "debug",
    "errors",
    "forward",
    "health",
    "hosts",
    "k8s_external",
    "kubernetes",
    "loadbalance",
    "log",
    "loop",
    "metrics",
    "ready",
    "reload",
    "rewrite",
    "template",
    "whoami",
];

/// The Go file that takes the place of CoreDNS's generated plugin list (`core/plugin/zplugin.go`).
pub fn coredns_plugin_list() -> String {
    let imports: String =
        COREDNS_PLUGINS.iter().map(|name| format!("\t_ \"{COREDNS_MODULE}/plugin/{name}\"\n")).collect();
    format!("// The plugins of kueue-ext's local CoreDNS build.\n\npackage plugin\n\nimport (\n{imports})\n")
}

/// Builds CoreDNS into `bin` from its module at [`COREDNS`] with [`COREDNS_PLUGINS`] only, in a
/// copy of the module (`src`) whose generated plugin list is replaced: Go takes no overlay of
/// files in its module cache.
pub async fn build_coredns(src: &Path, bin: &Path, log: &Path) -> Result<(), LocalImageError> {
    let dir = log.parent().unwrap_or(Path::new("."));
    let module = toolchain::downloaded_module(COREDNS_MODULE, COREDNS, dir, log).await?;
    if src.exists() {
        std::fs::remove_dir_all(src).map_err(LocalImageError::io(src))?;
    }
    toolchain::copy_tree(&module, src)?;
    let plugins = src.join("core/plugin/zplugin.go");
    std::fs::write(&plugins, coredns_plugin_list()).map_err(LocalImageError::io(&plugins))?;
    let mut go = Command::new("go");
    go.current_dir(src)
        .env("CGO_ENABLED", "0")
        .args(["build", "-mod=readonly", "-trimpath", "-ldflags", "-s -w", "-o"])
        .arg(bin.join("coredns"))
        .arg(".");
    run_logged(go, &format!("go build {COREDNS_MODULE}@{COREDNS}"), log).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::kind_runtime::dns::CLUSTER_ONLY_COREFILE;

    /// The plugin of each directive at the top level of a Corefile's server blocks.
    fn plugins_of(corefile: &str) -> Vec<&str> {
        let mut depth = 0;
        let mut plugins = Vec::new();
        for line in corefile.lines().map(str::trim) {
            if depth == 1 && !line.starts_with('}') {
                let directive = line.split_whitespace().next().unwrap_or_default();
                plugins.push(if directive == "prometheus" { "metrics" } else { directive });
            }
            depth += line.matches('{').count();
            depth -= line.matches('}').count();
        }
        plugins
    }

    #[test]
    fn the_local_coredns_has_every_plugin_of_kubeadms_corefile_and_ours() {
        // kubeadm's Corefile for CoreDNS, as it writes it for a new cluster.
        let kubeadm =
            ["errors", "health", "ready", "kubernetes", "metrics", "forward", "cache", "loop", "reload", "loadbalance"];
        let ours = plugins_of(CLUSTER_ONLY_COREFILE);
        assert!(ours.contains(&"kubernetes") && ours.contains(&"metrics"), "{ours:?}");
        for plugin in kubeadm.iter().chain(&ours) {
            assert!(COREDNS_PLUGINS.contains(plugin), "{plugin} is not built");
        }
    }

    #[test]
    fn the_plugin_list_imports_each_plugin_package_once_and_nothing_else() {
        let list = coredns_plugin_list();
        assert!(list.contains("package plugin\n"));
        let imports: Vec<&str> = list.lines().filter(|line| line.trim_start().starts_with("_ ")).collect();
        assert_eq!(imports.len(), COREDNS_PLUGINS.len());
        assert!(list.contains("\t_ \"github.com/coredns/coredns/plugin/kubernetes\"\n"), "{list}");
        assert!(!list.contains("route53") && !list.contains("onevent"), "{list}");
    }
}
