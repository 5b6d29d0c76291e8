//! The life of a WrappedJob as a pure function: from the job, what exists of it in the cluster
//! and the clock, the next status and what to do. AppWrapper's state machine, with every timer
//! measured from a condition's transition time so that a restart resumes where it stopped.
//!
//! ```text
//! Empty → Suspended → Resuming → Running → Succeeded
//!             ↑           │  ↑       │ ╲
//!             └ Suspending ←─┼───────┤  Failed
//!                            └ Resetting (quota kept)
//! ```

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub use super::observed::{
    Completion, ComponentOutcome, ComponentPods, FailedExit, Observed, ObservedComponent, completion_of,
};
use super::settings::Settings;
use crate::api::condition::{self, Condition};
use crate::api::wrapped_job::{
    ComponentStatus, DELETING_RESOURCES, PODS_READY, Phase, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY,
    WRAPPED_JOB_FINALIZER, WrappedJob, WrappedJobStatus,
};

/// Something to do in the cluster, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Act {
    AddFinalizer,
    RemoveFinalizer,
    /// Create `spec.components[i]` (its status was recorded first).
    Create(usize),
    /// Delete these components; `forceful` means without grace.
    Delete {
        components: Vec<usize>,
        forceful: bool,
    },
    /// Delete every pod of the job without grace.
    DeletePods,
}

/// An event for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub reason: &'static str,
    pub message: String,
    pub warning: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The status to write first (write-ahead: before any create).
    pub status: WrappedJobStatus,
    pub actions: Vec<Act>,
    /// When to look again if nothing is watched to change before then.
    pub requeue: Option<Duration>,
    pub notes: Vec<Note>,
}

/// How soon a component whose creation failed for a transient reason is tried again.
pub const CREATE_RETRY: Duration = Duration::from_secs(1);
/// Look again this often at components whose end no watch reports: kinds we do not know (judged
/// by their pods) and kinds outside the controller's caches.
const UNWATCHED: Duration = Duration::from_secs(15);

/// The next step of `job`. `shape` is its components' identity and pod sets as the webhook
/// validated them (the initial `componentStatus`).
pub fn step(
    job: &WrappedJob,
    shape: &[ComponentStatus],
    observed: &Observed,
    settings: &Settings,
    now: OffsetDateTime,
) -> Step {
    let mut machine = Machine::new(job, settings, now);
    if machine.status.component_status.len() != shape.len() {
        machine.status.component_status = shape.to_vec();
    }
    machine.record_components(observed);
    if job.metadata.deletion_timestamp.is_some() {
        machine.terminating(job, observed);
    } else {
        match machine.status.phase {
            Phase::Empty => machine.enter(Phase::Suspended),
            Phase::Suspended => machine.suspended(job),
            Phase::Resuming => machine.resuming(job, observed),
            Phase::Running => machine.running(job, observed),
            Phase::Resetting => machine.resetting(job, observed),
            Phase::Suspending | Phase::Terminating => machine.suspending(observed),
            Phase::Failed => machine.failed(job, observed),
            Phase::Succeeded => machine.succeeded(observed),
        }
    }
    machine.into_step()
}

/// A create that failed: `fatal` when retrying cannot help (the kind is not served, the
/// object is invalid, or another owner holds its name).
pub fn create_failed(job: &WrappedJob, index: usize, fatal: bool, message: &str, now: OffsetDateTime) -> Step {
    let settings = Settings::default();
    let mut machine = Machine::new(job, &settings, now);
    if let Some(component) = machine.status.component_status.get_mut(index) {
        let reason = if fatal { "ComponentCreationFailed" } else { "ComponentCreationErrored" };
        condition::set(
            &mut component.conditions,
            Condition::new(RESOURCES_DEPLOYED, false, reason, message),
            &machine.now_text,
        );
    }
    if fatal {
        machine.unhealthy("CreateFailed", format!("component {index}: {message}"));
        machine.fail();
    } else {
        machine.requeue(CREATE_RETRY);
    }
    machine.into_step()
}

/// Why component `index` could not be created last time, as its status says.
pub fn create_error(job: &WrappedJob, index: usize) -> Option<&str> {
    let component = job.status.as_ref()?.component_status.get(index)?;
    let deployed = condition::find(&component.conditions, RESOURCES_DEPLOYED)?;
    (deployed.status == "False").then_some(deployed.message.as_str())
}

/// Why a failed job failed, for the Workload's Finished condition.
pub fn failure_message(job: &WrappedJob) -> Option<String> {
    job.status.as_ref().and_then(failure_message_of)
}

