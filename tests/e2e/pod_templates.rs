//! End-to-end: a job and the prebuilt Workload MultiKueue hands its copy on a worker stay
//! equivalent for pod templates with every field the API server or the Workload CRD defaults
//! (init containers, sidecars, ports, probes, env from fields and resources, volumes, security
//! contexts, quantities in any notation). Each template runs through MultiKueue as an
//! ExternalJob, as a WrappedJob of a Pod, of a Job and of a Job beside a Deployment, and as a
//! batch Job integrated by configuration, and every one of them must finish: an out-of-sync
//! copy would leave it Pending on the manager for good.

use std::time::{Duration, Instant};

use crate::common::{Sandbox, apply_yaml, condition, workloads_owned_by};
use futures::future::join_all;
use kube::Client;

const INTEGRATIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/integrations/job-integration.yaml");

/// Pod specs (YAML at the indentation of `spec:`'s children, 0 here), each with a main
/// container that asks for 100m CPU and 64Mi.
const TEMPLATES: [(&str, &str); 5] = [
    (
        "init",
        r#"
initContainers:
- name: fetch
  image: registry.invalid/fetch
  command: [sh, -c, "true"]
  resources: {requests: {cpu: 50m, memory: 32Mi}}
containers: [MAIN]"#,
    ),
    (
        "sidecar",
        r#"
initContainers:
- name: logs
  image: registry.invalid/logs
  restartPolicy: Always
  ports: [{containerPort: 9100, name: metrics}]
  resources: {requests: {cpu: 50m, memory: 32Mi}}
containers: [MAIN]"#,
    ),
    (
        "probes",
        r#"
containers:
- name: main
  image: registry.invalid/work
  ports: [{containerPort: 8080}, {containerPort: 9000, protocol: UDP}]
  readinessProbe: {httpGet: {path: /ready, port: 8080}}
  livenessProbe: {grpc: {port: 9000}}
  startupProbe: {tcpSocket: {port: 8080}, failureThreshold: 30}
  resources: {requests: {cpu: 100m, memory: 64Mi}}"#,
    ),
    (
        "env",
        r#"
containers:
- name: main
  image: registry.invalid/work
  env:
  - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
  - {name: LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu, containerName: main}}}
  - {name: PLAIN, value: "1"}
  envFrom: [{configMapRef: {name: settings, optional: true}}]
  resources: {requests: {cpu: "0.1", memory: "67108864"}, limits: {cpu: 200m}}"#,
    ),
    (
        "volumes",
        r#"
securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000, seccompProfile: {type: RuntimeDefault}}
volumes:
- {name: scratch, emptyDir: {medium: Memory, sizeLimit: 64Mi}}
- {name: settings, configMap: {name: settings, optional: true}}
- {name: token, projected: {sources: [{serviceAccountToken: {path: token}}, {downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}]}}
containers:
- name: main
  image: registry.invalid/work
  securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  volumeMounts: [{name: scratch, mountPath: /scratch}, {name: settings, mountPath: /etc/settings}]
  resources: {requests: {cpu: 100m, memory: 64Mi}}"#,
    ),
];

const MAIN: &str = "{name: main, image: registry.invalid/work, resources: {requests: {cpu: 100m, memory: 64Mi}}}";

/// `spec` indented by `by` spaces, with MAIN in place.
fn indent(spec: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    spec.replace("[MAIN]", &format!("[{MAIN}]")).lines().map(|l| format!("\n{pad}{l}")).collect()
}

const RUN: &str = "kueue-ext.dev/run-duration: 3s";

fn external_job(name: &str, spec: &str) -> String {
    format!(
        r#"
apiVersion: kueue-ext.dev/v1alpha1
kind: ExternalJob
metadata: {{name: {name}, namespace: default, labels: {{kueue.x-k8s.io/queue-name: user-queue}}}}
spec:
  podSets:
  - name: main
    count: 2
    template:
      metadata: {{annotations: {{{RUN}}}}}
      spec:{}
"#,
        indent(spec, 8)
    )
}

