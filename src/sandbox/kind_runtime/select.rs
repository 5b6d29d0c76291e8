//! Which runtime `up` uses: kind where a Docker daemon answers, the process runtime elsewhere,
//! or what `--runtime` asks for — always with the reason.

use super::docker::Docker;
use super::error::KindError;
use crate::sandbox::record::RuntimeKind;

#[derive(Debug, PartialEq)]
pub struct Selection {
    pub runtime: RuntimeKind,
    /// Why, in words, for the "Runtime: …" line.
    pub reason: String,
}

/// Picks the runtime; `asked` is `--runtime` (`None`: automatic). kind itself is built from its
/// pinned module, so only Docker decides.
pub async fn select(asked: Option<RuntimeKind>, docker: &impl Docker) -> Result<Selection, KindError> {
    let process = |reason: String| Selection { runtime: RuntimeKind::Process, reason };
    let kind = |reason: String| Selection { runtime: RuntimeKind::Kind, reason };
    match asked {
        Some(RuntimeKind::Process) => Ok(process("--runtime process".into())),
        Some(RuntimeKind::Kind) => {
            let info = docker.ping().await?;
            Ok(kind(format!("--runtime kind; Docker {} at {}", info.version, info.host)))
        }
        None => match docker.ping().await {
            Err(KindError::DockerMissing { host, detail } | KindError::DockerNotRunning { host, detail }) => {
                Ok(process(format!("no Docker daemon answers at {host}: {detail}")))
            }
            Err(other) => Ok(process(format!("Docker cannot be used: {other}"))),
            Ok(info) => Ok(kind(format!("Docker {} answers at {}", info.version, info.host))),
        },
    }
}
