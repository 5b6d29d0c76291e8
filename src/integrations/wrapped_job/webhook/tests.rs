use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use super::*;
use crate::api::kueue::QUEUE_NAME_LABEL;
use crate::api::wrapped_job::{ComponentPodSet, ComponentPodSetInfo, WrappedJobSpec};
use crate::jobframework::admission::JobWebhook;

fn deployment(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "main"}]}}},
    })
}

fn component(template: Value) -> WrappedComponent {
    WrappedComponent { template, pod_sets: Vec::new(), pod_set_infos: Vec::new() }
}

fn valid() -> WrappedJob {
    let components = vec![
        component(deployment("web", 2)),
        component(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"generateName": "web-"}})),
    ];
    let mut job = WrappedJob::new("train", WrappedJobSpec { suspend: Some(true), managed_by: None, components });
    job.metadata = ObjectMeta {
        name: Some("train".into()),
        namespace: Some("team-a".into()),
        labels: Some([(QUEUE_NAME_LABEL.to_owned(), "user-queue".to_owned())].into()),
        ..Default::default()
    };
    job
}

fn messages(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

type Change = fn(&mut WrappedJob);

#[test]
fn a_valid_job_passes() {
    assert_eq!(messages(&JobWebhook::validate_create(&valid())), Vec::<String>::new());
    assert_eq!(messages(&JobWebhook::validate_update(&valid(), &valid())), Vec::<String>::new());
}

#[test]
fn create_rules() {
    let cases: Vec<(&str, Change, Vec<&str>)> = vec![
        (
            "queue name (framework)",
            |job| {
                job.metadata.labels = Some([(QUEUE_NAME_LABEL.to_owned(), "Bad_Queue".to_owned())].into());
            },
            vec![
                "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Bad_Queue\": must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character",
            ],
        ),
        (
            "name not a DNS label",
            |job| job.metadata.name = Some("Train".into()),
            vec![
                "metadata.name: Invalid value: \"Train\": must be at most 63 lower case alphanumeric characters or '-', starting and ending with an alphanumeric character",
            ],
        ),
        (
            "name too long for pod set names",
            |job| job.metadata.name = Some("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".into()),
            vec![
                "metadata.name: Invalid value: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": must be no more than 61 characters: pod sets are named \"<name>-<k>\"",
            ],
        ),
        (
            "no components",
            |job| job.spec.components.clear(),
            vec!["spec.components: Required value: at least one component"],
        ),
        (
            "template not an object",
            |job| job.spec.components[1].template = json!("web"),
            vec!["spec.components[1].template: Invalid value: \"string\": must be an object"],
        ),
        (
            "no apiVersion, kind or name",
            |job| {
                job.spec.components[1].template = json!({"metadata": {"labels": {}}});
            },
            vec![
                "spec.components[1].template.apiVersion: Required value: such as \"batch/v1\"",
                "spec.components[1].template.kind: Required value: such as \"Job\"",
                "spec.components[1].template.metadata.name: Required value: name or generateName is required",
            ],
        ),
        (
            "nested WrappedJob",
            |job| {
                job.spec.components[1].template = json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob", "metadata": {"name": "inner"}});
            },
            vec!["spec.components[1].template: Forbidden: nested WrappedJobs and AppWrappers are forbidden"],
        ),
        (
            "nested AppWrapper",
            |job| {
                job.spec.components[1].template = json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "metadata": {"name": "inner"}});
            },
            vec!["spec.components[1].template: Forbidden: nested WrappedJobs and AppWrappers are forbidden"],
        ),
        (
            "another namespace",
            |job| job.spec.components[0].template["metadata"]["namespace"] = json!("team-b"),
            vec![
                "spec.components[0].template.metadata.namespace: Forbidden: a WrappedJob in \"team-a\" cannot create objects in \"team-b\"",
            ],
        ),
        ("its own namespace", |job| job.spec.components[0].template["metadata"]["namespace"] = json!("team-a"), vec![]),
        (
            "pod set errors",
            |job| {
                job.spec.components[0].pod_sets =
                    vec![ComponentPodSet { path: "template.spec.nope".into(), ..Default::default() }];
            },
            vec![
                "spec.components[0].podSets[0].path: Invalid value: \"template.spec.nope\": does not refer to a pod template: template.spec.nope does not exist",
                "spec.components[0].podSets: Required value: the pod set \"template.spec.template\" of the template's kind is missing",
            ],
        ),
        (
            "inferred replicas",
            |job| job.spec.components[0].template["spec"]["replicas"] = json!(-2),
            vec![
                "spec.components[0].template.spec.replicas: Invalid value: \"-2\": must be a non-negative 32-bit integer",
            ],
        ),
        (
            "no pod templates",
            |job| drop(job.spec.components.remove(0)),
            vec!["spec.components: Invalid value: 0: must contain 1 to 8 pod templates, found 0"],
        ),
        (
            "more than 8 pod templates",
            |job| {
                let jobset = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"}, "spec": {
                    "replicatedJobs": vec![json!({"template": {"spec": {"template": {"spec": {"containers": [{"name": "main"}]}}}}}); 8],
                }});
                job.spec.components.push(component(jobset));
            },
            vec!["spec.components: Invalid value: 9: must contain 1 to 8 pod templates, found 9"],
        ),
        (
            "pod set infos of another count",
            |job| {
                job.spec.components[0].pod_set_infos = vec![ComponentPodSetInfo::default(); 2];
            },
            vec![
                "spec.components[0].podSetInfos: Invalid value: \"2 entries\": must have one entry per pod set of the component (1)",
            ],
        ),
    ];
    for (name, change, expected) in cases {
        let mut job = valid();
        change(&mut job);
        assert_eq!(messages(&JobWebhook::validate_create(&job)), expected, "{name}");
        // An update that changes the spec (here: suspends it) checks the new object the same way.
        let mut old = job.clone();
        old.spec.suspend = Some(false);
        assert_eq!(messages(&JobWebhook::validate_update(&old, &job)), expected, "{name} (update)");
    }
}

