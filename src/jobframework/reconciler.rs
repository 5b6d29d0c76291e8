//! One generic reconciler for every integrated kind: the Rust counterpart of Kueue's
//! `ReconcileGenericJob`. It keeps exactly one matching Workload per job, starts the job when
//! the Workload is admitted, stops it when evicted, and reports the job's end to Kueue.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GetParams, Patch};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tracing::{debug, info};

use super::decision::{Decision, Release, WAIT, decide, recorded_infos};
use super::field_manager::{patch_params, post_params};
use super::generic_job::{GenericJob, object_reference};
use super::multikueue_nudge;
use super::own_writes::{self, Newest};
use super::podset::{self, Assignment, CheckUpdate, Flavor, PodSetInfo, PodSetInfoError};
use super::{status, workload};
use crate::api::condition::{self, Condition};
use crate::api::kueue::{
    FINISHED, MULTIKUEUE_ORIGIN_LABEL, MULTIKUEUE_WORKER_POD_LABEL, PRIORITY_CLASS_LABEL, PriorityClassRef,
    QUOTA_RESERVED, RESOURCE_IN_USE_FINALIZER, ResourceFlavor, Workload,
};

use super::reconcile_context::kube_err;
pub use super::reconcile_context::{Config, Context, Error};

/// Writes a job back whole (an update, so a concurrent change is a conflict, not lost), through
/// the dynamic API: a configured kind has no Rust type to read it back into.
pub struct JobWriter {
    api: Api<DynamicObject>,
}

impl JobWriter {
    fn for_job<J: GenericJob>(job: &J, client: &Client) -> JobWriter {
        let namespace = job.namespace().unwrap_or_default();
        JobWriter { api: Api::namespaced_with(client.clone(), &namespace, &job.api_resource()) }
    }

    /// Returns the resourceVersion of what was written.
    async fn replace<J: GenericJob>(&self, job: &J, action: &'static str) -> Result<Option<String>, Error> {
        let name = job.name_any();
        let object: DynamicObject = serde_json::to_value(job)
            .and_then(serde_json::from_value)
            .map_err(|source| Error::Encode { name: name.clone(), source })?;
        let written = self.api.replace(&name, &post_params(), &object).await.map_err(kube_err(action, "job", name))?;
        Ok(written.resource_version())
    }
}

/// Reconciles one job. Idempotent: every step reads the state it acts on, so a restart or a
/// retry after a conflict redoes nothing that was done.
pub async fn reconcile<J: GenericJob>(job: &J, ctx: &Context) -> Result<Action, Error> {
    let prebuilt = workload::prebuilt_name(job);
    if job.queue_name().is_none() && prebuilt.is_none() && !ctx.config.manage_jobs_without_queue_name {
        return Ok(Action::await_change());
    }
    let jobs = JobWriter::for_job(job, &ctx.client);
    let workloads: Api<Workload> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());

    let Some(mut found) = ensure_one_workload(job, ctx, &jobs, &workloads, prebuilt.as_deref()).await? else {
        return handle_job_with_no_workload(job, ctx, &jobs, &workloads, prebuilt.as_deref()).await;
    };
    // Twice at most: on the current Workload `act` never asks to confirm.
    loop {
        match act(job, ctx, &jobs, &workloads, &found.workload, found.current).await? {
            // A decision on our own write, standing in for a cache that trailed it, is made
            // again once the stand-in has expired, lest what the watch brought meanwhile be missed.
            Step::Done(action) if found.stand_in && action == Action::await_change() => {
                return Ok(Action::requeue(own_writes::KEPT_FOR));
            }
            Step::Done(action) => return Ok(action),
            // The cache may lag (for a while after an API server restart): what `act` writes is
            // decided on the Workload as the API server has it now, so a stale entry never
            // starts, stops or finishes a job there. (`ensure_one_workload` acts on the cache
            // alone when it finds Workloads that do not match the job.)
            Step::Confirm => match current_workload(job, &workloads, &found.workload).await? {
                Some(workload) => found = Found { workload, current: true, stand_in: false },
                None => return handle_job_with_no_workload(job, ctx, &jobs, &workloads, prebuilt.as_deref()).await,
            },
        }
    }
}

