//! A configured kind driven through the `GenericJob` contract, from the sample integrations
//! files: batch Job (a boolean suspend and one templated pod set) and a PipelineRun-shaped kind
//! (a suspend value and a synthetic pod set from annotations).

use std::sync::Arc;

use crate::jobframework::admission::JobWebhook;

use serde_json::{Value, json};

use super::ConfiguredJob;
use super::config::{Integration, IntegrationConfig};
use crate::jobframework::generic_job::GenericJob;
use crate::jobframework::podset::PodSetInfo;

fn integration(file: &str, text: &str) -> Arc<Integration> {
    let config = IntegrationConfig::parse(file, text).unwrap();
    Arc::new(config.integrations.into_iter().next().unwrap())
}

fn job_kind() -> Arc<Integration> {
    integration("job-integration.yaml", include_str!("../../../samples/integrations/job-integration.yaml"))
}

fn pipeline_kind() -> Arc<Integration> {
    integration(
        "pipelinerun-integration.yaml",
        include_str!("../../../samples/addons/tekton/pipelinerun-integration.yaml"),
    )
}

fn batch_job() -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "default", "uid": "u1", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "parallelism": 2, "completions": 2, "suspend": true,
            "template": {
                "metadata": {"annotations": {"kueue-ext.dev/run-duration": "5s"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
            },
            "futureField": {"kept": true},
        },
    })
}

fn pipeline_run() -> Value {
    json!({
        "apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
        "metadata": {"name": "p", "namespace": "default", "uid": "u2", "labels": {"kueue.x-k8s.io/queue-name": "q"},
                     "annotations": {"kueue-ext.dev/pod-requests": "cpu=1,memory=2Gi", "kueue-ext.dev/pod-count": "3"}},
        "spec": {"pipelineRef": {"name": "build"}},
    })
}

fn info(name: &str, count: i32) -> PodSetInfo {
    PodSetInfo {
        name: name.into(),
        count,
        node_selector: [("flavor".to_string(), "fast".to_string())].into(),
        labels: [("kueue.x-k8s.io/podset".to_string(), name.to_string())].into(),
        ..PodSetInfo::default()
    }
}

/// Kueue's podsCount: a Job asks for min(parallelism, completions) pods; admitted whole, its
/// parallelism is left as written, and a partial admission lowers it.
#[test]
fn a_job_asks_for_no_more_pods_than_completions_and_whole_admission_keeps_its_spec() {
    let mut object = batch_job();
    object["spec"]["parallelism"] = json!(4);
    let mut job = ConfiguredJob::new(object.clone(), job_kind()).unwrap();
    assert_eq!(job.pod_sets()[0].count, 2, "completions 2 of parallelism 4");
    job.run_with_pod_sets_info(&[info("main", 2)]).unwrap();
    assert_eq!(serde_json::to_value(&job).unwrap()["spec"]["parallelism"], 4);
    let mut job = ConfiguredJob::new(object, job_kind()).unwrap();
    job.run_with_pod_sets_info(&[info("main", 1)]).unwrap();
    assert_eq!(serde_json::to_value(&job).unwrap()["spec"]["parallelism"], 1);
}

