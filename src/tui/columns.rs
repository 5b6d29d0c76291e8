//! The cells of each table, as text: one definition for the TUI and for `watch --once`, so a
//! script reads the same words a user sees.

use crate::model::snapshot::PodCounts;
use std::collections::BTreeMap;

use crate::model::{ClusterRow, JobRow, QueueRow, Waiting};
use crate::quantity;

pub const JOB_HEADERS: [&str; 12] =
    ["NAMESPACE", "NAME", "KIND", "STATUS", "QUEUE", "SUSP", "WORKLOAD", "CHECKS", "CLUSTER", "MIRROR", "PODS", "AGE"];

/// Age as kubectl prints it: `45s`, `12m`, `5h`, `3d`.
pub fn age(created: Option<i64>, now: i64) -> String {
    match created {
        Some(created) => crate::model::age(now - created),
        None => "-".into(),
    }
}

/// Pods by phase: pending/running/succeeded/failed.
pub fn pods(pods: PodCounts) -> String {
    if pods.total() == 0 {
        return "-".into();
    }
    format!("{}/{}/{}/{}", pods.pending, pods.running, pods.succeeded, pods.failed)
}

fn or_dash(text: Option<&str>) -> String {
    text.filter(|t| !t.is_empty()).unwrap_or("-").to_string()
}

/// The worker that runs the job: the one MultiKueue chose, or the worker the job lives on.
pub fn cluster(row: &JobRow, manager: &str) -> String {
    match row.workload.as_ref().and_then(|w| w.cluster_name.as_deref()) {
        Some(chosen) => chosen.into(),
        None if row.key.cluster != manager => row.key.cluster.clone(),
        None => "-".into(),
    }
}

pub fn job_cells(row: &JobRow, manager: &str, now: i64) -> [String; 12] {
    let checks: Vec<String> =
        row.workload.iter().flat_map(|w| &w.checks).map(|c| format!("{}:{}", c.name, c.state)).collect();
    [
        row.key.namespace.clone(),
        row.key.name.clone(),
        row.key.kind.name().into(),
        row.status.to_string(),
        or_dash(row.queue.as_deref()),
        if row.job.suspended { "yes" } else { "no" }.into(),
        row.workload.as_ref().map(|w| w.state().to_string()).unwrap_or_else(|| "-".into()),
        if checks.is_empty() { "-".into() } else { checks.join(",") },
        cluster(row, manager),
        row.mirror().map(|m| m.state().to_string()).unwrap_or_else(|| "-".into()),
        pods(row.pods()),
        age(row.job.created, now),
    ]
}

pub const QUEUE_HEADERS: [&str; 7] = ["CLUSTER", "CLUSTERQUEUE", "ACTIVE", "PENDING", "RESERVING", "ADMITTED", "USAGE"];

/// `default-flavor cpu 3/4 75%, memory 3Gi/16Gi 18%`: reserved against nominal quota.
pub fn usage(queue: &QueueRow) -> String {
    let parts: Vec<String> = queue
        .quotas
        .iter()
        .map(|q| {
            let percent =
                if q.nominal > 0.0 { format!(" {:.0}%", 100.0 * q.reserved / q.nominal) } else { String::new() };
            format!(
                "{} {} {}/{}{percent}",
                q.flavor,
                q.resource,
                quantity::format(&q.resource, q.reserved),
                quantity::format(&q.resource, q.nominal)
            )
        })
        .collect();
    if parts.is_empty() { "-".into() } else { parts.join(", ") }
}

pub fn active_word(queue: &QueueRow) -> String {
    match (&queue.stop_policy, &queue.active) {
        (Some(policy), _) => format!("Stopped ({policy})"),
        (None, Some(c)) if c.is_true() => "yes".into(),
        (None, Some(c)) => format!("no ({})", c.reason),
        (None, None) => "-".into(),
    }
}

pub fn queue_cells(queue: &QueueRow) -> [String; 7] {
    [
        queue.cluster.clone(),
        queue.name.clone(),
        active_word(queue),
        queue.pending.to_string(),
        queue.reserving.to_string(),
        queue.admitted.to_string(),
        usage(queue),
    ]
}

pub const PENDING_HEADERS: [&str; 8] =
    ["POS", "IN LQ", "NAMESPACE", "JOB", "LOCALQUEUE", "PRIORITY", "AGE", "REQUESTS"];

/// `cpu 2, memory 4Gi`: what a Workload asks, by resource.
pub fn requests(requests: &BTreeMap<String, f64>) -> String {
    let parts: Vec<String> = requests
        .iter()
        .map(|(resource, amount)| format!("{resource} {}", quantity::format(resource, *amount)))
        .collect();
    if parts.is_empty() { "-".into() } else { parts.join(", ") }
}

/// A pending Workload: its positions, its job (`kind/name`, else the Workload's name).
pub fn waiting_cells(waiting: &Waiting, now: i64) -> [String; 8] {
    let job = match &waiting.job {
        Some(key) => format!("{}/{}", key.kind.name().to_lowercase(), key.name),
        None => format!("workload/{}", waiting.workload),
    };
    [
        waiting.position.to_string(),
        waiting.in_local_queue.to_string(),
        waiting.namespace.clone(),
        job,
        waiting.local_queue.clone(),
        waiting.priority.to_string(),
        age(waiting.created, now),
        requests(&waiting.requests),
    ]
}

