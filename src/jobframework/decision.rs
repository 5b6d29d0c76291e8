//! What one pass of the reconciler does with a job and its Workload, decided on what was read
//! and nothing else (Kueue's `ReconcileGenericJob` from the Workload's finish on): the
//! reconciler then carries the decision out. Pure, so every contract transition is a unit test.

use std::time::Duration;

use kube::runtime::controller::Action;

use super::generic_job::GenericJob;
use super::multikueue_nudge::{Dispatch, Nudge};
use super::podset::{self, PodSetInfo};
use super::reconcile_context::Config;
use super::status;
use crate::api::condition::{self, Condition};
use crate::api::kueue::{
    EVICTED, MULTIKUEUE_CONTROLLER, PODS_READY, QUOTA_RESERVED, RESOURCE_IN_USE_FINALIZER, Workload,
};

/// Requeue while waiting on something no watch tells us about (pods going away, prebuilt Workloads).
pub const WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Nothing to write; come back as the action says.
    Wait(Action),
    /// The Workload finished: only its finalizer is left to remove.
    RemoveFinishedFinalizer,
    /// The Workload is being deleted: stop the job, then let the Workload go.
    StopForDeletion,
    /// The job ended: declare the Workload finished.
    Finish { success: bool, message: String },
    /// The PodsReady condition changes.
    SetPodsReady(Condition),
    /// Kueue evicted the Workload: stop the job (putting its templates back), then give the
    /// quota back if the Workload still holds it.
    StopEvicted { message: String, release: Release },
    /// The Workload is admitted: start the job with what the admission injects.
    Start,
    /// The job moved to another queue before it reserved quota.
    UpdateQueue(Option<String>),
    /// MultiKueue left the Workload on no worker: ask it again.
    NudgeMultiKueue(Nudge),
    /// The job runs without an admitted Workload.
    StopUnadmitted,
}

/// What becomes of an evicted Workload's quota.
#[derive(Debug, PartialEq)]
pub enum Release {
    /// It holds none.
    Nothing,
    /// Pods of the job still run here: keep it until they are gone.
    WhenPodsStop,
    Now,
}

/// `dispatch` answers where MultiKueue stands with a Workload; asked only for a suspended job
/// that MultiKueue runs.
pub fn decide<J: GenericJob>(job: &J, wl: &Workload, config: &Config, dispatch: impl FnOnce() -> Dispatch) -> Decision {
    if wl.is_finished() {
        return match has_finalizer(wl) {
            true => Decision::RemoveFinishedFinalizer,
            false => Decision::Wait(Action::await_change()),
        };
    }
    if wl.metadata.deletion_timestamp.is_some() {
        return Decision::StopForDeletion;
    }
    if let Some(end) = job.finished() {
        return Decision::Finish { success: end.success, message: end.message };
    }
    if config.wait_for_pods_ready {
        let previous = condition::find(wl.conditions(), PODS_READY);
        let wanted = status::pods_ready(previous, wl.is_admitted(), job.pods_ready());
        if previous.is_none_or(|p| p.status != wanted.status || p.reason != wanted.reason) {
            return Decision::SetPodsReady(wanted);
        }
    }
    if wl.is(EVICTED) {
        let message = condition::find(wl.conditions(), EVICTED).map(|c| c.message.clone()).unwrap_or_default();
        // On a MultiKueue manager no pod of the job runs here: the activity it shows is the
        // worker's, copied before the eviction (a lost worker never reports its end), and
        // MultiKueue removes that copy itself. Kueue's core never releases an evicted
        // Workload's quota: the job side does, once no pod of it runs any more.
        let release = match wl.is(QUOTA_RESERVED) {
            false => Release::Nothing,
            true if job.is_active() && job.managed_by() != Some(MULTIKUEUE_CONTROLLER) => Release::WhenPodsStop,
            true => Release::Now,
        };
        return Decision::StopEvicted { message, release };
    }
    if job.is_suspended() {
        if wl.is_admitted() {
            return Decision::Start;
        }
        if job.queue_name() != wl.spec.queue_name && !wl.is(QUOTA_RESERVED) {
            return Decision::UpdateQueue(job.queue_name());
        }
        if job.managed_by() == Some(MULTIKUEUE_CONTROLLER) {
            return match dispatch() {
                Dispatch::Moving => Decision::Wait(Action::await_change()),
                Dispatch::Waiting(left) => Decision::Wait(Action::requeue(left)),
                Dispatch::Stranded(nudge) => Decision::NudgeMultiKueue(nudge),
            };
        }
        return Decision::Wait(Action::await_change());
    }
    if !wl.is_admitted() {
        return Decision::StopUnadmitted;
    }
    Decision::Wait(Action::await_change())
}

impl Decision {
    /// Whether carrying it out writes to the API server, and so must be decided on the
    /// Workload as the API server has it now rather than on the cache. A finished Workload's
    /// finalizer is removed on the cache alone: the removal tests the uid and the finalizer.
    /// Whether its only write is to the Workload's conditions, pinned to the resourceVersion it
    /// was decided on: a stale copy is refused as a conflict, and nothing else was written.
    pub fn only_pinned_workload_writes(&self) -> bool {
        matches!(self, Decision::Finish { .. } | Decision::SetPodsReady(_))
    }

    pub fn writes<J: GenericJob>(&self, job: &J, wl: &Workload) -> bool {
        match self {
            Decision::Wait(_) | Decision::RemoveFinishedFinalizer => false,
            // An evicted job already stopped, waiting to be admitted again, writes nothing.
            Decision::StopEvicted { release, .. } => *release == Release::Now || stopping_writes(job, wl),
            _ => true,
        }
    }
}

/// Whether stopping `job` against `wl` writes anything: it runs, or its templates still carry
/// the admission's changes.
pub fn stopping_writes<J: GenericJob>(job: &J, wl: &Workload) -> bool {
    !job.is_suspended() || job.clone().restore_pod_sets_info(&recorded_infos(wl))
}

/// The pod sets as the Workload recorded them before admission.
pub fn recorded_infos(wl: &Workload) -> Vec<PodSetInfo> {
    let templates: Vec<_> = wl.spec.pod_sets.iter().map(|p| (p.name.clone(), p.count, p.template.clone())).collect();
    podset::infos_from_templates(&templates)
}

pub fn has_finalizer(wl: &Workload) -> bool {
    wl.metadata.finalizers.as_deref().unwrap_or_default().iter().any(|f| f == RESOURCE_IN_USE_FINALIZER)
}

#[cfg(test)]
#[path = "decision_tests.rs"]
mod tests;
