//! The jobs the benchmark submits: the same one-pod shape as a batch/v1 Job (Kueue's Go
//! integration), an ExternalJob (ours), and a WrappedJob of a Job and a Deployment; for kind
//! clusters, a WrappedJob and an AppWrapper of the same Job, whose pod really runs.

use kube::api::ApiResource;
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// batch/v1 Job, run by Kueue's Go integration.
    Batch,
    External,
    Wrapped,
    /// A WrappedJob of one Job of a busybox pod.
    WrappedJobOfJob,
    /// An AppWrapper of that Job, run by AppWrapper's controller (Kueue's Go integration).
    AppWrapper,
}

impl Kind {
    pub fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            Kind::Batch => ("batch", "v1", "Job", "jobs"),
            Kind::External => ("kueue-ext.dev", "v1alpha1", "ExternalJob", "externaljobs"),
            Kind::Wrapped | Kind::WrappedJobOfJob => ("kueue-ext.dev", "v1alpha1", "WrappedJob", "wrappedjobs"),
            Kind::AppWrapper => ("workload.codeflare.dev", "v1beta2", "AppWrapper", "appwrappers"),
        };
        let api_version = format!("{group}/{version}");
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version,
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    fn name(self, i: usize) -> String {
        match self {
            Kind::Batch => format!("go-{i}"),
            Kind::External => format!("rust-{i}"),
            Kind::Wrapped => format!("wrapped-{i}"),
            Kind::WrappedJobOfJob => format!("wj-{i}"),
            Kind::AppWrapper => format!("aw-{i}"),
        }
    }

    /// How Kueue names their Workloads: lowercase kind, job name, hash.
    pub fn workload_prefix(self) -> &'static str {
        match self {
            Kind::Batch => "job-go-",
            Kind::External => "externaljob-rust-",
            Kind::Wrapped => "wrappedjob-wrapped-",
            Kind::WrappedJobOfJob => "wrappedjob-wj-",
            Kind::AppWrapper => "appwrapper-aw-",
        }
    }

    pub fn manifest(self, i: usize) -> Value {
        let name = self.name(i);
        let metadata =
            json!({"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}});
        match self {
            Kind::Batch => json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
                "spec": {"parallelism": 1, "completions": 1, "template": pod_template()}}),
            Kind::External => {
                json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob", "metadata": metadata,
                "spec": {"podSets": [{"name": "main", "count": 1, "template": pod_template()}]}})
            }
            // Succeeded once the Job has, and the Deployment serving it is stopped.
            Kind::Wrapped => {
                json!({"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob", "metadata": metadata,
                "spec": {"components": [
                    {"template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": format!("{name}-work")},
                        "spec": {"template": pod_template()}}},
                    {"template": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": format!("{name}-server")},
                        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                            "metadata": {"labels": {"app": name}},
                            "spec": {"containers": [container()]}}}}},
                ]}})
            }
            Kind::WrappedJobOfJob | Kind::AppWrapper => {
                let resource = self.resource();
                json!({"apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata,
                "spec": {"components": [
                    {"template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": format!("{name}-work")},
                        "spec": {"template": busybox_pod_template()}}},
                ]}})
            }
        }
    }
}

/// A pod that runs for a second on a kind node and succeeds; small, so that a 2-core node holds
/// a whole run's pods at once.
fn busybox_pod_template() -> Value {
    json!({"spec": {"restartPolicy": "Never", "containers": [{
        "name": "c", "image": "kueue-ext.local/busybox:1", "command": ["sleep", "1"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }]}})
}

/// A pod that runs for a second on a kwok node and succeeds.
fn pod_template() -> Value {
    json!({
        "metadata": {"annotations": {"kueue-ext.dev/run-duration": "1s"}},
        "spec": {"restartPolicy": "Never", "containers": [container()]},
    })
}

fn container() -> Value {
    json!({"name": "c", "image": "bench", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}})
}
