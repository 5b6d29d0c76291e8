//! The jobs of a crash-safety run: ExternalJobs and WrappedJobs (a batch Job and a Deployment)
//! of a few small pods with random run times, submitted to the manager's `user-queue`, and
//! optionally plain batch/v1 Jobs, run by Kueue's own integration, as a peer under the same
//! faults. On kind the same jobs run busybox pods that sleep as long as kwok would run them.

use std::time::Duration;

use kube::Client;
use serde_json::Value;

use super::Rng;
use crate::common::eventually;
use crate::fixtures::{BUSYBOX, batch_job, deployment_component, external_job, job_component, wrapped_job};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    External,
    Wrapped,
    /// The peer: a batch/v1 Job, which Kueue integrates itself.
    Batch,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::External, Kind::Wrapped, Kind::Batch];

    /// Whether our controller runs it (the peer's outcome is Kueue's alone).
    pub fn is_ours(self) -> bool {
        self != Kind::Batch
    }

    fn prefix(self) -> &'static str {
        match self {
            Kind::External => "ej",
            Kind::Wrapped => "wj",
            Kind::Batch => "bj",
        }
    }
}

/// Where a job's pods run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nodes {
    /// kwok's: a pod "runs" for as long as its `kueue-ext.dev/run-duration` says.
    Kwok,
    /// Real ones (kind): busybox that sleeps as long.
    Real,
}

/// A job to submit, and how many pods of its work must succeed, once.
#[derive(Clone, Debug)]
pub struct Planned {
    pub kind: Kind,
    pub name: String,
    pub pods: u32,
    pub run_seconds: u64,
    pub nodes: Nodes,
}

/// A planned job that the manager accepted.
#[derive(Clone, Debug)]
pub struct Submitted {
    pub job: Planned,
    pub uid: String,
}

/// `counts[i]` jobs of `Kind::ALL[i]`, interleaved so every kind meets every fault.
pub fn plan(counts: [usize; 3], nodes: Nodes, rng: &mut Rng) -> Vec<Planned> {
    let total: usize = counts.iter().sum();
    let mut made = [0usize; 3];
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        // The kind furthest behind its share of the run so far goes next.
        let next = (0..3)
            .filter(|&k| made[k] < counts[k])
            .min_by_key(|&k| made[k] * total / counts[k])
            .expect("a kind with jobs left");
        made[next] += 1;
        let kind = Kind::ALL[next];
        let name = format!("{}-{}", kind.prefix(), made[next]);
        out.push(Planned { kind, name, pods: rng.between(1, 2) as u32, run_seconds: rng.between(2, 10), nodes });
    }
    out
}

impl Planned {
    pub fn yaml(&self) -> String {
        let run = format!("{}s", self.run_seconds);
        match self.kind {
            Kind::External => external_job(&self.name).pods(self.pods).requests("250m", "256Mi").runs_for(&run).yaml(),
            Kind::Wrapped => {
                let components = [
                    job_component(&format!("{}-work", self.name), self.pods, "250m", &run, ""),
                    deployment_component(&format!("{}-server", self.name), 1, "100m"),
                ];
                wrapped_job(&self.name, "user-queue", "", "", &components)
            }
            Kind::Batch => batch_job(&self.name, self.pods, "250m", &run),
        }
    }

    /// Submits it, retrying while the webhooks are down (they fail closed while a controller
    /// restarts): the retry a user or a CI pipeline does. Server-side apply makes it idempotent.
    pub async fn submit(&self, client: &Client) -> Submitted {
        let mut object: Value = serde_saphyr::from_str(&self.yaml()).expect("job YAML parses");
        if self.nodes == Nodes::Real {
            on_real_nodes(&mut object, self.run_seconds, false);
            if self.kind == Kind::Wrapped {
                // A loaded 2-core machine can take over AppWrapper's default minute to make a
                // Deployment's pod, and a reset for that reruns the finished Job component: by
                // design, and tested in wrapped_vs_appwrapper. A soak counts runs across faults.
                object["metadata"]["annotations"]["kueue-ext.dev/admissionGracePeriodDuration"] = "5m".into();
            }
        }
        let applied = eventually(&format!("{} to be accepted", self.name), Duration::from_secs(180), || async {
            kueue_ext::kube_util::apply(client, &object).await.map_err(|e| e.to_string())
        })
        .await;
        Submitted { job: self.clone(), uid: applied.metadata.uid.expect("an applied object has a uid") }
    }
}

/// The job of kwok pods made to run on real nodes: every container busybox that sleeps for
/// `run_seconds` (a Deployment's for good) and asks for little, so that a run's jobs fit one
/// kind node; every Job retries a pod three times, as the job's own answer to a node restart
/// that kills its pod.
fn on_real_nodes(object: &mut Value, run_seconds: u64, in_deployment: bool) {
    let Some(fields) = object.as_object_mut() else {
        if let Some(items) = object.as_array_mut() {
            items.iter_mut().for_each(|item| on_real_nodes(item, run_seconds, in_deployment));
        }
        return;
    };
    let in_deployment = in_deployment || fields.get("kind").is_some_and(|k| k == "Deployment");
    if let Some(annotations) = fields.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove("kueue-ext.dev/run-duration");
    }
    if let Some(limit) = fields.get_mut("backoffLimit") {
        *limit = 3.into();
    }
    if let Some(containers) = fields.get_mut("containers").and_then(Value::as_array_mut) {
        let sleep = if in_deployment { "sleep 3600".to_string() } else { format!("sleep {run_seconds}") };
        for container in containers {
            container["image"] = BUSYBOX.into();
            container["command"] = serde_json::json!(["sh", "-c", sleep]);
            container["resources"] = serde_json::json!({"requests": {"cpu": "20m", "memory": "16Mi"}});
        }
        return;
    }
    fields.values_mut().for_each(|value| on_real_nodes(value, run_seconds, in_deployment));
}

/// Whether the manager's copy of the job says it is done: `Some(true)` succeeded,
/// `Some(false)` failed, `None` still going.
pub fn outcome(kind: Kind, job: &Value) -> Option<bool> {
    match kind {
        Kind::External | Kind::Batch => {
            let is = |kind: &str| crate::common::condition_is(job, kind, "True");
            if is("Complete") {
                Some(true)
            } else if is("Failed") {
                Some(false)
            } else {
                None
            }
        }
        Kind::Wrapped => match job["status"]["phase"].as_str() {
            Some("Succeeded") => Some(true),
            Some("Failed") => Some(false),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_real_nodes_every_container_is_busybox_that_sleeps_and_a_deployments_for_good() {
        let job = Planned { kind: Kind::Wrapped, name: "wj-1".into(), pods: 2, run_seconds: 7, nodes: Nodes::Real };
        let mut object: Value = serde_saphyr::from_str(&job.yaml()).unwrap();
        on_real_nodes(&mut object, job.run_seconds, false);
        let text = object.to_string();
        assert!(!text.contains("registry.invalid") && !text.contains("run-duration"), "{text}");
        let components = object["spec"]["components"].as_array().unwrap();
        let command = |i: usize, path: &str| components[i]["template"]["spec"].pointer(path).unwrap()[2].clone();
        assert_eq!(command(0, "/template/spec/containers/0/command"), "sleep 7");
        assert_eq!(command(1, "/template/spec/containers/0/command"), "sleep 3600");
        assert_eq!(components[0]["template"]["spec"]["backoffLimit"], 3, "the job's own retries");
        assert_eq!(components[0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"], BUSYBOX);
    }
}