#[test]
fn a_configured_job_starts_with_the_admission_and_stops_back_to_its_templates() {
    let mut job = ConfiguredJob::new(batch_job(), job_kind()).unwrap();
    assert!(job.is_suspended());
    let pod_sets = job.pod_sets();
    assert_eq!((pod_sets.len(), pod_sets[0].name.as_str(), pod_sets[0].count), (1, "main", 2));
    let recorded = pod_sets[0].template.clone();

    job.run_with_pod_sets_info(&[info("main", 1)]).unwrap();
    assert!(!job.is_suspended());
    let object = serde_json::to_value(&job).unwrap();
    assert_eq!(object["spec"]["suspend"], false);
    assert_eq!(object["spec"]["parallelism"], 1, "partial admission sets the count");
    assert_eq!(object["spec"]["template"]["spec"]["nodeSelector"], json!({"flavor": "fast"}));
    assert_eq!(object["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
    assert_eq!(object["spec"]["futureField"], json!({"kept": true}), "fields the framework does not know survive");

    job.suspend();
    let infos = crate::jobframework::podset::infos_from_templates(&[("main".into(), 2, recorded)]);
    assert!(job.restore_pod_sets_info(&infos));
    let mut expected = batch_job();
    expected["spec"]["template"]["spec"]["nodeSelector"] = Value::Null;
    let object = serde_json::to_value(&job).unwrap();
    assert_eq!(object["spec"]["parallelism"], 2);
    assert!(object["spec"]["template"]["spec"].get("nodeSelector").is_none(), "{object}");
    assert!(object["spec"]["template"]["metadata"].get("labels").is_none(), "{object}");
    assert!(!job.restore_pod_sets_info(&infos), "restoring twice changes nothing");
}

#[test]
fn a_configured_job_reports_its_end_activity_and_readiness_from_its_status() {
    let mut object = batch_job();
    object["spec"]["suspend"] = json!(false);
    object["status"] = json!({"active": 2, "ready": 1});
    let job = ConfiguredJob::new(object.clone(), job_kind()).unwrap();
    assert!(job.is_active());
    assert!(!job.pods_ready(), "1 of 2 pods ready");
    object["status"] = json!({"active": 2, "ready": 2});
    assert!(ConfiguredJob::new(object.clone(), job_kind()).unwrap().pods_ready());
    assert_eq!(ConfiguredJob::new(object.clone(), job_kind()).unwrap().finished(), None);

    object["status"] =
        json!({"succeeded": 2, "conditions": [{"type": "Complete", "status": "True", "message": "done"}]});
    let finished = ConfiguredJob::new(object.clone(), job_kind()).unwrap().finished().unwrap();
    assert!(finished.success);
    assert_eq!(finished.message, "done");
    object["status"] = json!({"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]});
    assert!(!ConfiguredJob::new(object, job_kind()).unwrap().finished().unwrap().success);
}

#[test]
fn managed_by_is_read_and_set_where_the_kind_keeps_it() {
    let mut job = ConfiguredJob::new(batch_job(), job_kind()).unwrap();
    assert_eq!(job.managed_by(), None);
    job.set_managed_by("kueue.x-k8s.io/multikueue");
    assert_eq!(job.managed_by(), Some("kueue.x-k8s.io/multikueue"));
    assert_eq!(serde_json::to_value(&job).unwrap()["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
    let mut pipeline = ConfiguredJob::new(pipeline_run(), pipeline_kind()).unwrap();
    pipeline.set_managed_by("kueue.x-k8s.io/multikueue");
    assert_eq!(pipeline.managed_by(), None, "a kind without the field ignores it");
}

#[test]
fn a_suspend_value_is_set_then_removed_and_annotations_make_a_synthetic_pod_set() {
    let mut run = ConfiguredJob::new(pipeline_run(), pipeline_kind()).unwrap();
    assert!(!run.is_suspended());
    run.suspend();
    assert_eq!(serde_json::to_value(&run).unwrap()["spec"]["status"], "PipelineRunPending");
    assert!(run.is_suspended());

    let pod_sets = run.pod_sets();
    assert_eq!((pod_sets[0].name.as_str(), pod_sets[0].count), ("tasks", 3));
    let requests =
        pod_sets[0].template.spec.as_ref().unwrap().containers[0].resources.clone().unwrap().requests.unwrap();
    assert_eq!(requests["cpu"].0, "1");
    assert_eq!(requests["memory"].0, "2Gi");

    run.run_with_pod_sets_info(&[info("tasks", 3)]).unwrap();
    let object = serde_json::to_value(&run).unwrap();
    assert!(object["spec"].get("status").is_none(), "running removes the field: {object}");
    assert_eq!(
        object["metadata"]["annotations"]["kueue-ext.dev/pod-count"], "3",
        "a count outside spec is not written"
    );

    let mut finished = pipeline_run();
    finished["status"] = json!({"conditions": [{"type": "Succeeded", "status": "Unknown"}]});
    let running = ConfiguredJob::new(finished.clone(), pipeline_kind()).unwrap();
    assert!(running.is_active());
    assert_eq!(running.finished(), None);
    finished["status"] = json!({"conditions": [{"type": "Succeeded", "status": "False", "message": "task 2 failed"}]});
    let failed = ConfiguredJob::new(finished, pipeline_kind()).unwrap().finished().unwrap();
    assert_eq!((failed.success, failed.message.as_str()), (false, "task 2 failed"));
}

#[test]
fn pod_sets_from_a_list_are_one_per_entry() {
    let kind = integration(
        "list.yaml",
        "apiVersion: kueue-ext.dev/v1alpha1\nkind: IntegrationConfig\nintegrations:\n- kind: Batch.v1.example.com\n  resource: batches\n  suspend: {path: spec.suspend}\n  podSets: [{each: spec.groups, nameFrom: name, template: template, count: replicas}]\n  finished: {succeeded: {condition: Done}, failed: {condition: Failed}}\n  podsReady: {sum: [status.ready], atLeast: pods}\n",
    );
    let template = json!({"spec": {"containers": [{"name": "c", "image": "x"}]}});
    let object = json!({
        "apiVersion": "example.com/v1", "kind": "Batch", "metadata": {"name": "b", "namespace": "default"},
        "spec": {"groups": [{"name": "driver", "template": template}, {"name": "workers", "replicas": 4, "template": template}]},
    });
    let job = ConfiguredJob::new(object, kind).unwrap();
    let pod_sets: Vec<(String, i32)> = job.pod_sets().into_iter().map(|p| (p.name, p.count)).collect();
    assert_eq!(pod_sets, [("driver".to_string(), 1), ("workers".to_string(), 4)]);
    let mut started = job.clone();
    started.run_with_pod_sets_info(&[info("driver", 1), info("workers", 2)]).unwrap();
    let object = serde_json::to_value(&started).unwrap();
    assert_eq!(object["spec"]["groups"][1]["replicas"], 2);
    assert!(object["spec"]["groups"][0].get("replicas").is_none(), "a default count of 1 is not written");
    assert_eq!(object["spec"]["groups"][1]["template"]["spec"]["nodeSelector"]["flavor"], "fast");
}

#[test]
fn mistakes_in_the_integrations_file_name_the_file_and_field() {
    let base = "apiVersion: kueue-ext.dev/v1alpha1\nkind: IntegrationConfig\nintegrations:\n- kind: Job.v1.batch\n  resource: jobs\n";
    let tail = "  finished: {succeeded: {condition: Complete}, failed: {condition: Failed}}\n";
    let ready = "  podsReady: {sum: [status.ready, status.succeeded], atLeast: pods}\n";
    for (body, field, words) in [
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template}]\n  finished: {succeeded: {condition: Complete}}\n",
            "integrations[0].finished",
            "failed",
        ),
        (
            "  suspend: {path: status.suspended}\n  podSets: [{name: main, template: spec.template}]\n",
            "integrations[0].suspend.path",
            "field of spec",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: Main, template: spec.template}]\n",
            "integrations[0].podSets[0].name",
            "lower case",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main}]\n",
            "integrations[0].podSets[0].template",
            "either `template`",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template, replicas: spec.x}]\n",
            "integrations[0].podSets[0]",
            "unknown field `replicas`",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template, count: {product: []}}]\n",
            "integrations[0].podSets[0].count",
            "at least one term",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec..template}]\n",
            "integrations[0].podSets[0].template",
            "empty name",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template}]\n  active: {condition: Running, sum: [status.active]}\n",
            "integrations[0].active",
            "exactly one",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template}]\n  podsReady: {sum: [status.ready], atLeast: all}\n",
            "integrations[0].podsReady.atLeast",
            "`pods`",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template}]\n  podsReady: {sum: [status.ready], atLeast: {sum: []}}\n",
            "integrations[0].podsReady.atLeast.sum",
            "at least one field",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template}]\n  podsReady: {sum: [status.ready], atLeast: {sum: [spec..replicas]}}\n",
            "integrations[0].podsReady.atLeast",
            "\"spec..replicas\" is not a field path: an empty name between dots",
        ),
        (
            "  suspend: {path: spec.suspend}\n  podSets: [{name: main, template: spec.template}]\n  podsReady: {sum: [status.ready], atLeast: {total: [spec.replicas]}}\n",
            "integrations[0].podsReady.atLeast",
            "unknown field `total`, expected `sum`",
        ),
    ] {
        let mut text = format!("{base}{body}");
        if !body.contains("finished") {
            text.push_str(tail);
        }
        if !body.contains("podsReady") {
            text.push_str(ready);
        }
        let err = IntegrationConfig::parse("bad.yaml", &text).unwrap_err();
        assert_eq!(err.file, "bad.yaml");
        assert!(err.field.starts_with(field), "{field}: {err}");
        assert!(err.message.contains(words), "{words}: {err}");
    }
    let wrong_kind = IntegrationConfig::parse("bad.yaml", "apiVersion: v1\nkind: ConfigMap\n").unwrap_err();
    assert_eq!(wrong_kind.field, "kind");
    let twice = format!(
        "{base}  suspend: {{path: spec.suspend}}\n  podSets: [{{name: main, template: spec.template}}]\n{tail}{ready}"
    );
    let not_gvk = IntegrationConfig::parse("bad.yaml", &twice.replace("Job.v1.batch", "jobs.batch")).unwrap_err();
    assert!(not_gvk.message.contains("Kind.version.group"), "{not_gvk}");
    let twice = format!("{twice}{}", twice.split_once("integrations:\n").unwrap().1);
    assert!(IntegrationConfig::parse("bad.yaml", &twice).unwrap_err().message.contains("listed twice"));
}

