//! What a run creates around the jobs it tests, all named after the run so that two runs (or a
//! run and the user's own queues) never meet: a ResourceFlavor, a ClusterQueue with room for
//! every check at once, for MultiKueue an AdmissionCheck over the workers' MultiKueueClusters
//! with a ClusterQueue of its own on the manager and every worker, and per check a namespace with
//! its LocalQueue. Everything is deleted at the end, without waiting.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::runtime::wait::await_condition;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

use super::catalog::Check;
use crate::api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, ResourceFlavor};
use crate::kube_util::ApplyError;

/// The LocalQueue of every check namespace.
pub const QUEUE: &str = "conformance";
/// Carried by every cluster-scoped object and namespace a run creates, valued with its id.
pub const RUN_LABEL: &str = "kueue-ext.dev/conformance-run";
/// The label of every node that runs a sandbox's pods (kwok's and kind's).
use crate::manifests::SANDBOX_NODE_LABEL;
/// The label the kubelet gives every node, for clusters that are not a sandbox.
const OS_LABEL: &str = "kubernetes.io/os";
/// Kueue's MultiKueue admission check controller.
const MULTIKUEUE_CONTROLLER: &str = "kueue.x-k8s.io/multikueue";
/// How long Kueue may take to report a new LocalQueue on a busy machine.
const KUEUE_SEES_QUEUE: Duration = Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct Run {
    pub id: String,
    /// The run's flavor's node labels: Kueue puts them in the node selector of the jobs it starts.
    pub node_labels: BTreeMap<String, String>,
}

impl Run {
    /// A new run, named by 5 hex digits of the time and process, whose flavor selects the nodes
    /// `client`'s cluster has.
    pub async fn start(client: &Client) -> Run {
        Run { id: new_id(), node_labels: node_labels(client).await }
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

    /// The ClusterQueue of the MultiKueue checks, on the manager (behind the admission check) and
    /// on every worker.
    pub fn multikueue_cluster_queue(&self) -> String {
        format!("{}-multikueue", self.name())
    }

    /// The AdmissionCheck and the MultiKueueConfig it names.
    fn admission_check(&self) -> String {
        self.name()
    }

    pub fn namespace(&self, check: Check) -> String {
        format!("{}-{}", self.name(), check.id())
    }

    /// Where the prebuilt-Workload check learns the pod sets the integration asks for.
    pub fn probe_namespace(&self) -> String {
        format!("{}-probe", self.name())
    }

    fn metadata(&self, name: &str) -> Value {
        json!({"name": name, "labels": {RUN_LABEL: self.id}})
    }

    /// A namespace with the LocalQueue [`QUEUE`] of ClusterQueue `cluster_queue` (held: admits
    /// nothing), once Kueue knows the queue.
    pub async fn create_namespace(
        &self,
        client: &Client,
        namespace: &str,
        cluster_queue: &str,
        held: bool,
    ) -> Result<(), SetupError> {
        let mut local_queue = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": QUEUE, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        });
        if held {
            local_queue["spec"]["stopPolicy"] = json!("Hold");
        }
        let namespace_object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": self.metadata(namespace)});
        for object in [namespace_object, local_queue] {
            apply(client, &object).await?;
        }
        await_known_to_kueue(client, namespace, QUEUE).await
    }

    fn flavor_object(&self) -> Value {
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": self.metadata(&self.flavor()),
            "spec": {"nodeLabels": self.node_labels},
        })
    }

    /// A ClusterQueue of the run's flavor with room for every check at once (a sandbox worker
    /// has 4 kwok nodes of 8 CPU and 32Gi), behind `admission_check` when given.
    fn cluster_queue_object(&self, name: &str, admission_check: Option<&str>) -> Value {
        let mut spec = json!({
            "namespaceSelector": {},
            "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": self.flavor(), "resources": [
                    {"name": "cpu", "nominalQuota": "32"},
                    {"name": "memory", "nominalQuota": "128Gi"},
                ]}],
            }],
        });
        if let Some(check) = admission_check {
            spec["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": check}]});
        }
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": self.metadata(name), "spec": spec})
    }

    /// The flavor and the ClusterQueue of the single-cluster checks.
    pub async fn create_queues(&self, client: &Client) -> Result<(), SetupError> {
        for object in [self.flavor_object(), self.cluster_queue_object(&self.cluster_queue(), None)] {
            apply(client, &object).await?;
        }
        Ok(())
    }

    /// On the manager, a MultiKueue AdmissionCheck over the MultiKueueClusters `workers` and a
    /// ClusterQueue behind it; on every worker, a ClusterQueue of the same name for the copies.
    pub async fn create_multikueue_queues(
        &self,
        manager: &Client,
        workers: &[(&str, &Client)],
    ) -> Result<(), SetupError> {
        let queue = self.multikueue_cluster_queue();
        let names: Vec<&str> = workers.iter().map(|(name, _)| *name).collect();
        let on_manager = [
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                   "metadata": self.metadata(&self.admission_check()), "spec": {"clusters": names}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                   "metadata": self.metadata(&self.admission_check()),
                   "spec": {"controllerName": MULTIKUEUE_CONTROLLER,
                            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                           "name": self.admission_check()}}}),
            self.flavor_object(),
            self.cluster_queue_object(&queue, Some(&self.admission_check())),
        ];
        for object in &on_manager {
            apply(manager, object).await.map_err(|e| e.on("the manager"))?;
        }
        for (name, client) in workers {
            for object in [self.flavor_object(), self.cluster_queue_object(&queue, None)] {
                apply(client, &object).await.map_err(|e| e.on(name))?;
            }
        }
        Ok(())
    }

    /// Deletes what `create_queues` and `create_multikueue_queues` made on `client`'s cluster,
    /// whichever of them it was.
    pub async fn delete_queues(&self, client: &Client) {
        let background = DeleteParams::background();
        let queues = Api::<ClusterQueue>::all(client.clone());
        for queue in [self.cluster_queue(), self.multikueue_cluster_queue()] {
            let _ = queues.delete(&queue, &background).await;
        }
        let _ = Api::<AdmissionCheck>::all(client.clone()).delete(&self.admission_check(), &background).await;
        let config = ApiResource {
            group: "kueue.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "kueue.x-k8s.io/v1beta2".into(),
            kind: "MultiKueueConfig".into(),
            plural: "multikueueconfigs".into(),
        };
        let configs: Api<DynamicObject> = Api::all_with(client.clone(), &config);
        let _ = configs.delete(&self.admission_check(), &background).await;
        let _ = Api::<ResourceFlavor>::all(client.clone()).delete(&self.flavor(), &background).await;
    }
}

