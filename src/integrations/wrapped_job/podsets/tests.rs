use k8s_openapi::api::core::v1::{PodSchedulingGate, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use super::*;
use crate::api::wrapped_job::WrappedJobSpec;

fn pod_spec() -> Value {
    json!({"containers": [{"name": "main", "image": "registry.invalid/x"}]})
}

fn pod_template() -> Value {
    json!({"spec": pod_spec()})
}

fn object(api_version: &str, kind: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "c"}, "spec": spec})
}

fn component(template: Value) -> WrappedComponent {
    WrappedComponent { template, pod_sets: Vec::new(), pod_set_infos: Vec::new() }
}

fn declared(template: Value, pod_sets: &[(&str, Option<i32>)]) -> WrappedComponent {
    let pod_sets = pod_sets
        .iter()
        .map(|(path, replicas)| ComponentPodSet { path: (*path).into(), replicas: *replicas, ..Default::default() })
        .collect();
    WrappedComponent { pod_sets, ..component(template) }
}

fn summary(pod_sets: &[ComponentPodSet]) -> Vec<(String, i32)> {
    pod_sets.iter().map(|p| (p.path.clone(), p.replicas())).collect()
}

fn job(components: Vec<WrappedComponent>) -> WrappedJob {
    let mut job = WrappedJob::new("train", WrappedJobSpec { suspend: Some(true), managed_by: None, components });
    job.metadata = ObjectMeta {
        name: Some("train".into()),
        namespace: Some("team-a".into()),
        uid: Some("uid-1".into()),
        ..Default::default()
    };
    job
}

fn job_spec(fields: Value) -> Value {
    let mut spec = json!({"template": pod_template()});
    spec.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    spec
}

/// A name, a component template, and the pod sets (path, replicas) inferred for it.
type InferenceCase = (&'static str, Value, Vec<(&'static str, i32)>);

#[test]
fn inference_per_kind() {
    let deployment = |spec| object("apps/v1", "Deployment", spec);
    let batch_job = |fields| object("batch/v1", "Job", job_spec(fields));
    let ray_cluster_spec = json!({
        "headGroupSpec": {"template": pod_template()},
        "workerGroupSpecs": [
            {"groupName": "small", "replicas": 2, "minReplicas": 0, "maxReplicas": 9, "template": pod_template()},
            {"groupName": "default", "template": pod_template()},
        ],
    });
    let cases: Vec<InferenceCase> = vec![
        (
            "pod",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec()}),
            vec![("template", 1)],
        ),
        (
            "deployment, default replicas",
            deployment(json!({"template": pod_template()})),
            vec![("template.spec.template", 1)],
        ),
        (
            "deployment",
            deployment(json!({"replicas": 3, "template": pod_template()})),
            vec![("template.spec.template", 3)],
        ),
        ("deployment without template", deployment(json!({"replicas": 3})), vec![]),
        (
            "statefulset",
            object("apps/v1", "StatefulSet", json!({"replicas": 2, "template": pod_template()})),
            vec![("template.spec.template", 2)],
        ),
        ("job, defaults", batch_job(json!({})), vec![("template.spec.template", 1)]),
        ("job, parallelism", batch_job(json!({"parallelism": 4})), vec![("template.spec.template", 4)]),
        (
            "job, completions only: parallelism defaults to 1",
            batch_job(json!({"completions": 3})),
            vec![("template.spec.template", 1)],
        ),
        (
            "job, fewer completions",
            batch_job(json!({"parallelism": 4, "completions": 2})),
            vec![("template.spec.template", 2)],
        ),
        (
            "job, more completions",
            batch_job(json!({"parallelism": 2, "completions": 5})),
            vec![("template.spec.template", 2)],
        ),
        (
            "jobset with two replicated jobs",
            object(
                "jobset.x-k8s.io/v1alpha2",
                "JobSet",
                json!({"replicatedJobs": [
                    {"name": "workers", "replicas": 2, "template": {"spec": job_spec(json!({"parallelism": 3, "completions": 3}))}},
                    {"name": "driver", "template": {"spec": job_spec(json!({}))}},
                    {"name": "no-template"},
                ]}),
            ),
            vec![
                ("template.spec.replicatedJobs[0].template.spec.template", 6),
                ("template.spec.replicatedJobs[1].template.spec.template", 1),
            ],
        ),
        (
            "pytorchjob",
            object(
                "kubeflow.org/v1",
                "PyTorchJob",
                json!({"pytorchReplicaSpecs": {
                    "Worker": {"replicas": 4, "template": pod_template()},
                    "Master": {"template": pod_template()},
                }}),
            ),
            vec![
                ("template.spec.pytorchReplicaSpecs.Master.template", 1),
                ("template.spec.pytorchReplicaSpecs.Worker.template", 4),
            ],
        ),
        (
            "pytorchjob, workers only",
            object(
                "kubeflow.org/v1",
                "PyTorchJob",
                json!({"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": pod_template()}}}),
            ),
            vec![("template.spec.pytorchReplicaSpecs.Worker.template", 2)],
        ),
        (
            "raycluster",
            object("ray.io/v1", "RayCluster", ray_cluster_spec.clone()),
            vec![
                ("template.spec.headGroupSpec.template", 1),
                ("template.spec.workerGroupSpecs[0].template", 2),
                ("template.spec.workerGroupSpecs[1].template", 1),
            ],
        ),
        (
            "rayjob",
            object("ray.io/v1", "RayJob", json!({"entrypoint": "python x.py", "rayClusterSpec": ray_cluster_spec})),
            vec![
                ("template.spec.rayClusterSpec.headGroupSpec.template", 1),
                ("template.spec.rayClusterSpec.workerGroupSpecs[0].template", 2),
                ("template.spec.rayClusterSpec.workerGroupSpecs[1].template", 1),
            ],
        ),
        ("service", object("v1", "Service", json!({"ports": [{"port": 80}]})), vec![]),
        ("configmap", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}), vec![]),
        ("unknown kind", object("example.com/v1", "Widget", json!({"template": pod_template()})), vec![]),
    ];
    for (name, template, expected) in cases {
        let pod_sets = component_pod_sets(0, &component(template)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected: Vec<_> = expected.into_iter().map(|(path, n)| (path.to_owned(), n)).collect();
        assert_eq!(summary(&pod_sets), expected, "{name}");
    }
}