#[test]
fn a_multikueue_copy_loses_what_the_managers_api_server_generated() {
    let mut object = batch_job();
    object["spec"]["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}});
    object["spec"]["template"]["metadata"]["labels"] =
        json!({"controller-uid": "u1", "batch.kubernetes.io/controller-uid": "u1", "app": "x"});
    let mut original = ConfiguredJob::new(object.clone(), job_kind()).unwrap();
    original.prepare_copy();
    assert_eq!(serde_json::to_value(&original).unwrap(), object, "only copies are changed");

    object["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] = json!("job-j-1");
    object["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = json!("multikueue");
    let mut copy = ConfiguredJob::new(object, job_kind()).unwrap();
    assert!(copy.is_multikueue_copy());
    copy.prepare_copy();
    let copied = serde_json::to_value(&copy).unwrap();
    assert!(copied["spec"].get("selector").is_none());
    assert_eq!(copied["spec"]["template"]["metadata"]["labels"], json!({"app": "x"}));
}

fn sample_kind(file: &str) -> Arc<Integration> {
    let text = std::fs::read_to_string(format!("samples/{file}")).unwrap();
    Arc::new(IntegrationConfig::parse(file, &text).unwrap().integrations.remove(0))
}

fn container(name: &str) -> Value {
    json!({"spec": {"restartPolicy": "Never", "containers": [{"name": name, "image": "busybox"}]}})
}

/// The pod sets Kueue's built-in JobSet integration makes: one per replicated job, by its name,
/// its Job's pod template, `replicas × min(parallelism, completions)` pods.
#[test]
fn a_jobset_has_the_pod_sets_of_kueues_jobset_integration() {
    let jobset = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"suspend": true, "replicatedJobs": [
            {"name": "driver", "template": {"spec": {"template": container("driver")}}},
            {"name": "workers", "replicas": 3,
             "template": {"spec": {"parallelism": 4, "completions": 2, "template": container("worker")}}},
        ]},
    });
    let job = ConfiguredJob::new(jobset, sample_kind("addons/jobset/jobset-integration.yaml")).unwrap();
    assert!(job.is_suspended());
    let pod_sets = job.pod_sets();
    let shape: Vec<(&str, i32)> = pod_sets.iter().map(|p| (p.name.as_str(), p.count)).collect();
    assert_eq!(shape, [("driver", 1), ("workers", 6)]);
    let image = |i: usize| pod_sets[i].template.spec.as_ref().unwrap().containers[0].name.clone();
    assert_eq!((image(0), image(1)), ("driver".into(), "worker".into()));

    // A computed count is not a field admission could shrink: it is left as it is.
    let mut started = job.clone();
    started.run_with_pod_sets_info(&[info("driver", 1), info("workers", 6)]).unwrap();
    let object = serde_json::to_value(&started).unwrap();
    assert_eq!(object["spec"]["suspend"], false);
    assert_eq!(object["spec"]["replicatedJobs"][1]["replicas"], 3);
    assert_eq!(
        object["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["nodeSelector"]["flavor"],
        "fast"
    );
}

/// Kueue's Kubeflow integrations name a pod set by its replica type in lower case.
#[test]
fn a_pytorchjob_has_one_pod_set_per_replica_type_named_by_its_key() {
    let pytorchjob = json!({
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "mnist", "namespace": "default"},
        "spec": {
            "runPolicy": {"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue"},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": container("pytorch")},
                "Worker": {"replicas": 2, "template": container("pytorch")},
            },
        },
    });
    let job = ConfiguredJob::new(pytorchjob, sample_kind("addons/kubeflow/pytorchjob-integration.yaml")).unwrap();
    assert!(job.is_suspended());
    assert_eq!(job.managed_by(), Some("kueue.x-k8s.io/multikueue"));
    let shape: Vec<(String, i32)> = job.pod_sets().into_iter().map(|p| (p.name, p.count)).collect();
    assert_eq!(shape, [("master".to_string(), 1), ("worker".to_string(), 2)]);

    // Partial admission writes the count back where the replica type keeps it.
    let mut started = job.clone();
    started.run_with_pod_sets_info(&[info("master", 1), info("worker", 1)]).unwrap();
    let object = serde_json::to_value(&started).unwrap();
    assert_eq!(object["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"], 1);
    assert_eq!(object["spec"]["runPolicy"]["suspend"], false);
}

