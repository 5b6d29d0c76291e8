//! Which runtime `up` uses: kind where a Docker daemon answers and `kind` is on PATH, the
//! process runtime elsewhere, or what `--runtime` asks for — always with the reason.

use std::path::PathBuf;

use super::docker::Docker;
use super::error::KindError;
use crate::sandbox::runtime::RuntimeKind;

#[derive(Debug, PartialEq)]
pub struct Selection {
    pub runtime: RuntimeKind,
    /// Why, in words, for the "Runtime: …" line.
    pub reason: String,
    /// The kind CLI, when the runtime is kind.
    pub kind: Option<PathBuf>,
}

/// Picks the runtime; `asked` is `--runtime` (`None`: automatic).
pub async fn select(
    asked: Option<RuntimeKind>,
    docker: &impl Docker,
    kind: Option<PathBuf>,
) -> Result<Selection, KindError> {
    let process = |reason: String| Selection { runtime: RuntimeKind::Process, reason, kind: None };
    match asked {
        Some(RuntimeKind::Process) => Ok(process("--runtime process".into())),
        Some(RuntimeKind::Kind) => {
            let info = docker.ping().await?;
            let kind = kind.ok_or(KindError::KindMissing)?;
            Ok(Selection {
                runtime: RuntimeKind::Kind,
                reason: format!("--runtime kind; Docker {} at {}, {}", info.version, info.host, kind.display()),
                kind: Some(kind),
            })
        }
        None => match (docker.ping().await, kind) {
            (Err(KindError::DockerMissing { host, detail } | KindError::DockerNotRunning { host, detail }), _) => {
                Ok(process(format!("no Docker daemon answers at {host}: {detail}")))
            }
            (Err(other), _) => Ok(process(format!("Docker cannot be used: {other}"))),
            (Ok(info), None) => {
                Ok(process(format!("Docker {} answers at {}, but `kind` is not on PATH", info.version, info.host)))
            }
            (Ok(info), Some(kind)) => Ok(Selection {
                runtime: RuntimeKind::Kind,
                reason: format!("Docker {} answers at {} and kind is at {}", info.version, info.host, kind.display()),
                kind: Some(kind),
            }),
        },
    }
}
