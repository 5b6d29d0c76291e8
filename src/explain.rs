//! `explain`: why a job is (not) running, in words, from the job, its Workload and its queues.
//! A pure function of what was read, so every sentence has a test.

use crate::api::condition::{self, Condition};
use crate::api::kueue::{ADMITTED, EVICTED, FINISHED, QUOTA_RESERVED, Workload};
use crate::api::wrapped_job::UNHEALTHY;

/// What `explain` read about one job.
pub struct Facts<'a> {
    /// `ExternalJob default/train`.
    pub job: String,
    pub queue: Option<&'a str>,
    pub suspended: bool,
    pub managed_by: Option<&'a str>,
    pub job_conditions: &'a [Condition],
    /// `status.phase`, for kinds that tell their state by phase (WrappedJob, as AppWrapper).
    pub phase: Option<&'a str>,
    pub workload: Option<&'a Workload>,
    /// Whether the LocalQueue the job names exists (None: not checked).
    pub local_queue_exists: Option<bool>,
}

fn active<'a>(conditions: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    condition::find(conditions, kind).filter(|c| c.is_true())
}

/// The explanation, most important sentence first.
pub fn explain(facts: &Facts<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let job = &facts.job;
    if let Some(done) = finished(facts) {
        out.push(format!("{job} has finished: {done}."));
        return out;
    }
    let Some(queue) = facts.queue else {
        out.push(format!("{job} names no queue (label kueue.x-k8s.io/queue-name), so Kueue does not manage it."));
        return out;
    };
    if facts.local_queue_exists == Some(false) {
        out.push(format!(
            "LocalQueue {queue} does not exist in the job's namespace: Kueue cannot admit the job until it does \
             (kubectl get localqueues)."
        ));
    }
    let Some(wl) = facts.workload else {
        out.push(format!(
            "{job} has no Workload yet: the integration's controller creates one; if this lasts, check that it runs \
             (kubectl kueue-ext status)."
        ));
        return out;
    };
    let name = wl.metadata.name.as_deref().unwrap_or_default();
    let conditions = wl.conditions();
    if let Some(finished) = active(conditions, FINISHED) {
        out.push(format!("Workload {name} is finished: {}.", message_or_reason(finished)));
        return out;
    }
    if let Some(evicted) = active(conditions, EVICTED) {
        out.push(format!("Workload {name} was evicted ({}): {}.", evicted.reason, evicted.message));
    }
    let cluster_queue = wl.admission().map(|a| a.cluster_queue.clone());
    match condition::find(conditions, QUOTA_RESERVED) {
        Some(c) if c.is_true() => {
            out.push(format!("Quota is reserved in ClusterQueue {}.", cluster_queue.unwrap_or_default()));
        }
        Some(c) => {
            out.push(format!("Workload {name} is waiting for quota in queue {queue}: {}.", message_or_reason(c)))
        }
        None => out.push(format!("Workload {name} has not been evaluated by Kueue yet (is Kueue running?).")),
    }
    let checks = wl.status.as_ref().map(|s| s.admission_checks.as_slice()).unwrap_or_default();
    for check in checks.iter().filter(|c| c.state != "Ready") {
        let message = if check.message.is_empty() { String::new() } else { format!(": {}", check.message) };
        out.push(format!("Admission check {} is {}{message}.", check.name, check.state));
    }
    if wl.is(ADMITTED) {
        match (wl.status.as_ref().and_then(|s| s.cluster_name.as_deref()), facts.managed_by) {
            (Some(worker), _) => out.push(format!("Admitted; MultiKueue runs it on worker cluster {worker}.")),
            (None, Some(controller)) => out.push(format!("Admitted; {controller} is to run it.")),
            (None, None) if facts.suspended => out
                .push("Admitted, but the job is still suspended: the integration's controller starts it next.".into()),
            (None, None) => out.push("Admitted and running.".into()),
        }
    } else if !facts.suspended {
        out.push("The job is not suspended although Kueue has not admitted it: the controller will stop it.".into());
    }
    out
}

/// How the job ended, if it has: `Complete (All pods succeeded)`, `Failed (…)`, `Succeeded`.
fn finished(facts: &Facts<'_>) -> Option<String> {
    let conditions = facts.job_conditions;
    if let Some(done) = active(conditions, "Complete").or_else(|| active(conditions, "Failed")) {
        return Some(format!("{} ({})", done.type_, message_or_reason(done)));
    }
    match facts.phase? {
        "Succeeded" => Some("Succeeded".into()),
        // A failed WrappedJob keeps the failure that ended it in its Unhealthy condition.
        "Failed" => Some(match active(conditions, UNHEALTHY) {
            Some(why) => format!("Failed ({})", message_or_reason(why)),
            None => "Failed".into(),
        }),
        _ => None,
    }
}

