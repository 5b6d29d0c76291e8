//! Kueue's own integrations (v0.19.2), one row each, as Kueue lists them: the
//! `jobframework.RegisterIntegration` call in `pkg/controller/jobs/<kind>/`. Every other table of
//! a fact about them (who runs a kind, what MultiKueue copies to a worker, what a WrappedJob may
//! wrap) reads this one, so adding a kind is one row. Kinds that every command reads as it reads
//! ours (batch Job, JobSet, PyTorchJob) also have a description, in `builtin_kinds.yaml`.

use std::sync::LazyLock;

use crate::integrations::declarative::config::{Integration, IntegrationConfig};

/// Kueue's batch Job, JobSet and PyTorchJob, described as a configured kind is.
const DESCRIBED: &str = include_str!("builtin_kinds.yaml");

/// The kinds of [`DESCRIBED`], parsed once.
pub fn described() -> &'static [Integration] {
    static DESCRIPTIONS: LazyLock<Vec<Integration>> = LazyLock::new(|| {
        IntegrationConfig::parse_entries("builtin_kinds.yaml", DESCRIBED).expect("the built-in descriptions are valid")
    });
    &DESCRIPTIONS
}

/// One of Kueue's built-in integrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KueueFramework {
    /// Its `FrameworkName`, as `integrations.frameworks` names it.
    pub name: &'static str,
    /// Its GVK (`gvk` beside the registration) and the resource Kueue's RBAC markers name.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub resource: &'static str,
    /// Who runs a job of the kind when `managedBy` leaves it to the kind's own controller.
    pub runner: &'static str,
    /// The `managedBy` value naming that controller (the one `CanDefaultManagedBy` compares
    /// with); `None` for a kind that Kueue does not hand over by `managedBy`.
    pub managed_by: Option<&'static str>,
    /// Whether its registration has a `MultiKueueAdapter`: MultiKueue copies its jobs to
    /// workers, and keeps a worker connection inactive until it may watch the kind there.
    pub multikueue_adapter: bool,
    /// How a WrappedJob reads a component of the kind; `None`: it may not wrap one.
    pub as_component: Option<AsComponent>,
    /// The job `conformance` creates of the kind, where it has one: pods that run 20 s, long
    /// enough to be stopped while they run and short enough to wait for their end, asking for
    /// 10m–20m CPU so that the pods of every check at once fit on a kind node of a 2-core machine.
    pub sample: Option<&'static str>,
}

/// How a WrappedJob reads a component of a kind, as AppWrapper v1.2.2 reads its components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsComponent {
    /// Where its pod templates are, for the pod sets a WrappedJob infers from it.
    pub pod_sets: PodSetsAt,
    /// Whether it ends on its own (`Some(true)`) or runs until deleted (`Some(false)`); `None`:
    /// judged by its pods alone. A kind with a description reports its end as its `finished:`
    /// says.
    pub ends: Option<bool>,
}

