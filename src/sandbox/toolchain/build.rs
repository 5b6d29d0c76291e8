//! Running the local Go toolchain: version, build, post-build checks and manifest extraction.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::sources::{FILES, KUBE_COMPONENTS, PACKAGES};
use super::versions::{KUBERNETES, KUEUE, MODULES};
use super::{Stamp, Toolchain, ToolchainError, io_err};
use crate::sandbox::progress::Progress;

/// `go env GOVERSION`, e.g. `go1.26.8`.
pub async fn go_version() -> Result<String, ToolchainError> {
    let output = Command::new("go")
        .args(["env", "GOVERSION"])
        .output()
        .await
        .map_err(|e| ToolchainError::GoMissing(e.to_string()))?;
    if !output.status.success() {
        return Err(ToolchainError::GoMissing(String::from_utf8_lossy(&output.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// An exclusive lock on a cache entry, held for the life of the value.
pub async fn lock(root: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, ToolchainError> {
    let path = root.join(".lock");
    let file =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io_err(&path))?;
    tokio::task::spawn_blocking(move || {
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| ToolchainError::Io { path, source: errno.into() })
    })
    .await
    .expect("lock task does not panic")
}

/// Build tags of the toolchain; add-ons are built with the same, so they reuse its compiled
/// packages from Go's build cache.
pub const BUILD_TAGS: &str = "selinux,notest,grpcnotrace";

/// Linker flags that stamp the Kubernetes version: without them the apiserver reports
/// `v0.0.0-master+$Format:%H$` and Kueue refuses to start on an unparsable server version.
pub fn ldflags() -> String {
    let minor = KUBERNETES.trim_start_matches("v1.").split('.').next().unwrap_or_default();
    let base = "k8s.io/component-base/version";
    [
        "-s -w".to_string(),
        format!("-X {base}.gitVersion={KUBERNETES}"),
        format!("-X {base}.gitMajor=1"),
        format!("-X {base}.gitMinor={minor}"),
        format!("-X {base}.gitTreeState=clean"),
        format!("-X {base}.gitCommit={KUBERNETES}"),
        format!("-X {base}.buildDate=1970-01-01T00:00:00Z"),
        format!("-X k8s.io/client-go/pkg/version.gitVersion={KUBERNETES}"),
        format!("-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE}"),
    ]
    .join(" ")
}

pub async fn build(toolchain: &Toolchain, key: &str, go: &str, progress: &Progress) -> Result<(), ToolchainError> {
    let root = &toolchain.root;
    let log = root.join("build.log");
    let src = root.join("src");
    let staging = root.join("bin.partial");
    for stale in [root.join("ready.json"), staging.clone(), toolchain.bin_dir()] {
        remove_any(&stale)?;
    }
    for (name, text) in FILES {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().expect("relative file has a parent")).map_err(io_err(&path))?;
        std::fs::write(&path, text).map_err(io_err(&path))?;
    }
    std::fs::create_dir_all(&staging).map_err(io_err(&staging))?;

    progress.line(format!(
        "Building the sandbox toolchain with {go} (Kubernetes {KUBERNETES}, Kueue {KUEUE}); a cold build takes \
         about 10 minutes on 2 cores, later runs reuse {}",
        root.display()
    ));
    let step = progress.step("go build kube, etcd, kwok, kueue");
    let mut command = Command::new("go");
    command
        .current_dir(&src)
        .env("CGO_ENABLED", "0")
        .args(["build", "-trimpath", "-tags", BUILD_TAGS, "-ldflags", &ldflags(), "-o"])
        .arg(&staging)
        .args(PACKAGES);
    run_logged(command, "go build of the toolchain", &log).await?;
    step.done();

    let step = progress.step("checking toolchain versions");
    for (binary, module, version) in MODULES {
        check_module_version(&staging.join(binary), module, version, &log).await?;
    }
    for component in KUBE_COMPONENTS {
        let link = staging.join(component);
        std::os::unix::fs::symlink("kube", &link).map_err(io_err(&link))?;
    }
    check_reported_version(&staging.join("kube-apiserver"), &format!("Kubernetes {KUBERNETES}"), &log).await?;
    step.done();

    let step = progress.step("extracting Kueue and kwok manifests from their modules");
    let kueue_dir = module_dir(&src, "sigs.k8s.io/kueue", &log).await?;
    let kwok_dir = module_dir(&src, "sigs.k8s.io/kwok", &log).await?;
    for sub in ["crd/bases", "rbac", "webhook"] {
        copy_tree(&kueue_dir.join("config/components").join(sub), &toolchain.kueue_components().join(sub))?;
    }
    copy_tree(&kwok_dir.join("kustomize/stage"), &toolchain.kwok_stages())?;
    step.done();

    let bin = toolchain.bin_dir();
    std::fs::rename(&staging, &bin).map_err(io_err(&bin))?;
    let mut binaries = Vec::new();
    for (name, _, _) in MODULES {
        let path = toolchain.bin(name);
        binaries.push((name.to_string(), std::fs::metadata(&path).map_err(io_err(&path))?.len()));
    }
    let stamp = Stamp { key: key.to_string(), binaries };
    let ready = root.join("ready.json");
    std::fs::write(&ready, serde_json::to_vec_pretty(&stamp).expect("stamp serializes")).map_err(io_err(&ready))?;
    progress.line(format!("toolchain ready: {}", bin.display()));
    Ok(())
}

pub async fn run_logged(mut command: Command, step: &str, log: &Path) -> Result<(), ToolchainError> {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(io_err(log))?;
    let err = out.try_clone().map_err(io_err(log))?;
    let status = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .await
        .map_err(|e| ToolchainError::GoMissing(e.to_string()))?;
    if status.success() {
        return Ok(());
    }
    Err(ToolchainError::BuildFailed { step: step.to_string(), log: log.to_path_buf(), tail: log_tail(log, 20) })
}

/// The last lines of a log, for error messages.
pub fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Checks with `go version -m` that a binary was built from the pinned module version.
pub async fn check_module_version(
    binary: &Path,
    module: &str,
    version: &str,
    log: &Path,
) -> Result<(), ToolchainError> {
    let output = Command::new("go").arg("version").arg("-m").arg(binary).output().await;
    let fail =
        |reason: String| ToolchainError::Check { binary: binary.display().to_string(), reason, log: log.to_path_buf() };
    let output = output.map_err(|e| fail(e.to_string()))?;
    let info = String::from_utf8_lossy(&output.stdout);
    let found = info.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.len() >= 3 && matches!(fields[0], "mod" | "dep" | "=>") && fields[1] == module)
            .then(|| fields[2].to_string())
    });
    match found {
        Some(v) if v == version => Ok(()),
        Some(v) => Err(fail(format!("built from {module} {v}, expected {version}"))),
        None => Err(fail(format!("no {module} in its build info"))),
    }
}

