use super::*;
use crate::api::wrapped_job::{ComponentFailure, ComponentPodSet, WrappedJobSpec};

/// A job wrapping a batch Job of 2 pods and a Deployment of 1, and a clock in seconds.
struct Scenario {
    job: WrappedJob,
    settings: Settings,
    start: OffsetDateTime,
}

fn shape() -> Vec<ComponentStatus> {
    let pod_set = |replicas| ComponentPodSet {
        path: "template.spec.template".into(),
        replicas: Some(replicas),
        ..Default::default()
    };
    vec![
        ComponentStatus {
            name: "work".into(),
            kind: "Job".into(),
            api_version: "batch/v1".into(),
            pod_sets: vec![pod_set(2)],
            ..Default::default()
        },
        ComponentStatus {
            name: "server".into(),
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            pod_sets: vec![pod_set(1)],
            ..Default::default()
        },
    ]
}

fn present(completion: Completion, outcome: ComponentOutcome) -> ObservedComponent {
    ObservedComponent::Present { name: "x".into(), deleting: false, completion, outcome, watched: true }
}

fn running_job() -> ObservedComponent {
    present(Completion::RunsToCompletion, ComponentOutcome::Running)
}

fn deployment() -> ObservedComponent {
    present(Completion::RunsUntilDeleted, ComponentOutcome::Running)
}

fn observed(components: Vec<ObservedComponent>, pods: ComponentPods) -> Observed {
    Observed { components, pods }
}

fn nothing() -> Observed {
    observed(vec![ObservedComponent::Missing, ObservedComponent::Missing], ComponentPods::default())
}

fn pods(pending: i32, running: i32, succeeded: i32, failed: i32) -> ComponentPods {
    ComponentPods { pending, running, succeeded, failed, ..Default::default() }
}

impl Scenario {
    fn new(settings: Settings) -> Self {
        let mut job =
            WrappedJob::new("wj", WrappedJobSpec { suspend: Some(true), managed_by: None, components: vec![] });
        job.metadata.namespace = Some("default".into());
        Scenario { job, settings, start: OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap() }
    }

    /// Runs one step at `second` and applies its status and finalizer changes to the job.
    fn at(&mut self, second: i64, seen: &Observed) -> Step {
        let now = self.start + time::Duration::seconds(second);
        let step = step(&self.job, &shape(), seen, &self.settings, now);
        self.apply(&step);
        step
    }

    fn apply(&mut self, step: &Step) {
        self.job.status = Some(step.status.clone());
        let finalizers = self.job.metadata.finalizers.get_or_insert_default();
        for act in &step.actions {
            match act {
                Act::AddFinalizer => finalizers.push(WRAPPED_JOB_FINALIZER.into()),
                Act::RemoveFinalizer => finalizers.retain(|f| f != WRAPPED_JOB_FINALIZER),
                _ => {}
            }
        }
    }

    fn phase(&self) -> Phase {
        self.job.phase()
    }

    fn condition(&self, type_: &str) -> (String, String) {
        let c = condition::find(self.job.conditions(), type_).unwrap_or_else(|| panic!("no {type_} condition"));
        (c.status.clone(), c.reason.clone())
    }

    /// Admits the job and brings it to Running with both components created.
    fn running(&mut self) {
        self.at(0, &nothing());
        self.job.spec.suspend = Some(false);
        self.at(0, &nothing());
        self.at(0, &nothing());
        self.at(1, &observed(vec![running_job(), deployment()], pods(3, 0, 0, 0)));
        assert_eq!(self.phase(), Phase::Running);
    }
}

fn fast() -> Settings {
    Settings {
        admission_grace: Duration::from_secs(10),
        warmup_grace: Duration::from_secs(20),
        failure_grace: Duration::from_secs(5),
        retry_pause: Duration::from_secs(8),
        retry_limit: 1,
        forceful_deletion_grace: Duration::from_secs(30),
        ..Settings::default()
    }
}

