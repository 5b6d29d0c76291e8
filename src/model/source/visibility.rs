//! Kueue's visibility API: the order of each ClusterQueue's pending Workloads, asked of every
//! cluster once (`watch --once`, `explain`) or at an interval (the live view). Not a watch: the
//! API serves no watch, and the order changes with every admission.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::Client;

use crate::jobframework::api_error;
use crate::model::snapshot::{ClusterSnapshot, Snapshot, Visibility, VisiblePending};

/// Kueue v0.19's visibility API (`apis/visibility/v1beta2`, served by Kueue's own aggregated
/// API server behind the APIService `v1beta2.visibility.kueue.x-k8s.io`).
const VISIBILITY_API: &str = "/apis/visibility.kueue.x-k8s.io/v1beta2";

/// An APIService whose server hangs must not hold `explain` up.
const VISIBILITY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a ClusterQueue's order could not be read.
#[derive(Debug, PartialEq)]
enum Unread {
    /// Kueue's queue manager does not hold that ClusterQueue (yet): it alone goes without.
    QueueUnknown,
    /// The API cannot be read on that cluster, in words.
    Api(String),
}

/// One ClusterQueue's pending Workloads, in Kueue's order.
async fn pending_workloads(client: &Client, cluster: &str, cluster_queue: &str) -> Result<Vec<VisiblePending>, Unread> {
    let path = format!("{VISIBILITY_API}/clusterqueues/{cluster_queue}/pendingworkloads");
    let request = http::Request::get(path).body(Vec::new()).map_err(|e| Unread::Api(e.to_string()))?;
    let answer = match tokio::time::timeout(VISIBILITY_TIMEOUT, client.request::<serde_json::Value>(request)).await {
        Err(_) => {
            return Err(Unread::Api(format!("{cluster} gave no answer within {}s", VISIBILITY_TIMEOUT.as_secs())));
        }
        Ok(Err(e)) => return Err(unread(&e, cluster)),
        Ok(Ok(answer)) => answer,
    };
    serde::Deserialize::deserialize(&answer["items"])
        .map_err(|e| Unread::Api(format!("{cluster} answered what this version does not read: {e}")))
}

fn unread(error: &kube::Error, cluster: &str) -> Unread {
    Unread::Api(match error {
        e if api_error::is_unserved(e) => format!(
            "{cluster} does not serve it: Kueue's VisibilityOnDemand feature gate is off, or its APIService is not \
             registered"
        ),
        kube::Error::Api(status) if status.code == 404 => return Unread::QueueUnknown,
        kube::Error::Api(status) if status.code == 503 => {
            format!("its APIService on {cluster} does not answer: {}", status.message)
        }
        e if api_error::is_forbidden(e) => {
            format!("reading it on {cluster} is not allowed: {}", api_error::in_words(e))
        }
        e => format!("reading it on {cluster} failed: {}", api_error::in_words(e)),
    })
}

async fn visibility(client: Option<Client>, cluster: &ClusterSnapshot) -> Visibility {
    let Some(client) = client.filter(|_| cluster.reachable) else {
        return Visibility::Unavailable(format!("{} cannot be read", cluster.name));
    };
    let names: Vec<String> = cluster.cluster_queues.iter().map(|cq| kube::ResourceExt::name_any(cq.as_ref())).collect();
    let asks = names.iter().map(|name| pending_workloads(&client, &cluster.name, name));
    let answers = futures::future::join_all(asks).await;
    let mut served = BTreeMap::new();
    for (name, answer) in names.into_iter().zip(answers) {
        match answer {
            Ok(items) => {
                served.insert(name, items);
            }
            Err(Unread::QueueUnknown) => {}
            Err(Unread::Api(why)) => return Visibility::Unavailable(why),
        }
    }
    Visibility::Served(served)
}

/// Every cluster's answer, in the order of `clusters` (whose clients `clients` are).
pub async fn read(clients: Vec<Option<Client>>, clusters: &[ClusterSnapshot]) -> Vec<Visibility> {
    futures::future::join_all(clients.into_iter().zip(clusters).map(|(client, cluster)| visibility(client, cluster)))
        .await
}

/// Puts answers read earlier into a snapshot, cluster by cluster.
pub fn apply(snapshot: &mut Snapshot, answers: &[Visibility]) {
    for (cluster, answer) in snapshot.clusters.iter_mut().zip(answers) {
        cluster.visibility = answer.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::snapshot::Role;

    #[tokio::test]
    async fn kueues_order_is_read_where_served_and_why_not_said_where_not() {
        use crate::model::fixtures::{cluster_queue, object};
        use crate::test_api_server::{requested, scripted_client};
        let mut cluster = ClusterSnapshot::empty("manager", "kueue-ext-manager", Role::Manager);
        for name in ["cluster-queue", "new-queue"] {
            cluster.cluster_queues.push(object(cluster_queue(name, "4", "16Gi", "0", None)));
        }
        let listed = serde_json::json!({"items": [{
            "metadata": {"name": "externaljob-train-12345", "namespace": "default"},
            "priority": 7, "localQueueName": "user-queue", "positionInClusterQueue": 0, "positionInLocalQueue": 0,
        }]});
        let (client, requests) = scripted_client(move |_, path| match path {
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue/pendingworkloads" => {
                Ok(listed.clone())
            }
            // A ClusterQueue Kueue's queue manager does not hold yet.
            _ => Err(404),
        });
        let Visibility::Served(queues) = visibility(Some(client), &cluster).await else { panic!("served") };
        assert_eq!(queues.keys().collect::<Vec<_>>(), ["cluster-queue"]);
        assert_eq!(
            (queues["cluster-queue"][0].priority, queues["cluster-queue"][0].local_queue_name.as_str()),
            (7, "user-queue")
        );
        assert_eq!(requested(&requests).len(), 2);

        let refusals = [
            (
                api_error::serving_nothing(),
                "manager does not serve it: Kueue's VisibilityOnDemand feature gate is off, or its APIService is \
                 not registered",
            ),
            (scripted_client(|_, _| Err(403)).0, "reading it on manager is not allowed: InternalError"),
            (scripted_client(|_, _| Err(503)).0, "its APIService on manager does not answer: InternalError"),
        ];
        for (client, expected) in refusals {
            match visibility(Some(client), &cluster).await {
                Visibility::Unavailable(why) => assert_eq!(why, expected),
                other => panic!("{other:?}"),
            }
        }
    }
}