async fn check_reported_version(binary: &Path, expected: &str, log: &Path) -> Result<(), ToolchainError> {
    let output = Command::new(binary).arg("--version").output().await;
    let reported = output.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    if reported == expected {
        return Ok(());
    }
    Err(ToolchainError::Check {
        binary: binary.display().to_string(),
        reason: format!("--version printed {reported:?}, expected {expected:?}"),
        log: log.to_path_buf(),
    })
}

pub async fn module_dir(src: &Path, module: &str, log: &Path) -> Result<PathBuf, ToolchainError> {
    let output = Command::new("go")
        .current_dir(src)
        .args(["list", "-m", "-f", "{{.Dir}}", module])
        .output()
        .await
        .map_err(|e| ToolchainError::GoMissing(e.to_string()))?;
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if output.status.success() && dir.is_dir() {
        return Ok(dir);
    }
    Err(ToolchainError::BuildFailed {
        step: format!("go list -m {module}"),
        log: log.to_path_buf(),
        tail: String::from_utf8_lossy(&output.stderr).to_string(),
    })
}

/// The directory of `module` at `version` in the Go module cache, downloaded (and checked
/// against the checksum database) if it is not there yet.
pub async fn downloaded_module(module: &str, version: &str, dir: &Path, log: &Path) -> Result<PathBuf, ToolchainError> {
    let output = Command::new("go")
        .current_dir(dir)
        .args(["mod", "download", "-json", &format!("{module}@{version}")])
        .output()
        .await
        .map_err(|e| ToolchainError::GoMissing(e.to_string()))?;
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    match answer["Dir"].as_str() {
        Some(found) if output.status.success() => Ok(PathBuf::from(found)),
        _ => Err(ToolchainError::BuildFailed {
            step: format!("go mod download {module}@{version}"),
            log: log.to_path_buf(),
            tail: format!(
                "{}{}",
                answer["Error"].as_str().unwrap_or_default(),
                String::from_utf8_lossy(&output.stderr)
            ),
        }),
    }
}

/// Copies regular files (module cache files are read-only; the copies are made writable).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), ToolchainError> {
    std::fs::create_dir_all(to).map_err(io_err(to))?;
    for entry in std::fs::read_dir(from).map_err(io_err(from))? {
        let entry = entry.map_err(io_err(from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            let text = std::fs::read(&src).map_err(io_err(&src))?;
            std::fs::write(&dst, text).map_err(io_err(&dst))?;
        }
    }
    Ok(())
}

pub fn remove_any(path: &Path) -> Result<(), ToolchainError> {
    let result = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(path)(e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldflags_stamp_the_kubernetes_version() {
        let flags = ldflags();
        assert!(flags.contains(&format!("k8s.io/component-base/version.gitVersion={KUBERNETES}")));
        assert!(flags.contains("k8s.io/component-base/version.gitMajor=1"));
        assert!(flags.contains("k8s.io/component-base/version.gitMinor=36"));
    }

    #[test]
    fn sources_embed_the_kube_dispatcher() {
        let (_, main) = FILES.iter().find(|(name, _)| *name == "cmd/kube/main.go").unwrap();
        for component in KUBE_COMPONENTS {
            assert!(main.contains(&format!("case \"{component}\"")), "{component} is dispatched");
        }
        assert_eq!(PACKAGES.len(), MODULES.len());
    }

    #[test]
    fn log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "a\nb\nc\n").unwrap();
        assert_eq!(log_tail(&log, 2), "b\nc");
        assert_eq!(log_tail(&dir.path().join("missing"), 2), "");
    }
}
