//! `down`: stop (or delete) everything the sandbox recorded and remove everything it wrote; and
//! the same for a failed `up`, which keeps the logs its error points to.

use std::path::Path;

use super::KUBECONFIG_FILE;
use super::chosen_runtime::ChosenRuntime;
use super::error::SandboxError;
use super::record::{RuntimeKind, SandboxRecord, SandboxState};
use super::runtime::ClusterRuntime;

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
            // `up` records the sandbox right after creating its dir, so an empty dir is all it
            // can leave without a record. Anything else is not ours to delete.
            return match std::fs::remove_dir(dir) {
                Ok(()) => Ok(DownOutcome::Removed { runtime: None, stopped: 0 }),
                Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                    Err(SandboxError::NotASandbox { dir: dir.to_path_buf() })
                }
                Err(e) => Err(SandboxError::io(dir)(e)),
            };
        }
        Ok(None) => return Ok(DownOutcome::NothingThere),
        Err(e) => return Err(SandboxError::io(dir)(e)),
    };
    let stopped = ChosenRuntime::to_remove(&state)?.teardown(&state).await?;
    undo_outside_changes(&state);
    std::fs::remove_dir_all(dir).map_err(SandboxError::io(dir))?;
    Ok(DownOutcome::Removed { runtime: Some(state.runtime), stopped })
}

/// Stops everything `up` started so far and removes the state, keeping only the logs so the
/// error message's log paths stay readable (`down` removes them).
pub async fn abandon(record: &SandboxRecord, runtime: &impl ClusterRuntime) {
    let mut state = record.snapshot();
    let torn_down = match runtime.teardown(&state).await {
        Ok(_) => true,
        Err(err) => {
            eprintln!("warning: {err}; `kubectl kueue-ext down` tries again");
            false
        }
    };
    undo_outside_changes(&state);
    for cluster in &state.clusters {
        if let Ok(entries) = std::fs::read_dir(&cluster.dir) {
            for entry in entries.flatten().filter(|e| e.file_name() != "logs") {
                let path = entry.path();
                let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
            }
        }
    }
    let _ = std::fs::remove_file(record.dir.join(KUBECONFIG_FILE));
    // Keep a record with no processes, so `status` explains and `down` cleans up.
    state.merged_kubeconfig = None;
    for cluster in &mut state.clusters {
        cluster.components.clear();
        if torn_down {
            cluster.kind_cluster = None;
        }
    }
    let _ = state.save(&record.dir);
}

/// Undoes what the sandbox changed outside its state dir: the contexts it merged into the
/// user's kubeconfig.
fn undo_outside_changes(state: &SandboxState) {
    if let Some(path) = &state.merged_kubeconfig {
        let contexts: Vec<String> = state.clusters.iter().map(|c| c.context.clone()).collect();
        if let Err(err) = super::kubeconfig::unmerge(path, &contexts) {
            eprintln!("warning: could not remove the sandbox contexts from {}: {err}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_directory_without_a_sandbox_record_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir_all(state.join("manager")).unwrap();
        std::fs::write(state.join("manager/notes.txt"), "not the sandbox's").unwrap();
        let refused = down(dir.path()).await.expect_err("no record: nothing to stop, nothing to delete");
        assert!(refused.to_string().contains("state.json"), "{refused}");
        assert!(state.join("manager/notes.txt").exists(), "down deleted what it did not record");
    }

    #[tokio::test]
    async fn an_empty_directory_left_by_an_interrupted_up_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("kueue-ext");
        std::fs::create_dir(&state).unwrap();
        assert_eq!(down(&state).await.unwrap(), DownOutcome::Removed { runtime: None, stopped: 0 });
        assert!(!state.exists());
        assert_eq!(down(&state).await.unwrap(), DownOutcome::NothingThere);
    }
}