/// What [`act`] came to.
enum Step {
    Done(Action),
    /// It would write on a Workload read from the cache: run it again on the current one.
    Confirm,
}

/// The Workload a reconcile acts on, and whether it was read from the API server in this
/// reconcile (else from the cache).
struct Found {
    workload: Arc<Workload>,
    current: bool,
    /// Our own last write, read in place of a cache that had not caught up with it.
    stand_in: bool,
}

/// Keeps the job and its Workload in step: a [`Decision`] on what was read, then its writes.
/// Most passes write nothing (a job waiting for admission, or running); those are decided on
/// the cache alone. A pass that would start or stop the job on a cached Workload returns
/// [`Step::Confirm`] first: what runs is never decided on a stale copy. A pass that only writes
/// the Workload's conditions writes them pinned to the cached copy's resourceVersion, and a
/// conflict (Kueue wrote since) confirms then: the cache holds our own writes already
/// ([`OwnWrites`](super::own_writes::OwnWrites)), so that is rare, and a read before every such
/// write was most of our reads.
async fn act<J: GenericJob>(
    job: &J,
    ctx: &Context,
    jobs: &JobWriter,
    workloads: &Api<Workload>,
    wl: &Workload,
    current: bool,
) -> Result<Step, Error> {
    let now = time::OffsetDateTime::now_utc();
    let decision = decide(job, wl, &ctx.config, || {
        let connected = || multikueue_nudge::a_worker_connected(&ctx.multikueue_clusters.state());
        multikueue_nudge::dispatch(wl, now, || ctx.workloads.state(), &ctx.multikueue, connected)
    });
    if !current && decision.writes(job, wl) && !decision.only_pinned_workload_writes() {
        return Ok(Step::Confirm);
    }
    let action = match decision {
        Decision::Wait(action) => action,
        Decision::RemoveFinishedFinalizer => {
            // A refused test means the cached copy is not what the API server holds (our own
            // removal not seen yet, or a new Workload under the same name).
            match remove_finalizer(workloads, wl).await {
                Err(e) if !current && e.is_refused_patch_test() => return Ok(Step::Confirm),
                // The next reconcile, before the watch brings the removal, decides on it.
                Ok(Some(written)) => ctx.own_writes.wrote(&written),
                other => drop(other?),
            }
            Action::await_change()
        }
        Decision::StopForDeletion => {
            stop_job(job, ctx, jobs, Some(wl), "Workload is deleted").await?;
            remove_finalizer(workloads, wl).await?;
            Action::await_change()
        }
        Decision::Finish { success, message } => {
            let finished = with_condition(wl, status::finished(success, &message));
            match patch_conditions(workloads, wl, finished, None).await {
                Err(e) if !current && e.is_conflict() => return Ok(Step::Confirm),
                written => ctx.own_writes.wrote(&written?),
            }
            let note = format!("Workload '{}' is declared finished", wl.name_any());
            publish(ctx, job, EventType::Normal, "FinishedWorkload", note);
            Action::await_change()
        }
        Decision::SetPodsReady(wanted) => {
            match patch_conditions(workloads, wl, with_condition(wl, wanted), None).await {
                Err(e) if !current && e.is_conflict() => return Ok(Step::Confirm),
                written => ctx.own_writes.wrote(&written?),
            }
            Action::await_change()
        }
        Decision::StopEvicted { message, release } => {
            stop_job(job, ctx, jobs, Some(wl), &message).await?;
            match release {
                Release::Nothing => Action::await_change(),
                Release::WhenPodsStop => Action::requeue(WAIT),
                Release::Now => {
                    let conditions = status::released_after_eviction(wl.conditions(), &condition::now());
                    ctx.own_writes.wrote(&patch_conditions(workloads, wl, conditions, Some(Value::Null)).await?);
                    info!(workload = %wl.name_any(), "released the quota of an evicted workload");
                    Action::await_change()
                }
            }
        }
        Decision::Start => {
            start_job(job, ctx, jobs, workloads, wl).await?;
            Action::await_change()
        }
        Decision::UpdateQueue(queue) => {
            let queue = json!({"spec": {"queueName": queue}});
            ctx.own_writes.wrote(&merge_patch(workloads, wl, queue, "update queue of").await?);
            Action::await_change()
        }
        Decision::NudgeMultiKueue(nudge) => {
            ctx.own_writes.wrote(&merge_patch(workloads, wl, nudge.patch(), "nudge MultiKueue about").await?);
            info!(workload = %wl.name_any(), nudges = nudge.count, "MultiKueue left a reserved workload on no worker; asked again");
            Action::requeue(multikueue_nudge::STRANDED_AFTER)
        }
        Decision::StopUnadmitted => {
            stop_job(job, ctx, jobs, Some(wl), "Not admitted by cluster queue").await?;
            Action::await_change()
        }
    };
    Ok(Step::Done(action))
}

