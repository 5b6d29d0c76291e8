//! Third-party job controllers a sandbox runs beside Kueue on every cluster (`up --addons`).
//! Each is built from a pinned Go module (the version Kueue's release requires, where it requires
//! one, so that its API is the one Kueue's own integration of the kind compiles against) and
//! installed from that module's own manifests: on the process runtime run like Kueue, as its own
//! ServiceAccount with its webhooks called by URL with the sandbox's CA
//! (`process_runtime/addons.rs`); on kind, as its release (`kind_runtime/addons.rs`).

mod admitted;
mod build;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::kustomize::{Kustomization, ManifestError};
use crate::integrations::kueue_frameworks::{self, KueueFramework};
use crate::sandbox::toolchain::ToolchainError;

pub use admitted::{admits, wait_until_admitted};
pub use build::{BuiltAddon, ensure_built, program_name};

/// An add-on a sandbox can run; its name is the one `--addons` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Addon {
    /// JobSet's controller and webhooks (sigs.k8s.io/jobset).
    Jobset,
    /// AppWrapper's controller and webhooks (github.com/project-codeflare/appwrapper), WrappedJob's
    /// model, on kind clusters.
    Appwrapper,
    /// Kubeflow's training operator (github.com/kubeflow/training-operator): PyTorchJob and the
    /// other kubeflow.org/v1 training jobs, on kind clusters.
    Kubeflow,
    /// Tekton Pipelines' controller and webhook (github.com/tektoncd/pipeline), on kind clusters:
    /// PipelineRuns, queued by an integrations file (Kueue has no integration of its own).
    Tekton,
}

/// Where an add-on comes from and how it is installed.
pub struct AddonSpec {
    /// The component's name in `status` and the state dir.
    pub name: &'static str,
    /// The Go module, at the version Kueue's go.mod requires.
    pub module: &'static str,
    pub version: &'static str,
    /// The main packages built, and in which module.
    pub programs: Programs,
    pub build: GoBuild,
    /// The linker variable that carries the release's version, if the binary reports one.
    pub version_variable: Option<&'static str>,
    /// The module's directory of CRDs, RBAC and webhook manifests, and its release.
    pub components: &'static str,
    pub release: Release,
    pub kustomization: Kustomization,
    /// The job kind it runs, which Kueue queues and MultiKueue copies to the workers.
    pub job_kind: AddonJobKind,
    /// Its Deployment, as `config/default` names it (in-cluster installs).
    pub deployment: &'static str,
    /// Its release's other Deployments (on kind), which `up` waits for and `status` lists too.
    pub other_deployments: &'static [&'static str],
    /// Why it cannot run as a local process, if it cannot.
    pub not_a_local_process: Option<&'static str>,
    /// How it makes the init containers it adds to job pods, if it adds any.
    pub init_containers: Option<InitContainers>,
}

/// The init containers an add-on adds to job pods, as a kind sandbox (where nothing is pulled)
/// has them made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitContainers {
    /// The flag naming their image, which is set to the sandbox's image for job pods.
    pub image_flag: &'static str,
    /// The flag naming the file of their template, and the template written there, where the
    /// add-on's own would not work with that image.
    pub template: Option<(&'static str, &'static str)>,
}

/// The programs an add-on's build makes, and how its image lays them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Programs {
    /// One main package, built as `bin/<add-on name>`; its image runs it as `/manager`, where a
    /// kubebuilder release's Deployment looks for it.
    Manager(&'static str),
    /// Main packages built as `bin/<last path segment>`, laid out in one image as ko lays them
    /// out (`/ko-app/<name>`): the release names each `ko://<module>/<path>`.
    Ko(&'static [&'static str]),
}

impl Programs {
    pub fn packages(self) -> Vec<&'static str> {
        match self {
            Programs::Manager(package) => vec![package],
            Programs::Ko(packages) => packages.to_vec(),
        }
    }
}