#[test]
fn admission_creates_every_component_after_recording_it() {
    let mut s = Scenario::new(fast());
    assert_eq!(s.at(0, &nothing()).status.phase, Phase::Suspended);
    assert_eq!(s.at(1, &nothing()).actions, [], "a suspended job creates nothing");

    s.job.spec.suspend = Some(false);
    let resume = s.at(2, &nothing());
    assert_eq!(resume.actions, [Act::AddFinalizer], "the finalizer comes before anything exists");
    assert_eq!(s.phase(), Phase::Resuming);
    assert_eq!(s.condition(QUOTA_RESERVED), ("True".into(), "Resuming".into()));

    let create = s.at(2, &nothing());
    assert_eq!(create.actions, [Act::Create(0), Act::Create(1)]);
    for component in &create.status.component_status {
        assert_eq!(component.conditions[0].status, "Unknown", "write-ahead before the create");
    }
    s.at(3, &observed(vec![running_job(), deployment()], pods(3, 0, 0, 0)));
    assert_eq!(s.phase(), Phase::Running);
    assert!(s.job.status.as_ref().unwrap().component_status.iter().all(|c| c.conditions[0].status == "True"));
}

#[test]
fn a_running_component_no_watch_reports_on_is_looked_at_again() {
    let mut s = Scenario::new(fast());
    s.running();
    let ready = s.at(4, &observed(vec![running_job(), deployment()], pods(0, 3, 0, 0)));
    assert_eq!(ready.requeue, None, "watched components: their changes trigger the next look");

    let listed = ObservedComponent::Present {
        name: "x".into(),
        deleting: false,
        completion: Completion::RunsToCompletion,
        outcome: ComponentOutcome::Running,
        watched: false,
    };
    let step = s.at(5, &observed(vec![listed, deployment()], pods(0, 3, 0, 0)));
    assert_eq!(step.requeue, Some(Duration::from_secs(15)), "a JobSet's Completed condition triggers nothing");
}

#[test]
fn a_finished_job_stops_its_services_and_succeeds_once_no_pod_runs() {
    let mut s = Scenario::new(fast());
    s.running();
    let ready = s.at(4, &observed(vec![running_job(), deployment()], pods(0, 3, 0, 0)));
    assert_eq!(s.condition(PODS_READY).0, "True");
    assert_eq!(ready.actions, []);

    let job_done = present(Completion::RunsToCompletion, ComponentOutcome::Succeeded);
    let stop = s.at(6, &observed(vec![job_done.clone(), deployment()], pods(0, 1, 2, 0)));
    assert_eq!(stop.actions, [Act::Delete { components: vec![1], forceful: false }]);
    assert_eq!(s.phase(), Phase::Running, "not finished while the Deployment's pod runs");

    s.at(
        7,
        &observed(
            vec![job_done.clone(), ObservedComponent::Missing],
            ComponentPods { terminating: 1, succeeded: 2, ..Default::default() },
        ),
    );
    assert_eq!(s.phase(), Phase::Running);
    s.at(8, &observed(vec![job_done, ObservedComponent::Missing], pods(0, 0, 2, 0)));
    assert_eq!(s.phase(), Phase::Succeeded);
    assert_eq!(s.condition(QUOTA_RESERVED).0, "False");
    assert_eq!(s.condition(RESOURCES_DEPLOYED).0, "True", "finished components stay until the TTL");
}