/// Kueue's `ensureOneWorkload`: adopt the prebuilt Workload, or keep the first matching owned
/// one and remove the rest.
async fn ensure_one_workload<J: GenericJob>(
    job: &J,
    ctx: &Context,
    jobs: &JobWriter,
    workloads: &Api<Workload>,
    prebuilt: Option<&str>,
) -> Result<Option<Found>, Error> {
    if let Some(name) = prebuilt {
        // Once adopted, the cached copy decides, as for a Workload the job created itself: on a
        // MultiKueue worker every job has a prebuilt Workload, and a read of it per reconcile
        // was most of the worker API server's Workload reads.
        let key = ObjectRef::new(name).within(&job.namespace().unwrap_or_default());
        if let Some(cached) = ctx.workloads.get(&key).map(|wl| ctx.own_writes.newest(wl)).filter(|n| {
            let wl = &n.object;
            workload::controller_uid(wl) == job.uid().as_deref() && (workload::equivalent(job, wl) || wl.is_finished())
        }) {
            return Ok(Some(Found { workload: cached.object, current: false, stand_in: cached.stand_in }));
        }
        let Some(mut wl) = workloads.get_opt(name).await.map_err(kube_err("get", "Workload", name))? else {
            return Ok(None);
        };
        // Each write goes on from what the API server answered: the next one is pinned to its
        // resourceVersion, and `act` must see an out-of-sync Workload as finished.
        match workload::controller_uid(&wl) {
            Some(uid) if Some(uid) != job.uid().as_deref() => return Ok(None),
            Some(_) => {}
            None => wl = adopt(job, workloads, &wl).await?,
        }
        if !workload::equivalent(job, &wl) && !wl.is_finished() {
            let out_of_sync =
                Condition::new(FINISHED, true, "OutOfSync", "The prebuilt workload is out of sync with its user job");
            wl = patch_conditions(workloads, &wl, with_condition(&wl, out_of_sync), None).await?;
        }
        return Ok(Some(Found { workload: Arc::new(wl), current: true, stand_in: false }));
    }

    let namespace = job.namespace();
    let owned: Vec<Newest<Workload>> = ctx
        .workloads
        .state()
        .into_iter()
        .filter(|w| w.namespace() == namespace && workload::is_controlled_by(w, job))
        .map(|w| ctx.own_writes.newest(w))
        .collect();
    let stand_in = owned.iter().any(|n| n.stand_in);
    let owned: Vec<Arc<Workload>> = owned.into_iter().map(|n| n.object).collect();
    let (mut matching, mut others): (Vec<_>, Vec<_>) = owned.into_iter().partition(|w| workload::equivalent(job, w));
    if matching.is_empty() && !others.is_empty() {
        if job.is_suspended() && !others[0].is(QUOTA_RESERVED) {
            // A suspended job changed its pod sets: reuse its Workload for the new shape.
            let stale = others.remove(0);
            let updated = update_to_match(job, workloads, &stale).await?;
            matching.push(Arc::new(updated));
        } else if !job.is_suspended() {
            let restore_from = (others.len() == 1).then(|| others[0].as_ref());
            stop_job(job, ctx, jobs, restore_from, "No matching Workload").await?;
        }
    }
    let extra: Vec<_> = matching.iter().skip(1).cloned().chain(others).collect();
    for wl in &extra {
        remove_finalizer(workloads, wl).await?;
        match workloads.delete(&wl.name_any(), &DeleteParams::background()).await {
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            other => {
                other.map_err(kube_err("delete", "Workload", wl.name_any()))?;
            }
        }
        publish(
            ctx,
            job,
            EventType::Normal,
            "DeletedWorkload",
            format!("Deleted not matching Workload: {}", wl.name_any()),
        );
    }
    if !extra.is_empty() && matching.is_empty() {
        return Err(Error::RemovedNonMatching(extra.len()));
    }
    if let Some(cached) = matching.into_iter().next() {
        return Ok(Some(Found { workload: cached, current: false, stand_in }));
    }
    // Not in the cache: our own create if the watch has not brought it yet. Otherwise there is
    // none, as far as anyone can know without a read per new job: the cache listed every
    // Workload before the first reconcile, and a relist keeps what it had until it is done. A
    // create that meets one the watch trails (another replica's, just before it lost its Lease)
    // fails as AlreadyExists, which is all it wanted.
    let name = workload::name_for(job);
    let created = ObjectRef::new(&name).within(&namespace.unwrap_or_default());
    Ok(ctx.own_writes.unseen(&created).filter(|w| workload::is_controlled_by(w, job)).map(|ours| Found {
        workload: ours,
        current: false,
        stand_in: true,
    }))
}