/// How an add-on's release manifests are made from its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// A kustomization (`config/default`), rendered by the toolchain's kubectl.
    Kustomization(&'static str),
    /// Every `.yaml` file under a directory (sorted, recursively) but those named in `skip`.
    Files { dir: &'static str, skip: &'static [&'static str] },
}

impl Release {
    fn path(self) -> &'static str {
        match self {
            Release::Kustomization(path) | Release::Files { dir: path, .. } => path,
        }
    }
}

/// Where an add-on's main package is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoBuild {
    /// In the toolchain's module, with the versions Kueue's go.mod selects (and Kueue's build cache).
    WithKueue,
    /// In its own module, with its own go.mod: its code does not compile against the
    /// controller-runtime Kueue's release selects.
    OwnModule,
}

impl AddonSpec {
    pub fn job_kind(&self) -> JobKindRef {
        match &self.job_kind {
            AddonJobKind::Kueues(f) => {
                JobKindRef { group: f.group, version: f.version, kind: f.kind, plural: f.resource }
            }
            AddonJobKind::Configured(kind) => *kind,
        }
    }

    /// Kueue's built-in integration of its kind, if it has one.
    pub fn kueue_framework(&self) -> Option<&'static str> {
        match &self.job_kind {
            AddonJobKind::Kueues(f) => Some(f.name),
            AddonJobKind::Configured(_) => None,
        }
    }

    /// The module's top directory of manifests (`config`, `manifests`), copied into the build's
    /// cache entry: the components and the release kustomization both lie under it.
    pub fn manifests_dir(&self) -> &'static str {
        let path = self.release.path();
        path.split('/').next().unwrap_or(path)
    }
}