#[test]
fn inference_errors_point_at_the_field() {
    let cases = [
        (
            object("apps/v1", "Deployment", json!({"replicas": "three", "template": pod_template()})),
            r#"spec.components[2].template.spec.replicas: Invalid value: "three": must be a non-negative 32-bit integer"#,
        ),
        (
            object("apps/v1", "Deployment", json!({"replicas": -1, "template": pod_template()})),
            r#"spec.components[2].template.spec.replicas: Invalid value: "-1": must be a non-negative 32-bit integer"#,
        ),
        (
            object("batch/v1", "Job", json!({"parallelism": 2})),
            "spec.components[2].template.spec.template: Required value: a pod template: template.spec.template does not exist",
        ),
        (
            object("batch/v1", "Job", json!({"template": {"spec": {"containers": []}}})),
            r#"spec.components[2].template.spec.template: Invalid value: "object": not a pod template: template.spec.template.spec has no containers"#,
        ),
    ];
    for (template, expected) in cases {
        let error = component_pod_sets(2, &component(template)).unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
}

#[test]
fn pod_template_paths() {
    let template = object(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        json!({"replicatedJobs": [{"replicas": 1, "template": {"spec": {
            "template": {"metadata": {"name": "ignored", "labels": {"app": "x"}, "annotations": {"a": "b"}}, "spec": pod_spec()},
            "bad": {"metadata": {"labels": {"n": 1}}, "spec": pod_spec()},
            "empty": {"spec": {"containers": []}},
            "wrong": {"spec": {"containers": [{"name": 5}]}},
        }}}]}),
    );
    let ok = pod_template_at(&template, "template.spec.replicatedJobs[0].template.spec.template").unwrap();
    let meta = ok.metadata.unwrap();
    assert_eq!(meta.name, None, "only labels and annotations are kept");
    assert_eq!(meta.labels.unwrap()["app"], "x");
    assert_eq!(meta.annotations.unwrap()["a"], "b");
    assert_eq!(ok.spec.unwrap().containers[0].name, "main");

    let errors = [
        ("spec.template", "must start with \"template\""),
        ("templates", "has \"s\" after \"template\""),
        ("template.spec..x", "empty field name after \"template.spec\""),
        ("template.spec.replicatedJobs[x]", "invalid index \"x\""),
        ("template.spec.replicatedJobs[0", "unclosed '['"),
        (
            "template.spec.replicatedJobs[3].template",
            "template.spec.replicatedJobs[3] is out of range: the list has 1 elements",
        ),
        ("template.spec.replicatedJobs.x", "template.spec.replicatedJobs is not an object"),
        ("template.spec[0]", "template.spec is not a list"),
        ("template.spec.missing", "template.spec.missing does not exist"),
        ("template.spec.replicatedJobs[0].replicas", "is not an object"),
        ("template.metadata", "template.metadata has no spec"),
        ("template", "template.spec has no containers"),
        ("template.spec.replicatedJobs[0].template.spec.empty", "has no containers"),
        ("template.spec.replicatedJobs[0].template.spec.wrong", "spec is not a v1 PodSpec"),
        ("template.spec.replicatedJobs[0].template.spec.bad", "metadata.labels is not a map of strings"),
    ];
    for (path, expected) in errors {
        let error = pod_template_at(&template, path).unwrap_err();
        assert!(error.to_string().contains(expected), "{path}: {error}");
    }
}

#[test]
fn declared_pod_sets() {
    let pytorch = |roles: &[&str]| {
        let specs: Map<String, Value> =
            roles.iter().map(|role| ((*role).to_owned(), json!({"replicas": 2, "template": pod_template()}))).collect();
        object("kubeflow.org/v1", "PyTorchJob", json!({"pytorchReplicaSpecs": specs}))
    };
    let master = "template.spec.pytorchReplicaSpecs.Master.template";
    let worker = "template.spec.pytorchReplicaSpecs.Worker.template";
    let launcher = "template.spec.pytorchReplicaSpecs.Launcher.template";
    let widget = object("example.com/v1", "Widget", json!({"template": pod_template(), "other": pod_template()}));
    let too_few = format!(
        "spec.components[1].podSets: Invalid value: \"1 pod sets\": the template's kind has 2: {master}, {worker}"
    );
    let missing = format!(
        "spec.components[1].podSets: Required value: the pod set \"{worker}\" of the template's kind is missing"
    );
    let cases: Vec<(&str, WrappedComponent, Vec<&str>)> = vec![
        (
            "matches inference",
            declared(pytorch(&["Master", "Worker"]), &[(worker, Some(2)), (master, Some(2))]),
            vec![],
        ),
        (
            "unknown kind",
            declared(widget.clone(), &[("template.spec.template", None), ("template.spec.other", Some(3))]),
            vec![],
        ),
        ("fewer than inferred", declared(pytorch(&["Master", "Worker"]), &[(master, Some(2))]), vec![&too_few]),
        (
            "an inferred path is missing",
            declared(pytorch(&["Master", "Worker", "Launcher"]), &[(master, Some(2)), (launcher, Some(2))]),
            vec![&missing],
        ),
        (
            "other replicas",
            declared(pytorch(&["Master", "Worker"]), &[(master, Some(2)), (worker, None)]),
            vec![
                "spec.components[1].podSets[1].replicas: Invalid value: \"1\": must be 2, as inferred from the template",
            ],
        ),
        (
            "duplicate path",
            declared(widget.clone(), &[("template.spec.template", None), ("template.spec.template", None)]),
            vec!["spec.components[1].podSets[1].path: Duplicate value: \"template.spec.template\""],
        ),
        (
            "empty path and negative replicas",
            declared(widget.clone(), &[("", Some(-1))]),
            vec![
                "spec.components[1].podSets[0].path: Required value: the path of a pod template, such as \"template.spec.template\"",
                "spec.components[1].podSets[0].replicas: Invalid value: \"-1\": must be greater than or equal to 0",
            ],
        ),
        (
            "path to something else",
            declared(widget, &[("template.spec.missing", None)]),
            vec![
                "spec.components[1].podSets[0].path: Invalid value: \"template.spec.missing\": does not refer to a pod template: template.spec.missing does not exist",
            ],
        ),
    ];
    for (name, component, expected) in cases {
        let (pod_sets, errors) = component_pod_sets_and_errors(1, &component);
        let errors: Vec<_> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors, expected, "{name}");
        assert_eq!(pod_sets, component.pod_sets, "{name}: declared pod sets are the pod sets");
        let first = component_pod_sets(1, &component).map_err(|e| e.to_string());
        assert_eq!(first.err().as_deref(), expected.first().copied(), "{name}");
    }
}

