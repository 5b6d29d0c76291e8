use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use serde_json::Value;

use crate::go_duration::parse_go_duration;
use crate::integrations::declarative::config::{Integration, IntegrationConfig};
use crate::integrations::declarative::schema;
use crate::sandbox::from_capture::{self, Replay, ReplayError, ReplayOptions, STAND_IN};
use crate::sandbox::progress::{Progress, human_duration};
use crate::sandbox::{self, Addon, KindOptions, NodePool, RuntimeKind, UpOptions, UpOutcome};
use crate::submit::documents;

use super::SandboxArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// A capture to reproduce (`capture -o FILE`): as many workers as it holds, Kueue's settings,
    /// queues, MultiKueue and nodes as captured, and our controller's integrations (process
    /// runtime). What the sandbox cannot run is listed and replaced by a stand-in.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workers", "integrations", "nodes", "node_cpu", "node_memory"])]
    pub from: Option<PathBuf>,
    /// With --from: the fraction of each group of identical captured nodes to create (at
    /// least one per group).
    #[arg(long, value_name = "FRACTION", requires = "from", value_parser = parse_scale)]
    pub scale: Option<f64>,
    /// With --from: create the captured jobs again (MultiKueue's copies on workers excepted),
    /// suspended as they were.
    #[arg(long, requires = "from")]
    pub with_jobs: bool,
    /// Number of worker clusters (0: a single cluster that admits and runs jobs itself).
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Port of the manager's kube-apiserver on 127.0.0.1 [default: a free port]
    #[arg(long, value_name = "PORT")]
    pub api_server_port: Option<u16>,
    /// Fake (kwok) nodes per cluster that runs pods [default: 4]. On kind, which runs one real
    /// node per cluster, these three only size the default queues; without them the queues hold
    /// what the nodes can still give job pods.
    #[arg(long)]
    pub nodes: Option<u32>,
    /// CPU of each fake node [default: 8].
    #[arg(long)]
    pub node_cpu: Option<String>,
    /// Memory of each fake node [default: 32Gi].
    #[arg(long)]
    pub node_memory: Option<String>,
    /// Also merge the sandbox contexts into your kubeconfig ($KUBECONFIG or ~/.kube/config), as
    /// kind does; `down` removes them again.
    #[arg(long)]
    pub merge_kubeconfig: bool,
    /// Extra flag for one component on every cluster, e.g. `kube-apiserver=--v=4` (repeatable;
    /// process runtime).
    #[arg(long = "component-arg", value_name = "COMPONENT=FLAG", value_parser = parse_component_arg)]
    pub component_args: Vec<(String, String)>,
    /// How clusters run: kind clusters in Docker (kind is built from its Go module), or local
    /// processes [default: kind where a Docker daemon answers, else process]
    #[arg(long, env = "KUEUE_EXT_RUNTIME", value_enum, value_name = "RUNTIME")]
    pub runtime: Option<Runtime>,
    /// Integrations file: job kinds Kueue manages through our controller, described by where
    /// their fields are (see samples/integrations/ and samples/addons/). Wired on every cluster: Kueue's
    /// externalFrameworks, RBAC, webhooks and the controller's `--integrations`.
    #[arg(long, value_name = "FILE")]
    pub integrations: Option<PathBuf>,
    /// CustomResourceDefinitions (files or directories, repeatable) applied server-side on every
    /// cluster before Kueue and our controller start: the CRDs of the kinds the integrations
    /// file names, so they are served from the first moment.
    #[arg(long = "crds", value_name = "FILE|DIR")]
    pub crds: Vec<PathBuf>,
    /// Third-party job controllers run on every cluster beside Kueue (comma-separated), each
    /// built once from its pinned Go module (the version Kueue's release requires, where it
    /// requires one). Kueue's own integration of the kind is on unless --integrations configures
    /// that kind. appwrapper, kubeflow and tekton run on kind only.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ADDON")]
    pub addons: Vec<Addon>,
    /// How long MultiKueue waits for an unreachable worker before running its jobs on another
    /// (Go duration; Kueue's default is 15m). Jobs a lost worker already ran may run twice.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_go_duration)]
    pub worker_lost_timeout: Duration,
    #[command(flatten)]
    pub kind: KindArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Runtime {
    Kind,
    Process,
}

