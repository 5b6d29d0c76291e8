use serde_json::json;

use super::*;
use crate::jobframework::generic_job::Finished;

fn configured(file: &str) -> KindRegistry {
    let text = std::fs::read_to_string(format!("samples/{file}")).unwrap();
    KindRegistry::with_configured(&IntegrationConfig::parse(file, &text).unwrap(), file)
}

#[test]
fn the_built_in_kinds_are_this_projects_and_those_kueue_integrates_itself() {
    let registry = KindRegistry::built_in();
    assert_eq!(registry.names(), "ExternalJob, WrappedJob, Job, JobSet, PyTorchJob");
    let jobset = registry.find("JobSet.v1alpha2.jobset.x-k8s.io").unwrap();
    assert_eq!(jobset.own_runner(), ("the JobSet controller", "jobset.sigs.k8s.io/jobset-controller"));
    let ours = configured("addons/jobset/jobset-integration.yaml");
    assert_eq!(
        ours.find(jobset.qualified()).unwrap().description(),
        jobset.description(),
        "the sample configures JobSets for our controller as Kueue's own integration reads them"
    );
    let pytorch = registry.find("PyTorchJob.v1.kubeflow.org").unwrap();
    assert_eq!(pytorch.own_runner(), ("the training operator", "kubeflow.org/training-operator"));
    assert_eq!(
        configured("addons/kubeflow/pytorchjob-integration.yaml").find(pytorch.qualified()).unwrap().description(),
        pytorch.description(),
        "the sample configures PyTorchJobs for our controller as Kueue's own integration reads them"
    );
    let job = registry.find("Job.v1.batch").unwrap();
    assert_eq!(job.api_resource().api_version, "batch/v1");
    assert_eq!(job.own_runner(), ("kube-controller-manager", "kubernetes.io/job-controller"));
    assert_eq!(registry.by_alias("ej").unwrap().own_runner(), ("kueue-ext", KUEUE_EXT_CONTROLLER));
}

#[test]
fn the_described_built_in_kinds_are_kueues_integrations() {
    for kind in KindRegistry::built_in().kinds().iter().filter(|k| k.compiled().is_none()) {
        let kueues = super::kueue_frameworks::of(kind.description()).expect("one of Kueue's integrations");
        assert_eq!(kueues.resource, kind.api_resource().plural, "{}", kueues.name);
        assert_eq!(kind.own_runner(), (kueues.runner, kueues.managed_by.unwrap_or_default()));
        assert_eq!(kueues.description(), Some(kind.description().as_ref()), "{}", kueues.name);
    }
}

#[test]
fn a_configured_kind_kueue_integrates_is_run_by_its_own_controller() {
    let text = r#"
apiVersion: kueue-ext.dev/v1alpha1
kind: IntegrationConfig
integrations:
- kind: RayJob.v1.ray.io
  resource: rayjobs
  suspend: {path: spec.suspend}
  podSets:
  - {name: head, template: spec.rayClusterSpec.headGroupSpec.template}
  finished:
    succeeded: {condition: Complete}
    failed: {condition: Failed}
  active: {sum: [status.rayClusterStatus.readyWorkerReplicas], atLeast: 1}
  podsReady: {condition: Running}
"#;
    let registry = KindRegistry::with_configured(&IntegrationConfig::parse("rayjob", text).unwrap(), "rayjob");
    let rayjob = registry.find("RayJob.v1.ray.io").unwrap();
    assert_eq!(rayjob.own_runner(), ("the KubeRay operator", "ray.io/kuberay-operator"));
}

#[test]
fn kinds_answer_to_kubectl_aliases() {
    let registry = configured("addons/tekton/pipelinerun-integration.yaml");
    let cases = [
        ("WJ", Some("WrappedJob.v1alpha1.kueue-ext.dev")),
        ("externaljobs", Some("ExternalJob.v1alpha1.kueue-ext.dev")),
        ("job.batch", Some("Job.v1.batch")),
        ("jobs", Some("Job.v1.batch")),
        ("pipelinerun", Some("PipelineRun.v1.tekton.dev")),
        ("pipelineruns.tekton.dev", Some("PipelineRun.v1.tekton.dev")),
        ("PipelineRun.v1.tekton.dev", Some("PipelineRun.v1.tekton.dev")),
        ("job.tekton.dev", None),
        ("pod", None),
    ];
    for (alias, qualified) in cases {
        assert_eq!(registry.by_alias(alias).map(JobKind::qualified), qualified, "{alias}");
    }
}

#[test]
fn a_configured_kind_replaces_the_built_in_description_of_the_same_kind() {
    let registry = configured("integrations/job-integration.yaml");
    assert_eq!(registry.kinds().len(), 5);
    let job = registry.find("Job.v1.batch").unwrap();
    assert_eq!(job.origin(), &Origin::Configured("integrations/job-integration.yaml".into()));
    assert_eq!(job.own_runner().0, "kube-controller-manager", "who runs a Job's pods does not change");
    assert_eq!(registry.find("ExternalJob.v1alpha1.kueue-ext.dev").unwrap().origin(), &Origin::BuiltIn);
}

