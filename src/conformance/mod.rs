//! `conformance`: Kueue's jobframework contract, checked against any integrated kind on a
//! sandbox or on clusters of one's own. The checks create the kind's sample in namespaces of
//! their own and judge what the cluster does with it; the verdicts are pure functions of the
//! objects they observed.

pub mod catalog;
mod checks;
pub mod diff;
pub mod kinds;
pub mod report;
pub mod samples;
mod scene;
pub mod setup;
pub mod target;
pub mod verdict;

use std::path::PathBuf;
use std::time::Instant;

use futures::future::join_all;

use catalog::{Check, Scope};
use checks::Suite;
use kinds::{Description, Source};
use report::{CheckOutcome, CheckResult, Evidence, Report};
use scene::Scene;
use setup::{RUN_LABEL, Run, SetupError, delete_namespace};
use target::Target;

pub struct Options {
    /// `Kind.version.group`.
    pub kind: String,
    pub sample: Option<PathBuf>,
    /// Leave the run's namespaces and queues in place to look at.
    pub keep: bool,
}

/// Runs every check at once, each in its own namespace, and removes what the run created
/// (unless asked to keep it).
pub async fn run(target: &Target, options: &Options) -> Result<Report, ConformanceError> {
    let description = kinds::describe(&options.kind, &target.kinds)?;
    let sample = samples::load(&description.integration, options.sample.as_deref())?;
    let run = Run::start(&target.single.client).await;
    let created = create_queues(target, &run).await;
    let results = match created {
        Ok(()) => {
            let suite = Suite { description: &description, sample: &sample, run: &run };
            join_all(Check::ALL.map(|check| run_check(&suite, target, check))).await
        }
        Err(_) => Vec::new(),
    };
    if options.keep {
        eprintln!("{}", kept(target, &run));
    } else {
        clean_up(target, &run).await;
    }
    created?;

    let manager = target.multikueue.as_ref().map(|m| m.manager.name.as_str());
    let mut report =
        Report::new(description.kind(), &description.source_text(), &sample.source, &target.single.name, manager);
    for result in results {
        report.push(result);
    }
    Ok(report)
}