struct Machine<'a> {
    status: WrappedJobStatus,
    settings: &'a Settings,
    has_finalizer: bool,
    now: OffsetDateTime,
    now_text: String,
    actions: Vec<Act>,
    requeue: Option<Duration>,
    notes: Vec<Note>,
}

impl<'a> Machine<'a> {
    fn new(job: &WrappedJob, settings: &'a Settings, now: OffsetDateTime) -> Self {
        let has_finalizer = job.metadata.finalizers.iter().flatten().any(|f| f == WRAPPED_JOB_FINALIZER);
        // Kubernetes writes condition times in whole seconds.
        let now = now.replace_nanosecond(0).unwrap_or(now);
        Machine {
            status: job.status.clone().unwrap_or_default(),
            settings,
            has_finalizer,
            now,
            now_text: now.format(&Rfc3339).unwrap_or_default(),
            actions: Vec::new(),
            requeue: None,
            notes: Vec::new(),
        }
    }

    fn into_step(self) -> Step {
        Step { status: self.status, actions: self.actions, requeue: self.requeue, notes: self.notes }
    }

    fn set(&mut self, type_: &str, status: bool, reason: &str, message: impl Into<String>) {
        condition::set(&mut self.status.conditions, Condition::new(type_, status, reason, message), &self.now_text);
    }

    fn is(&self, type_: &str) -> bool {
        condition::is_true(&self.status.conditions, type_)
    }

    /// Time since `type_` last changed status.
    fn since(&self, type_: &str) -> Duration {
        condition::find(&self.status.conditions, type_)
            .and_then(|c| c.last_transition_time.as_deref())
            .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            .map_or(Duration::ZERO, |t| (self.now - t).try_into().unwrap_or(Duration::ZERO))
    }

    fn requeue(&mut self, after: Duration) {
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }

    /// Requeues for the rest of `grace` counted from `type_`; true once it has run out.
    fn expired(&mut self, type_: &str, grace: Duration) -> bool {
        let elapsed = self.since(type_);
        if elapsed >= grace {
            return true;
        }
        // Transition times have whole seconds: look again just after the deadline.
        self.requeue(grace - elapsed + Duration::from_millis(200));
        false
    }

    fn note(&mut self, reason: &'static str, message: impl Into<String>, warning: bool) {
        self.notes.push(Note { reason, message: message.into(), warning });
    }

    fn enter(&mut self, phase: Phase) {
        self.status.phase = phase;
    }

    fn unhealthy(&mut self, reason: &str, message: impl Into<String>) {
        self.set(UNHEALTHY, true, reason, message);
    }

    /// Names and failures of the components as the cluster shows them.
    fn record_components(&mut self, observed: &Observed) {
        for (status, seen) in self.status.component_status.iter_mut().zip(&observed.components) {
            if let ObservedComponent::Present { name, outcome, .. } = seen {
                status.name.clone_from(name);
                status.failure = match outcome {
                    ComponentOutcome::Failed(failure) | ComponentOutcome::Degraded(failure) => Some(failure.clone()),
                    ComponentOutcome::Running | ComponentOutcome::Succeeded => None,
                };
            }
        }
    }

    fn set_component(&mut self, index: usize, status: Option<bool>, reason: &str, message: &str) {
        let Some(component) = self.status.component_status.get_mut(index) else { return };
        let mut new = Condition::new(RESOURCES_DEPLOYED, status.unwrap_or(false), reason, message);
        if status.is_none() {
            new.status = "Unknown".into();
        }
        condition::set(&mut component.conditions, new, &self.now_text);
    }

    fn component_condition(&self, index: usize) -> Option<&Condition> {
        self.status.component_status.get(index).and_then(|c| condition::find(&c.conditions, RESOURCES_DEPLOYED))
    }

    fn suspended(&mut self, job: &WrappedJob) {
        if job.is_suspended() {
            return;
        }
        // The finalizer comes before anything exists, so deletion always cleans up.
        if !self.has_finalizer {
            self.actions.push(Act::AddFinalizer);
        }
        self.set(QUOTA_RESERVED, true, "Resuming", "Kueue admitted the job");
        self.set(RESOURCES_DEPLOYED, true, "Resuming", "Creating the components");
        self.set(PODS_READY, false, "Resuming", "No pod is ready yet");
        self.set(UNHEALTHY, false, "Resuming", "");
        // No event of its own: the jobframework's `Started` tells of the admission.
        self.enter(Phase::Resuming);
        self.requeue(Duration::ZERO);
    }