#[test]
fn update_rules() {
    let suspended: Change = |job| job.spec.suspend = Some(true);
    let running: Change = |job| job.spec.suspend = Some(false);
    let new_template: Change = |job| job.spec.components[0].template = deployment("web", 3);
    let new_pod_sets: Change = |job| {
        job.spec.components[0].pod_sets =
            vec![ComponentPodSet { path: "template.spec.template".into(), replicas: Some(2), ..Default::default() }];
    };
    let new_infos: Change = |job| job.spec.components[0].pod_set_infos = vec![ComponentPodSetInfo::default()];
    let one_more: Change = |job| job.spec.components.push(component(deployment("api", 1)));
    let managed: Change = |job| job.spec.managed_by = Some("kueue.x-k8s.io/multikueue".into());
    let immutable = |path: &str| format!("{path}: Forbidden: field is immutable while the job is admitted");
    let cases: Vec<(&str, Change, Change, Vec<String>)> = vec![
        ("template while suspended", suspended, new_template, vec![]),
        ("template while running", running, new_template, vec![immutable("spec.components[0].template")]),
        ("pod sets while running", running, new_pod_sets, vec![immutable("spec.components[0].podSets")]),
        ("components while running", running, one_more, vec![immutable("spec.components")]),
        ("components while suspended", suspended, one_more, vec![]),
        ("Kueue writes infos while running", running, new_infos, vec![]),
        (
            "managedBy (framework)",
            suspended,
            managed,
            vec!["spec.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": field is immutable".into()],
        ),
    ];
    for (name, state, change, expected) in cases {
        let mut old = valid();
        state(&mut old);
        let mut new = old.clone();
        change(&mut new);
        assert_eq!(messages(&JobWebhook::validate_update(&old, &new)), expected, "{name}");
    }

    // Admission (suspended → running) and eviction (running → suspended) count as admitted:
    // the template Kueue admitted is the one that runs.
    let mut old = valid();
    let mut new = valid();
    new.spec.suspend = Some(false);
    new_template(&mut new);
    assert_eq!(messages(&JobWebhook::validate_update(&old, &new)), [immutable("spec.components[0].template")]);
    old.spec.suspend = Some(false);
    new.spec.suspend = Some(true);
    new_infos(&mut new);
    assert_eq!(messages(&JobWebhook::validate_update(&old, &new)), [immutable("spec.components[0].template")]);
}

#[test]
fn an_unchanged_spec_is_not_judged_again() {
    // A job admitted before a rule grew stricter (here: a name now too long) can still lose its
    // finalizer.
    let mut old = valid();
    old.metadata.name = Some("n".repeat(70));
    old.metadata.finalizers = Some(vec!["kueue-ext.dev/wrapped-job-cleanup".into()]);
    let mut new = old.clone();
    new.metadata.finalizers = None;
    assert_eq!(messages(&JobWebhook::validate_update(&old, &new)), Vec::<String>::new());
}