/// Why a run could not check anything.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    #[error(transparent)]
    Kind(#[from] kinds::KindError),
    #[error(transparent)]
    Sample(#[from] samples::SampleError),
    #[error("cannot create the run's queues: {0}")]
    Queues(#[from] SetupError),
}

async fn run_check(suite: &Suite<'_>, target: &Target, check: Check) -> CheckResult {
    let started = Instant::now();
    let namespace = suite.run.namespace(check);
    let integration = suite.description.integration.clone();
    let (cluster, verdict) = match check.scope() {
        Scope::SingleCluster => {
            let single = &target.single;
            let verdict =
                match suite.run.create_namespace(&single.client, &namespace, &suite.run.cluster_queue(), false).await {
                    Ok(()) => {
                        suite.check(check, &Scene::new(&single.name, &single.client, &namespace, integration)).await
                    }
                    Err(e) => Err(Evidence::new("a namespace with a LocalQueue for the check", e.to_string())),
                };
            (single.name.clone(), verdict)
        }
        Scope::MultiKueue => {
            let Some(multikueue) = &target.multikueue else {
                return skipped(check, "no MultiKueue workers");
            };
            if let Some(why) = not_through_multikueue(suite.description) {
                return skipped(check, &format!("MultiKueue cannot hand it to a worker: {why}"));
            }
            // MultiKueue creates the copy in the same namespace and LocalQueue on a worker.
            let mut ready = Ok(());
            for cluster in multikueue.workers.iter().chain([&multikueue.manager]) {
                if ready.is_ok() {
                    let queue = suite.run.multikueue_cluster_queue();
                    ready = suite
                        .run
                        .create_namespace(&cluster.client, &namespace, &queue, false)
                        .await
                        .map_err(|e| e.on(&cluster.name));
                }
            }
            let manager = &multikueue.manager;
            let verdict = match ready {
                Ok(()) => {
                    suite.check(check, &Scene::new(&manager.name, &manager.client, &namespace, integration)).await
                }
                Err(e) => {
                    Err(Evidence::new("a namespace with a LocalQueue on the manager and every worker", e.to_string()))
                }
            };
            (manager.name.clone(), verdict)
        }
    };
    CheckResult {
        check,
        title: check.title(),
        outcome: match verdict {
            Ok(()) => CheckOutcome::Pass,
            Err(evidence) => CheckOutcome::Fail { evidence },
        },
        cluster: Some(cluster),
        namespace: Some(namespace),
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Why MultiKueue cannot dispatch the kind, if it cannot. Kueue's built-in integrations have
/// adapters of their own; a kind by configuration goes through Kueue's generic adapter.
fn not_through_multikueue(description: &Description) -> Option<String> {
    let integration = &description.integration;
    match description.source {
        Source::Configured(_) => integration.why_not_through_multikueue(),
        Source::BuiltIn => integration.managed_by.is_none().then(|| "the kind has no managedBy field".to_string()),
    }
}

fn skipped(check: Check, reason: &str) -> CheckResult {
    CheckResult {
        check,
        title: check.title(),
        outcome: CheckOutcome::Skipped { reason: reason.into() },
        cluster: None,
        namespace: None,
        seconds: 0.0,
    }
}

async fn create_queues(target: &Target, run: &Run) -> Result<(), SetupError> {
    run.create_queues(&target.single.client).await?;
    if let Some(multikueue) = &target.multikueue {
        let workers: Vec<(&str, &kube::Client)> =
            multikueue.workers.iter().map(|w| (w.name.as_str(), &w.client)).collect();
        run.create_multikueue_queues(&multikueue.manager.client, &workers).await?;
    }
    Ok(())
}

/// What `--keep` left, and how to remove it.
fn kept(target: &Target, run: &Run) -> String {
    let clusters: Vec<&str> = target.clusters().iter().map(|c| c.name.as_str()).collect();
    format!(
        "kept on {}: the run's namespaces and queues, labelled {RUN_LABEL}={id}. Remove them on each cluster with \
         `kubectl delete namespace,clusterqueue,resourceflavor,admissioncheck,multikueueconfig -l {RUN_LABEL}={id}`",
        clusters.join(", "),
        id = run.id,
    )
}

async fn clean_up(target: &Target, run: &Run) {
    let single = &target.single.client;
    for check in Check::ALL {
        match (check.scope(), &target.multikueue) {
            (Scope::SingleCluster, _) => delete_namespace(single, &run.namespace(check)).await,
            (Scope::MultiKueue, Some(multikueue)) => {
                for cluster in multikueue.workers.iter().chain([&multikueue.manager]) {
                    delete_namespace(&cluster.client, &run.namespace(check)).await;
                }
            }
            (Scope::MultiKueue, None) => {}
        }
    }
    delete_namespace(single, &run.probe_namespace()).await;
    for cluster in target.clusters() {
        run.delete_queues(&cluster.client).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::integrations::declarative::config::IntegrationConfig;

    fn sample_description(file: &str) -> Arc<crate::integrations::declarative::config::Integration> {
        let path = format!("samples/{file}");
        let text = std::fs::read_to_string(&path).unwrap();
        Arc::new(IntegrationConfig::parse(&path, &text).unwrap().integrations.remove(0))
    }

    #[test]
    fn multikueue_checks_are_skipped_only_where_kueue_has_no_adapter_for_the_kind() {
        let pytorch = sample_description("addons/kubeflow/pytorchjob-integration.yaml");
        let configured = Description { integration: pytorch.clone(), source: Source::Configured("p.yaml".into()) };
        let why = not_through_multikueue(&configured).expect("Kueue's generic adapter reads only spec.managedBy");
        assert!(why.starts_with("spec.runPolicy.managedBy is not spec.managedBy"), "{why}");
        // Kueue's own PyTorchJob integration has its own MultiKueue adapter.
        assert_eq!(not_through_multikueue(&Description { integration: pytorch, source: Source::BuiltIn }), None);

        let pipelines = sample_description("addons/tekton/pipelinerun-integration.yaml");
        let configured = Description { integration: pipelines, source: Source::Configured("r.yaml".into()) };
        assert!(not_through_multikueue(&configured).is_some_and(|why| why.contains("no managedBy field")));
        let jobs = sample_description("integrations/job-integration.yaml");
        assert_eq!(
            not_through_multikueue(&Description { integration: jobs, source: Source::Configured("j".into()) }),
            None
        );
    }
}