/// Where a component's pod templates are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodSetsAt {
    /// The component is a pod: one pod set of one.
    Itself,
    /// `spec.template`, `spec.replicas` of them.
    Replicas,
    /// A Job's `spec.template`, as many as run at once.
    JobTemplate,
    /// `spec.replicatedJobs[*].template.spec.template`.
    ReplicatedJobs,
    /// `spec.<field>.<role>.template` per role, `replicas` of each.
    ReplicaSpecs { field: &'static str, roles: &'static [&'static str] },
    /// A Ray cluster's head and worker groups, under `spec.<prefix>`.
    RayCluster { prefix: &'static str },
    /// None inferred: the WrappedJob declares its pod sets.
    Declared,
}

const fn component(pod_sets: PodSetsAt, ends: Option<bool>) -> Option<AsComponent> {
    Some(AsComponent { pod_sets, ends })
}

const ENDS: Option<bool> = Some(true);
const RUNS_UNTIL_DELETED: Option<bool> = Some(false);

impl KueueFramework {
    /// `Kind.version.group`, as a kind of the registry is named.
    pub fn qualified(&self) -> String {
        match self.group {
            "" => format!("{}.{}", self.kind, self.version),
            group => format!("{}.{}.{group}", self.kind, self.version),
        }
    }

    const fn with_sample(self, sample: &'static str) -> Self {
        KueueFramework { sample: Some(sample), ..self }
    }

    /// Its description in `builtin_kinds.yaml`, if it has one.
    pub fn description(&self) -> Option<&'static Integration> {
        described().iter().find(|d| self.describes(d))
    }

    /// The condition types that say a job of the kind succeeded and that it failed, as its
    /// description's `finished:` says.
    pub fn finished_conditions(&self) -> Option<(&'static str, &'static str)> {
        let finished = &self.description()?.finished;
        Some((finished.succeeded.condition.as_deref()?, finished.failed.condition.as_deref()?))
    }

    /// Whether `integration` describes this kind (the same group, version and kind).
    pub fn describes(&self, integration: &Integration) -> bool {
        let gvk = integration.gvk();
        (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()) == (self.group, self.version, self.kind)
    }
}

const fn framework(
    name: &'static str,
    (group, version, kind, resource): (&'static str, &'static str, &'static str, &'static str),
    (runner, managed_by): (&'static str, Option<&'static str>),
    multikueue_adapter: bool,
    as_component: Option<AsComponent>,
) -> KueueFramework {
    KueueFramework {
        name,
        group,
        version,
        kind,
        resource,
        runner,
        managed_by,
        multikueue_adapter,
        as_component,
        sample: None,
    }
}

const KUBE: &str = "kube-controller-manager";
const TRAINING_OPERATOR: (&str, Option<&str>) = ("the training operator", Some("kubeflow.org/training-operator"));
const KUBERAY: (&str, Option<&str>) = ("the KubeRay operator", Some("ray.io/kuberay-operator"));

// How a WrappedJob reads each kind it may wrap.
const A_POD: Option<AsComponent> = component(PodSetsAt::Itself, ENDS);
const REPLICAS: Option<AsComponent> = component(PodSetsAt::Replicas, RUNS_UNTIL_DELETED);
const A_JOB: Option<AsComponent> = component(PodSetsAt::JobTemplate, ENDS);
const REPLICATED_JOBS: Option<AsComponent> = component(PodSetsAt::ReplicatedJobs, ENDS);
const PYTORCH_REPLICAS: Option<AsComponent> =
    component(PodSetsAt::ReplicaSpecs { field: "pytorchReplicaSpecs", roles: &["Master", "Worker"] }, ENDS);
const RAY_CLUSTER: Option<AsComponent> = component(PodSetsAt::RayCluster { prefix: "" }, RUNS_UNTIL_DELETED);
// A RayJob ends, but AppWrapper judges it by its pods.
const RAY_JOB: Option<AsComponent> = component(PodSetsAt::RayCluster { prefix: "rayClusterSpec." }, None);

// The rows other tables name (the sandbox's add-ons run these kinds).
pub const JOBSET: KueueFramework = framework(
    "jobset.x-k8s.io/jobset",
    ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
    ("the JobSet controller", Some("jobset.sigs.k8s.io/jobset-controller")),
    true,
    REPLICATED_JOBS,
)
.with_sample(include_str!("kueue_samples/jobset.yaml"));
pub const PYTORCHJOB: KueueFramework = framework(
    "kubeflow.org/pytorchjob",
    ("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
    TRAINING_OPERATOR,
    true,
    PYTORCH_REPLICAS,
)
.with_sample(include_str!("kueue_samples/pytorchjob.yaml"));
pub const APPWRAPPER: KueueFramework = framework(
    "workload.codeflare.dev/appwrapper",
    ("workload.codeflare.dev", "v1beta2", "AppWrapper", "appwrappers"),
    ("the AppWrapper controller", Some("workload.codeflare.dev/appwrapper-controller")),
    true,
    None,
);

/// Kueue v0.19.2's built-in integrations. Core and apps kinds first, then by group; the
/// order is that of the RBAC rules generated from it.
#[rustfmt::skip]
pub const KUEUE_FRAMEWORKS: &[KueueFramework] = &[
    framework("pod", ("", "v1", "Pod", "pods"), ("the kubelet", None), true, A_POD),
    framework("deployment", ("apps", "v1", "Deployment", "deployments"), (KUBE, None), false, REPLICAS),
    framework("statefulset", ("apps", "v1", "StatefulSet", "statefulsets"), (KUBE, None), true, REPLICAS),
    framework("batch/job", ("batch", "v1", "Job", "jobs"), (KUBE, Some("kubernetes.io/job-controller")), true, A_JOB)
        .with_sample(include_str!("kueue_samples/job.yaml")),
    JOBSET,
    framework(
        "kubeflow.org/mpijob",
        ("kubeflow.org", "v2beta1", "MPIJob", "mpijobs"),
        ("the MPI operator", Some("kubeflow.org/mpi-operator")),
        true,
        None,
    ),
    framework("kubeflow.org/paddlejob", ("kubeflow.org", "v1", "PaddleJob", "paddlejobs"), TRAINING_OPERATOR, true, None),
    PYTORCHJOB,
    framework("kubeflow.org/tfjob", ("kubeflow.org", "v1", "TFJob", "tfjobs"), TRAINING_OPERATOR, true, None),
    framework("kubeflow.org/xgboostjob", ("kubeflow.org", "v1", "XGBoostJob", "xgboostjobs"), TRAINING_OPERATOR, true, None),
    framework("kubeflow.org/jaxjob", ("kubeflow.org", "v1", "JAXJob", "jaxjobs"), TRAINING_OPERATOR, true, None),
    framework(
        "trainer.kubeflow.org/trainjob",
        ("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs"),
        ("the Kubeflow Trainer", Some("trainer.kubeflow.org/trainjob-controller")),
        true,
        None,
    ),
    framework("ray.io/raycluster", ("ray.io", "v1", "RayCluster", "rayclusters"), KUBERAY, true, RAY_CLUSTER),
    framework("ray.io/rayjob", ("ray.io", "v1", "RayJob", "rayjobs"), KUBERAY, true, RAY_JOB),
    framework("ray.io/rayservice", ("ray.io", "v1", "RayService", "rayservices"), KUBERAY, true, None),
    APPWRAPPER,
    framework(
        "leaderworkerset.x-k8s.io/leaderworkerset",
        ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets"),
        ("the LeaderWorkerSet controller", None),
        true,
        component(PodSetsAt::Declared, RUNS_UNTIL_DELETED),
    ),
    framework(
        "sparkoperator.k8s.io/sparkapplication",
        ("sparkoperator.k8s.io", "v1beta2", "SparkApplication", "sparkapplications"),
        ("the Spark operator", None),
        false,
        None,
    ),
];

/// The integration `integrations.frameworks` calls `name`.
pub fn by_name(name: &str) -> Option<&'static KueueFramework> {
    KUEUE_FRAMEWORKS.iter().find(|f| f.name == name)
}

/// Kueue's integration of `kind` in `group` (any version).
pub fn of_kind(group: &str, kind: &str) -> Option<&'static KueueFramework> {
    KUEUE_FRAMEWORKS.iter().find(|f| (f.group, f.kind) == (group, kind))
}

