//! `down`: stop (or delete) everything the sandbox recorded and remove everything it wrote.

use std::path::Path;

use super::error::SandboxError;
use super::kind::{BollardDocker, KindCli, KindError, KindRuntime};
use super::process_runtime::ProcessRuntime;
use super::runtime::{ClusterRuntime, RuntimeKind};
use super::state::SandboxState;

#[derive(Debug, PartialEq)]
pub enum DownOutcome {
    /// `stopped` counts processes (process runtime) or kind clusters (kind runtime).
    Removed {
        runtime: Option<RuntimeKind>,
        stopped: usize,
    },
    NothingThere,
}

pub async fn down(dir: &Path) -> Result<DownOutcome, SandboxError> {
    let state = match SandboxState::load(dir) {
        Ok(Some(state)) => state,
        Ok(None) if dir.exists() => {
            // A dir without a record (e.g. `up` died before its first save): nothing runs.
            std::fs::remove_dir_all(dir).map_err(SandboxError::io(dir))?;
            return Ok(DownOutcome::Removed { runtime: None, stopped: 0 });
        }
        Ok(None) => return Ok(DownOutcome::NothingThere),
        Err(e) => return Err(SandboxError::io(dir)(e)),
    };
    let stopped = match state.runtime {
        RuntimeKind::Process => ProcessRuntime::recorded().teardown(&state).await?,
        RuntimeKind::Kind => kind_runtime(&state)?.teardown(&state).await?,
    };
    undo_outside_changes(&state);
    std::fs::remove_dir_all(dir).map_err(SandboxError::io(dir))?;
    Ok(DownOutcome::Removed { runtime: Some(state.runtime), stopped })
}

/// The kind runtime that deletes the recorded clusters; it needs the kind CLI when there are any.
fn kind_runtime(state: &SandboxState) -> Result<KindRuntime<KindCli, BollardDocker>, KindError> {
    let clusters: Vec<&str> = state.clusters.iter().filter_map(|c| c.kind_cluster.as_deref()).collect();
    let kind = match KindCli::from_path() {
        Some(kind) => kind,
        None if clusters.is_empty() => KindCli::new("kind".into()),
        None => return Err(KindError::KindMissingForDown { clusters: clusters.join(", ") }),
    };
    Ok(KindRuntime::recorded(kind, BollardDocker::connect()))
}

/// Undoes what the sandbox changed outside its state dir: the files, then the (then empty)
/// directories it created — a directory someone else filled meanwhile stays — and the contexts
/// it merged into the user's kubeconfig.
pub fn undo_outside_changes(state: &SandboxState) {
    for path in &state.external_files {
        let _ = if path.is_dir() { std::fs::remove_dir(path) } else { std::fs::remove_file(path) };
    }
    if let Some(path) = &state.merged_kubeconfig {
        let contexts: Vec<String> = state.clusters.iter().map(|c| c.context.clone()).collect();
        if let Err(err) = super::kubeconfig::unmerge(path, &contexts) {
            eprintln!("warning: could not remove the sandbox contexts from {}: {err}", path.display());
        }
    }
}