#[test]
fn job_pod_sets_flatten_components_and_default_templates() {
    let with_port = json!({"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 80}]}]}});
    let jobset = object(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        json!({"replicatedJobs": [
            {"replicas": 2, "template": {"spec": job_spec(json!({"parallelism": 2}))}},
            {"template": {"spec": job_spec(json!({}))}},
        ]}),
    );
    let job = job(vec![
        component(object("apps/v1", "Deployment", json!({"replicas": 2, "template": with_port}))),
        component(object("v1", "ConfigMap", json!({}))),
        component(jobset),
    ]);
    let pod_sets = job_pod_sets(&job).unwrap();
    let summary: Vec<_> =
        pod_sets.iter().map(|p| (p.component, p.pod_set.path.as_str(), p.pod_set.replicas())).collect();
    assert_eq!(
        summary,
        [
            (0, "template.spec.template", 2),
            (2, "template.spec.replicatedJobs[0].template.spec.template", 4),
            (2, "template.spec.replicatedJobs[1].template.spec.template", 1),
        ]
    );
    let port = &pod_sets[0].template.spec.as_ref().unwrap().containers[0].ports.as_ref().unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"), "as the Workload CRD defaults it");

    let mut broken = job.clone();
    broken.spec.components[1] = declared(object("v1", "ConfigMap", json!({})), &[("template.spec.template", None)]);
    let error = job_pod_sets(&broken).unwrap_err();
    assert_eq!(error.path, "spec.components[1].podSets[0].path");
}

fn deployment_job(pod_template: Value) -> (WrappedJob, Vec<ComponentPodSet>) {
    let template =
        object("apps/v1", "Deployment", json!({"replicas": 2, "strategy": {"future": 1}, "template": pod_template}));
    let job = job(vec![component(template)]);
    let pod_sets = component_pod_sets(0, &job.spec.components[0]).unwrap();
    (job, pod_sets)
}

fn toleration(key: &str) -> Toleration {
    Toleration { key: Some(key.into()), operator: Some("Exists".into()), ..Default::default() }
}

#[test]
fn object_to_create_labels_owns_and_keeps_unknown_fields() {
    let (mut job, pod_sets) = deployment_job(json!({"spec": {"containers": [{"name": "main", "futureField": true}]}}));
    job.spec.components[0].template["metadata"]["ownerReferences"] = json!([{"kind": "Other", "uid": "u0"}]);
    job.spec.components[0].template["metadata"]["namespace"] = json!("team-a");
    let object = object_to_create(&job, 0, &pod_sets).unwrap();
    assert_eq!(object["metadata"]["namespace"], "team-a");
    assert_eq!(object["metadata"]["labels"][WRAPPED_JOB_LABEL], "train");
    assert_eq!(
        object["metadata"]["ownerReferences"],
        json!([
            {"kind": "Other", "uid": "u0"},
            {"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob", "name": "train", "uid": "uid-1", "controller": true, "blockOwnerDeletion": true},
        ])
    );
    assert_eq!(object["spec"]["strategy"], json!({"future": 1}), "unknown fields reach the API server");
    assert_eq!(
        object["spec"]["template"],
        json!({
            "metadata": {"labels": {WRAPPED_JOB_LABEL: "train"}},
            "spec": {"containers": [{"name": "main", "futureField": true}]},
        }),
        "without infos only the label is added"
    );
}

#[test]
fn object_to_create_merges_infos() {
    let (mut job, pod_sets) = deployment_job(json!({
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "containers": [{"name": "main"}],
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 5}],
            "schedulingGates": [{"name": "g"}],
        },
    }));
    job.spec.components[0].pod_set_infos = vec![ComponentPodSetInfo {
        annotations: [("kueue.x-k8s.io/workload".to_owned(), "wl".to_owned())].into(),
        labels: [("kueue.x-k8s.io/podset".to_owned(), "train-0".to_owned())].into(),
        node_selector: [("zone".to_owned(), "a".to_owned()), ("flavor".to_owned(), "big".to_owned())].into(),
        tolerations: vec![toleration("gpu"), toleration("spot")],
        scheduling_gates: vec![PodSchedulingGate { name: "g".into() }, PodSchedulingGate { name: "tas".into() }],
    }];
    let object = object_to_create(&job, 0, &pod_sets).unwrap();
    let template = &object["spec"]["template"];
    assert_eq!(
        template["metadata"],
        json!({
            "labels": {"app": "x", "kueue.x-k8s.io/podset": "train-0", WRAPPED_JOB_LABEL: "train"},
            "annotations": {"kueue.x-k8s.io/workload": "wl"},
        })
    );
    assert_eq!(template["spec"]["nodeSelector"], json!({"zone": "a", "flavor": "big"}));
    assert_eq!(
        template["spec"]["tolerations"],
        json!([
            {"key": "gpu", "operator": "Exists", "tolerationSeconds": 5},
            {"key": "spot", "operator": "Exists"},
        ])
    );
    assert_eq!(template["spec"]["schedulingGates"], json!([{"name": "g"}, {"name": "tas"}]));
}