#[test]
fn failed_pods_reset_after_the_grace_keeping_quota_then_fail_at_the_limit() {
    let mut s = Scenario::new(fast());
    s.running();
    let exits = vec![FailedExit { pod: "work-1".into(), container: "main".into(), code: 1 }];
    let failing = observed(
        vec![running_job(), deployment()],
        ComponentPods { running: 2, failed: 1, exits, ..Default::default() },
    );
    let first = s.at(10, &failing);
    assert_eq!(s.condition(UNHEALTHY), ("True".into(), "FoundFailedPods".into()));
    assert_eq!(s.phase(), Phase::Running, "within the failure grace");
    assert!(first.requeue.is_some_and(|r| r <= Duration::from_secs(6)));

    s.at(15, &failing);
    assert_eq!((s.phase(), s.job.status.as_ref().unwrap().retries), (Phase::Resetting, 1));

    let reset = s.at(16, &failing);
    assert_eq!(reset.actions, [Act::Delete { components: vec![0, 1], forceful: false }]);
    assert_eq!(s.condition(QUOTA_RESERVED).0, "True", "a reset keeps the quota");
    assert_eq!(s.condition(DELETING_RESOURCES).0, "True");

    s.at(17, &nothing());
    assert_eq!(s.phase(), Phase::Resetting, "the retry pause runs from the failure (t=10) to t=18");
    assert_eq!(s.condition(RESOURCES_DEPLOYED).0, "False");
    s.at(18, &nothing());
    assert_eq!(s.phase(), Phase::Resuming);
    assert_eq!(s.condition(UNHEALTHY).0, "False");
    assert_eq!(s.at(18, &nothing()).actions, [Act::Create(0), Act::Create(1)]);

    s.at(19, &observed(vec![running_job(), deployment()], pods(3, 0, 0, 0)));
    s.at(20, &failing);
    s.at(26, &failing);
    assert_eq!(s.phase(), Phase::Failed, "the retry limit (1) is used up");
    assert_eq!(s.condition(QUOTA_RESERVED).0, "True", "quota is held until the pods are gone");

    let cleanup = s.at(27, &failing);
    assert_eq!(cleanup.actions, [Act::Delete { components: vec![0, 1], forceful: false }]);
    s.at(28, &nothing());
    assert_eq!(s.condition(QUOTA_RESERVED).0, "False");
    assert_eq!(s.condition(RESOURCES_DEPLOYED).0, "False");
}

#[test]
fn a_terminal_exit_code_fails_without_retry() {
    let mut settings = fast();
    settings.terminal_exit_codes = vec![42];
    let mut s = Scenario::new(settings);
    s.running();
    let exits = vec![FailedExit { pod: "work-0".into(), container: "main".into(), code: 42 }];
    s.at(5, &observed(vec![running_job(), deployment()], ComponentPods { failed: 1, exits, ..Default::default() }));
    assert_eq!((s.phase(), s.job.status.as_ref().unwrap().retries), (Phase::Failed, 0));
    assert!(failure_message(&s.job).unwrap().contains("exited with code 42"));
}

#[test]
fn a_component_deleted_by_hand_fails_the_job() {
    let mut s = Scenario::new(fast());
    s.running();
    s.at(5, &observed(vec![running_job(), ObservedComponent::Missing], pods(0, 2, 0, 0)));
    assert_eq!(s.phase(), Phase::Failed);
    assert_eq!(s.condition(UNHEALTHY).1, "MissingComponent");
}

#[test]
fn a_failed_component_resets_and_its_reason_is_shown() {
    let mut s = Scenario::new(fast());
    s.running();
    let failure = ComponentFailure {
        reason: "BackoffLimitExceeded".into(),
        message: "Job has reached the specified backoff limit".into(),
    };
    s.at(
        5,
        &observed(
            vec![present(Completion::RunsToCompletion, ComponentOutcome::Failed(failure.clone())), deployment()],
            pods(0, 1, 0, 2),
        ),
    );
    assert_eq!(s.phase(), Phase::Resetting, "no grace for a component that reports failure");
    assert_eq!(s.job.status.as_ref().unwrap().component_status[0].failure, Some(failure));
}

