//! What a run creates around the jobs it tests, all named after the run so that two runs (or a
//! run and the user's own queues) never meet: a ResourceFlavor whose node labels the kwok nodes
//! carry, a ClusterQueue with room for every check at once, and per check a namespace with its
//! LocalQueue. Everything is deleted at the end, without waiting.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject};
use kube::runtime::wait::await_condition;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

use super::catalog::Check;
use crate::api::kueue::{ClusterQueue, LocalQueue, ResourceFlavor};

/// The LocalQueue of every check namespace.
pub const QUEUE: &str = "conformance";
/// The ClusterQueue of the sandbox's MultiKueue admission check (on the manager) and of every
/// worker: `up` creates it.
pub const SANDBOX_CLUSTER_QUEUE: &str = "cluster-queue";
/// The label of every node that runs a sandbox's pods (kwok's and kind's), given to the run's
/// ResourceFlavor.
pub const NODE_LABEL: (&str, &str) = crate::sandbox::SANDBOX_NODE_LABEL;
/// How long Kueue may take to report a new LocalQueue on a busy machine.
const KUEUE_SEES_QUEUE: Duration = Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct Run {
    pub id: String,
}

impl Run {
    /// A new run, named by 5 hex digits of the time and process.
    pub fn start() -> Run {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
        let digest = Sha1::digest(format!("{nanos}/{}", std::process::id()));
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Run { id: hex[..5].to_string() }
    }

    fn name(&self) -> String {
        format!("conformance-{}", self.id)
    }

    pub fn flavor(&self) -> String {
        self.name()
    }

    pub fn cluster_queue(&self) -> String {
        self.name()
    }

    pub fn namespace(&self, check: Check) -> String {
        format!("{}-{}", self.name(), check.id())
    }

    /// Where the prebuilt-Workload check learns the pod sets the integration asks for.
    pub fn probe_namespace(&self) -> String {
        format!("{}-probe", self.name())
    }

    pub fn node_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(NODE_LABEL.0.to_string(), NODE_LABEL.1.to_string())])
    }

    /// The flavor and the ClusterQueue of the single-cluster checks.
    pub async fn create_queues(&self, client: &Client) -> Result<(), String> {
        let flavor = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": self.flavor()},
            "spec": {"nodeLabels": self.node_labels()},
        });
        // A sandbox worker has 4 kwok nodes of 8 CPU and 32Gi: quota for all of them.
        let cluster_queue = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": self.cluster_queue()},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": self.flavor(), "resources": [
                        {"name": "cpu", "nominalQuota": "32"},
                        {"name": "memory", "nominalQuota": "128Gi"},
                    ]}],
                }],
            },
        });
        for object in [flavor, cluster_queue] {
            apply(client, &object).await?;
        }
        Ok(())
    }

    pub async fn delete_queues(&self, client: &Client) {
        let background = DeleteParams::background();
        let _ = Api::<ClusterQueue>::all(client.clone()).delete(&self.cluster_queue(), &background).await;
        let _ = Api::<ResourceFlavor>::all(client.clone()).delete(&self.flavor(), &background).await;
    }
}

/// A namespace with LocalQueue `queue` of ClusterQueue `cluster_queue` (held: admits nothing).
pub async fn create_namespace(
    client: &Client,
    namespace: &str,
    queue: &str,
    cluster_queue: &str,
    held: bool,
) -> Result<(), String> {
    let mut local_queue = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": queue, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    });
    if held {
        local_queue["spec"]["stopPolicy"] = json!("Hold");
    }
    let namespace_name = namespace;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    for object in [namespace, local_queue] {
        apply(client, &object).await?;
    }
    await_known_to_kueue(client, namespace_name, queue).await
}

/// Waits until Kueue has written the LocalQueue's status: only then does its queue manager map
/// the LocalQueue to its ClusterQueue, and a job created earlier is not defaulted to MultiKueue.
async fn await_known_to_kueue(client: &Client, namespace: &str, queue: &str) -> Result<(), String> {
    let resource = ApiResource::erase::<LocalQueue>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let has_status = |lq: Option<&DynamicObject>| {
        lq.and_then(|lq| lq.data["status"]["conditions"].as_array()).is_some_and(|c| !c.is_empty())
    };
    let seen = await_condition(api, queue, has_status);
    match tokio::time::timeout(KUEUE_SEES_QUEUE, seen).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("cannot watch LocalQueue {namespace}/{queue}: {e}")),
        Err(_) => Err(format!(
            "Kueue did not report LocalQueue {namespace}/{queue} within {} s (no status conditions)",
            KUEUE_SEES_QUEUE.as_secs()
        )),
    }
}

pub async fn delete_namespace(client: &Client, namespace: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    // Tried again: on a busy machine one request may time out.
    for attempt in 1..=3 {
        match api.delete(namespace, &DeleteParams::background()).await {
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.is_not_found() => return,
            Err(e) if attempt == 3 => eprintln!("warning: namespace {namespace} is left behind: {e}"),
            Err(_) => {}
        }
    }
}

async fn apply(client: &Client, object: &Value) -> Result<(), String> {
    match crate::kube_util::apply(client, object).await {
        Ok(applied) => {
            tracing::debug!(name = %applied.name_any(), "created");
            Ok(())
        }
        Err(e) => Err(format!("cannot create {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_a_run_carries_its_id_and_stays_a_dns_label() {
        let run = Run { id: "0a1b2".into() };
        assert_eq!(run.cluster_queue(), "conformance-0a1b2");
        assert_eq!(run.namespace(Check::StopAndRestore), "conformance-0a1b2-stop-and-restore");
        for check in Check::ALL {
            crate::jobframework::webhook::dns1123_label(&run.namespace(check)).unwrap();
        }
        let other = Run::start();
        assert_eq!(other.id.len(), 5);
        assert!(other.id.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