/// The job's Workload as the API server has it now, if it is still the job's and matches it;
/// `cached` is our copy. The read names the copy's resourceVersion, so the API server answers
/// from its watch cache (at least as new as the copy, waiting for it if need be) rather than
/// with a quorum read of etcd: under a burst those reads were a third of our requests (on a
/// MultiKueue manager with 500 jobs, 2,375 of them at 38 ms each). The watch cache trails etcd
/// by the time an event takes to arrive; the writes that change a Workload's conditions are
/// pinned to the resourceVersion read, so one made on a trailing copy is refused as a conflict
/// and the reconcile runs again.
async fn current_workload<J: GenericJob>(
    job: &J,
    workloads: &Api<Workload>,
    cached: &Workload,
) -> Result<Option<Arc<Workload>>, Error> {
    let name = cached.name_any();
    let params = cached.resource_version().map(|version| GetParams::at(&version)).unwrap_or_default();
    let current = match workloads.get_with(&name, &params).await {
        Ok(wl) => Some(wl),
        Err(kube::Error::Api(s)) if s.is_not_found() => None,
        Err(e) => return Err(kube_err("get", "Workload", name)(e)),
    };
    Ok(still_the_jobs(job, current))
}

/// `workload`, if it is still `job`'s and matches its pod sets.
fn still_the_jobs<J: GenericJob>(job: &J, workload: Option<Workload>) -> Option<Arc<Workload>> {
    workload.filter(|w| workload::is_controlled_by(w, job) && workload::equivalent(job, w)).map(Arc::new)
}

async fn adopt<J: GenericJob>(job: &J, workloads: &Api<Workload>, wl: &Workload) -> Result<Workload, Error> {
    let patch = json!({
        "metadata": {
            "resourceVersion": wl.resource_version(),
            "ownerReferences": [workload::owner_reference(job)],
            "labels": {crate::api::kueue::JOB_UID_LABEL: job.uid()},
        }
    });
    merge_patch(workloads, wl, patch, "adopt").await
}

async fn merge_patch(
    workloads: &Api<Workload>,
    wl: &Workload,
    patch: serde_json::Value,
    action: &'static str,
) -> Result<Workload, Error> {
    workloads.patch(&wl.name_any(), &patch_params(), &Patch::Merge(patch)).await.map_err(kube_err(
        action,
        "Workload",
        wl.name_any(),
    ))
}

