//! One check's namespace on one cluster: create the job, read it, its Workloads and its pods
//! (every pod there is the job's), and wait for something to hold. API failures become
//! evidence, so a check fails with what went wrong rather than aborting the run; a write refused
//! for now (a webhook that could not be called, an API server shedding load) is tried again
//! first, since that says nothing of the kind.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use super::report::Evidence;
use super::verdict::{self, workload_ref};
use crate::api::kueue::Workload;
use crate::integrations::declarative::ConfiguredJob;
use crate::integrations::declarative::config::Integration;
use crate::jobframework::generic_job::GenericJob;
use crate::kube_util::patiently;

pub struct Scene {
    pub cluster: String,
    client: Client,
    pub namespace: String,
    integration: Arc<Integration>,
    jobs: Api<DynamicObject>,
    workloads: Api<Workload>,
    pods: Api<Pod>,
}

fn api_error(action: &str, what: &str, error: kube::Error) -> Evidence {
    Evidence::new(format!("to {action} {what}"), format!("the API server said: {error}"))
}

impl Scene {
    pub fn new(cluster: &str, client: &Client, namespace: &str, integration: Arc<Integration>) -> Scene {
        Scene {
            cluster: cluster.into(),
            client: client.clone(),
            namespace: namespace.into(),
            jobs: Api::namespaced_with(client.clone(), namespace, &integration.api_resource()),
            workloads: Api::namespaced(client.clone(), namespace),
            pods: Api::namespaced(client.clone(), namespace),
            integration,
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The same cluster and kind in another namespace.
    pub fn sibling(&self, namespace: &str) -> Scene {
        Scene::new(&self.cluster, &self.client, namespace, self.integration.clone())
    }

    fn configured(&self, object: DynamicObject) -> Result<ConfiguredJob, Evidence> {
        let value = serde_json::to_value(object).map_err(|e| Evidence::new("a readable job", e.to_string()))?;
        ConfiguredJob::new(value, self.integration.clone()).map_err(|e| Evidence::new("a readable job", e.to_string()))
    }

    /// Creates the job as the user would: the response is the object as the webhooks left it.
    pub async fn create_job(&self, object: &Value) -> Result<ConfiguredJob, Evidence> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let dynamic: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|e| Evidence::new("a sample object", e.to_string()))?;
        let params = PostParams::default();
        let created = patiently(|| self.jobs.create(&params, &dynamic)).await.map_err(|e| {
            Evidence::new("the sample job to be accepted", format!("create refused: {e}")).on(format!(
                "{} {}/{name}",
                self.integration.gvk().kind,
                self.namespace
            ))
        })?;
        self.configured(created)
    }

    pub async fn job(&self, job: &ConfiguredJob) -> Result<ConfiguredJob, Evidence> {
        let object = self.jobs.get(&job.name_any()).await.map_err(|e| api_error("read", "the job", e))?;
        self.configured(object)
    }

    pub async fn workloads(&self) -> Result<Vec<Workload>, Evidence> {
        let list = self.workloads.list(&ListParams::default()).await.map_err(|e| api_error("list", "Workloads", e))?;
        Ok(list.items)
    }

    pub async fn workload(&self, name: &str) -> Result<Workload, Evidence> {
        self.workloads.get(name).await.map_err(|e| api_error("read", &format!("Workload {name}"), e))
    }

