//! `up --from FILE`: a sandbox that reproduces a capture. From the archive ([`crate::capture`])
//! a [`Replay`] is planned before anything starts, by pure functions: objects as a user would
//! write them ([`strip`]), Kueue's settings ([`config`]), nodes grouped and scaled ([`nodes`]),
//! and stand-ins for what the sandbox cannot run ([`stand_ins`]). `up` then starts the clusters
//! as always, with the plan's Kueue settings and MultiKueueCluster names, and applies the rest
//! where it would create its default queues.

mod config;
mod nodes;
mod stand_ins;
mod strip;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use kube::Client;
use serde_json::Value;

use super::cluster_setup::addons::Addon;
use super::cluster_setup::kueue::runs_framework;
use crate::api::kueue::Role;
use crate::capture::{CapturedCluster, OpenError, Opened};
use crate::integrations::declarative::config::{ConfigError, Integration, IntegrationConfig};
use crate::jobframework::api_error;
use crate::kube_util::{self, ApplyError};

pub use config::overlay as overlay_kueue_settings;
pub use stand_ins::STAND_IN;

/// Kueue's objects replayed, by file, in the order they are applied: what an object names
/// exists before it (a ClusterQueue's flavors, cohort and checks; a LocalQueue's ClusterQueue).
const QUEUE_FILES: [&str; 8] = [
    "workloadpriorityclasses.json",
    "resourceflavors.json",
    "topologies.json",
    "cohorts.json",
    "multikueueconfigs.json",
    "admissionchecks.json",
    "clusterqueues.json",
    "localqueues.json",
];

/// What `up --from` is asked for besides the archive.
#[derive(Clone, Copy, Debug)]
pub struct ReplayOptions {
    /// The fraction of each group of identical nodes kept.
    pub scale: f64,
    /// Whether the captured jobs are created again.
    pub with_jobs: bool,
}

/// A sandbox that reproduces a capture, planned.
#[derive(Clone, Debug)]
pub struct Replay {
    pub source: PathBuf,
    /// The kinds our controller ran (the manager's integrations file), on every cluster.
    pub integrations: Vec<Integration>,
    /// The manager, then each worker in capture order.
    pub clusters: Vec<ClusterReplay>,
    /// What is not reproduced as captured, and what stands in for it, in words.
    pub not_as_captured: Vec<String>,
}

/// What one sandbox cluster gets from its captured cluster.
#[derive(Clone, Debug)]
pub struct ClusterReplay {
    /// Its name in the sandbox (`manager`, `worker1`) and in the capture.
    pub name: String,
    pub captured: String,
    /// Laid over the sandbox's own Kueue Configuration.
    pub kueue_settings: Value,
    /// Namespaces, then Kueue's objects in [`QUEUE_FILES`] order.
    pub objects: Vec<Value>,
    pub nodes: Vec<Value>,
    /// Jobs in the order they were created.
    pub jobs: Vec<Value>,
    /// On the manager: the MultiKueueCluster name of each sandbox worker.
    pub multikueue_clusters: Vec<String>,
}

impl Replay {
    pub fn workers(&self) -> u32 {
        self.clusters.len().saturating_sub(1) as u32
    }

