//! One reconcile of a WrappedJob: look at its components and pods, let `lifecycle` decide,
//! write the status first (so nothing is created unrecorded), act, then let the jobframework
//! keep its Workload in step.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, Patch};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use serde_json::json;
use tracing::{debug, warn};

use super::components;
use super::lifecycle::{self, Act, ObservedComponent, Step};
use super::podsets;
use super::settings::Settings;
use super::watched::Caches;
use crate::api::wrapped_job::{ComponentStatus, WRAPPED_JOB_FINALIZER, WrappedJob};
use crate::jobframework::field_manager::patch_params;
use crate::jobframework::managed_by::Runner;
use crate::jobframework::own_writes::OwnWrites;
use crate::jobframework::reconciler::{self, Context, Error};
use crate::jobframework::served_kinds::ServedKinds;

pub async fn reconcile(
    job: &WrappedJob,
    ctx: &Context,
    kinds: &ServedKinds,
    caches: &Caches,
    own_writes: &OwnWrites<WrappedJob>,
) -> Result<Action, Error> {
    // On a MultiKueue manager a worker runs the job and Kueue mirrors its status here; a job
    // another controller manages has its components and status from that controller. Either
    // way the job keeps its Workload.
    if Runner::of_ours(job.spec.managed_by.as_deref()) != Runner::Own {
        return reconciler::reconcile(job, ctx).await;
    }
    // Until the caches have listed once, every component would look missing.
    if !caches.synced().await {
        debug!(job = %job.name_any(), "component caches not synced yet");
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let (settings, ignored) = Settings::from_annotations(job.annotations());
    for bad in ignored {
        warn!(job = %job.name_any(), annotation = %bad.annotation, "ignored: {}", bad.why);
    }
    let observed = components::observe(&ctx.client, kinds, caches, job).await.map_err(|e| wrapped_err(job, e))?;
    let step = lifecycle::step(job, &shape(job), &observed, &settings, time::OffsetDateTime::now_utc());
    let planned = step.requeue;
    let (current, look_again) = act(job, ctx, kinds, caches, step, &observed, own_writes).await?;
    let framework = reconciler::reconcile(&current, ctx).await?;
    Ok(match planned.into_iter().chain(look_again).min() {
        Some(after) => Action::requeue(after.max(Duration::from_millis(50))),
        None => framework,
    })
}

/// What each component is and which pod sets it has, as the webhook validated them.
fn shape(job: &WrappedJob) -> Vec<ComponentStatus> {
    job.spec
        .components
        .iter()
        .enumerate()
        .map(|(index, component)| {
            let (api_version, kind) = components::type_of(&component.template);
            ComponentStatus {
                name: component.template["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                kind: kind.to_string(),
                api_version: api_version.to_string(),
                pod_sets: podsets::component_pod_sets(index, component).unwrap_or_default(),
                ..ComponentStatus::default()
            }
        })
        .collect()
}

/// Carries out a step and returns the job as it now is, with how soon a failed create wants
/// the job looked at again (a second for one that may pass later). The step's own requeue
/// cannot say it: the step was decided before the create was refused.
async fn act(
    job: &WrappedJob,
    ctx: &Context,
    kinds: &ServedKinds,
    caches: &Caches,
    step: Step,
    observed: &lifecycle::Observed,
    own_writes: &OwnWrites<WrappedJob>,
) -> Result<(WrappedJob, Option<Duration>), Error> {
    let namespaced: Api<WrappedJob> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    let api = Writes { api: namespaced, own_writes };
    let mut current = job.clone();
    let mut look_again = None;
    if step.actions.contains(&Act::AddFinalizer) {
        current = set_finalizer(&api, &current, true).await?;
    }
    if current.status.as_ref() != Some(&step.status) {
        current = write_status(&api, &current, &step.status).await?;
    }
    for note in &step.notes {
        let kind = if note.warning { EventType::Warning } else { EventType::Normal };
        reconciler::publish(ctx, job, kind, note.reason, note.message.clone());
    }
    for action in &step.actions {
        match action {
            Act::Create(index) => {
                match components::create(&ctx.client, kinds, &current, *index).await {
                    Ok(object) => caches.created(&current.uid().unwrap_or_default(), *index, object),
                    Err(failure) => {
                        let now = time::OffsetDateTime::now_utc();
                        // A retry refused for the same reason is already told: one event per reason.
                        let told = lifecycle::create_error(&current, *index) == Some(failure.message.as_str());
                        let failed = lifecycle::create_failed(&current, *index, failure.fatal, &failure.message, now);
                        current = write_status(&api, &current, &failed.status).await?;
                        look_again = look_again.into_iter().chain(failed.requeue).min();
                        if !told || failure.fatal {
                            let kind = if failure.fatal { EventType::Warning } else { EventType::Normal };
                            let note = format!("component {index}: {}", failure.message);
                            reconciler::publish(ctx, job, kind, "CreateFailed", note);
                        }
                        if failure.fatal {
                            break;
                        }
                    }
                }
            }
            Act::Delete { components: indices, forceful } => {
                let names: Vec<(usize, String)> = indices
                    .iter()
                    .filter_map(|&i| match observed.components.get(i) {
                        Some(ObservedComponent::Present { name, .. }) => Some((i, name.clone())),
                        _ => None,
                    })
                    .collect();
                for index in indices {
                    caches.forget_created(&current.uid().unwrap_or_default(), *index);
                }
                components::delete(&ctx.client, kinds, &current, &names, *forceful)
                    .await
                    .map_err(|e| wrapped_err(job, e))?;
            }
            Act::DeletePods => components::delete_pods(&ctx.client, &current).await.map_err(|e| wrapped_err(job, e))?,
            Act::RemoveFinalizer => current = set_finalizer(&api, &current, false).await?,
            Act::AddFinalizer => {}
        }
    }
    Ok((current, look_again))
}

/// The WrappedJob API, and where what is written through it is recorded until the watch brings
/// it back.
struct Writes<'a> {
    api: Api<WrappedJob>,
    own_writes: &'a OwnWrites<WrappedJob>,
}

/// Writes the status as a merge patch pinned to the resourceVersion read: a concurrent change
/// is a conflict to retry, never a lost update.
async fn write_status(
    writes: &Writes<'_>,
    job: &WrappedJob,
    status: &crate::api::wrapped_job::WrappedJobStatus,
) -> Result<WrappedJob, Error> {
    let patch = json!({"metadata": {"resourceVersion": job.resource_version()}, "status": status});
    let written =
        writes.api.patch_status(&job.name_any(), &patch_params(), &Patch::Merge(patch)).await.map_err(|source| {
            Error::Kube { action: "update status of", kind: "WrappedJob", name: job.name_any(), source }
        })?;
    writes.own_writes.wrote(&written);
    Ok(written)
}

async fn set_finalizer(writes: &Writes<'_>, job: &WrappedJob, present: bool) -> Result<WrappedJob, Error> {
    let mut finalizers: Vec<String> = job.finalizers().to_vec();
    finalizers.retain(|f| f != WRAPPED_JOB_FINALIZER);
    if present {
        finalizers.push(WRAPPED_JOB_FINALIZER.to_string());
    }
    let patch = json!({"metadata": {"resourceVersion": job.resource_version(), "finalizers": finalizers}});
    let written = match writes.api.patch(&job.name_any(), &patch_params(), &Patch::Merge(patch)).await {
        // A reconcile queued before the removal that let it go: nothing is left to hold.
        Err(kube::Error::Api(status)) if !present && status.is_not_found() => return Ok(job.clone()),
        written => written.map_err(|source| Error::Kube {
            action: if present { "add finalizer to" } else { "remove finalizer from" },
            kind: "WrappedJob",
            name: job.name_any(),
            source,
        })?,
    };
    writes.own_writes.wrote(&written);
    Ok(written)
}

fn wrapped_err(job: &WrappedJob, err: components::Error) -> Error {
    let components::Error::Kube { action, what, source } = err;
    Error::Kube { action, kind: "component of WrappedJob", name: format!("{} ({what})", job.name_any()), source }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
