//! `explain KIND/NAME`: the "Why" of the `watch` detail view, printed. It reads the clusters
//! through the same watches and the same join, so both always say the same thing; then what
//! `doctor` finds wrong with the setup the job goes through.

use std::process::ExitCode;

use super::output::{self, Output};
use super::watch::{Clusters, SETTLE};
use crate::api::kueue::MULTIKUEUE_CONTROLLER;
use crate::doctor::{self, Finding, JobPath};
use crate::explain::{PodProblemAt, explanation};
use crate::integrations::registry::{JobKind, KindRegistry};
use crate::model::snapshot::Role;
use crate::model::source::Source;
use crate::model::{QueuePosition, Timeline, join, problems_text};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job: `NAME` (an ExternalJob), or `KIND/NAME` for any kind the cluster runs
    /// (`wrappedjob/NAME`, `wj/NAME`, `job/NAME`, `pipelinerun.tekton.dev/NAME`).
    #[arg(value_name = "[KIND/]NAME", value_parser = job_reference)]
    pub job: String,
    #[command(flatten)]
    pub clusters: Clusters,
    /// Namespace [default: the context's, else default]
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// Output format: json or yaml, the reasons with the job they explain [default: the reasons
    /// as lines]
    #[arg(short, long, value_name = "FORMAT", value_parser = output::accepting(&[Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
}

/// What `-o json|yaml` prints: the reasons as printed without the next steps, which follow
/// apart, as does the problem of the job's pods.
#[derive(serde::Serialize)]
struct Explained<'a> {
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    cluster: &'a str,
    reasons: Vec<String>,
    next_steps: Vec<String>,
    pod_problem: Option<PodProblemAt>,
    /// While it waits in a queue: its positions and who is ahead.
    queue: Option<&'a QueuePosition>,
    /// What MultiKueue did with it, step by step, once it sent it to a worker.
    multikueue: Option<&'a Timeline>,
    /// What `doctor` finds wrong with the setup the job goes through.
    setup: Vec<&'a Finding>,
}

/// A reference checked for its shape before any cluster is asked (which kinds exist is the
/// cluster's to say).
fn job_reference(text: &str) -> Result<String, String> {
    let (kind, name) = text.split_once('/').unwrap_or(("externaljob", text));
    if kind.is_empty() || name.is_empty() || name.contains('/') {
        return Err("a job is NAME or KIND/NAME (e.g. too-big, wj/train, job/pi)".into());
    }
    Ok(text.to_string())
}