fn pod_component(name: &str, spec: &str) -> String {
    format!(
        r#"
  - template:
      apiVersion: v1
      kind: Pod
      metadata: {{name: {name}, annotations: {{{RUN}}}}}
      spec:
        restartPolicy: Never{}"#,
        indent(spec, 8)
    )
}

fn job_component(name: &str, spec: &str) -> String {
    format!(
        r#"
  - template:
      apiVersion: batch/v1
      kind: Job
      metadata: {{name: {name}}}
      spec:
        parallelism: 2
        completions: 2
        template:
          metadata: {{annotations: {{{RUN}}}}}
          spec:
            restartPolicy: Never{}"#,
        indent(spec, 12)
    )
}

fn deployment_component(name: &str, spec: &str) -> String {
    format!(
        r#"
  - template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: {name}}}
      spec:
        replicas: 1
        selector: {{matchLabels: {{app: {name}}}}}
        template:
          metadata: {{labels: {{app: {name}}}}}
          spec:{}"#,
        indent(spec, 12)
    )
}

fn batch_job(name: &str, spec: &str) -> String {
    format!(
        r#"
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: default, labels: {{kueue.x-k8s.io/queue-name: user-queue}}}}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata: {{annotations: {{{RUN}}}}}
    spec:
      restartPolicy: Never{}
"#,
        indent(spec, 6)
    )
}

/// Every job of the table: (name, YAML).
fn jobs() -> Vec<(String, String)> {
    let mut jobs = Vec::new();
    for (template, spec) in TEMPLATES {
        let name = |kind: &str| format!("{template}-{kind}");
        jobs.push((name("ej"), external_job(&name("ej"), spec)));
        let wrapped = |kind: &str, components: &[String]| {
            (name(kind), crate::fixtures::wrapped_job(&name(kind), "user-queue", "", "", components))
        };
        // Components are named after their WrappedJob: a worker holds every kind's copy in one
        // namespace, and a component named like the batch Job below is not ours to adopt.
        jobs.push(wrapped("wj-pod", &[pod_component(&name("wj-pod-0"), spec)]));
        jobs.push(wrapped("wj-job", &[job_component(&name("wj-job-0"), spec)]));
        jobs.push(wrapped(
            "wj-job-deploy",
            &[job_component(&name("wj-job-deploy-0"), spec), deployment_component(&name("wj-job-deploy-1"), spec)],
        ));
        jobs.push((name("job"), batch_job(&name("job"), spec)));
    }
    jobs
}

/// Waits for the manager's Workload of the job with `uid` to finish, and says how.
async fn finished(manager: &Client, name: &str, uid: &str) -> Result<(), String> {
    let found = workloads_owned_by(manager, "default", uid).await?;
    match found.as_slice() {
        [w] => match condition(w, "Finished") {
            Some(c) if c["status"] == "True" && c["reason"] == "Succeeded" => Ok(()),
            _ => Err(format!("{name}: {:#}", w["status"])),
        },
        other => Err(format!("{name}: {} Workloads", other.len())),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_pod_template_runs_to_the_end_through_multikueue_for_every_kind() {
    let sandbox = Sandbox::up(&["--integrations", INTEGRATIONS]);
    let manager = sandbox.client("manager").await;
    let mut created = Vec::new();
    for (name, yaml) in jobs() {
        let object = apply_yaml(&manager, &yaml).await.remove(0);
        assert_eq!(object["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "{name} goes to MultiKueue");
        created.push((name, object["metadata"]["uid"].as_str().unwrap().to_string()));
    }
    // Every job is waited for at once, and every one still unfinished is named.
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut unfinished = created;
    while !unfinished.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let answers = join_all(unfinished.iter().map(|(name, uid)| finished(&manager, name, uid))).await;
        unfinished = unfinished.into_iter().zip(answers).filter(|(_, a)| a.is_err()).map(|(job, _)| job).collect();
    }
    let answers = join_all(unfinished.iter().map(|(name, uid)| finished(&manager, name, uid))).await;
    let left: Vec<String> = answers.into_iter().filter_map(Result::err).collect();
    assert!(left.is_empty(), "not finished through MultiKueue:\n{}", left.join("\n"));
}