    fn resuming(&mut self, job: &WrappedJob, observed: &Observed) {
        if job.is_suspended() {
            self.note("Suspending", "Suspended while resuming", false);
            return self.enter(Phase::Suspending);
        }
        let mut missing = Vec::new();
        for (index, seen) in observed.components.iter().enumerate() {
            match seen {
                ObservedComponent::Present { deleting: false, .. } => {
                    self.set_component(index, Some(true), "ComponentCreatedSuccessfully", "");
                }
                // Left over from before a reset: wait for it to go.
                ObservedComponent::Present { deleting: true, .. } => self.requeue(CREATE_RETRY),
                ObservedComponent::Missing => missing.push(index),
            }
        }
        if missing.is_empty() && self.requeue.is_none() {
            self.note("Running", "Every component exists", false);
            return self.enter(Phase::Running);
        }
        if self.expired(RESOURCES_DEPLOYED, self.settings.admission_grace) {
            let message = format!(
                "components {missing:?} not created within the admission grace period of {:?}",
                self.settings.admission_grace
            );
            self.unhealthy("CreateFailed", message);
            return self.reset_or_fail(1, false);
        }
        for index in missing {
            // A transient failure keeps its message until the retry succeeds.
            let errored = self.component_condition(index).is_some_and(|c| c.reason == "ComponentCreationErrored");
            if !errored {
                self.set_component(index, None, "ComponentCreationInitiated", "");
            }
            self.actions.push(Act::Create(index));
        }
    }

    fn running(&mut self, job: &WrappedJob, observed: &Observed) {
        if job.is_suspended() {
            self.note("Suspending", "Suspended by Kueue (preempted or evicted)", false);
            return self.enter(Phase::Suspending);
        }
        let pods = &observed.pods;
        // Before looking for missing components: a finished job stops its services itself.
        if let Some(done) = self.completed(observed) {
            return self.finish_success(observed, &done);
        }
        for (index, seen) in observed.components.iter().enumerate() {
            if matches!(seen, ObservedComponent::Missing | ObservedComponent::Present { deleting: true, .. }) {
                let what = self.describe(index);
                self.unhealthy("MissingComponent", format!("{what} was deleted"));
                self.note("MissingComponent", format!("{what} was deleted: the job fails"), true);
                return self.fail();
            }
        }
        if let Some((index, failure)) = observed.components.iter().enumerate().find_map(|(i, seen)| match seen {
            ObservedComponent::Present { outcome: ComponentOutcome::Failed(failure), .. } => Some((i, failure)),
            _ => None,
        }) {
            let message = format!("{} failed: {}: {}", self.describe(index), failure.reason, failure.message);
            self.unhealthy("FailedComponent", message);
            return self.reset_or_fail(1, self.any_terminal(pods));
        }
        if pods.failed > 0 {
            let terminal = self.any_terminal(pods);
            let exit = pods.exits.first().map_or(String::new(), |e| {
                format!(": pod {} container {} exited with code {}", e.pod, e.container, e.code)
            });
            self.unhealthy("FoundFailedPods", format!("{} pod(s) failed{exit}", pods.failed));
            if terminal {
                self.note("TerminalExitCode", format!("A pod failed with a terminal exit code{exit}"), true);
                return self.fail();
            }
            if self.expired(UNHEALTHY, self.settings.failure_grace) {
                return self.reset_or_fail(1, false);
            }
            return;
        }
        let expected = self.expected_pods();
        if pods.running + pods.succeeded >= expected {
            self.set(PODS_READY, true, "SufficientPodsReady", format!("{expected} pod(s) ready or done"));
        } else {
            let ready = pods.running + pods.succeeded;
            let message = format!("{ready} of {expected} pod(s) ready or done");
            // The resume's "no pod is ready yet" still holds: saying it again would be a write.
            let told_none =
                condition::find(&self.status.conditions, PODS_READY).is_some_and(|c| c.reason == "Resuming");
            if ready > 0 || !told_none {
                self.set(PODS_READY, false, "InsufficientPodsReady", message.clone());
            }
            // Pods that exist get the warm-up grace; pods never created only the admission's.
            let grace = if pods.pending + pods.running + pods.succeeded >= expected {
                self.settings.warmup_grace
            } else {
                self.settings.admission_grace
            };
            if self.expired(RESOURCES_DEPLOYED, grace) {
                self.unhealthy("InsufficientPodsReady", format!("{message} after {grace:?}"));
                return self.reset_or_fail(1, false);
            }
        }
        let unwatched = observed.components.iter().any(|c| match c {
            ObservedComponent::Present { completion, watched, .. } => *completion == Completion::Unknown || !watched,
            ObservedComponent::Missing => false,
        });
        if unwatched {
            self.requeue(UNWATCHED);
        }
    }