fn new_id() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    let digest = Sha1::digest(format!("{nanos}/{}", std::process::id()));
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..5].to_string()
}

/// The sandbox's node label where the cluster's nodes carry it, else the OS label of its
/// first node, else none.
async fn node_labels(client: &Client) -> BTreeMap<String, String> {
    let nodes = Api::<Node>::all(client.clone());
    let (key, value) = SANDBOX_NODE_LABEL;
    let sandbox = nodes.list_metadata(&ListParams::default().labels(&format!("{key}={value}")).limit(1)).await;
    if sandbox.is_ok_and(|list| !list.items.is_empty()) {
        return BTreeMap::from([(key.to_string(), value.to_string())]);
    }
    let any = nodes.list_metadata(&ListParams::default().labels(OS_LABEL).limit(1)).await;
    any.ok()
        .and_then(|list| list.items.into_iter().next())
        .and_then(|node| node.labels().get(OS_LABEL).cloned())
        .map(|os| BTreeMap::from([(OS_LABEL.to_string(), os)]))
        .unwrap_or_default()
}

/// Waits until Kueue has written the LocalQueue's status: only then does its queue manager map
/// the LocalQueue to its ClusterQueue, and a job created earlier is not defaulted to MultiKueue.
async fn await_known_to_kueue(client: &Client, namespace: &str, queue: &str) -> Result<(), SetupError> {
    let resource = ApiResource::erase::<LocalQueue>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let has_status = |lq: Option<&DynamicObject>| {
        lq.and_then(|lq| lq.data["status"]["conditions"].as_array()).is_some_and(|c| !c.is_empty())
    };
    let seen = await_condition(api, queue, has_status);
    match tokio::time::timeout(KUEUE_SEES_QUEUE, seen).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(SetupError::Watch { queue: format!("{namespace}/{queue}"), message: e.to_string() }),
        Err(_) => {
            Err(SetupError::NotSeen { queue: format!("{namespace}/{queue}"), seconds: KUEUE_SEES_QUEUE.as_secs() })
        }
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

async fn apply(client: &Client, object: &Value) -> Result<(), SetupError> {
    let applied = crate::kube_util::apply(client, object).await?;
    tracing::debug!(name = %applied.name_any(), "created");
    Ok(())
}

/// What a run could not set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot create {0}")]
    Create(#[from] ApplyError),
    #[error("on {cluster}: {source}")]
    On {
        cluster: String,
        #[source]
        source: Box<SetupError>,
    },
    #[error("cannot watch LocalQueue {queue}: {message}")]
    Watch { queue: String, message: String },
    #[error("Kueue did not report LocalQueue {queue} within {seconds} s (no status conditions)")]
    NotSeen { queue: String, seconds: u64 },
}

impl SetupError {
    /// The same, said to have happened on `cluster`.
    pub fn on(self, cluster: &str) -> SetupError {
        SetupError::On { cluster: cluster.to_string(), source: Box::new(self) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_a_run_carries_its_id_and_stays_a_dns_label() {
        let run = Run { id: "0a1b2".into(), node_labels: BTreeMap::new() };
        assert_eq!(run.cluster_queue(), "conformance-0a1b2");
        assert_eq!(run.multikueue_cluster_queue(), "conformance-0a1b2-multikueue");
        assert_eq!(run.namespace(Check::StopAndRestore), "conformance-0a1b2-stop-and-restore");
        for check in Check::ALL {
            crate::jobframework::webhook::dns1123_label(&run.namespace(check)).unwrap();
        }
        let other = new_id();
        assert_eq!(other.len(), 5);
        assert!(other.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