fn message_or_reason(c: &Condition) -> &str {
    if c.message.is_empty() { &c.reason } else { &c.message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kueue::{Admission, AdmissionCheckState, WorkloadSpec, WorkloadStatus};

    fn workload(conditions: Vec<Condition>, checks: Vec<AdmissionCheckState>, cluster: Option<&str>) -> Workload {
        let mut wl = Workload::new("externaljob-train-12345", WorkloadSpec::default());
        wl.status = Some(WorkloadStatus {
            conditions,
            admission: Some(Admission { cluster_queue: "cluster-queue".into(), pod_set_assignments: vec![] }),
            admission_checks: checks,
            cluster_name: cluster.map(String::from),
        });
        wl
    }

    fn facts<'a>(wl: Option<&'a Workload>, conditions: &'a [Condition]) -> Facts<'a> {
        Facts {
            job: "ExternalJob default/train".into(),
            queue: Some("user-queue"),
            suspended: true,
            managed_by: None,
            job_conditions: conditions,
            phase: None,
            workload: wl,
            local_queue_exists: Some(true),
        }
    }

    #[test]
    fn a_job_without_queue_is_not_managed() {
        let mut f = facts(None, &[]);
        f.queue = None;
        assert!(explain(&f)[0].contains("names no queue"));
    }

    #[test]
    fn a_missing_local_queue_and_workload_are_named() {
        let mut f = facts(None, &[]);
        f.local_queue_exists = Some(false);
        let lines = explain(&f);
        assert!(lines[0].contains("LocalQueue user-queue does not exist"), "{lines:?}");
        assert!(lines[1].contains("has no Workload yet"), "{lines:?}");
    }

    #[test]
    fn waiting_for_quota_quotes_kueue() {
        let wl = workload(
            vec![Condition::new(QUOTA_RESERVED, false, "Pending", "insufficient quota for cpu")],
            vec![],
            None,
        );
        let lines = explain(&facts(Some(&wl), &[]));
        assert_eq!(
            lines,
            ["Workload externaljob-train-12345 is waiting for quota in queue user-queue: insufficient quota for cpu."]
        );
    }

    #[test]
    fn pending_admission_checks_and_the_chosen_worker_are_told() {
        let check = AdmissionCheckState {
            name: "multikueue".into(),
            state: "Pending".into(),
            message: "dispatching".into(),
            pod_set_updates: vec![],
        };
        let reserved = workload(vec![Condition::new(QUOTA_RESERVED, true, "QuotaReserved", "")], vec![check], None);
        let lines = explain(&facts(Some(&reserved), &[]));
        assert!(lines.contains(&"Admission check multikueue is Pending: dispatching.".to_string()), "{lines:?}");

        let admitted = workload(
            vec![
                Condition::new(QUOTA_RESERVED, true, "QuotaReserved", ""),
                Condition::new(ADMITTED, true, "Admitted", ""),
            ],
            vec![],
            Some("worker2"),
        );
        let lines = explain(&facts(Some(&admitted), &[]));
        assert_eq!(lines.last().unwrap(), "Admitted; MultiKueue runs it on worker cluster worker2.");
    }

    #[test]
    fn evictions_and_endings_are_reported() {
        let evicted = workload(
            vec![Condition::new(EVICTED, true, "Preempted", "Preempted to accommodate a higher priority Workload")],
            vec![],
            None,
        );
        assert!(explain(&facts(Some(&evicted), &[]))[0].contains("was evicted (Preempted)"));
        let done = [Condition::new("Complete", true, "Completed", "All pods succeeded")];
        assert_eq!(
            explain(&facts(None, &done)),
            ["ExternalJob default/train has finished: Complete (All pods succeeded)."]
        );
    }

    #[test]
    fn a_wrapped_job_ends_by_its_phase() {
        let unhealthy = [Condition::new(UNHEALTHY, true, "FailedComponent", "component 0 (Job train-0) failed")];
        let cases: [(&str, &[Condition], Option<&str>); 4] = [
            ("Succeeded", &[], Some("WrappedJob default/train has finished: Succeeded.")),
            (
                "Failed",
                &unhealthy,
                Some("WrappedJob default/train has finished: Failed (component 0 (Job train-0) failed)."),
            ),
            ("Failed", &[], Some("WrappedJob default/train has finished: Failed.")),
            ("Resetting", &unhealthy, None),
        ];
        for (phase, conditions, expected) in cases {
            let mut f = facts(None, conditions);
            f.job = "WrappedJob default/train".into();
            f.phase = Some(phase);
            let first = explain(&f).into_iter().next();
            match expected {
                Some(line) => assert_eq!(first.as_deref(), Some(line), "{phase}"),
                None => assert!(!first.unwrap_or_default().contains("has finished"), "{phase}"),
            }
        }
    }
}
