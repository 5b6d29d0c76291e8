//! The sandbox toolchain: Kubernetes, etcd, kwok and Kueue built once with the local Go from the
//! pinned wrapper module in `hack/toolchain/`, cached under a key of every version.
//!
//! Layout of one cache entry (`<cache>/toolchain/<key>/`):
//! `bin/` (kube + symlinks, etcd, kwok, kueue), `kueue/config/` (Kueue's CRDs, RBAC and webhook
//! manifests from its module), `kwok/stage/` (kwok's stage definitions), `src/` (the module),
//! `build.log`, and `ready.json`, written last, which marks the entry complete.

mod build;
pub mod sources;
pub mod versions;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sandbox::progress::Progress;

pub use build::{
    BUILD_TAGS, check_module_version, copy_tree, downloaded_module, go_version, ldflags, lock, log_tail, module_dir,
    remove_any, run_logged,
};

/// Errors of finding or building the toolchain; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    #[error(
        "Go was not found ({0}). The process runtime builds Kubernetes, etcd, kwok and Kueue from pinned Go \
         modules with the local Go toolchain: install Go 1.26 or newer and put `go` on PATH"
    )]
    GoMissing(String),
    #[error("{step} failed; see the build log {log}:\n{tail}")]
    BuildFailed { step: String, log: PathBuf, tail: String },
    #[error("toolchain check failed for {binary}: {reason} (log {log})")]
    Check { binary: String, reason: String, log: PathBuf },
    #[error("toolchain cache {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ToolchainError + '_ {
    move |source| ToolchainError::Io { path: path.to_path_buf(), source }
}

/// A complete toolchain on disk.
#[derive(Clone, Debug)]
pub struct Toolchain {
    root: PathBuf,
}

/// What `ready.json` records: enough to notice a truncated or replaced binary.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Stamp {
    key: String,
    binaries: Vec<(String, u64)>,
}

impl Toolchain {
    pub fn bin_dir(&self) -> PathBuf {
        self.root.join("bin")
    }

    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir().join(name)
    }

    /// The wrapper module the binaries were built from.
    pub fn src_dir(&self) -> PathBuf {
        self.root.join("src")
    }

    /// Kueue's `config/components` directory, as shipped in its Go module.
    pub fn kueue_components(&self) -> PathBuf {
        self.root.join("kueue/config/components")
    }

    /// Where add-ons (`up --addons`) are built, one directory each.
    pub fn addons_dir(&self) -> PathBuf {
        self.root.join("addons")
    }

    /// kwok's `kustomize/stage` directory, as shipped in its Go module.
    pub fn kwok_stages(&self) -> PathBuf {
        self.root.join("kwok/stage")
    }
}

/// Where cached toolchains live: `$KUEUE_EXT_CACHE`, else the XDG cache dir.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("KUEUE_EXT_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("kueue-ext")
}

/// Returns the cached toolchain, building it first when missing or damaged.
pub async fn ensure(progress: &Progress) -> Result<Toolchain, ToolchainError> {
    let go = go_version().await?;
    let key = versions::cache_key(&go);
    let root = cache_root().join("toolchain").join(&key);
    let toolchain = Toolchain { root: root.clone() };
    std::fs::create_dir_all(&root).map_err(io_err(&root))?;
    // Several sandboxes (or test processes) may ask at once: one builds, the others wait.
    let _lock = build::lock(&root).await?;
    match check_stamp(&toolchain, &key) {
        Ok(()) => return Ok(toolchain),
        Err(StampState::Missing) => {}
        Err(StampState::Damaged(why)) => {
            progress.line(format!("toolchain cache entry {} is damaged ({why}); rebuilding it", root.display()))
        }
    }
    build::build(&toolchain, &key, &go, progress).await?;
    Ok(toolchain)
}

/// The cached toolchain if it is complete, without building.
pub async fn find() -> Result<Option<Toolchain>, ToolchainError> {
    let go = go_version().await?;
    let key = versions::cache_key(&go);
    let toolchain = Toolchain { root: cache_root().join("toolchain").join(&key) };
    Ok(check_stamp(&toolchain, &key).is_ok().then_some(toolchain))
}

enum StampState {
    Missing,
    Damaged(String),
}

fn check_stamp(toolchain: &Toolchain, key: &str) -> Result<(), StampState> {
    let path = toolchain.root.join("ready.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Err(StampState::Missing);
    };
    let stamp: Stamp =
        serde_json::from_str(&text).map_err(|e| StampState::Damaged(format!("{}: {e}", path.display())))?;
    if stamp.key != key {
        return Err(StampState::Damaged(format!("stamp is for {}", stamp.key)));
    }
    for (name, size) in &stamp.binaries {
        match std::fs::metadata(toolchain.bin(name)) {
            Ok(meta) if meta.len() == *size => {}
            Ok(meta) => {
                return Err(StampState::Damaged(format!("{name} is {} bytes, expected {size}", meta.len())));
            }
            Err(err) => return Err(StampState::Damaged(format!("{name}: {err}"))),
        }
    }
    for component in sources::KUBE_COMPONENTS {
        if !toolchain.bin(component).exists() {
            return Err(StampState::Damaged(format!("{component} is missing")));
        }
    }
    if !toolchain.kueue_components().join("crd/bases").is_dir() {
        return Err(StampState::Damaged("Kueue manifests are missing".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_entry(dir: &Path, key: &str) -> Toolchain {
        let toolchain = Toolchain { root: dir.to_path_buf() };
        std::fs::create_dir_all(toolchain.bin_dir()).unwrap();
        std::fs::create_dir_all(toolchain.kueue_components().join("crd/bases")).unwrap();
        std::fs::write(toolchain.bin("kube"), b"12345").unwrap();
        for c in sources::KUBE_COMPONENTS {
            std::fs::write(toolchain.bin(c), b"").unwrap();
        }
        let stamp = Stamp { key: key.into(), binaries: vec![("kube".into(), 5)] };
        std::fs::write(dir.join("ready.json"), serde_json::to_string(&stamp).unwrap()).unwrap();
        toolchain
    }

    #[test]
    fn complete_entry_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let toolchain = fake_entry(dir.path(), "k");
        assert!(check_stamp(&toolchain, "k").is_ok());
    }

    #[test]
    fn truncated_binary_marks_the_entry_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let toolchain = fake_entry(dir.path(), "k");
        std::fs::write(toolchain.bin("kube"), b"12").unwrap();
        assert!(
            matches!(check_stamp(&toolchain, "k"), Err(StampState::Damaged(why)) if why.contains("kube is 2 bytes"))
        );
    }

    #[test]
    fn garbage_stamp_marks_the_entry_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let toolchain = fake_entry(dir.path(), "k");
        std::fs::write(dir.path().join("ready.json"), b"{not json").unwrap();
        assert!(matches!(check_stamp(&toolchain, "k"), Err(StampState::Damaged(_))));
    }

    #[test]
    fn entry_without_stamp_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let toolchain = Toolchain { root: dir.path().to_path_buf() };
        assert!(matches!(check_stamp(&toolchain, "k"), Err(StampState::Missing)));
    }
}