async fn update_to_match<J: GenericJob>(
    job: &J,
    workloads: &Api<Workload>,
    stale: &Workload,
) -> Result<Workload, Error> {
    let mut updated = stale.clone();
    updated.spec.pod_sets = job.pod_sets();
    updated.spec.queue_name = job.queue_name();
    workloads.replace(&stale.name_any(), &post_params(), &updated).await.map_err(kube_err(
        "update",
        "Workload",
        stale.name_any(),
    ))
}

/// No Workload: create one, unless the job must adopt a prebuilt one (wait for it), still has
/// running pods from an earlier Workload (wait for them to go) or is being deleted (a Workload
/// it owned would be collected with it, after Kueue had perhaps admitted it).
async fn handle_job_with_no_workload<J: GenericJob>(
    job: &J,
    ctx: &Context,
    jobs: &JobWriter,
    workloads: &Api<Workload>,
    prebuilt: Option<&str>,
) -> Result<Action, Error> {
    if let Some(name) = prebuilt {
        stop_job(job, ctx, jobs, None, "missing workload").await?;
        return Err(Error::PrebuiltWorkloadNotFound(name.to_string()));
    }
    if job.finished().is_some() || job.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if job.is_active() {
        return Ok(Action::requeue(WAIT));
    }
    let priority = resolve_priority(job, &ctx.client).await?;
    let wl = workload::construct(job, priority);
    let name = wl.name_any();
    match workloads.create(&post_params(), &wl).await {
        Ok(created) => {
            ctx.own_writes.wrote(&created);
            debug!(workload = %name, "created");
            publish(
                ctx,
                job,
                EventType::Normal,
                "CreatedWorkload",
                format!("Created Workload: {}/{name}", wl.namespace().unwrap_or_default()),
            );
        }
        // Our watch had not seen it yet: it exists, which is all we wanted.
        Err(kube::Error::Api(s)) if s.is_already_exists() => {}
        Err(e) => return Err(kube_err("create", "Workload", name)(e)),
    }
    Ok(Action::await_change())
}

/// Priority from the `kueue.x-k8s.io/priority-class` label (a WorkloadPriorityClass), else
/// from the first pod template's PriorityClass; none means priority 0.
async fn resolve_priority<J: GenericJob>(job: &J, client: &Client) -> Result<Option<(PriorityClassRef, i32)>, Error> {
    let (group, kind, version, plural, name) = if let Some(name) = job.labels().get(PRIORITY_CLASS_LABEL) {
        ("kueue.x-k8s.io", "WorkloadPriorityClass", "v1beta2", "workloadpriorityclasses", name.clone())
    } else if let Some(name) =
        job.pod_sets().first().and_then(|p| p.template.spec.as_ref()?.priority_class_name.clone())
    {
        ("scheduling.k8s.io", "PriorityClass", "v1", "priorityclasses", name)
    } else {
        return Ok(None);
    };
    let resource = kube::api::ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    };
    let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &resource);
    let class = api.get(&name).await.map_err(kube_err("get", "priority class", name.clone()))?;
    let value = class.data["value"].as_i64().unwrap_or_default() as i32;
    Ok(Some((PriorityClassRef { group: group.into(), kind: kind.into(), name }, value)))
}

/// Unsuspends the job with what the admission says about each pod set.
async fn start_job<J: GenericJob>(
    job: &J,
    ctx: &Context,
    jobs: &JobWriter,
    workloads: &Api<Workload>,
    wl: &Workload,
) -> Result<(), Error> {
    let infos = admission_infos(ctx, wl).await?;
    let mut started = job.clone();
    let outcome = infos.and_then(|infos| started.run_with_pod_sets_info(&infos));
    if let Err(err) = outcome {
        // Kueue treats these as permanent: the job can never start with this admission.
        let failed = Condition::new(FINISHED, true, "FailedToStart", err.to_string());
        return patch_conditions(workloads, wl, with_condition(wl, failed), None).await.map(drop);
    }
    if &started != job {
        jobs.replace(&started, "start").await?;
        let queue = wl.admission().map(|a| a.cluster_queue.clone()).unwrap_or_default();
        publish(ctx, job, EventType::Normal, "Started", format!("Admitted by clusterQueue {queue}"));
    }
    Ok(())
}