#[test]
fn object_to_create_injects_each_info_into_its_template() {
    let jobset = object(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        json!({"replicatedJobs": [{"template": {"spec": job_spec(json!({}))}}, {"template": {"spec": job_spec(json!({}))}}]}),
    );
    let mut job = job(vec![component(jobset)]);
    let pod_sets = component_pod_sets(0, &job.spec.components[0]).unwrap();
    job.spec.components[0].pod_set_infos = ["train-0", "train-1"]
        .map(|name| ComponentPodSetInfo {
            labels: [("kueue.x-k8s.io/podset".to_owned(), name.to_owned())].into(),
            ..Default::default()
        })
        .into();
    let object = object_to_create(&job, 0, &pod_sets).unwrap();
    for (k, name) in ["train-0", "train-1"].into_iter().enumerate() {
        let labels = &object["spec"]["replicatedJobs"][k]["template"]["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels, &json!({"kueue.x-k8s.io/podset": name, WRAPPED_JOB_LABEL: "train"}));
    }
}

#[test]
fn object_to_create_of_a_pod_labels_the_pod_once() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec()});
    let mut job = job(vec![component(pod)]);
    let pod_sets = component_pod_sets(0, &job.spec.components[0]).unwrap();
    job.spec.components[0].pod_set_infos =
        vec![ComponentPodSetInfo { node_selector: [("a".to_owned(), "b".to_owned())].into(), ..Default::default() }];
    let object = object_to_create(&job, 0, &pod_sets).unwrap();
    assert_eq!(object["metadata"]["labels"], json!({WRAPPED_JOB_LABEL: "train"}));
    assert_eq!(object["spec"]["nodeSelector"], json!({"a": "b"}));
    assert_eq!(object["metadata"]["ownerReferences"].as_array().map(Vec::len), Some(1));
}

