//! Runs that went wrong inside Kueue's MultiKueue (v0.19.2, the newest the module proxy
//! serves), told from Kueue's own log and Workloads.
//!
//! A second dispatch: `reconcileGroup` (step 6b) converges on the worker whose copy of the
//! Workload shows the earliest admission, creates the job there, and only then records that
//! worker as the Workload's `status.clusterName`. A copy left on a worker that was unreachable
//! when another worker won (a worker API server restart, or the manager reconnecting after its
//! own restart) can later be admitted and chosen: the job is created on that worker too, and
//! the record is refused with one of the errors below. The job then runs on both workers without
//! any eviction. Kueue's manager restarted between creating the job and recording the worker
//! forgets the choice: it chooses again and may create the job on the other worker too, with no
//! error to log (`dispatched_across_restart`). Neither the job nor its integration takes part
//! in these steps: the crash-safety report counts such a job apart.
//!
//! A Workload never nominated: reconciled just after Kueue's manager restarted, before it had
//! connected to any worker, the all-at-once dispatcher nominates the connected workers (none),
//! changes nothing and asks for no retry; only an event on a remote copy would bring the
//! Workload back, and it has none. It would keep its quota with the MultiKueue check Pending for
//! good: for our kinds the reconciler nudges it (`jobframework::multikueue_nudge`), so such a
//! job is held against us like any other that never ran. `never_nominated` only tells the
//! report why it was lost.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use time::format_description::well_known::Rfc3339;

/// Errors Kueue logs when recording a worker other than the one the Workload was given to.
const SECOND_DISPATCH: [&str; 2] = [
    "attempting to change immutable ClusterName",
    "when setting clusterName it must be one of the nominatedClusterNames",
];

/// Names of the manager Workloads that Kueue's logs (JSON lines) show dispatched to a second
/// worker. Unreadable files and lines that are not JSON are skipped: the result only ever
/// narrows what counts as Kueue's.
pub fn second_dispatches(logs: &[&Path]) -> BTreeSet<String> {
    logs.iter()
        .filter_map(|log| std::fs::read_to_string(log).ok())
        .flat_map(|text| text.lines().filter_map(second_dispatch).collect::<Vec<_>>())
        .collect()
}

fn second_dispatch(line: &str) -> Option<String> {
    let entry: Value = serde_json::from_str(line).ok()?;
    let error = entry["error"].as_str()?;
    if entry["logger"] != "multikueue-workload" || !SECOND_DISPATCH.iter().any(|s| error.contains(s)) {
        return None;
    }
    entry["workload"]["name"].as_str().or(entry["name"].as_str()).map(str::to_string)
}

/// Whether a job that ran once on each of two workers was dispatched across a restart of
/// Kueue's manager: its two copies on the workers (`copies_created`, seconds since the epoch,
/// earliest first), the first created before Kueue's manager was started again (`kueue_started`,
/// whole seconds) and the second after, both under one reservation of its manager Workload
/// (`reserved_at`: not evicted and dispatched again). Whole seconds suffice: Kueue stays down
/// a second, so what the killed one created falls in an earlier second than its restart.
pub fn dispatched_across_restart(copies_created: &[i64], reserved_at: Option<i64>, kueue_started: &[i64]) -> bool {
    let [first, second] = copies_created else { return false };
    reserved_at.is_some_and(|r| r <= *first) && kueue_started.iter().any(|s| first < s && s <= second)
}

/// When a Workload (as JSON) had its quota reserved, in seconds since the epoch.
pub fn reserved_at(workload: &Value) -> Option<i64> {
    let conditions = workload["status"]["conditions"].as_array()?;
    let reserved = conditions.iter().find(|c| c["type"] == "QuotaReserved" && c["status"] == "True")?;
    let at = time::OffsetDateTime::parse(reserved["lastTransitionTime"].as_str()?, &Rfc3339).ok()?;
    Some(at.unix_timestamp())
}

/// The name of the MultiKueue admission check the sandbox's ClusterQueue carries.
const MULTIKUEUE_CHECK: &str = "multikueue";

/// How long a Pending check must have stayed so: MultiKueue nominates within seconds.
const STUCK_FOR: time::Duration = time::Duration::minutes(5);

/// Whether a manager Workload (as JSON) has held quota for `STUCK_FOR` or more with its
/// MultiKueue check Pending and no worker nominated or chosen: left by MultiKueue, and not
/// brought back by our nudge, which asks again after 30 s.
pub fn never_nominated(workload: &Value, now: time::OffsetDateTime) -> bool {
    let since = |t: &Value| t.as_str().and_then(|t| time::OffsetDateTime::parse(t, &Rfc3339).ok());
    let pending_long = multikueue_checks(workload)
        .any(|c| c["state"] == "Pending" && since(&c["lastTransitionTime"]).is_some_and(|t| now - t >= STUCK_FOR));
    waits_for_nomination(workload) && pending_long
}