#[test]
fn eviction_deletes_everything_before_the_quota_goes() {
    let mut s = Scenario::new(fast());
    s.running();
    s.job.spec.suspend = Some(true);
    s.at(5, &observed(vec![running_job(), deployment()], pods(0, 3, 0, 0)));
    assert_eq!(s.phase(), Phase::Suspending);
    let delete = s.at(5, &observed(vec![running_job(), deployment()], pods(0, 3, 0, 0)));
    assert_eq!(delete.actions, [Act::Delete { components: vec![0, 1], forceful: false }]);
    s.at(
        6,
        &observed(
            vec![ObservedComponent::Missing, ObservedComponent::Missing],
            ComponentPods { terminating: 3, ..Default::default() },
        ),
    );
    assert_eq!(s.condition(QUOTA_RESERVED).0, "True", "pods still terminate");
    s.at(7, &nothing());
    assert_eq!(s.phase(), Phase::Suspended);
    assert_eq!(s.condition(QUOTA_RESERVED).0, "False");

    s.job.spec.suspend = Some(false);
    s.at(8, &nothing());
    assert_eq!(s.phase(), Phase::Resuming, "admitted again, it starts over");
}

#[test]
fn what_does_not_go_away_is_deleted_forcefully_after_the_grace() {
    let mut s = Scenario::new(fast());
    s.running();
    s.job.spec.suspend = Some(true);
    s.at(5, &nothing());
    let stuck = observed(
        vec![
            ObservedComponent::Present {
                name: "x".into(),
                deleting: true,
                completion: Completion::RunsToCompletion,
                outcome: ComponentOutcome::Running,
                watched: true,
            },
            ObservedComponent::Missing,
        ],
        ComponentPods { terminating: 2, ..Default::default() },
    );
    assert_eq!(s.at(6, &stuck).actions, [], "already being deleted: wait");
    let forced = s.at(36, &stuck);
    assert_eq!(forced.actions, [Act::Delete { components: vec![0], forceful: true }, Act::DeletePods]);
}

#[test]
fn pods_not_ready_yet_after_the_resume_cost_no_status_write() {
    let mut s = Scenario::new(fast());
    s.running();
    let before = s.job.status.clone();
    let waiting = s.at(2, &observed(vec![running_job(), deployment()], pods(3, 0, 0, 0)));
    assert_eq!(Some(&waiting.status), before.as_ref(), "the resume's \"no pod is ready yet\" still holds");
    assert_eq!(s.condition(PODS_READY), ("False".into(), "Resuming".into()));
    s.at(3, &observed(vec![running_job(), deployment()], pods(2, 1, 0, 0)));
    assert_eq!(s.condition(PODS_READY), ("False".into(), "InsufficientPodsReady".into()), "one ready: counted");
    s.at(4, &observed(vec![running_job(), deployment()], pods(3, 0, 0, 0)));
    let c = condition::find(s.job.conditions(), PODS_READY).unwrap();
    assert_eq!((c.reason.as_str(), c.message.as_str()), ("InsufficientPodsReady", "0 of 3 pod(s) ready or done"));
}

#[test]
fn too_few_ready_pods_reset_after_the_admission_grace() {
    let mut s = Scenario::new(fast());
    s.running();
    s.at(5, &observed(vec![running_job(), deployment()], pods(0, 1, 0, 0)));
    assert_eq!(s.condition(PODS_READY), ("False".into(), "InsufficientPodsReady".into()));
    s.at(11, &observed(vec![running_job(), deployment()], pods(0, 1, 0, 0)));
    assert_eq!(s.phase(), Phase::Resetting);
    assert_eq!(s.condition(UNHEALTHY).1, "InsufficientPodsReady");
}

#[test]
fn pending_pods_get_the_warmup_grace() {
    let mut s = Scenario::new(fast());
    s.running();
    s.at(15, &observed(vec![running_job(), deployment()], pods(2, 1, 0, 0)));
    assert_eq!(s.phase(), Phase::Running, "all pods exist: 20s of warm-up, not 10s");
    s.at(21, &observed(vec![running_job(), deployment()], pods(2, 1, 0, 0)));
    assert_eq!(s.phase(), Phase::Resetting);
}