async fn admission_infos(ctx: &Context, wl: &Workload) -> Result<Result<Vec<PodSetInfo>, PodSetInfoError>, Error> {
    let Some(admission) = wl.admission() else { return Ok(Ok(Vec::new())) };
    let flavor_api: Api<ResourceFlavor> = Api::all(ctx.client.clone());
    let mut flavors = BTreeMap::new();
    for name in admission.pod_set_assignments.iter().flat_map(|a| a.flavors.values()) {
        if flavors.contains_key(name) {
            continue;
        }
        if let Some(cached) = ctx.flavors.get(&ObjectRef::new(name)) {
            flavors.insert(name.clone(), cached.spec.clone());
        } else if let Some(flavor) = flavor_api.get_opt(name).await.map_err(kube_err("get", "ResourceFlavor", name))? {
            flavors.insert(name.clone(), flavor.spec);
        }
    }
    let flavor_refs: BTreeMap<String, Flavor<'_>> = flavors
        .iter()
        .map(|(name, spec)| (name.clone(), Flavor { node_labels: &spec.node_labels, tolerations: &spec.tolerations }))
        .collect();
    let assignments: Vec<Assignment<'_>> = admission
        .pod_set_assignments
        .iter()
        .map(|a| Assignment {
            name: &a.name,
            count: a.count,
            flavors: a.flavors.values().map(String::as_str).collect(),
        })
        .collect();
    let checks = wl.status.as_ref().map(|s| s.admission_checks.as_slice()).unwrap_or_default();
    let updates: Vec<CheckUpdate<'_>> = checks
        .iter()
        .flat_map(|c| &c.pod_set_updates)
        .map(|u| CheckUpdate {
            pod_set: &u.name,
            labels: &u.labels,
            annotations: &u.annotations,
            node_selector: &u.node_selector,
            tolerations: &u.tolerations,
        })
        .collect();
    let pod_sets: Vec<(String, i32)> = wl.spec.pod_sets.iter().map(|p| (p.name.clone(), p.count)).collect();
    let mut infos = podset::infos_from_admission(
        &pod_sets,
        &assignments,
        &flavor_refs,
        &updates,
        &wl.name_any(),
        wl.spec.queue_name.as_deref().unwrap_or_default(),
        &admission.cluster_queue,
    );
    // On a MultiKueue worker Kueue marks the pods of mirrored Workloads.
    if wl.labels().contains_key(MULTIKUEUE_ORIGIN_LABEL)
        && let Ok(infos) = infos.as_mut()
    {
        for info in infos {
            info.labels.insert(MULTIKUEUE_WORKER_POD_LABEL.into(), "true".into());
        }
    }
    Ok(infos)
}

/// Suspends the job and puts back the templates the Workload recorded (if given).
async fn stop_job<J: GenericJob>(
    job: &J,
    ctx: &Context,
    jobs: &JobWriter,
    wl: Option<&Workload>,
    reason: &str,
) -> Result<(), Error> {
    let mut stopped = job.clone();
    if !job.is_suspended() {
        // Suspended first, restored in a second write, as Kueue's batch Job stops: a batch/v1
        // Job takes template changes only once suspended and no longer started (its controller
        // clears `status.startTime` when it sees the suspension). Until then the restore below
        // is refused and retried; the eviction path calls this again on every pass.
        stopped.suspend();
        stopped.meta_mut().resource_version = jobs.replace(&stopped, "stop").await?;
        publish(ctx, job, EventType::Normal, "Stopped", reason.to_string());
    }
    if let Some(wl) = wl
        && stopped.restore_pod_sets_info(&recorded_infos(wl))
    {
        jobs.replace(&stopped, "restore the pod templates of").await?;
    }
    Ok(())
}