pub const CLUSTER_HEADERS: [&str; 9] =
    ["NAME", "ROLE", "CONTEXT", "WATCH", "MULTIKUEUE", "JOBS", "FREE/QUOTA", "COPIES D/W/R/X", "PROBLEMS"];

/// MultiKueue's copies on the cluster: dispatched/won/removed/rejected (for the manager, the
/// rejections of its check), `-` where there were none.
pub fn dispatch(cluster: &ClusterRow) -> String {
    let d = &cluster.dispatch;
    if d.dispatched + d.rejections() == 0 {
        return "-".into();
    }
    format!("{}/{}/{}/{}", d.dispatched, d.won, d.removed, d.rejections())
}

/// `cpu 2/32, memory 120Gi/128Gi`: what the cluster's ClusterQueues have free (nominal quota
/// less reservations, never below 0) against their nominal quota; each flavor named where
/// there are several (`spot cpu 2/8, on-demand cpu 0/4`).
pub fn free(cluster: &ClusterRow) -> String {
    let mut parts: Vec<String> = Vec::new();
    let one_flavor = cluster.quota.windows(2).all(|w| w[0].flavor == w[1].flavor);
    let mut flavor = one_flavor.then(|| cluster.quota.first().map(|q| &q.flavor)).flatten();
    for q in &cluster.quota {
        let amount = |v: f64| quantity::format(&q.resource, v);
        let pair = format!("{} {}/{}", q.resource, amount((q.nominal - q.reserved).max(0.0)), amount(q.nominal));
        if flavor == Some(&q.flavor) {
            parts.push(pair);
        } else {
            parts.push(format!("{} {pair}", q.flavor));
            flavor = Some(&q.flavor);
        }
    }
    if parts.is_empty() { "-".into() } else { parts.join(", ") }
}

/// Whether the manager's MultiKueue reaches the cluster: `Active`, `ClientConnectionFailed`.
pub fn connection(cluster: &ClusterRow) -> String {
    match &cluster.connection {
        Some(c) if c.is_true() => "Active".into(),
        Some(c) => c.reason.clone(),
        None => "-".into(),
    }
}

pub fn cluster_cells(cluster: &ClusterRow) -> [String; 9] {
    let role = match cluster.role {
        crate::model::snapshot::Role::Manager => "manager",
        crate::model::snapshot::Role::Worker => "worker",
    };
    let problems: Vec<String> = cluster.problems.iter().map(|(kind, why)| format!("{kind}: {why}")).collect();
    [
        cluster.name.clone(),
        role.into(),
        or_dash(cluster.context.as_deref()),
        match (&cluster.context, cluster.reachable) {
            (None, _) => "-".into(),
            (Some(_), true) => "ok".into(),
            (Some(_), false) => "unreachable".into(),
        },
        connection(cluster),
        cluster.jobs.to_string(),
        free(cluster),
        dispatch(cluster),
        if problems.is_empty() { "-".into() } else { problems.join("; ") },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FlavorQuota;

    #[test]
    fn ages_read_like_kubectl() {
        let cases = [
            (Some(0), 45, "45s"),
            (Some(0), 600, "10m"),
            (Some(0), 5 * 3600, "5h"),
            (Some(0), 3 * 86400, "3d"),
            (None, 1, "-"),
        ];
        for (created, now, expected) in cases {
            assert_eq!(age(created, now), expected);
        }
    }

    #[test]
    fn free_quota_names_flavors_only_where_there_are_several() {
        let quota = crate::model::fixtures::flavor_quota;
        let cluster = |quota: Vec<FlavorQuota>| ClusterRow {
            name: "worker1".into(),
            context: Some("ctx".into()),
            role: crate::model::snapshot::Role::Worker,
            reachable: true,
            problems: Default::default(),
            connection: None,
            kind_cluster: None,
            jobs: 0,
            workloads: 0,
            quota,
            dispatch: Default::default(),
        };
        let one = cluster(vec![quota("default", "cpu", 32.0, 30.0), quota("default", "memory", 2.0 * GI, 3.0 * GI)]);
        assert_eq!(free(&one), "cpu 2/32, memory 0/2Gi");
        let two = cluster(vec![quota("on-demand", "cpu", 4.0, 4.0), quota("spot", "cpu", 8.0, 0.5)]);
        assert_eq!(free(&two), "on-demand cpu 0/4, spot cpu 7500m/8");
        assert_eq!(free(&cluster(Vec::new())), "-");
    }

    const GI: f64 = (1u64 << 30) as f64;

    #[test]
    fn pods_read_pending_running_succeeded_failed() {
        assert_eq!(pods(PodCounts { pending: 1, running: 3, succeeded: 0, failed: 2 }), "1/3/0/2");
        assert_eq!(pods(PodCounts::default()), "-");
    }
}
