//! Waiting for in-cluster components: a Deployment's pods ready, a webhook that answers.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};

/// Something that did not happen in time, with the last reason it had not.
#[derive(Debug, thiserror::Error)]
#[error("{what} did not happen within {seconds}s; last: {last}")]
pub struct TimedOut<E> {
    what: String,
    seconds: u64,
    #[source]
    last: E,
}

/// Why a Deployment has no available replica.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("Deployment {namespace}/{name} does not exist")]
    Missing { namespace: String, name: String },
    /// The first condition that is not True, or that no replica is available yet.
    #[error("Deployment {namespace}/{name}: {reason}")]
    NotReady { namespace: String, name: String, reason: String },
}

/// Polls `check` until it succeeds, or fails after `timeout` with its last answer.
pub async fn until<F, Fut, E>(what: &str, timeout: Duration, mut check: F) -> Result<(), TimedOut<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match check().await {
            Ok(()) => return Ok(()),
            Err(last) if Instant::now() >= deadline => {
                return Err(TimedOut { what: what.to_string(), seconds: timeout.as_secs(), last });
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// `Ok` once the Deployment has an available replica; otherwise why not.
pub async fn deployment_available(client: &Client, namespace: &str, name: &str) -> Result<(), Unavailable> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await?
        .ok_or_else(|| Unavailable::Missing { namespace: namespace.to_string(), name: name.to_string() })?;
    let status = deployment.status.unwrap_or_default();
    if status.available_replicas.unwrap_or(0) >= 1 {
        return Ok(());
    }
    let reason = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.status != "True")
        .map(|c| format!("{} {}", c.type_, c.message.unwrap_or_default()))
        .unwrap_or_else(|| "no replica is available yet".into());
    Err(Unavailable::NotReady { namespace: namespace.to_string(), name: name.to_string(), reason })
}

/// `Ok` once every replica of the Deployment's current template is updated and available: a
/// roll is over, so no pod of the old template answers any more.
pub async fn deployment_rolled_out(client: &Client, namespace: &str, name: &str) -> Result<(), Unavailable> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await?
        .ok_or_else(|| Unavailable::Missing { namespace: namespace.to_string(), name: name.to_string() })?;
    let wanted = deployment.spec.as_ref().and_then(|spec| spec.replicas).unwrap_or(1);
    let generation = deployment.metadata.generation.unwrap_or(0);
    let status = deployment.status.unwrap_or_default();
    let reason = if status.observed_generation.unwrap_or(0) < generation {
        Some("its controller has not seen the latest change yet".to_string())
    } else if status.updated_replicas.unwrap_or(0) < wanted {
        Some(format!("{} of {wanted} replicas updated", status.updated_replicas.unwrap_or(0)))
    } else if status.replicas.unwrap_or(0) > wanted {
        let why = match unschedulable(client, namespace, deployment.spec.as_ref()).await {
            Some(said) => format!("the scheduler says: {said}"),
            None => format!("`kubectl -n {namespace} describe pods` says why"),
        };
        Some(format!(
            "{} old replicas still run: a new one is not available yet ({why})",
            status.replicas.unwrap_or(0) - wanted
        ))
    } else if status.available_replicas.unwrap_or(0) < wanted {
        Some(format!("{} of {wanted} replicas available", status.available_replicas.unwrap_or(0)))
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(Unavailable::NotReady { namespace: namespace.to_string(), name: name.to_string(), reason }),
    }
}

/// Why a pod of the Deployment cannot be placed, as the scheduler wrote it (`0/1 nodes are
/// available: 1 Insufficient cpu.`): a roll on a full node never ends, and says so here.
async fn unschedulable(client: &Client, namespace: &str, spec: Option<&DeploymentSpec>) -> Option<String> {
    let labels = spec?.selector.match_labels.as_ref()?;
    let selector: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let pods = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(&selector.join(",")))
        .await
        .ok()?;
    pods.items.into_iter().find_map(|pod| {
        let conditions = pod.status?.conditions?;
        let scheduled = conditions.into_iter().find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
        scheduled.message
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A roll whose new pod no node can take names the scheduler's words, not just "not yet".
    #[tokio::test]
    async fn a_roll_stuck_on_a_full_node_says_what_the_scheduler_said() {
        use serde_json::json;

        let (client, _) = crate::test_api_server::scripted_client(|_, path| match path {
            "/apis/apps/v1/namespaces/kueue-system/deployments/kueue" => Ok(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "kueue", "namespace": "kueue-system", "generation": 2},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "kueue"}},
                         "template": {"spec": {"containers": []}}},
                "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1},
            })),
            "/api/v1/namespaces/kueue-system/pods" => Ok(json!({
                "apiVersion": "v1", "kind": "PodList", "metadata": {},
                "items": [
                    {"metadata": {"name": "old"}, "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}},
                    {"metadata": {"name": "new"}, "status": {"conditions": [{"type": "PodScheduled", "status": "False",
                        "reason": "Unschedulable", "message": "0/1 nodes are available: 1 Insufficient cpu."}]}},
                ],
            })),
            _ => Err(404),
        });
        let err = deployment_rolled_out(&client, "kueue-system", "kueue").await.unwrap_err();
        assert!(
            err.to_string().contains(
                "1 old replicas still run: a new one is not available yet (the scheduler says: 0/1 nodes are \
                 available: 1 Insufficient cpu.)"
            ),
            "{err}"
        );
    }

    #[tokio::test]
    async fn until_reports_the_last_answer() {
        let mut calls = 0;
        let err = until("the thing", Duration::ZERO, || {
            calls += 1;
            async move { Err(std::io::Error::other(format!("try {calls}"))) }
        })
        .await
        .unwrap_err();
        assert_eq!(err.to_string(), "the thing did not happen within 0s; last: try 1");
        assert!(until("now", Duration::ZERO, || async { Ok::<_, std::io::Error>(()) }).await.is_ok());
    }
}