/// Kueue's integration of the kind `integration` describes, if it has one.
pub fn of(integration: &Integration) -> Option<&'static KueueFramework> {
    KUEUE_FRAMEWORKS.iter().find(|f| f.describes(integration))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_described_kinds_end_as_their_descriptions_say_and_are_parsed_once() {
        let ends = |name| by_name(name).and_then(KueueFramework::finished_conditions);
        assert_eq!(ends("batch/job"), Some(("Complete", "Failed")));
        assert_eq!(ends("jobset.x-k8s.io/jobset"), Some(("Completed", "Failed")));
        assert_eq!(ends("kubeflow.org/pytorchjob"), Some(("Succeeded", "Failed")));
        assert_eq!(ends("deployment"), None, "no description: judged by its pods");
        assert!(std::ptr::eq(described(), described()));
        for description in described() {
            let framework = of(description).unwrap_or_else(|| panic!("{} is one of Kueue's", description.kind));
            assert!(framework.as_component.is_some_and(|c| c.ends == ENDS), "{} ends on its own", framework.name);
        }
    }

    /// Each name with its kind and resource, as Kueue v0.19.2 registers them (`FrameworkName`
    /// and `gvk` in `pkg/controller/jobs/*/`, resources from its RBAC markers).
    #[test]
    fn each_framework_name_maps_to_its_kind_and_resource() {
        let cases = [
            ("pod", "Pod.v1", "pods"),
            ("deployment", "Deployment.v1.apps", "deployments"),
            ("statefulset", "StatefulSet.v1.apps", "statefulsets"),
            ("batch/job", "Job.v1.batch", "jobs"),
            ("jobset.x-k8s.io/jobset", "JobSet.v1alpha2.jobset.x-k8s.io", "jobsets"),
            ("kubeflow.org/mpijob", "MPIJob.v2beta1.kubeflow.org", "mpijobs"),
            ("kubeflow.org/paddlejob", "PaddleJob.v1.kubeflow.org", "paddlejobs"),
            ("kubeflow.org/pytorchjob", "PyTorchJob.v1.kubeflow.org", "pytorchjobs"),
            ("kubeflow.org/tfjob", "TFJob.v1.kubeflow.org", "tfjobs"),
            ("kubeflow.org/xgboostjob", "XGBoostJob.v1.kubeflow.org", "xgboostjobs"),
            ("kubeflow.org/jaxjob", "JAXJob.v1.kubeflow.org", "jaxjobs"),
            ("trainer.kubeflow.org/trainjob", "TrainJob.v1alpha1.trainer.kubeflow.org", "trainjobs"),
            ("ray.io/raycluster", "RayCluster.v1.ray.io", "rayclusters"),
            ("ray.io/rayjob", "RayJob.v1.ray.io", "rayjobs"),
            ("ray.io/rayservice", "RayService.v1.ray.io", "rayservices"),
            ("workload.codeflare.dev/appwrapper", "AppWrapper.v1beta2.workload.codeflare.dev", "appwrappers"),
            (
                "leaderworkerset.x-k8s.io/leaderworkerset",
                "LeaderWorkerSet.v1.leaderworkerset.x-k8s.io",
                "leaderworkersets",
            ),
            (
                "sparkoperator.k8s.io/sparkapplication",
                "SparkApplication.v1beta2.sparkoperator.k8s.io",
                "sparkapplications",
            ),
        ];
        for (name, qualified, resource) in cases {
            let framework = by_name(name).unwrap_or_else(|| panic!("{name} is one of Kueue's"));
            assert_eq!((framework.qualified().as_str(), framework.resource), (qualified, resource), "{name}");
        }
        assert_eq!(KUEUE_FRAMEWORKS.len(), cases.len(), "every row is checked");
        assert_eq!(by_name("pipelinerun"), None);
    }

    /// Every registration but Deployment's and SparkApplication's has a `MultiKueueAdapter`.
    #[test]
    fn adapters_as_kueue_registers_them() {
        let without: Vec<&str> = KUEUE_FRAMEWORKS.iter().filter(|f| !f.multikueue_adapter).map(|f| f.name).collect();
        assert_eq!(without, ["deployment", "sparkoperator.k8s.io/sparkapplication"]);
    }

    /// The values each kind's `CanDefaultManagedBy` compares with; the pod-based kinds,
    /// LeaderWorkerSet and SparkApplication have none.
    #[test]
    fn own_managed_by_values() {
        let named: Vec<(&str, &str)> =
            KUEUE_FRAMEWORKS.iter().filter_map(|f| f.managed_by.map(|m| (f.kind, m))).collect();
        assert_eq!(
            named,
            [
                ("Job", "kubernetes.io/job-controller"),
                ("JobSet", "jobset.sigs.k8s.io/jobset-controller"),
                ("MPIJob", "kubeflow.org/mpi-operator"),
                ("PaddleJob", "kubeflow.org/training-operator"),
                ("PyTorchJob", "kubeflow.org/training-operator"),
                ("TFJob", "kubeflow.org/training-operator"),
                ("XGBoostJob", "kubeflow.org/training-operator"),
                ("JAXJob", "kubeflow.org/training-operator"),
                ("TrainJob", "trainer.kubeflow.org/trainjob-controller"),
                ("RayCluster", "ray.io/kuberay-operator"),
                ("RayJob", "ray.io/kuberay-operator"),
                ("RayService", "ray.io/kuberay-operator"),
                ("AppWrapper", "workload.codeflare.dev/appwrapper-controller"),
            ]
        );
    }

    /// AppWrapper v1.2.2's component kinds among Kueue's, and whether each ends on its own.
    #[test]
    fn what_a_wrapped_job_may_wrap_and_how_each_ends() {
        let wrappable: Vec<(&str, Option<bool>)> =
            KUEUE_FRAMEWORKS.iter().filter_map(|f| Some((f.kind, f.as_component?.ends))).collect();
        assert_eq!(
            wrappable,
            [
                ("Pod", Some(true)),
                ("Deployment", Some(false)),
                ("StatefulSet", Some(false)),
                ("Job", Some(true)),
                ("JobSet", Some(true)),
                ("PyTorchJob", Some(true)),
                ("RayCluster", Some(false)),
                ("RayJob", None),
                ("LeaderWorkerSet", Some(false)),
            ]
        );
        assert_eq!(of_kind("apps", "Deployment").map(|f| f.name), Some("deployment"));
        assert_eq!(of_kind("", "Service"), None);
    }

    #[test]
    fn one_row_per_name_and_per_resource() {
        for (i, a) in KUEUE_FRAMEWORKS.iter().enumerate() {
            for b in &KUEUE_FRAMEWORKS[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!((a.group, a.resource), (b.group, b.resource), "{}", a.name);
            }
        }
    }
}
