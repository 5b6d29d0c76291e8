use std::time::Duration;

use super::*;
use crate::api::external_job::{ExternalJob, ExternalJobStatus, PodSetStatus};
use crate::api::kueue::FINISHED;
use crate::jobframework::fixtures::{suspended_job, workload};
use crate::jobframework::multikueue_nudge::Nudge;

fn with(mut wl: Workload, kind: &str, status: bool, reason: &str) -> Workload {
    let mut conditions = wl.conditions().to_vec();
    condition::set(&mut conditions, Condition::new(kind, status, reason, "why"), &condition::now());
    wl.status.get_or_insert_default().conditions = conditions;
    wl
}

fn running(mut job: ExternalJob, active: i32) -> ExternalJob {
    job.spec.suspend = Some(false);
    let pods = PodSetStatus { name: "workers".into(), active, ..Default::default() };
    job.status = Some(ExternalJobStatus { pod_sets: vec![pods], ..Default::default() });
    job
}

/// Decides without MultiKueue's answer: only a job MultiKueue runs may ask for it.
fn decided(job: &ExternalJob, wl: &Workload) -> Decision {
    decide(job, wl, &Config::default(), || panic!("MultiKueue asked about a job it does not run"))
}

#[test]
fn a_finished_workload_only_loses_its_finalizer() {
    let job = running(suspended_job(), 1);
    let mut wl = with(workload(&job, true), FINISHED, true, "Succeeded");
    wl.metadata.finalizers = Some(vec![RESOURCE_IN_USE_FINALIZER.into()]);
    assert_eq!(decided(&job, &wl), Decision::RemoveFinishedFinalizer);
    assert!(!decided(&job, &wl).writes(&job, &wl), "decided on the cache: the removal tests uid and finalizer");
    wl.metadata.finalizers = None;
    let not_waiting = Config { wait_for_pods_ready: false, ..Config::default() };
    assert_eq!(decide(&job, &wl, &not_waiting, || Dispatch::Moving), Decision::Wait(Action::await_change()));
}

#[test]
fn a_deleted_workload_stops_its_job_first() {
    let job = running(suspended_job(), 1);
    let mut wl = workload(&job, true);
    wl.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
    assert_eq!(decided(&job, &wl), Decision::StopForDeletion);
}

#[test]
fn an_ended_job_finishes_its_workload() {
    let mut job = running(suspended_job(), 0);
    job.status.get_or_insert_default().conditions =
        vec![Condition::new(crate::integrations::external_job::COMPLETE, true, "Done", "all pods succeeded")];
    let decision = decided(&job, &workload(&job, true));
    assert!(matches!(decision, Decision::Finish { success: true, .. }), "{decision:?}");
}

#[test]
fn eviction_stops_the_job_and_gives_the_quota_back_once_no_pod_runs_here() {
    let wl = with(workload(&suspended_job(), true), EVICTED, true, "Preempted");
    let stop = |release| Decision::StopEvicted { message: "why".into(), release };
    let busy = running(suspended_job(), 3);
    assert_eq!(decided(&busy, &wl), stop(Release::WhenPodsStop));
    let idle = running(suspended_job(), 0);
    assert_eq!(decided(&idle, &wl), stop(Release::Now));
    // The pods a MultiKueue manager shows are the worker's, copied: they do not run here.
    let mut copied = busy.clone();
    copied.spec.managed_by = Some(MULTIKUEUE_CONTROLLER.into());
    assert_eq!(decided(&copied, &wl), stop(Release::Now));
}

#[test]
fn an_evicted_job_already_stopped_waits_without_a_write() {
    let job = suspended_job();
    let wl = with(with(workload(&job, false), EVICTED, true, "Preempted"), QUOTA_RESERVED, false, "Pending");
    let decision = decided(&job, &wl);
    assert_eq!(decision, Decision::StopEvicted { message: "why".into(), release: Release::Nothing });
    assert!(!decision.writes(&job, &wl));
    let mut still_running = job.clone();
    still_running.spec.suspend = Some(false);
    assert!(decided(&still_running, &wl).writes(&still_running, &wl), "stopping it writes");
}

#[test]
fn a_suspended_job_starts_once_admitted_and_follows_its_queue_until_then() {
    let job = suspended_job();
    assert_eq!(decided(&job, &workload(&job, true)), Decision::Start);
    let mut moved = job.clone();
    moved
        .metadata
        .labels
        .get_or_insert_default()
        .insert(crate::api::kueue::QUEUE_NAME_LABEL.into(), "other-queue".into());
    assert_eq!(decided(&moved, &workload(&job, false)), Decision::UpdateQueue(Some("other-queue".into())));
    assert_eq!(decided(&job, &workload(&job, false)), Decision::Wait(Action::await_change()));
}

#[test]
fn a_job_multikueue_runs_waits_for_it_or_nudges_it() {
    let mut job = suspended_job();
    job.spec.managed_by = Some(MULTIKUEUE_CONTROLLER.into());
    let wl = workload(&job, false);
    let config = Config::default();
    let asked = |answer: Dispatch| decide(&job, &wl, &config, || answer);
    assert_eq!(asked(Dispatch::Moving), Decision::Wait(Action::await_change()));
    let left = Duration::from_secs(7);
    assert_eq!(asked(Dispatch::Waiting(left)), Decision::Wait(Action::requeue(left)));
    let nudge = Nudge { at: "2026-11-25T00:00:00Z".into(), count: 2 };
    assert_eq!(
        asked(Dispatch::Stranded(nudge)),
        Decision::NudgeMultiKueue(Nudge { at: "2026-11-25T00:00:00Z".into(), count: 2 })
    );
}

#[test]
fn a_job_running_without_admission_is_stopped() {
    let job = running(suspended_job(), 1);
    assert_eq!(decided(&job, &workload(&job, false)), Decision::StopUnadmitted);
    assert_eq!(decided(&job, &workload(&job, true)), Decision::Wait(Action::await_change()));
}

#[test]
fn pods_ready_changes_are_written_only_when_waiting_for_them() {
    let job = running(suspended_job(), 1);
    let mut wl = workload(&job, true);
    wl.status.as_mut().unwrap().conditions.retain(|c| c.type_ != PODS_READY);
    let waiting = Config { wait_for_pods_ready: true, ..Config::default() };
    let decision = decide(&job, &wl, &waiting, || Dispatch::Moving);
    assert!(matches!(&decision, Decision::SetPodsReady(c) if c.type_ == PODS_READY), "{decision:?}");
    let not_waiting = Config { wait_for_pods_ready: false, ..Config::default() };
    assert_eq!(decide(&job, &wl, &not_waiting, || Dispatch::Moving), Decision::Wait(Action::await_change()));
}