#[test]
fn objects_are_recognised_by_api_version_and_kind() {
    let registry = configured("addons/tekton/pipelinerun-integration.yaml");
    let of = |api_version: &str, kind: &str| {
        registry.of_object(&json!({"apiVersion": api_version, "kind": kind})).map(JobKind::name)
    };
    assert_eq!(of("batch/v1", "Job"), Some("Job"));
    assert_eq!(of("kueue-ext.dev/v1alpha1", "WrappedJob"), Some("WrappedJob"));
    assert_eq!(of("tekton.dev/v1", "PipelineRun"), Some("PipelineRun"));
    assert_eq!(of("example.com/v1", "Job"), None);
    assert_eq!(of("tekton.dev/v1beta1", "PipelineRun"), None, "another version is another description");
}

#[test]
fn each_kind_reads_suspension_and_its_end_by_its_own_rule() {
    let registry = configured("addons/tekton/pipelinerun-integration.yaml");
    let read = |alias: &str, object: Value| registry.by_alias(alias).unwrap().read(&object).unwrap();
    let metadata = json!({"name": "a", "namespace": "default"});

    let job = read(
        "job",
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
               "spec": {"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue", "template": {}},
               "status": {"conditions": [{"type": "Complete", "status": "True", "message": "done"}]}}),
    );
    assert!(job.suspended);
    assert_eq!(job.managed_by.as_deref(), Some("kueue.x-k8s.io/multikueue"));
    assert_eq!(job.finished, Some(Finished { success: true, message: "done".into() }));

    let run = read(
        "pipelinerun",
        json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "metadata": metadata,
               "spec": {"status": "PipelineRunPending"},
               "status": {"conditions": [{"type": "Succeeded", "status": "False", "message": "task failed"}]}}),
    );
    assert!(run.suspended, "PipelineRunPending is this kind's suspension");
    assert_eq!(run.finished, Some(Finished { success: false, message: "task failed".into() }));
    let running = read(
        "pipelinerun",
        json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "metadata": metadata, "spec": {},
               "status": {"conditions": [{"type": "Succeeded", "status": "Unknown"}]}}),
    );
    assert_eq!((running.suspended, running.finished), (false, None));

    let wrapped = read(
        "wj",
        json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob", "metadata": metadata,
               "spec": {"components": []}, "status": {"phase": "Succeeded"}}),
    );
    assert_eq!(wrapped.finished.map(|f| f.success), Some(true));
}

#[test]
fn an_object_its_type_cannot_decode_is_read_by_the_kinds_description() {
    let external = built_in_kind("ExternalJob");
    let odd = json!({"metadata": {"name": "a"}, "spec": {"suspend": true, "podSets": "not a list"},
                     "status": {"conditions": [{"type": "Failed", "status": "True", "message": "boom"}]}});
    let reading = external.read(&odd).unwrap();
    assert!(reading.suspended);
    assert_eq!(reading.finished, Some(Finished { success: false, message: "boom".into() }));
    assert_eq!(external.read(&json!({"metadata": "not an object"})), None);
}

const CONFIG_MAP_PATH: &str = "/api/v1/namespaces/kueue-ext-system/configmaps/kueue-ext-integrations";

async fn discovered(answer: Result<Value, u16>) -> Result<KindRegistry, ConfigError> {
    let (client, _) = crate::test_api_server::scripted_client(move |_, path| match path {
        CONFIG_MAP_PATH => answer.clone(),
        _ => Err(500),
    });
    KindRegistry::discover(&client, "kueue-ext-system").await
}

fn config_map(file: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "kueue-ext-integrations", "namespace": "kueue-ext-system"},
           "data": {"integrations.yaml": file}})
}

#[tokio::test]
async fn a_cluster_says_which_kinds_it_runs_in_the_controllers_config_map() {
    let file = std::fs::read_to_string("samples/addons/tekton/pipelinerun-integration.yaml").unwrap();
    let registry = discovered(Ok(config_map(&file))).await.unwrap();
    assert_eq!(registry.names(), "ExternalJob, WrappedJob, Job, JobSet, PyTorchJob, PipelineRun");
    let origin = registry.by_alias("pipelinerun").unwrap().origin().clone();
    assert_eq!(origin, Origin::Configured("ConfigMap kueue-ext-system/kueue-ext-integrations".into()));
}

#[tokio::test]
async fn without_a_config_map_or_the_right_to_read_it_only_the_built_in_kinds_are_known() {
    for code in [404, 403] {
        assert_eq!(
            discovered(Err(code)).await.unwrap().names(),
            "ExternalJob, WrappedJob, Job, JobSet, PyTorchJob",
            "{code}"
        );
    }
}

#[tokio::test]
async fn a_config_map_the_controller_could_not_read_either_is_named_with_the_field() {
    let broken =
        config_map("apiVersion: kueue-ext.dev/v1alpha1\nkind: IntegrationConfig\nintegrations:\n- kind: Run\n");
    let err = discovered(Ok(broken)).await.unwrap_err();
    assert!(err.to_string().starts_with("ConfigMap kueue-ext-system/kueue-ext-integrations: integrations[0]"), "{err}");
}