    pub fn cluster(&self, name: &str) -> Option<&ClusterReplay> {
        self.clusters.iter().find(|c| c.name == name)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Integrations(#[from] ConfigError),
    #[error("{0}: capture.json: no cluster has role manager")]
    NoManager(PathBuf),
}

/// Plans the sandbox that reproduces `opened`; `addons` are those the sandbox runs.
pub fn plan(opened: &Opened, options: ReplayOptions, addons: &[Addon]) -> Result<Replay, ReplayError> {
    let manager = opened
        .clusters
        .iter()
        .find(|c| c.entry.role == Role::Manager)
        .ok_or_else(|| ReplayError::NoManager(opened.path.clone()))?;
    let workers: Vec<&CapturedCluster> = opened.clusters.iter().filter(|c| c.entry.role == Role::Worker).collect();
    let integrations = match manager.integrations()? {
        Some((origin, text)) => IntegrationConfig::parse(&origin, &text)?.integrations,
        None => Vec::new(),
    };
    let ours = crate::manifests::external_frameworks(&integrations);
    let enabled = |name: &str| runs_framework(addons, name);
    let mut said = Vec::new();
    let (names, unmapped) = stand_ins::worker_names(&manager.list("multikueueclusters.json")?, workers.len());
    let sandbox_names = std::iter::once("manager".to_string()).chain((1..=workers.len()).map(|i| format!("worker{i}")));
    let mut clusters = Vec::new();
    for (name, captured) in sandbox_names.zip(std::iter::once(manager).chain(workers.iter().copied())) {
        let mut say = |what: String| said.push(format!("{name} (captured {}): {what}", captured.name()));
        let is_manager = name == "manager";
        let kueue_settings = match captured.kueue_configuration()? {
            Some(configuration) => {
                let (settings, left) = config::settings(&configuration, &enabled, &ours);
                left.into_iter().for_each(|l| say(format!("Kueue's Configuration: {l}")));
                settings
            }
            None => {
                say("Kueue's Configuration was not captured: the sandbox's own is used".into());
                Value::Object(Default::default())
            }
        };
        let kept = if is_manager { names.clone() } else { Vec::new() };
        let objects = queue_objects(captured, is_manager && !workers.is_empty(), &kept, &mut say)?;
        let nodes = nodes::replayed(&captured.list("nodes.json")?, options.scale);
        let jobs = jobs(captured, options.with_jobs, &mut say)?;
        let mut all =
            strip::namespaces(objects.iter().chain(&jobs)).iter().map(|n| strip::namespace(n)).collect::<Vec<_>>();
        all.extend(objects);
        clusters.push(ClusterReplay {
            name: name.clone(),
            captured: captured.name().to_string(),
            kueue_settings,
            objects: all,
            nodes,
            jobs,
            multikueue_clusters: kept,
        });
    }
    if !unmapped.is_empty() {
        said.push(format!(
            "manager: MultiKueueCluster(s) {} not created: the capture holds no worker cluster for them",
            unmapped.join(", ")
        ));
    }
    Ok(Replay { source: opened.path.clone(), integrations, clusters, not_as_captured: said })
}

/// A cluster's Kueue objects, stripped, with stand-ins for the admission checks and
/// MultiKueueClusters the sandbox cannot run. MultiKueueClusters themselves are made by the
/// sandbox's wiring, under their captured names.
fn queue_objects(
    captured: &CapturedCluster,
    multikueue: bool,
    workers: &[String],
    say: &mut dyn FnMut(String),
) -> Result<Vec<Value>, OpenError> {
    let checks = captured.list("admissionchecks.json")?;
    let dropped = stand_ins::unreproducible_checks(&checks, multikueue);
    let mut out = Vec::new();
    for file in QUEUE_FILES {
        for item in captured.list(file)? {
            let name = item["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let kind = item["kind"].as_str().unwrap_or_default().to_string();
            let object = strip::object(&item);
            let (object, words) = match kind.as_str() {
                "AdmissionCheck" if dropped.contains_key(&name) => {
                    say(format!("AdmissionCheck {name} not created: {}", dropped[&name]));
                    continue;
                }
                "MultiKueueConfig" if !multikueue => {
                    say(format!("MultiKueueConfig {name} not created: MultiKueue runs on a manager of workers only"));
                    continue;
                }
                "ClusterQueue" => stand_ins::without_checks(&object, &dropped),
                "MultiKueueConfig" => stand_ins::with_clusters(&object, workers),
                _ => (object, None),
            };
            if let Some(words) = words {
                say(format!("{kind} {name} is a stand-in ({STAND_IN}): {words}"));
            }
            out.push(object);
        }
    }
    Ok(out)
}

/// The cluster's jobs to create again, oldest first so that Kueue queues them in the captured
/// order; what is not created is said.
fn jobs(captured: &CapturedCluster, with_jobs: bool, say: &mut dyn FnMut(String)) -> Result<Vec<Value>, OpenError> {
    let mut dated = Vec::new();
    let mut skipped: std::collections::BTreeMap<&str, usize> = Default::default();
    for file in captured.job_files() {
        for job in captured.list(file)? {
            match strip::not_replayed(&job) {
                Some(why) => *skipped.entry(why).or_default() += 1,
                None => {
                    let created = job["metadata"]["creationTimestamp"].as_str().unwrap_or_default().to_string();
                    dated.push((created, strip::job(&job)));
                }
            }
        }
    }
    if !with_jobs {
        if !dated.is_empty() {
            say(format!("{} job(s) not created (--with-jobs creates them)", dated.len()));
        }
        return Ok(Vec::new());
    }
    for (why, count) in skipped {
        say(format!("{count} job(s) not created: {why}, made again from what is replayed"));
    }
    // RFC 3339 in UTC, as the API server writes it: in text order is in time order.
    dated.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(dated.into_iter().map(|(_, job)| job).collect())
}

/// Applies a cluster's namespaces, Kueue objects and nodes. A kind the cluster does not serve
/// is said and skipped; any other refusal fails `up`.
pub async fn apply_setup(client: &Client, cluster: &ClusterReplay) -> Result<Vec<String>, ApplyError> {
    let mut said = apply_all(client, &cluster.name, &cluster.objects).await?;
    said.extend(apply_all(client, &cluster.name, &cluster.nodes).await?);
    Ok(said)
}

/// Creates the cluster's captured jobs again, once its queues and MultiKueue are ready.
pub async fn apply_jobs(client: &Client, cluster: &ClusterReplay) -> Result<Vec<String>, ApplyError> {
    apply_all(client, &cluster.name, &cluster.jobs).await
}

async fn apply_all(client: &Client, cluster: &str, objects: &[Value]) -> Result<Vec<String>, ApplyError> {
    let mut said = Vec::new();
    for object in objects {
        match kube_util::apply(client, object).await {
            Ok(_) => {}
            Err(ApplyError::Api { kind, name, source }) if not_served(&source) => {
                let version = object["apiVersion"].as_str().unwrap_or_default();
                said.push(format!("{cluster}: {kind} {name} not created: {version} is not served there"));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(said)
}

/// The API server has no such kind: its group or version is unknown, or the group lacks it.
fn not_served(error: &kube::Error) -> bool {
    api_error::is_unserved(error) || matches!(error, kube::Error::Discovery(_))
}