#[test]
fn object_to_create_errors() {
    let (job, pod_sets) =
        deployment_job(json!({"spec": {"containers": [{"name": "main"}], "nodeSelector": {"zone": "a"}}}));
    let info = |key: &str, value: &str| ComponentPodSetInfo {
        node_selector: [(key.to_owned(), value.to_owned())].into(),
        ..Default::default()
    };
    let with = |change: &dyn Fn(&mut WrappedJob)| {
        let mut job = job.clone();
        change(&mut job);
        object_to_create(&job, 0, &pod_sets).unwrap_err().to_string()
    };
    assert_eq!(
        with(&|job| job.spec.components[0].pod_set_infos = vec![info("zone", "b")]),
        r#"spec.components[0].podSetInfos[0].nodeSelector[zone]: Invalid value: "b": the pod template at template.spec.template already has "a""#,
    );
    assert_eq!(
        with(&|job| job.spec.components[0].pod_set_infos = vec![info("x", "y"), info("x", "y")]),
        r#"spec.components[0].podSetInfos: Invalid value: "2 entries": must have one entry per pod set (1)"#,
    );
    assert_eq!(
        with(&|job| {
            job.spec.components[0].template["spec"]["template"]["spec"]["tolerations"] = json!("x");
            job.spec.components[0].pod_set_infos = vec![info("x", "y")];
        }),
        r#"spec.components[0].template.spec.template.spec.tolerations: Invalid value: "string": invalid type: string "x", expected a sequence"#,
    );
    assert_eq!(
        with(&|job| job.metadata.uid = None),
        "metadata.uid: Required value: components are created for a stored job"
    );
    assert_eq!(
        with(&|job| job.spec.components[0].template["metadata"]["labels"] = json!([])),
        r#"spec.components[0].template.metadata.labels: Invalid value: "array": must be an object"#,
    );
    assert_eq!(
        object_to_create(&job, 3, &pod_sets).unwrap_err().to_string(),
        "spec.components[3]: Not found: the job has 1 components"
    );
}
