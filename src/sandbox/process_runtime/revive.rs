//! `up` on a process-runtime sandbox some of whose components died after start-up: each dead
//! one is started again from the command it was recorded with, in start order, as a
//! supervisor would, and its new pid is recorded so `status` and `down` know it.

use std::path::Path;

use super::health::Prober;
use super::kueue;
use super::process::{self, Launch};
use super::wait_ready;
use crate::sandbox::error::SandboxError;
use crate::sandbox::progress::Progress;
use crate::sandbox::record::SandboxState;

/// Restarts every dead component of `state` (saved after each start) and waits until each
/// serves; returns `component of cluster` for each one restarted.
pub async fn revive(dir: &Path, state: &mut SandboxState, progress: &Progress) -> Result<Vec<String>, SandboxError> {
    let mut revived = Vec::new();
    for c in 0..state.clusters.len() {
        for i in 0..state.clusters[c].components.len() {
            let cluster = &state.clusters[c];
            let component = &cluster.components[i];
            if component.process.is_running() {
                continue;
            }
            let (cluster_name, cluster_dir) = (cluster.name.clone(), cluster.dir.clone());
            let Some((program, args)) = component.command.split_first() else {
                return Err(SandboxError::step(
                    &cluster_name,
                    format!("restarting {}", component.name),
                    "its command was not recorded (a sandbox from an older version); run `down` and `up`",
                ));
            };
            let what = format!("{} of cluster {cluster_name}", component.name);
            let step = progress.step(format!("restarting {what}, which had stopped"));
            if component.name == "kueue" {
                kueue::ensure_metrics_cert()
                    .map_err(|e| SandboxError::step(&cluster_name, "restoring Kueue's metrics certificate", e))?;
            }
            let launch = Launch {
                program: Path::new(program),
                args: args.to_vec(),
                env: vec![],
                log: component.process.log.clone(),
            };
            let record = process::spawn(launch)
                .map_err(|e| SandboxError::step(&cluster_name, format!("restarting {}", component.name), e))?;
            state.clusters[c].components[i].process = record;
            state.save(dir).map_err(SandboxError::io(dir))?;
            let mut prober = Prober::for_cluster_dir(&cluster_dir).map_err(SandboxError::io(&cluster_dir))?;
            wait_ready(&cluster_name, &state.clusters[c].components[i], &mut prober).await?;
            step.done();
            revived.push(what);
        }
    }
    Ok(revived)
}
