//! `watch`: every job across the manager and its workers, live (a k9s-like terminal UI), or
//! printed once (`--once`, and whenever stdout is not a terminal) for scripts and CI.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

use super::SandboxArgs;
use super::output::{self, Output};
use super::targets::{self, Selection};
use crate::explain::explain;
use crate::model::snapshot::Role;
use crate::model::source::{Source, Targets};
use crate::model::{ClusterRow, JobRow, Model, PendingLine, QueueRow, join};
use crate::tui::columns::{self, CLUSTER_HEADERS, JOB_HEADERS, QUEUE_HEADERS};
use crate::tui::run;

/// How long `--once` (and `explain`) wait for every cluster to answer its first list.
pub const SETTLE: Duration = Duration::from_secs(15);

/// The clusters to look at: the sandbox's by default, or kubeconfig contexts.
#[derive(Debug, clap::Args)]
pub struct Clusters {
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Kubeconfig file [default: the sandbox's when one is up and has the context, else $KUBECONFIG
    /// or ~/.kube/config]
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the manager cluster [default: kueue-ext-manager in a sandbox, else the current context]
    #[arg(long)]
    pub context: Option<String>,
    /// Context of a worker cluster, as CONTEXT or NAME=CONTEXT where NAME is its MultiKueueCluster
    /// (repeatable) [default: the sandbox's workers]
    #[arg(long = "worker-context", value_name = "[NAME=]CONTEXT", value_parser = worker_context)]
    pub worker_contexts: Vec<String>,
}

/// `CONTEXT` or `NAME=CONTEXT`, neither part empty; checked before any kubeconfig is read.
pub(super) fn worker_context(text: &str) -> Result<String, String> {
    let (name, context) = text.split_once('=').unwrap_or(("-", text));
    if name.is_empty() || context.is_empty() {
        return Err("must be CONTEXT or NAME=CONTEXT, neither empty (e.g. worker1=kind-worker1)".into());
    }
    Ok(text.to_string())
}

impl Clusters {
    /// The clusters, once each has been asked whether it answers: a manager that does not is an
    /// error said once (its jobs would otherwise read as none); a worker that does not, a warning.
    pub async fn reachable_targets(&self) -> anyhow::Result<Targets> {
        let targets = self.targets()?;
        let probes = targets.clusters.iter().map(|target| async {
            let client = crate::kube_util::client_from(targets.kubeconfig.clone(), &target.context).await?;
            crate::kube_util::ensure_reachable(&client, &targets.kubeconfig, &target.context).await?;
            anyhow::Ok(())
        });
        for (target, answer) in targets.clusters.iter().zip(futures::future::join_all(probes).await) {
            match answer {
                Err(err) if target.role == Role::Manager => return Err(err),
                Err(err) => eprintln!("warning: worker {}: {}", target.name, super::in_one_line(&err)),
                Ok(()) => {}
            }
        }
        Ok(targets)
    }

