//! Workload conditions the job side owns, as pure functions of what was there before (Kueue's
//! `generatePodsReadyCondition`, the `Finished` condition and the reservation release after an
//! eviction).

use crate::api::condition::{self, Condition};
use crate::api::kueue::{ADMITTED, EVICTED, FINISHED, PODS_READY, QUOTA_RESERVED, REQUEUED};

/// The `PodsReady` condition a Workload should carry.
pub fn pods_ready(previous: Option<&Condition>, admitted: bool, pods_ready: bool) -> Condition {
    let waiting = || Condition::new(PODS_READY, false, "WaitForStart", "Not all pods are ready or succeeded");
    if !admitted {
        return waiting();
    }
    if pods_ready {
        let recovered = previous.is_some_and(|p| matches!(p.reason.as_str(), "WaitForRecovery" | "Recovered"));
        return if recovered {
            Condition::new(PODS_READY, true, "Recovered", "All pods reached readiness and the workload is running")
        } else {
            Condition::new(PODS_READY, true, "Started", "All pods reached readiness and the workload is running")
        };
    }
    match previous {
        Some(p) if p.is_true() || p.reason == "WaitForRecovery" => {
            Condition::new(PODS_READY, false, "WaitForRecovery", "At least one pod has failed, waiting for recovery")
        }
        _ => waiting(),
    }
}

/// `Finished=True` with the job's outcome.
pub fn finished(success: bool, message: &str) -> Condition {
    Condition::new(FINISHED, true, if success { "Succeeded" } else { "Failed" }, message)
}

/// Conditions after the job released the quota of an evicted Workload: `QuotaReserved=False`
/// (pending a new evaluation), `Admitted=False`, and `Requeued` true only when the eviction was
/// a preemption or node failure (otherwise Kueue's own backoff decides).
pub fn released_after_eviction(conditions: &[Condition], now: &str) -> Vec<Condition> {
    let eviction = condition::find(conditions, EVICTED).cloned().unwrap_or_default();
    let requeue = matches!(eviction.reason.as_str(), "Preempted" | "NodeFailures");
    let mut out = conditions.to_vec();
    condition::set(&mut out, Condition::new(QUOTA_RESERVED, false, "PendingEvaluation", eviction.message.clone()), now);
    condition::set(&mut out, Condition::new(ADMITTED, false, "NoReservation", "The workload has no reservation"), now);
    condition::set(&mut out, Condition::new(REQUEUED, requeue, eviction.reason.as_str(), eviction.message), now);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(status: bool, reason: &str) -> Condition {
        Condition::new(PODS_READY, status, reason, "")
    }

    #[test]
    fn pods_ready_follows_kueue_rules() {
        let cases: [(Option<Condition>, bool, bool, bool, &str); 7] = [
            (None, false, true, false, "WaitForStart"),
            (None, true, false, false, "WaitForStart"),
            (None, true, true, true, "Started"),
            (Some(cond(true, "Started")), true, false, false, "WaitForRecovery"),
            (Some(cond(false, "WaitForRecovery")), true, false, false, "WaitForRecovery"),
            (Some(cond(false, "WaitForRecovery")), true, true, true, "Recovered"),
            (Some(cond(false, "WaitForStart")), true, false, false, "WaitForStart"),
        ];
        for (previous, admitted, ready, want_status, want_reason) in cases {
            let got = pods_ready(previous.as_ref(), admitted, ready);
            assert_eq!(
                (got.is_true(), got.reason.as_str()),
                (want_status, want_reason),
                "{previous:?} {admitted} {ready}"
            );
        }
    }

    #[test]
    fn release_after_preemption_requeues() {
        let evicted = vec![
            Condition::new(QUOTA_RESERVED, true, "QuotaReserved", ""),
            Condition::new(ADMITTED, true, "Admitted", ""),
            Condition::new(EVICTED, true, "Preempted", "Preempted to accommodate a higher priority Workload"),
        ];
        let out = released_after_eviction(&evicted, "now");
        assert!(!condition::is_true(&out, QUOTA_RESERVED));
        assert!(!condition::is_true(&out, ADMITTED));
        assert!(condition::is_true(&out, REQUEUED));
        assert_eq!(condition::find(&out, QUOTA_RESERVED).unwrap().reason, "PendingEvaluation");
        assert!(condition::is_true(&out, EVICTED), "the eviction itself stays recorded");
    }

    #[test]
    fn release_after_other_evictions_does_not_requeue() {
        let evicted = vec![Condition::new(EVICTED, true, "PodsReadyTimeout", "timeout")];
        assert!(!condition::is_true(&released_after_eviction(&evicted, "now"), REQUEUED));
    }
}
