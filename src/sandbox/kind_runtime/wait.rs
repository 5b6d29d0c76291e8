//! Waiting for in-cluster components: a Deployment's pods ready, a webhook that answers.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::Api;

/// Polls `check` until it succeeds, or fails after `timeout` with its last answer.
pub async fn until<F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match check().await {
            Ok(()) => return Ok(()),
            Err(last) if Instant::now() >= deadline => {
                return Err(format!("{what} did not happen within {}s; last: {last}", timeout.as_secs()));
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// `Ok` once the Deployment has an available replica; otherwise why not.
pub async fn deployment_available(client: &Client, namespace: &str, name: &str) -> Result<(), String> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("Deployment {namespace}/{name} does not exist"))?;
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
    Err(format!("Deployment {namespace}/{name}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn until_reports_the_last_answer() {
        let mut calls = 0;
        let err = until("the thing", Duration::ZERO, || {
            calls += 1;
            async move { Err(format!("try {calls}")) }
        })
        .await
        .unwrap_err();
        assert_eq!(err, "the thing did not happen within 0s; last: try 1");
        assert!(until("now", Duration::ZERO, || async { Ok(()) }).await.is_ok());
    }
}