#[test]
fn a_list_at_each_needs_a_name_for_its_entries() {
    let kind = integration(
        "list.yaml",
        "apiVersion: kueue-ext.dev/v1alpha1\nkind: IntegrationConfig\nintegrations:\n- kind: Batch.v1.example.com\n  resource: batches\n  suspend: {path: spec.suspend}\n  podSets: [{each: spec.groups, template: template}]\n  finished: {succeeded: {condition: Done}, failed: {condition: Failed}}\n  podsReady: {sum: [status.ready], atLeast: pods}\n",
    );
    let object = json!({"apiVersion": "example.com/v1", "kind": "Batch", "metadata": {"name": "b"},
                        "spec": {"groups": [{"template": container("c")}]}});
    let job = ConfiguredJob::new(object, kind).unwrap();
    let resolved = job.resolve_pod_sets();
    assert_eq!(
        resolved[0].as_ref().unwrap_err(),
        &("spec.groups".to_string(), "a list: the integration names no `nameFrom` for its entries".to_string())
    );
}

#[test]
fn a_computed_count_is_checked_field_by_field_and_as_a_whole() {
    let jobset = |replicas: Value| {
        let object = json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "t", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": replicas,
                      "template": {"spec": {"parallelism": 2, "template": container("w")}}}]},
        });
        ConfiguredJob::new(object, sample_kind("addons/jobset/jobset-integration.yaml")).unwrap()
    };
    let errors =
        |replicas| JobWebhook::validate_create(&jobset(replicas)).iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(errors(json!(2)), Vec::<String>::new());
    assert_eq!(
        errors(json!("two")),
        ["spec.replicatedJobs[0].replicas: Invalid value: \"\\\"two\\\"\": must be a whole number, at least 1"]
    );
    let zero = errors(json!(0));
    assert_eq!(zero.len(), 1, "{zero:?}");
    assert!(
        zero[0].starts_with("spec.replicatedJobs[0].replicas × spec.replicatedJobs[0].template.spec.parallelism"),
        "{zero:?}"
    );
}