fn with_condition(wl: &Workload, new: Condition) -> Vec<Condition> {
    let mut conditions = wl.conditions().to_vec();
    condition::set(&mut conditions, new, &condition::now());
    conditions
}

/// Writes the Workload's conditions (and optionally its admission) to `/status` as a merge
/// patch pinned to the resourceVersion read: a concurrent change by Kueue makes it a conflict
/// to retry rather than a lost update.
async fn patch_conditions(
    workloads: &Api<Workload>,
    wl: &Workload,
    conditions: Vec<Condition>,
    admission: Option<serde_json::Value>,
) -> Result<Workload, Error> {
    let mut status = json!({"conditions": conditions});
    if let Some(admission) = admission {
        status["admission"] = admission;
    }
    let patch = json!({"metadata": {"resourceVersion": wl.resource_version()}, "status": status});
    workloads.patch_status(&wl.name_any(), &patch_params(), &Patch::Merge(patch)).await.map_err(kube_err(
        "update status of",
        "Workload",
        wl.name_any(),
    ))
}

/// Returns the Workload as the API server answered the removal; `None` if there was nothing to
/// remove or the Workload is gone.
async fn remove_finalizer(workloads: &Api<Workload>, wl: &Workload) -> Result<Option<Workload>, Error> {
    let finalizers = wl.metadata.finalizers.as_deref().unwrap_or_default();
    let Some(index) = finalizers.iter().position(|f| f == RESOURCE_IN_USE_FINALIZER) else {
        return Ok(None);
    };
    // A test-and-remove JSON patch: exact even when the object changed since we read it.
    let path = format!("/metadata/finalizers/{index}");
    let same_object = wl.metadata.uid.as_ref().map(|uid| json!({"op": "test", "path": "/metadata/uid", "value": uid}));
    let ops: Vec<Value> = same_object
        .into_iter()
        .chain([
            json!({"op": "test", "path": path, "value": RESOURCE_IN_USE_FINALIZER}),
            json!({"op": "remove", "path": path}),
        ])
        .collect();
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).expect("a well-formed JSON patch");
    match workloads.patch(&wl.name_any(), &patch_params(), &Patch::<()>::Json(patch)).await {
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(None),
        other => other.map(Some).map_err(kube_err("remove finalizer of", "Workload", wl.name_any())),
    }
}

/// Releases Workloads of the kind `resource` whose job is gone (Kueue's
/// `FinalizeOrphanedWorkload`): without the job nothing else would ever remove their finalizer.
pub async fn finalize_orphan(wl: &Workload, client: &Client, resource: &ApiResource) -> Result<Action, Error> {
    let Some(owner) = wl
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == resource.kind && o.api_version == resource.api_version)
    else {
        return Ok(Action::await_change());
    };
    let namespace = wl.namespace().unwrap_or_default();
    let jobs: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, resource);
    let job = jobs.get_metadata_opt(&owner.name).await.map_err(kube_err("get", "job", owner.name.clone()))?;
    let orphaned = job.is_none_or(|j| {
        j.metadata.uid.as_deref() != Some(owner.uid.as_str()) || j.metadata.deletion_timestamp.is_some()
    });
    if !orphaned {
        return Ok(Action::await_change());
    }
    let workloads: Api<Workload> = Api::namespaced(client.clone(), &namespace);
    if !wl.is_finished() && wl.metadata.deletion_timestamp.is_none() {
        let gone = Condition::new(FINISHED, true, "OwnerNotFound", "The workload's owner no longer exists");
        patch_conditions(&workloads, wl, with_condition(wl, gone), None).await?;
    }
    remove_finalizer(&workloads, wl).await?;
    Ok(Action::await_change())
}

/// Queues an event about `job` (written off the reconcile's path; see [`EventSink`]).
pub fn publish<J: GenericJob>(ctx: &Context, job: &J, type_: EventType, reason: &str, note: String) {
    let event = Event { type_, reason: reason.into(), note: Some(note), action: reason.into(), secondary: None };
    ctx.events.publish(event, object_reference(job));
}

#[cfg(test)]
#[path = "reconciler_tests.rs"]
mod tests;