/// Settings of the kind runtime; the defaults are the versions it is tested with.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "kind runtime")]
pub struct KindArgs {
    /// Where the images come from: built on this machine from pinned sources (`local`, no
    /// registry needed), kind's and Kueue's published ones (`published`), or `auto`: the local
    /// set when it is built or can be (root and debootstrap), published otherwise.
    #[arg(long, env = "KUEUE_EXT_KIND_IMAGES", value_enum, default_value = "auto", value_name = "SOURCE")]
    pub kind_images: sandbox::ImageSource,
    /// Published node image of the kind clusters.
    #[arg(long, env = "KUEUE_EXT_KIND_NODE_IMAGE", default_value = sandbox::NODE_IMAGE, value_name = "IMAGE")]
    pub kind_node_image: String,
    /// kind release required (any patch release of its minor line); `up` builds this one from
    /// its Go module.
    #[arg(long, env = "KUEUE_EXT_KIND_VERSION", default_value = sandbox::KIND_VERSION, value_name = "VERSION")]
    pub kind_version: String,
    /// Build of this plugin to run as the in-cluster controller [default: this executable]; its
    /// ELF loader and shared libraries go into the image with it.
    #[arg(long, env = "KUEUE_EXT_CONTROLLER_BINARY", value_name = "FILE")]
    pub controller_binary: Option<PathBuf>,
    /// Kueue's release manifests: a URL or a local file.
    #[arg(long, env = "KUEUE_EXT_KUEUE_MANIFESTS", default_value = sandbox::KUEUE_MANIFESTS_URL, value_name = "URL|FILE")]
    pub kueue_manifests: String,
    /// sha256 the Kueue manifests must have.
    #[arg(long, env = "KUEUE_EXT_KUEUE_MANIFESTS_SHA256", default_value = sandbox::KUEUE_MANIFESTS_SHA256, value_name = "HEX")]
    pub kueue_manifests_sha256: String,
}

impl From<KindArgs> for KindOptions {
    fn from(args: KindArgs) -> Self {
        KindOptions {
            images: args.kind_images,
            node_image: args.kind_node_image,
            kind_version: args.kind_version,
            controller_binary: args.controller_binary,
            kueue_manifests: args.kueue_manifests,
            kueue_manifests_sha256: args.kueue_manifests_sha256,
        }
    }
}

/// The CustomResourceDefinitions in `paths`, every document checked to be one.
fn read_crds(paths: &[PathBuf]) -> Result<Vec<Value>, Vec<String>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let files = documents::collect_files(paths, true).map_err(|e| vec![e.to_string()])?;
    let (mut crds, mut problems) = (Vec::new(), Vec::new());
    for file in &files {
        let name = file.display().to_string();
        let bytes = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(e) => {
                problems.push(format!("{name}: {e}"));
                continue;
            }
        };
        match documents::read(&name, &bytes) {
            Ok(docs) => {
                for doc in docs {
                    let api_version = doc.object["apiVersion"].as_str().unwrap_or("(no apiVersion)");
                    let kind = doc.object["kind"].as_str().unwrap_or("(no kind)");
                    if api_version == CRD_API_VERSION && kind == "CustomResourceDefinition" {
                        crds.push(doc.object);
                    } else {
                        problems.push(format!(
                            "{}: kind: {kind} of {api_version} is not a CustomResourceDefinition of {CRD_API_VERSION} (--crds takes CRDs only)",
                            doc.origin
                        ));
                    }
                }
            }
            Err(found) => problems.extend(found.iter().map(ToString::to_string)),
        }
    }
    if problems.is_empty() { Ok(crds) } else { Err(problems) }
}

const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The fields of the integrations `file` that the schemas of the kinds' CRDs given with `--crds`
/// have no room for, named by file and field.
fn fields_the_crds_lack(file: &str, integrations: &[Integration], crds: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, integration) in integrations.iter().enumerate() {
        let Some(crd) = schema::crd_of(integration, crds) else { continue };
        for (field, message) in schema::missing_fields(integration, crd) {
            problems.push(format!("{file}: integrations[{i}].{field}: {message}"));
        }
    }
    problems
}

