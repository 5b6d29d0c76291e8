//! The jobs the tests submit, as YAML, built in one place: an ExternalJob whose every field a
//! test may vary, batch Jobs, and WrappedJobs of Job and Deployment components.

use serde_json::{Value, json};

/// The job pods' image of the kind runtime: the node image carries it (no registry answers).
pub const BUSYBOX: &str = kueue_ext::sandbox::KIND_JOB_IMAGE;

/// An ExternalJob in `default` with one pod set; [`external_job`] gives the defaults.
pub struct ExternalJob {
    name: String,
    labels: Vec<(String, String)>,
    pod_set: String,
    pods: u32,
    run: Option<String>,
    image: String,
    command: Option<String>,
    cpu: String,
    memory: String,
}

/// An ExternalJob on `user-queue` of one pod set `main` of one pod asking for 1 CPU and 1Gi, of
/// an image no node pulls (kwok runs its pods for as long as `runs_for` says).
pub fn external_job(name: &str) -> ExternalJob {
    ExternalJob {
        name: name.to_string(),
        labels: vec![("kueue.x-k8s.io/queue-name".into(), "user-queue".into())],
        pod_set: "main".into(),
        pods: 1,
        run: None,
        image: "registry.invalid/work".into(),
        command: None,
        cpu: "1".into(),
        memory: "1Gi".into(),
    }
}

impl ExternalJob {
    /// On `queue`, or on none (left to a default LocalQueue, or to nothing).
    pub fn queue(mut self, queue: Option<&str>) -> Self {
        self.labels.retain(|(key, _)| key != "kueue.x-k8s.io/queue-name");
        if let Some(queue) = queue {
            self.labels.push(("kueue.x-k8s.io/queue-name".into(), queue.into()));
        }
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.push((key.into(), value.into()));
        self
    }

    pub fn pod_set(mut self, name: &str) -> Self {
        self.pod_set = name.into();
        self
    }

    pub fn pods(mut self, pods: u32) -> Self {
        self.pods = pods;
        self
    }

    /// How long each pod runs on kwok (`kueue-ext.dev/run-duration`).
    pub fn runs_for(mut self, duration: &str) -> Self {
        self.run = Some(duration.into());
        self
    }

    pub fn image(mut self, image: &str) -> Self {
        self.image = image.into();
        self
    }

    /// What the container runs, with `sh -c`, where pods really run (kind).
    pub fn command(mut self, script: &str) -> Self {
        self.command = Some(script.into());
        self
    }

    pub fn requests(mut self, cpu: &str, memory: &str) -> Self {
        (self.cpu, self.memory) = (cpu.into(), memory.into());
        self
    }

    pub fn value(&self) -> Value {
        let mut container = json!({
            "name": "main",
            "image": self.image,
            "resources": {"requests": {"cpu": self.cpu, "memory": self.memory}},
        });
        if let Some(script) = &self.command {
            container["command"] = json!(["sh", "-c", script]);
        }
        let mut template = json!({"spec": {"containers": [container]}});
        if let Some(run) = &self.run {
            template["metadata"] = json!({"annotations": {"kueue-ext.dev/run-duration": run}});
        }
        let labels: serde_json::Map<String, Value> = self.labels.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        json!({
            "apiVersion": "kueue-ext.dev/v1alpha1",
            "kind": "ExternalJob",
            "metadata": {"name": self.name, "namespace": "default", "labels": labels},
            "spec": {"podSets": [{"name": self.pod_set, "count": self.pods, "template": template}]},
        })
    }

    /// As YAML (JSON is YAML), for `apply_yaml` and `submit`.
    pub fn yaml(&self) -> String {
        serde_json::to_string_pretty(&self.value()).expect("a job serializes")
    }
}

/// A batch/v1 Job in `default` on `user-queue`: `pods` pods of `cpu` CPU that run for `run` on kwok.
pub fn batch_job(name: &str, pods: u32, cpu: &str, run: &str) -> String {
    format!(
        r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue}}
spec:
  parallelism: {pods}
  completions: {pods}
  template:
    metadata:
      annotations: {{kueue-ext.dev/run-duration: {run}}}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/work
        resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}
"#
    )
}

/// A batch Job component of `pods` pods of `cpu` that run for `run` on kwok; `pod_annotations`
/// adds to the pod template's (e.g. an exit code).
pub fn job_component(name: &str, pods: u32, cpu: &str, run: &str, pod_annotations: &str) -> String {
    format!(
        r#"
  - template:
      apiVersion: batch/v1
      kind: Job
      metadata: {{name: {name}}}
      spec:
        parallelism: {pods}
        completions: {pods}
        backoffLimit: 0
        template:
          metadata:
            annotations: {{kueue-ext.dev/run-duration: {run}{pod_annotations}}}
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: registry.invalid/work
              resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}"#
    )
}

/// A Deployment component: its pods run until it is deleted.
pub fn deployment_component(name: &str, replicas: u32, cpu: &str) -> String {
    format!(
        r#"
  - template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: {name}}}
      spec:
        replicas: {replicas}
        selector: {{matchLabels: {{app: {name}}}}}
        template:
          metadata: {{labels: {{app: {name}}}}}
          spec:
            containers:
            - name: server
              image: registry.invalid/server
              resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}"#
    )
}

/// A WrappedJob in `default` on `queue`; `labels` and `annotations` add to its own (settings
/// are annotations under kueue-ext.dev/).
pub fn wrapped_job(name: &str, queue: &str, labels: &str, annotations: &str, components: &[String]) -> String {
    format!(
        r#"
apiVersion: kueue-ext.dev/v1alpha1
kind: WrappedJob
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: {queue}{labels}}}
  annotations: {{{annotations}}}
spec:
  components:{}
"#,
        components.concat()
    )
}

/// A ResourceFlavor `name` with `node_labels` (`{pool: a}`, or `{}`).
pub fn resource_flavor(name: &str, node_labels: &str) -> String {
    format!(
        "
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {name}}}
spec: {{nodeLabels: {node_labels}}}"
    )
}

/// What a test's queue offers: a ClusterQueue of `cpu` and `memory` in `flavor`, and the
/// LocalQueue of `default` that feeds it.
pub struct Queue<'a> {
    pub cluster_queue: &'a str,
    pub local_queue: &'a str,
    pub flavor: &'a str,
    pub cpu: &'a str,
    pub memory: &'a str,
    /// Whether a job of higher priority preempts one of lower.
    pub preempts: bool,
}

impl Queue<'_> {
    pub fn yaml(&self) -> String {
        let Queue { cluster_queue, local_queue, flavor, cpu, memory, preempts } = self;
        let preemption = if *preempts { "\n  preemption: {withinClusterQueue: LowerPriority}" } else { "" };
        format!(
            r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {cluster_queue}}}
spec:
  namespaceSelector: {{}}{preemption}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: {flavor}
      resources:
      - {{name: cpu, nominalQuota: "{cpu}"}}
      - {{name: memory, nominalQuota: {memory}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {local_queue}, namespace: default}}
spec: {{clusterQueue: {cluster_queue}}}"#
        )
    }
}

/// A WorkloadPriorityClass `name` of `value`.
pub fn priority_class(name: &str, value: i32) -> String {
    format!(
        "
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: {name}}}
value: {value}"
    )
}