#[test]
fn create_failures_are_retried_or_fatal() {
    let mut s = Scenario::new(fast());
    s.at(0, &nothing());
    s.job.spec.suspend = Some(false);
    s.at(0, &nothing());
    s.at(0, &nothing());
    assert_eq!(create_error(&s.job, 1), None);
    let transient = create_failed(&s.job, 1, false, "connection refused", s.start);
    assert_eq!((transient.status.phase, transient.requeue), (Phase::Resuming, Some(CREATE_RETRY)));
    s.apply(&transient);
    assert_eq!(create_error(&s.job, 1), Some("connection refused"), "a retry refused alike is already told");
    let retry = s.at(1, &observed(vec![running_job(), ObservedComponent::Missing], ComponentPods::default()));
    assert_eq!(retry.actions, [Act::Create(1)]);
    assert_eq!(
        retry.status.component_status[1].conditions[0].reason, "ComponentCreationErrored",
        "the error stays visible"
    );

    let fatal = create_failed(&s.job, 1, true, "the server could not find the requested resource", s.start);
    assert_eq!(fatal.status.phase, Phase::Failed);
    s.apply(&fatal);
    assert_eq!(s.condition(UNHEALTHY).1, "CreateFailed");
}

#[test]
fn components_never_created_reset_after_the_admission_grace() {
    let mut s = Scenario::new(fast());
    s.at(0, &nothing());
    s.job.spec.suspend = Some(false);
    s.at(0, &nothing());
    s.at(5, &nothing());
    assert_eq!(s.phase(), Phase::Resuming);
    s.at(10, &nothing());
    assert_eq!((s.phase(), s.condition(UNHEALTHY).1), (Phase::Resetting, "CreateFailed".into()));
}

#[test]
fn after_a_reset_whose_deletion_outlasted_the_pause_the_graces_count_from_the_resume() {
    let mut s = Scenario::new(fast());
    s.running();
    let no_pods = observed(vec![running_job(), deployment()], pods(0, 0, 0, 0));
    s.at(11, &no_pods);
    assert_eq!((s.phase(), s.condition(UNHEALTHY).1), (Phase::Resetting, "InsufficientPodsReady".into()));
    s.at(12, &no_pods);
    // The pause (8s from t=11) runs out while the components are still going away.
    s.at(25, &nothing());
    assert_eq!(s.phase(), Phase::Resuming);
    let deployed = condition::find(s.job.conditions(), RESOURCES_DEPLOYED).unwrap();
    let resumed = s.start + time::Duration::seconds(25);
    assert_eq!(deployed.last_transition_time.as_deref(), Some(condition::timestamp(resumed).as_str()));
    s.at(25, &nothing());
    s.at(26, &no_pods);
    s.at(30, &no_pods);
    assert_eq!(s.phase(), Phase::Running, "the admission grace (10s) counts from the resume at t=25, not from t=0");
    s.at(35, &no_pods);
    assert_eq!((s.phase(), s.job.status.as_ref().unwrap().retries), (Phase::Failed, 1));
}

#[test]
fn deletion_removes_the_finalizer_only_when_nothing_is_left() {
    let mut s = Scenario::new(fast());
    s.running();
    s.job.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
    let first = s.at(5, &observed(vec![running_job(), deployment()], pods(0, 3, 0, 0)));
    assert_eq!(s.phase(), Phase::Terminating);
    assert!(!first.actions.contains(&Act::RemoveFinalizer));
    let last = s.at(6, &nothing());
    assert_eq!(last.actions, [Act::RemoveFinalizer]);
    assert!(s.job.metadata.finalizers.as_ref().unwrap().is_empty());
}

#[test]
fn a_restart_mid_run_repeats_nothing() {
    // The same observation twice gives the same status and no new action: what a controller
    // restarted at any point sees.
    let mut s = Scenario::new(fast());
    s.running();
    let seen = observed(vec![running_job(), deployment()], pods(0, 3, 0, 0));
    s.at(4, &seen);
    let again = s.at(4, &seen);
    assert_eq!(again.actions, []);
    assert_eq!(Some(&again.status), s.job.status.as_ref());
}
