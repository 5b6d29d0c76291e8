//! The ExternalJob's own controller, the counterpart of kube-controller-manager's Job
//! controller: it runs the pods of a job that is not suspended and writes what they do into the
//! job's status, unless `spec.managedBy` names another controller. Kueue's side (the Workload)
//! is the jobframework's, in a controller of its own, which reads that status.

use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch};
use kube::runtime::controller::Action;
use kube::{Client, ResourceExt};
use serde_json::json;

use super::pod_cache::PodCache;
use super::pods;
use crate::api::condition;
use crate::api::external_job::ExternalJob;
use crate::jobframework::field_manager::{patch_params, post_params};
use crate::jobframework::managed_by::Runner;
use crate::jobframework::reconciler::Error;

pub async fn reconcile(job: &ExternalJob, client: &Client, cache: &PodCache) -> Result<Action, Error> {
    // On a MultiKueue manager a worker runs the job and Kueue mirrors its status here; a job
    // another controller manages has its pods and status from that controller.
    if Runner::of_ours(job.spec.managed_by.as_deref()) != Runner::Own {
        return Ok(Action::await_change());
    }
    let namespace = job.namespace().unwrap_or_default();
    let Some(observed) = cache.pods_of(&namespace, &job.uid().unwrap_or_default()).await else {
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    // A job waiting for its first admission has nothing to report yet. Written anyway, its
    // status would be one more request per job while a burst of new jobs waits for admission.
    if job.status.is_none() && job.is_suspended() && observed.is_empty() {
        return Ok(Action::await_change());
    }
    let now = condition::now();
    let plan = pods::plan(job, &observed, &now);

    if job.status.as_ref() != Some(&plan.status) {
        let mut patch = json!({"status": plan.status});
        if !plan.create.is_empty() {
            // The status counts the pods before they exist, and only on the job as read here:
            // if the jobframework has suspended it since, this write conflicts and no pod
            // starts; if this write comes first, the jobframework's suspension conflicts and,
            // read again, sees pods to wait for before it gives the quota back.
            patch["metadata"] = json!({"resourceVersion": job.resource_version()});
        }
        let jobs: Api<ExternalJob> = Api::namespaced(client.clone(), &namespace);
        jobs.patch_status(&job.name_any(), &patch_params(), &Patch::Merge(patch)).await.map_err(|source| {
            Error::Kube { action: "update status of", kind: "ExternalJob", name: job.name_any(), source }
        })?;
    }

    let pod_api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), &namespace);
    for name in &plan.delete {
        match pod_api.delete(name, &DeleteParams::background()).await {
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            other => {
                other.map_err(|source| Error::Kube { action: "delete", kind: "Pod", name: name.clone(), source })?;
            }
        }
    }
    for new in &plan.create {
        match pod_api.create(&post_params(), &pods::new_pod(job, new)).await {
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
    // A pod running on without a change would never bring the job back before its deadline, nor
    // a stranded pod before it is due for replacement.
    let deadline = pods::until_deadline(job, &plan.status, &now);
    let look_again = deadline.into_iter().chain(pods::until_stranded(&observed, &now)).min();
    Ok(look_again.map_or_else(Action::await_change, Action::requeue))
}