    /// `Some(components to stop)` once the job has done its work: every component that runs to
    /// completion succeeded (kinds we do not know: all their pods succeeded). What runs until
    /// deleted (a Deployment serving the job) is then stopped: those still up are returned.
    fn completed(&self, observed: &Observed) -> Option<Vec<usize>> {
        let completions: Vec<Completion> =
            self.status.component_status.iter().map(|c| completion_of(&c.api_version, &c.kind)).collect();
        if completions.iter().all(|c| *c == Completion::RunsUntilDeleted) {
            return None;
        }
        let pods = &observed.pods;
        let done = completions.iter().zip(&observed.components).all(|(completion, seen)| match (completion, seen) {
            (Completion::RunsUntilDeleted, _) => true,
            (_, ObservedComponent::Missing) => false,
            (Completion::Unknown, _) => pods.succeeded > 0 && pods.pending + pods.failed == 0,
            (Completion::RunsToCompletion, ObservedComponent::Present { outcome, .. }) => {
                *outcome == ComponentOutcome::Succeeded
            }
        });
        let still_up = completions.iter().zip(&observed.components).enumerate().filter_map(|(i, pair)| match pair {
            (Completion::RunsUntilDeleted, ObservedComponent::Present { deleting: false, .. }) => Some(i),
            _ => None,
        });
        done.then(|| still_up.collect())
    }

    /// Stops what still runs, then declares success once no pod is left running.
    fn finish_success(&mut self, observed: &Observed, still_up: &[usize]) {
        let pods = &observed.pods;
        let stopping = observed.components.iter().enumerate().any(|(i, c)| {
            matches!(c, ObservedComponent::Present { .. })
                && completion_of(&self.status.component_status[i].api_version, &self.status.component_status[i].kind)
                    == Completion::RunsUntilDeleted
        });
        if stopping || pods.pending + pods.running + pods.terminating > 0 {
            if !still_up.is_empty() {
                self.actions.push(Act::Delete { components: still_up.to_vec(), forceful: false });
            }
            return self.requeue(CREATE_RETRY);
        }
        self.set(QUOTA_RESERVED, false, "Succeeded", "The job finished");
        self.set(RESOURCES_DEPLOYED, true, "Succeeded", "Finished components are kept until the success TTL");
        self.set(PODS_READY, false, "Succeeded", "");
        self.note("Succeeded", "Every component finished", false);
        self.enter(Phase::Succeeded);
    }

    fn any_terminal(&self, pods: &ComponentPods) -> bool {
        pods.exits.iter().any(|e| self.settings.is_terminal(e.code))
    }

    fn expected_pods(&self) -> i32 {
        self.status.component_status.iter().flat_map(|c| &c.pod_sets).map(|p| p.replicas()).sum()
    }

    fn describe(&self, index: usize) -> String {
        match self.status.component_status.get(index) {
            Some(c) => format!("component {index} ({} {})", c.kind, c.name),
            None => format!("component {index}"),
        }
    }

    /// Retries while the limit allows and the failure is not terminal; quota stays reserved.
    fn reset_or_fail(&mut self, increment: i32, terminal: bool) {
        if !terminal && self.status.retries < self.settings.retry_limit {
            self.status.retries += increment;
            let message = format!("reset {} of {}", self.status.retries, self.settings.retry_limit);
            self.note("Resetting", message, true);
            self.set(PODS_READY, false, "Resetting", "");
            return self.enter(Phase::Resetting);
        }
        self.fail();
    }

    fn fail(&mut self) {
        let why = failure_message_of(&self.status).unwrap_or_default();
        self.note("Failed", why, true);
        self.enter(Phase::Failed);
        self.requeue(Duration::ZERO);
    }

    fn resetting(&mut self, job: &WrappedJob, observed: &Observed) {
        if job.is_suspended() {
            // Kueue's word wins over a retry.
            return self.enter(Phase::Suspending);
        }
        if !self.delete_all(observed) {
            return;
        }
        // False before True even when the pause ran out during the deletion, as AppWrapper does:
        // the next run's admission and warm-up graces count from this transition, not from the
        // first admission.
        self.set(RESOURCES_DEPLOYED, false, "Resetting", "Components deleted for the reset");
        if !self.expired(UNHEALTHY, self.settings.retry_pause) {
            return;
        }
        self.set(RESOURCES_DEPLOYED, true, "Resuming", "Reset complete; resuming");
        let message = format!("reset {} complete", self.status.retries);
        self.set(UNHEALTHY, false, "Reset", message);
        for component in &mut self.status.component_status {
            component.conditions.clear();
            component.failure = None;
        }
        self.enter(Phase::Resuming);
        self.requeue(Duration::ZERO);
    }