/// The kind and name of a job reference, among the kinds the cluster runs.
fn kind_of<'a>(reference: &'a str, registry: &KindRegistry) -> Result<(JobKind, &'a str), String> {
    let (kind, name) = reference.split_once('/').unwrap_or(("externaljob", reference));
    match registry.by_alias(kind) {
        Some(kind) => Ok((kind.clone(), name)),
        None => Err(format!("unknown job kind {kind:?}: this cluster runs {} (KIND/NAME)", registry.names())),
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let targets = args.clusters.reachable_targets().await?;
    let doctor_targets = targets.clone();
    let namespace = match &args.namespace {
        Some(namespace) => namespace.clone(),
        None => targets.manager_namespace().unwrap_or_else(|| "default".into()),
    };
    let mut source = Source::start(targets, Some(&namespace)).await;
    let (kind, name) = kind_of(&args.job, source.registry()).map_err(anyhow::Error::msg)?;
    source.settle(SETTLE).await;
    let mut snapshot = source.snapshot();
    source.read_visibility(&mut snapshot).await;
    let model = join(&snapshot);
    let matching =
        |row: &&crate::model::JobRow| row.key.kind == kind && row.key.namespace == namespace && row.key.name == name;
    // The user's copy on the manager first; a job that lives only on a worker otherwise.
    let manager = model.clusters.iter().find(|c| c.role == Role::Manager).map(|c| c.name.as_str());
    let row = model
        .jobs
        .iter()
        .filter(matching)
        .find(|row| Some(row.key.cluster.as_str()) == manager)
        .or_else(|| model.jobs.iter().find(matching));
    let Some(row) = row else {
        eprintln!("error: {} {namespace}/{name} not found", kind.name());
        for cluster in snapshot.clusters.iter().filter(|c| !c.reachable) {
            eprintln!("(cluster {} could not be read: {})", cluster.name, problems_text(&cluster.problems));
        }
        return Ok(ExitCode::FAILURE);
    };
    let explanation = explanation(row, &model);
    let facts = doctor::read(&doctor_targets).await;
    let report = doctor::check(&facts, k8s_openapi::jiff::Timestamp::now().as_second());
    let cluster_queue = row.workload.as_ref().and_then(|w| w.cluster_queue()).map(String::from).or_else(|| {
        let queue = row.queue.as_deref()?;
        model.local_queue(&row.key.cluster, &namespace, queue).map(|q| q.cluster_queue.clone())
    });
    let path = JobPath {
        kind: kind.name(),
        namespace: &namespace,
        name,
        workload: row.workload.as_ref().map(|w| w.name.as_str()),
        local_queue: row.queue.as_deref(),
        cluster_queue: cluster_queue.as_deref(),
        through_multikueue: row.job.managed_by.as_deref() == Some(MULTIKUEUE_CONTROLLER) || !row.mirrors.is_empty(),
    };
    let setup = doctor::bearing_on(&report.findings, &path);
    let explained = Explained {
        kind: kind.name(),
        namespace: &namespace,
        name,
        cluster: &row.key.cluster,
        reasons: explanation.reasons(),
        next_steps: explanation.next_steps(),
        pod_problem: explanation.pod_problem.clone(),
        queue: row.queue_position.as_ref(),
        multikueue: row.multikueue.as_ref(),
        setup,
    };
    match args.output.unwrap_or_default() {
        Output::Json => println!("{}", serde_json::to_string_pretty(&explained)?),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&explained)?),
        _ => {
            explanation.lines().iter().for_each(|line| println!("{line}"));
            if let Some(timeline) = &explained.multikueue {
                println!("multikueue (UTC):");
                timeline.lines().iter().for_each(|line| println!("  {line}"));
            }
            if !explained.setup.is_empty() {
                println!("setup (what doctor finds on the way):");
            }
            for finding in &explained.setup {
                let object = finding.object.as_ref().map(|o| format!(" {o}:")).unwrap_or_default();
                println!("  {} on {}:{object} {}", finding.severity, finding.cluster, finding.problem);
                if let Some(fix) = &finding.fix {
                    println!("    fix: {fix}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::declarative::config::IntegrationConfig;

    #[test]
    fn job_references_resolve_like_kubectl() {
        let registry = KindRegistry::built_in();
        let resolve = |reference| kind_of(reference, &registry).map(|(kind, name)| (kind.name().to_string(), name));
        assert_eq!(resolve("train").unwrap(), ("ExternalJob".into(), "train"));
        assert_eq!(resolve("job/sample").unwrap(), ("Job".into(), "sample"));
        for reference in ["wrappedjob/train", "wj/train", "WrappedJobs/train"] {
            assert_eq!(resolve(reference).unwrap(), ("WrappedJob".into(), "train"));
        }
        assert_eq!(
            resolve("pod/x").unwrap_err(),
            "unknown job kind \"pod\": this cluster runs ExternalJob, WrappedJob, Job, JobSet, PyTorchJob (KIND/NAME)"
        );
    }

    #[test]
    fn a_malformed_reference_is_refused_before_any_cluster_is_asked() {
        for bad in ["", "/x", "job/", "job/a/b"] {
            assert!(job_reference(bad).is_err(), "{bad:?}");
        }
        assert_eq!(job_reference("wj/train").unwrap(), "wj/train");
    }

    #[test]
    fn a_configured_kind_is_a_job_reference_too() {
        let text = std::fs::read_to_string("samples/addons/tekton/pipelinerun-integration.yaml").unwrap();
        let config = IntegrationConfig::parse("pipelinerun-integration.yaml", &text).unwrap();
        let registry = KindRegistry::with_configured(&config, "pipelinerun-integration.yaml");
        let (kind, name) = kind_of("pipelineruns.tekton.dev/build", &registry).unwrap();
        assert_eq!((kind.qualified(), name), ("PipelineRun.v1.tekton.dev", "build"));
    }
}