    pub fn targets(&self) -> anyhow::Result<Targets> {
        targets::resolve(&Selection {
            state_dir: self.sandbox.dir(),
            sandbox: self.sandbox.sandbox_name(),
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            worker_contexts: self.worker_contexts.clone(),
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub clusters: Clusters,
    /// Only this namespace [default: all namespaces]
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// Every namespace, as kubectl's -A (what watch shows without -n)
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Print the joined view once and exit (also what happens when stdout is not a terminal).
    #[arg(long)]
    pub once: bool,
    /// Format of the one-time print: wide (where each job lives and the first reason from
    /// `explain`), name (`KIND.GROUP/NAME` of each job), json or yaml (everything joined, with
    /// each job's explanation) [default: the jobs table, then queues and clusters]
    #[arg(short, long, value_name = "FORMAT",
          value_parser = output::accepting(&[Output::Wide, Output::Name, Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
    /// Never suspend, resume or delete from the UI.
    #[arg(long)]
    pub readonly: bool,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let output = args.output.unwrap_or_default();
    let interactive = !args.once && output == Output::Human && std::io::stdout().is_terminal();
    if interactive {
        // The screen shows each cluster's state live, unreachable ones included.
        let source = Source::start(args.clusters.targets()?, args.namespace.as_deref()).await;
        run::run(source, args.readonly).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let targets = args.clusters.reachable_targets().await?;
    let mut source = Source::start(targets, args.namespace.as_deref()).await;
    source.settle(SETTLE).await;
    let mut snapshot = source.snapshot();
    source.read_visibility(&mut snapshot).await;
    let model = join(&snapshot);
    let now = run::now();
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&Report::new(&source.origin, &model))?),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&Report::new(&source.origin, &model))?),
        Output::Name => model.jobs.iter().for_each(|row| println!("{}", row.key.object_name())),
        output => {
            if model.jobs.is_empty() {
                // As kubectl: the empty result on stderr, so stdout stays parseable.
                eprintln!("No jobs found.");
            }
            print!("{}", tables(&model, now, output == Output::Wide))
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct ExplainedJob<'a> {
    #[serde(flatten)]
    row: &'a JobRow,
    why: Vec<String>,
}

#[derive(Serialize)]
struct Report<'a> {
    origin: &'a str,
    clusters: &'a [ClusterRow],
    jobs: Vec<ExplainedJob<'a>>,
    queues: &'a [QueueRow],
    /// Each ClusterQueue's pending Workloads, in the order Kueue admits them.
    pending: &'a [PendingLine],
}

impl<'a> Report<'a> {
    fn new(origin: &'a str, model: &'a Model) -> Self {
        let jobs = model.jobs.iter().map(|row| ExplainedJob { row, why: explain(row, model) }).collect();
        Report { origin, clusters: &model.clusters, jobs, queues: &model.queues, pending: &model.pending }
    }
}

/// Rows as aligned columns, kubectl style: each column as wide as its widest cell.
pub(super) fn aligned(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        format!("{}\n", padded.join("   ").trim_end())
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn tables(model: &Model, now: i64, wide: bool) -> String {
    let manager = model.clusters.first().map(|c| c.name.as_str()).unwrap_or("manager");
    let mut headers = JOB_HEADERS.to_vec();
    if wide {
        headers.extend(["ON", "WHY"]);
    }
    let jobs: Vec<Vec<String>> = model
        .jobs
        .iter()
        .map(|job| {
            let mut cells = columns::job_cells(job, manager, now).to_vec();
            if wide {
                cells.push(job.key.cluster.clone());
                cells.push(explain(job, model).into_iter().next().unwrap_or_default());
            }
            cells
        })
        .collect();
    let mut out = if jobs.is_empty() { String::new() } else { aligned(&headers, &jobs) };
    let queues: Vec<Vec<String>> = model.queues.iter().map(|q| columns::queue_cells(q).to_vec()).collect();
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&aligned(&QUEUE_HEADERS, &queues));
    let clusters: Vec<Vec<String>> = model.clusters.iter().map(|c| columns::cluster_cells(c).to_vec()).collect();
    out.push('\n');
    out.push_str(&aligned(&CLUSTER_HEADERS, &clusters));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{NOW, scene};

    #[test]
    fn the_table_lines_up_and_explains_in_wide() {
        let model = join(&scene());
        let text = tables(&model, NOW, true);
        let header = text.lines().next().unwrap_or_default();
        assert!(header.starts_with("NAMESPACE") && header.ends_with("WHY"), "{header}");
        let training = text.lines().find(|l| l.contains("training")).unwrap_or_default();
        for cell in
            ["WrappedJob", "Running", "ADMITTED", "multikueue:Ready", "worker2", "1/3/0/0", "Admitted; MultiKueue"]
        {
            assert!(training.contains(cell), "{cell} missing in {training:?}");
        }
        assert!(text.contains("CLUSTERQUEUE") && text.contains("default-flavor cpu 0/64 0%"), "{text}");
    }

    #[test]
    fn json_carries_each_job_with_its_explanation() {
        let model = join(&scene());
        let json = serde_json::to_value(Report::new("sandbox", &model)).unwrap();
        let training = json["jobs"].as_array().unwrap().iter().find(|j| j["key"]["name"] == "training").unwrap();
        assert_eq!(training["status"], "Running");
        assert_eq!(training["mirrors"][0]["cluster"], "worker2");
        assert_eq!(training["why"][0], "Admitted; MultiKueue runs it on worker cluster worker2.");
        assert_eq!(json["clusters"][1]["connection"]["status"], "True");
    }

    #[test]
    fn json_rows_of_pending_jobs_carry_their_place_in_line() {
        let model = join(&scene());
        let json = serde_json::to_value(Report::new("sandbox", &model)).unwrap();
        let jobs = json["jobs"].as_array().unwrap();
        let places: Vec<(&str, u64, u64, &str)> = jobs
            .iter()
            .filter(|j| !j["queue_position"].is_null())
            .map(|j| {
                let place = &j["queue_position"];
                let in_cq = &place["in_cluster_queue"];
                let name = j["key"]["name"].as_str().unwrap_or_default();
                (
                    name,
                    in_cq["position"].as_u64().unwrap(),
                    in_cq["of"].as_u64().unwrap(),
                    place["source"].as_str().unwrap(),
                )
            })
            .collect();
        // Created in the same second with the same priority: in the order the API server listed them.
        let expected = [
            ("preempted", 3, 3, "creation-order"),
            ("queued", 1, 3, "creation-order"),
            ("too-big", 2, 3, "creation-order"),
        ];
        assert_eq!(places, expected);
        let training = jobs.iter().find(|j| j["key"]["name"] == "training").unwrap();
        assert!(training["queue_position"].is_null(), "an admitted job is in no line");
    }

    #[test]
    fn names_read_as_kubectl_prints_them_and_yaml_carries_what_json_does() {
        let model = join(&scene());
        let names: Vec<String> = model.jobs.iter().map(|row| row.key.object_name()).collect();
        assert!(names.iter().any(|n| n == "wrappedjob.kueue-ext.dev/training"), "{names:?}");
        assert!(names.iter().all(|n| n.contains(".kueue-ext.dev/") || n.starts_with("job.batch/")), "{names:?}");
        let report = Report::new("sandbox", &model);
        let from_yaml: serde_json::Value = serde_saphyr::from_str(&serde_saphyr::to_string(&report).unwrap()).unwrap();
        assert_eq!(from_yaml, serde_json::to_value(&report).unwrap());
    }
}