/// The kinds of the integrations `file` that name their controller where Kueue's adapter for
/// configured kinds does not look (it reads only `spec.managedBy`); a kind without managedBy
/// says so in its description, so it is not warned about.
fn not_through_multikueue(file: &str, integrations: &[Integration]) -> Vec<String> {
    let elsewhere = |(i, integration): (usize, &Integration)| {
        integration.managed_by.as_ref()?;
        let why = integration.why_not_through_multikueue()?;
        Some(format!(
            "{file}: integrations[{i}].managedBy: {why}: a {} runs on the cluster it is submitted to, not through \
             MultiKueue",
            integration.kind
        ))
    };
    integrations.iter().enumerate().filter_map(elsewhere).collect()
}

fn parse_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(scale) if scale > 0.0 && scale <= 1.0 => Ok(scale),
        _ => Err(format!("{text:?} is not a fraction in (0, 1], such as 0.1")),
    }
}

/// The sandbox `up --from` plans from the capture `file`, every problem of the archive found
/// before anything starts.
fn replay_of(file: &Path, args: &Args) -> Result<Replay, ReplayError> {
    let opened = crate::capture::open(file)?;
    let options = ReplayOptions { scale: args.scale.unwrap_or(1.0), with_jobs: args.with_jobs };
    let replay = from_capture::plan(&opened, options, &args.addons)?;
    eprintln!(
        "reproducing {} (captured {} from {}): {} cluster(s)",
        file.display(),
        opened.manifest.captured_at,
        opened.manifest.origin,
        replay.clusters.len()
    );
    Ok(replay)
}

