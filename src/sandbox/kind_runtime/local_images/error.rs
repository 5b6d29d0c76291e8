//! What can go wrong building the kind runtime's local images; each says what to do.

use std::path::{Path, PathBuf};

use crate::sandbox::toolchain::ToolchainError;

#[derive(Debug, thiserror::Error)]
pub enum LocalImageError {
    #[error(
        "building the kind node image needs root (debootstrap makes its root filesystem): run `up` as root once, or use published images with --kind-images published"
    )]
    NeedsRoot,
    #[error("cannot run `{program}` ({source}): {hint}")]
    Missing {
        program: String,
        hint: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{step} failed; see {log}:\n{tail}")]
    Step { step: String, log: PathBuf, tail: String },
    #[error("the kind image cache {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
}

impl LocalImageError {
    pub fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LocalImageError + '_ {
        move |source| LocalImageError::Io { path: path.to_path_buf(), source }
    }
}