    /// The Workload whose controller is `job`, if any.
    pub async fn workload_of(&self, job: &ConfiguredJob) -> Result<Option<Workload>, Evidence> {
        let uid = job.uid();
        Ok(self
            .workloads()
            .await?
            .into_iter()
            .find(|w| w.owner_references().iter().any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())))
    }

    pub async fn pods(&self) -> Result<Vec<Pod>, Evidence> {
        let list = self.pods.list(&ListParams::default()).await.map_err(|e| api_error("list", "pods", e))?;
        Ok(list.items)
    }

    pub async fn create_workload(&self, workload: &Workload) -> Result<(), Evidence> {
        let params = PostParams::default();
        patiently(|| self.workloads.create(&params, workload))
            .await
            .map_err(|e| api_error("create", &workload_ref(workload), e))?;
        Ok(())
    }

    /// Kueue's own way to evict: `spec.active: false` on the Workload.
    pub async fn deactivate(&self, workload: &Workload) -> Result<(), Evidence> {
        let (name, params, patch) =
            (workload.name_any(), PatchParams::default(), Patch::Merge(json!({"spec": {"active": false}})));
        patiently(|| self.workloads.patch(&name, &params, &patch))
            .await
            .map_err(|e| api_error("deactivate", &workload_ref(workload), e))?;
        Ok(())
    }

    /// The first admitted Workload of the namespace.
    pub async fn admitted_workload(&self) -> Result<Workload, Evidence> {
        until(ADMISSION, POLL, || async {
            let workloads = self.workloads().await?;
            if let Some(admitted) = workloads.iter().find(|w| w.is_admitted()) {
                return Ok(admitted.clone());
            }
            let seen: Vec<String> = workloads
                .iter()
                .map(|w| {
                    let quota = crate::api::condition::find(w.conditions(), crate::api::kueue::QUOTA_RESERVED);
                    let why = quota.map_or_else(|| "no QuotaReserved condition".to_string(), |c| c.message.clone());
                    format!("{}: {why}", w.name_any())
                })
                .collect();
            Err(Evidence::new(
                "a Workload of the job admitted",
                if seen.is_empty() { "no Workload".to_string() } else { seen.join("; ") },
            ))
        })
        .await
    }

    /// Waits until the job runs and at least one of its pods is Running.
    ///
    /// A kind described with an `active` probe must also count its pods by then. Kueue's own
    /// batch/v1 Job reads `status.active`, which its Job controller updates after creating the
    /// pods: evicted in between, Kueue gives the quota back while they start. The contract
    /// checked is the one Kueue's reference keeps, eviction once the job reports its pods; a
    /// kind without the probe is evicted as soon as a pod runs.
    pub async fn running(&self, job: &ConfiguredJob) -> Result<(), Evidence> {
        until(ADMISSION, POLL, || async {
            let job = self.job(job).await?;
            let pods = self.pods().await?;
            let running =
                pods.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")).count();
            let counted = job.integration().active.is_none() || job.is_active();
            if !job.is_suspended() && running > 0 && counted {
                return Ok(());
            }
            Err(Evidence::new(
                "the job running, with a pod Running, and active by its description",
                verdict::with_unscheduled(
                    format!(
                        "job suspended: {}, {running} of {} pod(s) Running, active by its description: {counted}",
                        job.is_suspended(),
                        pods.len()
                    ),
                    &pods,
                ),
            ))
        })
        .await
    }
}

/// How long a check waits for admission and pods to start: generous, for 2 busy cores.
pub const ADMISSION: Duration = Duration::from_secs(120);
/// How long for a job of the sample's 20 s pods to end, from its creation.
pub const COMPLETION: Duration = Duration::from_secs(240);
pub const POLL: Duration = Duration::from_millis(250);

/// Polls `check` until it returns `Ok`, or returns its evidence once settled or after `timeout`.
pub async fn until<T, F, Fut>(timeout: Duration, every: Duration, mut check: F) -> Result<T, Evidence>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Evidence>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match check().await {
            Ok(value) => return Ok(value),
            Err(last) if last.settled => return Err(last),
            Err(mut last) if Instant::now() >= deadline => {
                last.observed = format!("{} (still so after {} s)", last.observed, timeout.as_secs());
                return Err(last);
            }
            Err(_) => tokio::time::sleep(every).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[tokio::test]
    async fn settled_evidence_ends_the_wait_and_passing_returns_the_value() {
        let calls = Cell::new(0);
        let settled = until(Duration::from_secs(3600), Duration::from_millis(1), || async {
            calls.set(calls.get() + 1);
            Err::<(), _>(Evidence::new("x", "y").settled(true))
        })
        .await;
        assert_eq!((settled.unwrap_err().observed, calls.get()), ("y".to_string(), 1));

        let third = until(Duration::from_secs(3600), Duration::from_millis(1), || async {
            calls.set(calls.get() + 1);
            if calls.get() < 4 { Err(Evidence::new("x", "not yet")) } else { Ok(calls.get()) }
        })
        .await;
        assert_eq!(third, Ok(4));
    }

    #[tokio::test]
    async fn a_timeout_says_how_long_it_waited() {
        let late = until(Duration::ZERO, Duration::from_millis(1), || async { Err::<(), _>(Evidence::new("x", "y")) });
        assert_eq!(late.await.unwrap_err().observed, "y (still so after 0 s)");
    }
}
