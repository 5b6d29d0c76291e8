//! One reconcile of an ExternalJob: observe its pods, act on them, write its status, then let
//! the jobframework keep its Workload in step.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use serde_json::json;

use super::pod_cache::PodCache;
use super::pods;
use crate::api::condition;
use crate::api::external_job::ExternalJob;
use crate::api::kueue::MULTIKUEUE_CONTROLLER;
use crate::jobframework::reconciler::{self, Context, Error};

pub async fn reconcile(job: &ExternalJob, ctx: &Context, cache: &PodCache) -> Result<Action, Error> {
    // On a MultiKueue manager a worker runs the job and Kueue mirrors its status here: this
    // controller keeps the Workload and never touches pods or status.
    if job.spec.managed_by.as_deref() == Some(MULTIKUEUE_CONTROLLER) {
        return reconciler::reconcile(job, ctx).await;
    }
    let namespace = job.namespace().unwrap_or_default();
    let Some(observed) = cache.pods_of(&namespace, &job.uid().unwrap_or_default()).await else {
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    let pod_api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let plan = pods::plan(job, &observed, &condition::now());

    for name in &plan.delete {
        match pod_api.delete(name, &DeleteParams::background()).await {
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            other => {
                other.map_err(|source| Error::Kube { action: "delete", kind: "Pod", name: name.clone(), source })?;
            }
        }
    }
    for new in &plan.create {
        match pod_api.create(&PostParams::default(), &pods::new_pod(job, new)).await {
            // Created by an earlier reconcile, not in the cache yet: it runs, which is all we want.
            Err(kube::Error::Api(s)) if s.is_already_exists() => {}
            other => {
                other.map_err(|source| Error::Kube {
                    action: "create pod of",
                    kind: "ExternalJob",
                    name: job.name_any(),
                    source,
                })?;
            }
        }
    }

    let mut observed_job = job.clone();
    if job.status.as_ref() != Some(&plan.status) {
        let jobs: Api<ExternalJob> = Api::namespaced(ctx.client.clone(), &namespace);
        let patch = json!({"status": plan.status});
        let updated = jobs.patch_status(&job.name_any(), &PatchParams::default(), &Patch::Merge(patch)).await.map_err(
            |source| Error::Kube { action: "update status of", kind: "ExternalJob", name: job.name_any(), source },
        )?;
        observed_job.status = updated.status;
        observed_job.metadata.resource_version = updated.metadata.resource_version;
    }
    reconciler::reconcile(&observed_job, ctx).await
}