/// The job kind an add-on runs.
pub enum AddonJobKind {
    /// One of Kueue's built-in integrations: on while no integrations file configures the kind.
    Kueues(&'static KueueFramework),
    /// A kind Kueue does not integrate, queued only by an integrations file.
    Configured(JobKindRef),
}

/// A job kind by group, version, kind and resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobKindRef {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

impl JobKindRef {
    /// `Kind.version.group`, as Kueue's externalFrameworks and integrations files name kinds.
    pub fn qualified(&self) -> String {
        format!("{}.{}.{}", self.kind, self.version, self.group)
    }

    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

impl Addon {
    pub fn spec(self) -> &'static AddonSpec {
        match self {
            Addon::Jobset => &JOBSET,
            Addon::Appwrapper => &APPWRAPPER,
            Addon::Kubeflow => &KUBEFLOW,
            Addon::Tekton => &TEKTON,
        }
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

const JOBSET: AddonSpec = AddonSpec {
    name: "jobset",
    module: "sigs.k8s.io/jobset",
    version: crate::sandbox::toolchain::versions::JOBSET,
    programs: Programs::Manager("sigs.k8s.io/jobset"),
    build: GoBuild::WithKueue,
    version_variable: Some("sigs.k8s.io/jobset/pkg/version.GitVersion"),
    components: "config/components",
    release: Release::Kustomization("config/default"),
    kustomization: Kustomization { namespace: "jobset-system", name_prefix: "jobset-" },
    job_kind: AddonJobKind::Kueues(&kueue_frameworks::JOBSET),
    deployment: "jobset-controller-manager",
    other_deployments: &[],
    not_a_local_process: None,
    init_containers: None,
};

const APPWRAPPER: AddonSpec = AddonSpec {
    name: "appwrapper",
    module: "github.com/project-codeflare/appwrapper",
    version: crate::sandbox::toolchain::versions::APPWRAPPER,
    programs: Programs::Manager("github.com/project-codeflare/appwrapper/cmd"),
    build: GoBuild::WithKueue,
    version_variable: Some("main.BuildVersion"),
    components: "config",
    release: Release::Kustomization("config/default"),
    kustomization: Kustomization { namespace: "appwrapper-system", name_prefix: "appwrapper-" },
    job_kind: AddonJobKind::Kueues(&kueue_frameworks::APPWRAPPER),
    deployment: "appwrapper-controller-manager",
    other_deployments: &[],
    not_a_local_process: Some(
        "its webhook server listens on port 9443 of every interface (fixed in its main.go), which a second \
         cluster's would collide with and a sandbox keeps to 127.0.0.1: run it on kind (--runtime kind)",
    ),
    init_containers: None,
};

const KUBEFLOW: AddonSpec = AddonSpec {
    name: "kubeflow",
    module: "github.com/kubeflow/training-operator",
    version: crate::sandbox::toolchain::versions::TRAINING_OPERATOR,
    programs: Programs::Manager("./cmd/training-operator.v1"),
    build: GoBuild::OwnModule,
    version_variable: None,
    components: "manifests/base",
    release: Release::Kustomization("manifests/overlays/standalone"),
    kustomization: Kustomization { namespace: "kubeflow", name_prefix: "" },
    job_kind: AddonJobKind::Kueues(&kueue_frameworks::PYTORCHJOB),
    deployment: "training-operator",
    other_deployments: &[],
    not_a_local_process: Some(
        "its webhook server listens on every interface (only its port is a flag), which a sandbox keeps to \
         127.0.0.1: run it on kind (--runtime kind)",
    ),
    init_containers: Some(InitContainers {
        image_flag: "--pytorch-init-container-image",
        template: Some(("--pytorch-init-container-template-file", include_str!("pytorch_init_container.yaml"))),
    }),
};

const TEKTON: AddonSpec = AddonSpec {
    name: "tekton",
    module: "github.com/tektoncd/pipeline",
    version: crate::sandbox::toolchain::versions::TEKTON,
    // nop first: the image's entrypoint, which Tekton runs in place of a sidecar it stops.
    programs: Programs::Ko(&[
        "./cmd/nop",
        "./cmd/controller",
        "./cmd/webhook",
        "./cmd/entrypoint",
        "./cmd/workingdirinit",
        "./cmd/sidecarlogresults",
    ]),
    build: GoBuild::OwnModule,
    version_variable: None,
    components: "config",
    // The resolvers (remote pipelines), the events controller and the webhook's autoscaler are
    // optional parts of the release that a sandbox does without.
    release: Release::Files { dir: "config", skip: &["resolvers", "events.yaml", "webhook-hpa.yaml"] },
    kustomization: Kustomization { namespace: "tekton-pipelines", name_prefix: "tekton-pipelines-" },
    job_kind: AddonJobKind::Configured(JobKindRef {
        group: "tekton.dev",
        version: "v1",
        kind: "PipelineRun",
        plural: "pipelineruns",
    }),
    deployment: "tekton-pipelines-controller",
    other_deployments: &["tekton-pipelines-webhook"],
    not_a_local_process: Some(
        "its servers (probes, metrics, profiling, webhook) listen on every interface, which a sandbox \
         keeps to 127.0.0.1: run it on kind (--runtime kind)",
    ),
    init_containers: Some(InitContainers { image_flag: "-shell-image", template: None }),
};

#[derive(Debug, thiserror::Error)]
pub enum AddonError {
    #[error("building add-on {addon}: {source}")]
    Build {
        addon: &'static str,
        #[source]
        source: ToolchainError,
    },
    #[error("add-on {addon}: {source}")]
    Manifest {
        addon: &'static str,
        #[source]
        source: ManifestError,
    },
    #[error("installing add-on {addon}: {source}")]
    Apply {
        addon: &'static str,
        #[source]
        source: crate::kube_util::ApplyError,
    },
    #[error("requesting a token for add-on {addon}'s ServiceAccount: {source}")]
    Token {
        addon: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("add-on {addon} cannot run on the process runtime: {why}")]
    NotALocalProcess { addon: &'static str, why: &'static str },
    #[error("jobs of add-on {addon}'s kind were not admitted within {seconds}s: {source}")]
    NotAdmitted {
        addon: &'static str,
        seconds: u64,
        #[source]
        source: kube::Error,
    },
    #[error("add-on {addon}: {path}: {source}")]
    Io {
        addon: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl AddonError {
    pub(crate) fn io<'a>(
        addon: &'static str,
        path: &'a std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> AddonError + 'a {
        move |source| AddonError::Io { addon, path: path.to_path_buf(), source }
    }
}

/// Kueue's built-in frameworks the add-ons bring: an add-on's kind is queued by Kueue's own
/// integration unless an integrations file configures it (then ours replaces Kueue's).
pub fn kueue_frameworks(addons: &[Addon]) -> Vec<&'static str> {
    addons.iter().filter_map(|addon| addon.spec().kueue_framework()).collect()
}