    fn suspending(&mut self, observed: &Observed) {
        if !self.delete_all(observed) {
            return;
        }
        self.set(RESOURCES_DEPLOYED, false, "Suspended", "Components deleted");
        self.set(QUOTA_RESERVED, false, "Suspended", "Suspended by Kueue");
        self.set(PODS_READY, false, "Suspended", "");
        self.set(UNHEALTHY, false, "Suspended", "");
        self.enter(Phase::Suspended);
    }

    fn failed(&mut self, job: &WrappedJob, observed: &Observed) {
        if !self.is(RESOURCES_DEPLOYED) {
            return;
        }
        // Components may be kept a while for debugging, but never while Kueue wants them gone.
        let grace = self.settings.deletion_on_failure_grace;
        if !grace.is_zero() && !job.is_suspended() && !self.is(DELETING_RESOURCES) {
            self.set(DELETING_RESOURCES, false, "DeletionPaused", "Kept for debugging");
            if !self.expired(DELETING_RESOURCES, grace) {
                return;
            }
        }
        if self.delete_all(observed) {
            self.set(RESOURCES_DEPLOYED, false, "Failed", "Components deleted");
            self.set(QUOTA_RESERVED, false, "Failed", "The job failed");
        }
    }

    fn succeeded(&mut self, observed: &Observed) {
        if !self.is(RESOURCES_DEPLOYED) || !self.expired(RESOURCES_DEPLOYED, self.settings.success_ttl) {
            return;
        }
        if self.delete_all(observed) {
            self.set(RESOURCES_DEPLOYED, false, "SuccessTTLExpired", "Components deleted");
        }
    }

    fn terminating(&mut self, job: &WrappedJob, observed: &Observed) {
        if !self.has_finalizer {
            return;
        }
        let anything_left = observed.pods.left() > 0
            || observed.components.iter().any(|c| matches!(c, ObservedComponent::Present { .. }));
        if anything_left {
            self.enter(Phase::Terminating);
        }
        if !self.delete_all(observed) {
            return;
        }
        if job.status.is_some() {
            self.set(RESOURCES_DEPLOYED, false, "Deleted", "The job is being deleted");
            self.set(QUOTA_RESERVED, false, "Deleted", "The job is being deleted");
        }
        self.actions.push(Act::RemoveFinalizer);
    }

    /// AppWrapper's deletion protocol: delete the components, wait until they and every pod of
    /// the job are gone, and after the forceful-deletion grace delete what is left without
    /// grace. True once nothing is left; only then may the quota be released.
    fn delete_all(&mut self, observed: &Observed) -> bool {
        let present: Vec<usize> = (observed.components.iter().enumerate())
            .filter(|(_, c)| matches!(c, ObservedComponent::Present { .. }))
            .map(|(i, _)| i)
            .collect();
        if present.is_empty() && observed.pods.left() == 0 {
            if self.is(DELETING_RESOURCES) {
                self.set(DELETING_RESOURCES, false, "DeletionComplete", "");
            }
            for index in 0..self.status.component_status.len() {
                if self.component_condition(index).is_some() {
                    self.set_component(index, Some(false), "ComponentDeleted", "");
                }
            }
            return true;
        }
        if !self.is(DELETING_RESOURCES) {
            self.set(DELETING_RESOURCES, true, "DeletionInitiated", "Deleting the components and their pods");
        }
        let forceful = self.expired(DELETING_RESOURCES, self.settings.forceful_deletion_grace);
        let to_delete: Vec<usize> = present
            .into_iter()
            .filter(|&i| {
                forceful || matches!(observed.components[i], ObservedComponent::Present { deleting: false, .. })
            })
            .collect();
        if !to_delete.is_empty() {
            self.actions.push(Act::Delete { components: to_delete, forceful });
        }
        if forceful && observed.pods.left() > 0 {
            self.actions.push(Act::DeletePods);
        }
        // Pods and components going away are watched; this only bounds a missed event.
        self.requeue(Duration::from_secs(5));
        false
    }
}

fn failure_message_of(status: &WrappedJobStatus) -> Option<String> {
    condition::find(&status.conditions, UNHEALTHY).filter(|c| c.is_true()).map(|c| c.message.clone())
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