#[test]
fn a_sum_adds_every_entry_of_a_list_and_only_a_sum_may_name_many() {
    let integration = sample_kind("addons/jobset/jobset-integration.yaml");
    let active = integration.active.as_ref().expect("the sample says when a JobSet is active");
    let running = json!({"status": {"replicatedJobsStatus": [{"name": "driver", "active": 0}, {"name": "workers", "active": 2}]}});
    assert!(active.holds(&running, 5));
    let stopped = json!({"status": {"replicatedJobsStatus": [{"name": "driver", "active": 0}, {"name": "workers", "active": 0}]}});
    assert!(!active.holds(&stopped, 5), "suspended Jobs whose pods are gone");
    assert!(!active.holds(&json!({"status": {}}), 5));

    let text = include_str!("../../../samples/addons/jobset/jobset-integration.yaml")
        .replace("path: spec.suspend", "path: spec.replicatedJobs[*].suspend");
    let err = IntegrationConfig::parse("jobset.yaml", &text).unwrap_err().to_string();
    assert_eq!(
        err,
        "jobset.yaml: integrations[0].suspend.path: spec.replicatedJobs[*].suspend: `[*]` only goes in a probe's `sum`"
    );
}

/// Without a probe, "ready" could only mean "running", and Kueue's waitForPodsReady would never
/// evict a job whose pods do not start: the file is refused, naming the kind's entry.
#[test]
fn a_kind_that_does_not_say_when_its_pods_are_ready_is_refused() {
    let job = std::fs::read_to_string("samples/integrations/job-integration.yaml").unwrap();
    let text = format!(
        "{job}- kind: PipelineRun.v1.tekton.dev\n  resource: pipelineruns\n  suspend: {{path: spec.status, suspended: PipelineRunPending}}\n  \
         podSets: [{{name: tasks, requests: \"metadata.annotations[kueue-ext.dev/pod-requests]\"}}]\n  \
         finished: {{succeeded: {{condition: Succeeded}}, failed: {{condition: Succeeded, status: \"False\"}}}}\n"
    );
    let err = IntegrationConfig::parse("runs.yaml", &text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "runs.yaml: integrations[1].podsReady: required: say when every pod of a PipelineRun runs ready or has \
         succeeded, with a probe such as `{condition: Running}` or `{sum: [status.ready, status.succeeded], atLeast: \
         pods}`; Kueue's waitForPodsReady evicts a job whose pods are not ready in time"
    );
}