/// Whether a manager Workload (as JSON) holds quota with its MultiKueue check Pending and no
/// worker nominated or chosen yet: the ones a restart of Kueue's manager strands when its
/// MultiKueue reconciles them before it has connected to a worker.
pub fn waits_for_nomination(workload: &Value) -> bool {
    let status = &workload["status"];
    let condition = |kind: &str| {
        status["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == kind && c["status"] == "True")
    };
    let nominated = status["nominatedClusterNames"].as_array().is_some_and(|n| !n.is_empty());
    condition("QuotaReserved")
        && !condition("Finished")
        && multikueue_checks(workload).any(|c| c["state"] == "Pending")
        && !nominated
        && status["clusterName"].is_null()
}

fn multikueue_checks(workload: &Value) -> impl Iterator<Item = &Value> {
    let checks = workload["status"]["admissionChecks"].as_array().into_iter().flatten();
    checks.filter(|c| c["name"] == MULTIKUEUE_CHECK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kueue_refusing_a_second_worker_names_a_workload() {
        let immutable = r#"{"logger":"multikueue-workload","msg":"Failed to patch workload","name":"externaljob-ej-10-4e539","workload":{"name":"externaljob-ej-10-4e539","namespace":"default"},"error":"attempting to change immutable ClusterName from \"worker1\" to \"worker2\""}"#;
        let not_nominated = r#"{"logger":"multikueue-workload","msg":"Reconciler error","name":"externaljob-ej-13-c3617","error":"admission webhook \"vworkload.kb.io\" denied the request: status.clusterName: Invalid value: \"worker1\": when setting clusterName it must be one of the nominatedClusterNames"}"#;
        let other_error = r#"{"logger":"multikueue-workload","msg":"Reconciler error","name":"externaljob-ej-2-aaaaa","error":"the object has been modified"}"#;
        let other_logger = r#"{"logger":"workload-reconciler","name":"externaljob-ej-3-bbbbb","error":"attempting to change immutable ClusterName"}"#;
        assert_eq!(second_dispatch(immutable).as_deref(), Some("externaljob-ej-10-4e539"));
        assert_eq!(second_dispatch(not_nominated).as_deref(), Some("externaljob-ej-13-c3617"));
        assert_eq!(second_dispatch(other_error), None);
        assert_eq!(second_dispatch(other_logger), None);
        assert_eq!(second_dispatch("I1123 17:09:53 not json"), None);
    }

    #[test]
    fn only_copies_made_on_either_side_of_a_kueue_restart_under_one_reservation_were_dispatched_across_it() {
        let (reserved, restarted) = (Some(100), [130]);
        assert!(dispatched_across_restart(&[120, 150], reserved, &restarted));
        assert!(dispatched_across_restart(&[129, 130], reserved, &restarted), "the second from the restarted one");
        assert!(!dispatched_across_restart(&[130, 150], reserved, &restarted), "both after the restart");
        assert!(!dispatched_across_restart(&[110, 120], reserved, &restarted), "both before");
        assert!(!dispatched_across_restart(&[120, 150], Some(125), &restarted), "reserved again between them");
        assert!(!dispatched_across_restart(&[120, 150], None, &restarted), "no reservation");
        assert!(!dispatched_across_restart(&[120, 140, 150], reserved, &restarted), "three copies");
        assert!(!dispatched_across_restart(&[120, 150], reserved, &[]), "Kueue never restarted");
        let workload = serde_json::json!({"status": {"conditions": [
            {"type": "QuotaReserved", "status": "True", "lastTransitionTime": "1970-01-01T00:01:40Z"}]}});
        assert_eq!(reserved_at(&workload), Some(100));
    }

    #[test]
    fn only_a_workload_holding_quota_with_no_worker_nominated_was_never_nominated() {
        let now = time::OffsetDateTime::parse("2026-11-23T19:37:00Z", &Rfc3339).unwrap();
        let never_nominated = |w: &Value| never_nominated(w, now);
        let workload = |check: &str, extra: Value| {
            let mut status = serde_json::json!({
                "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "PodsReady", "status": "False"}],
                "admissionChecks": [{"name": "multikueue", "state": check, "lastTransitionTime": "2026-11-23T19:23:44Z"}],
            });
            status.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
            serde_json::json!({"status": status})
        };
        assert!(never_nominated(&workload("Pending", Value::Null)));
        assert!(never_nominated(&workload("Pending", serde_json::json!({"nominatedClusterNames": []}))));
        assert!(!never_nominated(&workload("Pending", serde_json::json!({"nominatedClusterNames": ["worker1"]}))));
        assert!(!never_nominated(&workload("Ready", serde_json::json!({"clusterName": "worker1"}))));
        assert!(!never_nominated(&workload("Retry", Value::Null)));
        let mut finished = workload("Pending", Value::Null);
        finished["status"]["conditions"][1] = serde_json::json!({"type": "Finished", "status": "True"});
        assert!(!never_nominated(&finished));
        let mut queued = workload("Pending", Value::Null);
        queued["status"]["conditions"][0]["status"] = "False".into();
        assert!(!never_nominated(&queued));
        let mut just_reserved = workload("Pending", Value::Null);
        just_reserved["status"]["admissionChecks"][0]["lastTransitionTime"] = "2026-11-23T19:36:30Z".into();
        assert!(!never_nominated(&just_reserved));
        assert!(waits_for_nomination(&just_reserved), "waiting, not yet for long");
        assert!(!waits_for_nomination(&workload("Pending", serde_json::json!({"nominatedClusterNames": ["worker1"]}))));
        assert!(!waits_for_nomination(&queued));
    }
}
