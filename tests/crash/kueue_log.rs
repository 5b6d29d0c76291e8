//! Kueue's own account of dispatching one Workload to a second worker.
//!
//! Kueue v0.19.2's MultiKueue (`reconcileGroup`, step 6b) converges on the worker whose copy of
//! the Workload shows the earliest admission, creates the job there, and only then records that
//! worker as the Workload's `status.clusterName`. A copy left on a worker that was unreachable
//! when another worker won (a worker API server restart, or the manager reconnecting after its
//! own restart) can later be admitted and chosen: the job is created on that worker too, and the
//! record is refused with one of the errors below. The job then runs on both workers without
//! any eviction — something neither our controller nor the job can cause or prevent, so the
//! crash-safety report counts these runs apart, on Kueue's own word.

use std::collections::BTreeSet;
use std::path::Path;

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
    let entry: serde_json::Value = serde_json::from_str(line).ok()?;
    let error = entry["error"].as_str()?;
    if entry["logger"] != "multikueue-workload" || !SECOND_DISPATCH.iter().any(|s| error.contains(s)) {
        return None;
    }
    entry["workload"]["name"].as_str().or(entry["name"].as_str()).map(str::to_string)
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
}