fn parse_component_arg(text: &str) -> Result<(String, String), String> {
    let (component, flag) = text.split_once('=').ok_or("expected COMPONENT=FLAG, e.g. kube-apiserver=--v=4")?;
    let addons = Addon::value_variants().iter().map(|addon| addon.name());
    let known: Vec<&str> = sandbox::COMPONENTS.into_iter().chain(addons).collect();
    if !known.contains(&component) {
        return Err(format!("unknown component {component:?}; one of {}", known.join(", ")));
    }
    Ok((component.to_string(), flag.to_string()))
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Checked before anything starts: a mistake in the file is the first thing to hear about.
    let replay = match &args.from {
        Some(file) => match replay_of(file, &args) {
            Ok(replay) => Some(replay),
            Err(e) => {
                eprintln!("error: {e}");
                eprintln!("nothing was started");
                return Ok(ExitCode::FAILURE);
            }
        },
        None => None,
    };
    let integrations = match (&args.integrations, &replay) {
        (Some(file), _) => IntegrationConfig::load(file)?.integrations,
        (None, Some(replay)) => replay.integrations.clone(),
        (None, None) => Vec::new(),
    };
    let crds = match read_crds(&args.crds) {
        Ok(crds) => crds,
        Err(problems) => {
            for problem in &problems {
                eprintln!("error: {problem}");
            }
            eprintln!("nothing was started ({} problem(s) in --crds)", problems.len());
            return Ok(ExitCode::FAILURE);
        }
    };
    if let Some(file) = &args.integrations {
        let problems = fields_the_crds_lack(&file.display().to_string(), &integrations, &crds);
        if !problems.is_empty() {
            for problem in &problems {
                eprintln!("error: {problem}");
            }
            eprintln!(
                "nothing was started ({} field(s) of {} not in their kinds' CRDs)",
                problems.len(),
                file.display()
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    if let Some(file) = &args.integrations
        && args.workers > 0
    {
        for warning in not_through_multikueue(&file.display().to_string(), &integrations) {
            eprintln!("warning: {warning}");
        }
    }
    let defaults = NodePool::default();
    let options = UpOptions {
        name: args.sandbox.name.clone().unwrap_or_else(|| sandbox::DEFAULT_NAME.to_string()),
        state_dir: args.sandbox.dir(),
        workers: replay.as_ref().map_or(args.workers, Replay::workers),
        api_server_port: args.api_server_port,
        queues_from_kind_nodes: args.nodes.is_none() && args.node_cpu.is_none() && args.node_memory.is_none(),
        nodes: NodePool {
            count: args.nodes.unwrap_or(defaults.count),
            cpu: args.node_cpu.unwrap_or(defaults.cpu),
            memory: args.node_memory.unwrap_or(defaults.memory),
        },
        component_args: args.component_args,
        merge_kubeconfig: args.merge_kubeconfig.then(crate::sandbox::kubeconfig::user_default_path),
        runtime: args.runtime.map(|r| match r {
            Runtime::Kind => RuntimeKind::Kind,
            Runtime::Process => RuntimeKind::Process,
        }),
        kind_runtime: args.kind.into(),
        integrations,
        crds,
        addons: args.addons,
        worker_lost_timeout: args.worker_lost_timeout,
        replay: replay.map(Arc::new),
    };
    let outcome = match sandbox::up(&options, &Progress::stderr()).await {
        Err(err @ sandbox::SandboxError::Interrupted) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::from(130));
        }
        other => other?,
    };
    match outcome {
        UpOutcome::AlreadyUp(state) => {
            println!("sandbox already up at {}: nothing changed", options.state_dir.display());
            println!("kubeconfig: {}", state.kubeconfig.display());
        }
        UpOutcome::Revived { state, restarted } => {
            println!("sandbox at {}: restarted {}", options.state_dir.display(), restarted.join(", "));
            println!("kubeconfig: {}", state.kubeconfig.display());
        }
        UpOutcome::Started { state, elapsed, not_as_captured } => {
            println!("sandbox up in {} ({} cluster(s))", human_duration(elapsed), state.clusters.len());
            if let Some(replay) = &options.replay {
                let said: Vec<&String> = replay.not_as_captured.iter().chain(&not_as_captured).collect();
                match said.as_slice() {
                    [] => println!("reproduced:  {}, all of it", replay.source.display()),
                    _ => {
                        println!(
                            "reproduced:  {}, but not as captured (stand-ins say so in {STAND_IN}):",
                            replay.source.display()
                        );
                        said.iter().for_each(|line| println!("  - {line}"));
                    }
                }
            }
            println!("kubeconfig: {}", state.kubeconfig.display());
            let contexts: Vec<&str> = state.clusters.iter().map(|c| c.context.as_str()).collect();
            println!("contexts:   {}", contexts.join(", "));
            println!("try:        kubectl --kubeconfig {} get clusterqueues,nodes", state.kubeconfig.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_whose_managed_by_is_elsewhere_is_said_to_stay_out_of_multikueue() {
        let load = |name: &str| {
            let path = format!("samples/{name}");
            IntegrationConfig::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap().integrations
        };
        let warnings = not_through_multikueue("p.yaml", &load("addons/kubeflow/pytorchjob-integration.yaml"));
        assert_eq!(
            warnings,
            ["p.yaml: integrations[0].managedBy: spec.runPolicy.managedBy is not spec.managedBy, the one field \
              Kueue's MultiKueue adapter for configured kinds reads: a PyTorchJob.v1.kubeflow.org runs on the \
              cluster it is submitted to, not through MultiKueue"]
        );
        assert!(not_through_multikueue("j.yaml", &load("integrations/job-integration.yaml")).is_empty());
        assert!(
            not_through_multikueue("p.yaml", &load("addons/tekton/pipelinerun-integration.yaml")).is_empty(),
            "no managedBy"
        );
    }

    #[test]
    fn component_args_name_a_known_component() {
        assert_eq!(
            parse_component_arg("kueue=--zap-log-level=2").unwrap(),
            ("kueue".into(), "--zap-log-level=2".into())
        );
        assert!(parse_component_arg("kubelet=--v=2").unwrap_err().contains("unknown component"));
        assert!(parse_component_arg("--v=2").is_err());
    }

    #[derive(Debug, clap::Parser)]
    struct UpOnly {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn runtime_and_kind_settings_default_to_the_pins() {
        use clap::Parser;
        let parsed = UpOnly::try_parse_from(["up"]).unwrap().args;
        assert_eq!(parsed.runtime, None);
        assert_eq!(KindOptions::from(parsed.kind), KindOptions::default());
        let parsed = UpOnly::try_parse_from([
            "up",
            "--runtime",
            "kind",
            "--kind-node-image",
            "kindest/node:v1.36.9",
            "--kind-version",
            "v0.33.0",
        ])
        .unwrap()
        .args;
        assert_eq!(parsed.runtime, Some(Runtime::Kind));
        let options = KindOptions::from(parsed.kind);
        assert_eq!((options.node_image.as_str(), options.kind_version.as_str()), ("kindest/node:v1.36.9", "v0.33.0"));
        assert!(UpOnly::try_parse_from(["up", "--runtime", "docker"]).is_err());
    }
}
