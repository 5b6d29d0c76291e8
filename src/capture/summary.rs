//! `capture --summary`: what a capture holds, counted per cluster and kind, and why its pending
//! Workloads wait, in Kueue's own words (the reason and message of the condition that is False),
//! grouped so that a hundred Workloads waiting for the same quota read as one line.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Capture;
use crate::api::condition::{self, Condition};
use crate::api::kueue::{ADMITTED, FINISHED, QUOTA_RESERVED};

/// Workloads that wait for the same reason, on one cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingGroup {
    pub cluster: String,
    /// The condition that is not True: `QuotaReserved`, or `Admitted` once quota is reserved.
    pub condition: String,
    pub reason: String,
    pub message: String,
    /// `namespace/name`, in order.
    pub workloads: Vec<String>,
}

/// Counts per kind (rows) and cluster (columns, in the capture's order), and the pending groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub clusters: Vec<String>,
    pub counts: BTreeMap<String, Vec<usize>>,
    pub pending: Vec<PendingGroup>,
}

/// Why a Workload waits: the condition that holds it, its reason and message; `None` when it
/// does not wait (admitted, or finished).
pub fn why_pending(workload: &Value) -> Option<(String, String, String)> {
    let conditions: Vec<Condition> =
        serde_json::from_value(workload["status"]["conditions"].clone()).unwrap_or_default();
    if condition::is_true(&conditions, FINISHED) || condition::is_true(&conditions, ADMITTED) {
        return None;
    }
    let holding = match condition::find(&conditions, QUOTA_RESERVED) {
        Some(reserved) if reserved.is_true() => condition::find(&conditions, ADMITTED),
        reserved => reserved,
    };
    Some(match holding {
        Some(c) => (c.type_.clone(), c.reason.clone(), c.message.clone()),
        None => (QUOTA_RESERVED.to_string(), String::new(), "no condition yet: Kueue has not looked at it".into()),
    })
}

/// The pending Workloads of one cluster, grouped by condition, reason and message; the largest
/// group first.
pub fn pending_groups(cluster: &str, workloads: &[Value]) -> Vec<PendingGroup> {
    let mut groups: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for workload in workloads {
        if let Some(key) = why_pending(workload) {
            let metadata = &workload["metadata"];
            let name = format!(
                "{}/{}",
                metadata["namespace"].as_str().unwrap_or_default(),
                metadata["name"].as_str().unwrap_or_default()
            );
            groups.entry(key).or_default().push(name);
        }
    }
    let mut out: Vec<PendingGroup> = groups
        .into_iter()
        .map(|((condition, reason, message), mut workloads)| {
            workloads.sort();
            PendingGroup { cluster: cluster.into(), condition, reason, message, workloads }
        })
        .collect();
    out.sort_by_key(|g| std::cmp::Reverse(g.workloads.len()));
    out
}

/// The summary of a capture.
pub fn summarize(capture: &Capture) -> Summary {
    let clusters: Vec<String> = capture.manifest.clusters.iter().map(|c| c.name.clone()).collect();
    let mut counts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (column, cluster) in capture.manifest.clusters.iter().enumerate() {
        for (kind, count) in &cluster.counts {
            counts.entry(kind.clone()).or_insert_with(|| vec![0; clusters.len()])[column] = *count;
        }
    }
    let pending = capture.clusters.iter().flat_map(|c| pending_groups(&c.name, c.workloads())).collect();
    Summary { clusters, counts, pending }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workload(name: &str, conditions: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"}, "status": {"conditions": conditions}})
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn workloads_waiting_alike_are_one_group_and_admitted_ones_none() {
        let short = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 1 more needed";
        let workloads = [
            workload("b", json!([condition(QUOTA_RESERVED, "False", "Pending", short)])),
            workload("a", json!([condition(QUOTA_RESERVED, "False", "Pending", short)])),
            workload("c", json!([condition(QUOTA_RESERVED, "False", "Inadmissible", "ClusterQueue cq is inactive")])),
            workload(
                "checking",
                json!([
                    condition(QUOTA_RESERVED, "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
                    condition(ADMITTED, "False", "NoReservation", "The workload has not all checks ready"),
                ]),
            ),
            workload(
                "running",
                json!([
                    condition(QUOTA_RESERVED, "True", "QuotaReserved", ""),
                    condition(ADMITTED, "True", "Admitted", ""),
                ]),
            ),
            workload("done", json!([condition(FINISHED, "True", "Succeeded", "")])),
            workload("new", json!([])),
        ];
        let groups = pending_groups("manager", &workloads);
        assert_eq!(groups.len(), 4, "{groups:#?}");
        assert_eq!(
            groups[0],
            PendingGroup {
                cluster: "manager".into(),
                condition: QUOTA_RESERVED.into(),
                reason: "Pending".into(),
                message: short.into(),
                workloads: vec!["default/a".into(), "default/b".into()],
            }
        );
        let checking = groups.iter().find(|g| g.condition == ADMITTED).unwrap();
        assert_eq!(
            (checking.reason.as_str(), checking.workloads.as_slice()),
            ("NoReservation", &["default/checking".to_string()][..])
        );
        assert!(groups.iter().any(|g| g.reason == "Inadmissible" && g.workloads == ["default/c"]));
        assert!(groups.iter().any(|g| g.message.starts_with("no condition yet") && g.workloads == ["default/new"]));
    }
}
