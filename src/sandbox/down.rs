//! `down`: stop every process the sandbox recorded and remove everything it wrote.

use std::path::Path;
use std::time::Duration;

use futures::future::join_all;

use super::error::SandboxError;
use super::state::SandboxState;

/// How long a component gets to exit on SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, PartialEq)]
pub enum DownOutcome {
    Removed { processes: usize },
    NothingThere,
}

pub async fn down(dir: &Path) -> Result<DownOutcome, SandboxError> {
    let state = match SandboxState::load(dir) {
        Ok(Some(state)) => state,
        Ok(None) if dir.exists() => {
            // A dir without a record (e.g. `up` died before its first save): nothing runs.
            std::fs::remove_dir_all(dir).map_err(SandboxError::io(dir))?;
            return Ok(DownOutcome::Removed { processes: 0 });
        }
        Ok(None) => return Ok(DownOutcome::NothingThere),
        Err(e) => return Err(SandboxError::io(dir)(e)),
    };
    let processes = stop_processes(&state).await;
    undo_outside_changes(&state);
    std::fs::remove_dir_all(dir).map_err(SandboxError::io(dir))?;
    Ok(DownOutcome::Removed { processes })
}

/// Stops every recorded process (all at once: nothing is kept, so order does not matter, and
/// waiting for each in turn would only add up grace periods). Returns how many were running.
pub async fn stop_processes(state: &SandboxState) -> usize {
    let running: Vec<_> = state.processes_in_stop_order().into_iter().filter(|(_, c)| c.process.is_running()).collect();
    join_all(running.iter().map(|(_, c)| c.process.stop(GRACE))).await;
    running.len()
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