/// A JobSet of `replicated_jobs` (name, replicas, parallelism), unsuspended, with `statuses`
/// (name, ready, succeeded) as its controller counts child Jobs.
fn jobset(replicated_jobs: &[(&str, i64, i64)], statuses: &[(&str, i64, i64)]) -> Value {
    let replicated_jobs: Vec<Value> = replicated_jobs
        .iter()
        .map(|(name, replicas, parallelism)| {
            json!({"name": name, "replicas": replicas,
                   "template": {"spec": {"parallelism": parallelism, "template": container(name)}}})
        })
        .collect();
    let statuses: Vec<Value> = statuses
        .iter()
        .map(|(name, ready, succeeded)| json!({"name": name, "ready": ready, "succeeded": succeeded, "active": ready}))
        .collect();
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"suspend": false, "replicatedJobs": replicated_jobs},
        "status": {"replicatedJobsStatus": statuses},
    })
}

#[test]
fn a_threshold_can_add_up_fields_of_the_job_itself() {
    let kind = sample_kind("addons/jobset/jobset-integration.yaml");
    let ready = |object: Value| ConfiguredJob::new(object, kind.clone()).unwrap().pods_ready();
    assert!(!ready(jobset(&[("workers", 2, 1)], &[("workers", 0, 0)])), "0 of 2 Jobs ready");
    assert!(!ready(jobset(&[("workers", 2, 1)], &[])), "running, but nothing counted yet");
    assert!(ready(jobset(&[("workers", 2, 1)], &[("workers", 1, 1)])), "1 ready and 1 succeeded of 2");
    // 2 Jobs of 4 pods each: the JobSet controller counts a Job ready once all 4 are, so 2 ready
    // Jobs are every pod, though the pod sets ask for 8 pods.
    let wide = jobset(&[("workers", 2, 4)], &[("workers", 2, 0)]);
    assert_eq!(ConfiguredJob::new(wide.clone(), kind.clone()).unwrap().pod_sets()[0].count, 8);
    assert!(ready(wide), "replicas count Jobs, not pods");

    let probe = kind.pods_ready.as_ref().unwrap();
    assert_eq!(
        serde_json::to_value(probe.at_least.as_ref().unwrap()).unwrap(),
        json!({"sum": ["spec.replicatedJobs[*].replicas"]}),
        "written back as read (the controller's ConfigMap is this file serialized)"
    );
}

/// Kueue's JobSet `PodsReady` (pkg/controller/jobs/jobset/jobset_controller.go, v0.19.2): the
/// replicas of all replicated jobs, added up, equal the ready and succeeded child Jobs, added
/// up. It asks for equality where the probe asks for "at least": the JobSet controller counts a
/// Job as ready only while it has not succeeded, so the count never exceeds the replicas.
fn kueue_jobset_pods_ready(jobset: &Value) -> bool {
    let entries = |path: &str| jobset.pointer(path).and_then(Value::as_array).cloned().unwrap_or_default();
    let count = |entry: &Value, field: &str| entry[field].as_i64().unwrap_or(0);
    let replicas: i64 = entries("/spec/replicatedJobs").iter().map(|r| count(r, "replicas")).sum();
    let ready: i64 =
        entries("/status/replicatedJobsStatus").iter().map(|s| count(s, "ready") + count(s, "succeeded")).sum();
    replicas == ready
}

#[test]
fn the_jobset_sample_says_pods_are_ready_when_kueues_jobset_integration_does() {
    let kind = sample_kind("addons/jobset/jobset-integration.yaml");
    let spec = [("driver", 1, 1), ("workers", 3, 2)];
    let cases = [
        ("just let go: no child Job counted yet", jobset(&spec, &[]), false),
        ("driver ready, no worker", jobset(&spec, &[("driver", 1, 0), ("workers", 0, 0)]), false),
        ("driver ready, 2 of 3 workers", jobset(&spec, &[("driver", 1, 0), ("workers", 2, 0)]), false),
        ("every Job ready", jobset(&spec, &[("driver", 1, 0), ("workers", 3, 0)]), true),
        ("driver done, workers ready", jobset(&spec, &[("driver", 0, 1), ("workers", 3, 0)]), true),
        ("some workers done, the rest ready", jobset(&spec, &[("driver", 1, 0), ("workers", 1, 2)]), true),
        ("a worker Job failed", jobset(&spec, &[("driver", 1, 0), ("workers", 2, 0)]), false),
    ];
    for (case, object, expected) in cases {
        assert_eq!(kueue_jobset_pods_ready(&object), expected, "Kueue's rule, {case}");
        assert_eq!(ConfiguredJob::new(object, kind.clone()).unwrap().pods_ready(), expected, "our probe, {case}");
    }
}

/// Tekton's status for a PipelineRun in each phase of its run (pkg/reconciler/pipelinerun, v1.0.0):
/// its one condition, `Succeeded`, and the reason Tekton gives it.
#[test]
fn a_pipelinerun_is_ready_once_tekton_runs_its_tasks() {
    let cases = [
        ("Unknown", "PipelineRunPending", false),
        ("Unknown", "Started", false),
        ("Unknown", "ResolvingPipelineRef", false),
        ("Unknown", "Running", true),
        ("Unknown", "PipelineRunStopping", true),
        ("Unknown", "CancelledRunningFinally", true),
        ("False", "CouldntGetPipeline", false),
    ];
    for (status, reason, ready) in cases {
        let mut run = pipeline_run();
        run["status"] = json!({"conditions": [{"type": "Succeeded", "status": status, "reason": reason}]});
        assert_eq!(ConfiguredJob::new(run, pipeline_kind()).unwrap().pods_ready(), ready, "{reason}");
    }
    assert!(!ConfiguredJob::new(pipeline_run(), pipeline_kind()).unwrap().pods_ready(), "no status yet");
}
