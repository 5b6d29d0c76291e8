//! `capture.json`, the archive's first file: when and from which clusters it was taken, what it
//! holds (counts per kind), and — as explicitly — what it left out and why.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{LOG_BYTES, LOG_LINES, MAX_EVENTS};
use crate::api::kueue::Role;

/// The manifest's own version: a reader (`up --from`) checks it.
pub const FORMAT: &str = "kueue-ext.dev/capture/v1alpha1";

/// The archive's manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: String,
    /// RFC 3339, UTC.
    pub captured_at: String,
    /// `kubectl-kueue_ext` version that took it.
    pub plugin_version: String,
    /// Where the clusters were found: the sandbox, or a kubeconfig.
    pub origin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    pub clusters: Vec<ClusterEntry>,
    pub left_out: Vec<LeftOut>,
}

/// One cluster of the capture; its files are under the directory of its name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterEntry {
    pub name: String,
    pub context: String,
    pub role: Role,
    /// Kueue's version: its image tag, or the sandbox's pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kueue_version: Option<String>,
    /// Where Kueue's Configuration was read (`ConfigMap kueue-system/kueue-manager-config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kueue_configuration: Option<String>,
    /// Objects per kind (`ClusterQueue`, `Job.v1.batch`, `Node`, `Event`).
    pub counts: BTreeMap<String, usize>,
    /// Files in its directory, each with what it holds.
    pub files: BTreeMap<String, String>,
    /// Kinds this cluster does not serve (no CRD), left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_served: Vec<String>,
    /// What could not be read here, and why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unread: BTreeMap<String, String>,
    /// Logs cut to their last lines (the file's name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated_logs: Vec<String>,
    /// Events dropped past the newest ones kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub events_dropped: usize,
}

impl ClusterEntry {
    /// A cluster nothing has been read of yet.
    pub fn new(name: &str, context: &str, role: Role) -> Self {
        ClusterEntry {
            name: name.into(),
            context: context.into(),
            role,
            kueue_version: None,
            kueue_configuration: None,
            counts: BTreeMap::new(),
            files: BTreeMap::new(),
            not_served: Vec::new(),
            unread: BTreeMap::new(),
            truncated_logs: Vec::new(),
            events_dropped: 0,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Something a capture does not hold, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub what: String,
    pub why: String,
}

fn left(what: impl Into<String>, why: impl Into<String>) -> LeftOut {
    LeftOut { what: what.into(), why: why.into() }
}

/// Everything the capture left out: what it never reads, then what the options and each
/// cluster made it leave.
pub fn left_out(namespace: Option<&str>, selector: Option<&str>, clusters: &[ClusterEntry]) -> Vec<LeftOut> {
    let mut out = vec![
        left(
            "Secrets",
            "never read: not their data, not even their names; a MultiKueueCluster keeps the name of the Secret it refers to, not its content",
        ),
        left(
            "ServiceAccount tokens and kubeconfig credentials",
            "never read; the manifest names each cluster's context only",
        ),
        left(
            "ConfigMaps other than Kueue's Configuration and kueue-ext's integrations",
            "never read; kueue-ext's integrations ConfigMap holds kinds and field paths only",
        ),
        left(
            "values of containers' inline environment variables",
            "replaced in jobs' and Workloads' pod templates, as they may hold credentials; names and valueFrom references kept",
        ),
        left(
            "managedFields and kubectl's last-applied-configuration annotation",
            "the API server's bookkeeping, and a second copy of each object",
        ),
        left(
            "of nodes, everything but name, labels, taints, allocatable and capacity",
            "not needed to reproduce scheduling",
        ),
        left(
            format!("pod logs beyond the last {LOG_LINES} lines or {} MiB per container", LOG_BYTES >> 20),
            "bounded; logs of pods other than Kueue's and kueue-ext's controller are not read",
        ),
        left("Pods and every kind not listed in the manifest", "not part of a queue setup or of a job's state"),
    ];
    if let Some(namespace) = namespace {
        out.push(left(
            format!("LocalQueues, Workloads, jobs and events outside namespace {namespace}"),
            "--namespace; cluster-scoped objects (flavors, ClusterQueues, nodes) are all kept",
        ));
    }
    if let Some(selector) = selector {
        out.push(left(
            format!("jobs not matching {selector}, and their Workloads"),
            "--selector; a Workload matching it itself is kept",
        ));
    }
    for cluster in clusters {
        for kind in &cluster.not_served {
            out.push(left(format!("{kind} on {}", cluster.name), "not served there (no CRD)"));
        }
        for (what, why) in &cluster.unread {
            out.push(left(format!("{what} on {}", cluster.name), format!("could not be read: {why}")));
        }
        if !cluster.truncated_logs.is_empty() {
            out.push(left(
                format!("the start of {} log(s) on {}", cluster.truncated_logs.len(), cluster.name),
                format!("kept to the last {LOG_LINES} lines or {} MiB", LOG_BYTES >> 20),
            ));
        }
        if cluster.events_dropped > 0 {
            out.push(left(
                format!("{} older event(s) on {}", cluster.events_dropped, cluster.name),
                format!("the newest {MAX_EVENTS} are kept"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> ClusterEntry {
        ClusterEntry::new(name, &format!("kueue-ext-{name}"), Role::Worker)
    }

    fn whats(list: &[LeftOut]) -> Vec<&str> {
        list.iter().map(|l| l.what.as_str()).collect()
    }

    #[test]
    fn secrets_are_always_said_to_be_left_out() {
        let list = left_out(None, None, &[]);
        assert_eq!(list[0].what, "Secrets");
        assert!(
            whats(&list).contains(&"ConfigMaps other than Kueue's Configuration and kueue-ext's integrations"),
            "{list:#?}"
        );
        assert!(
            whats(&list).iter().any(|w| w.starts_with("pod logs beyond the last 2000 lines or 1 MiB")),
            "{list:#?}"
        );
        assert!(!whats(&list).iter().any(|w| w.contains("outside namespace")), "no filter, no filter line");
    }

    #[test]
    fn filters_and_each_clusters_gaps_are_named() {
        let mut worker = entry("worker1");
        worker.not_served = vec!["Topology".into(), "JobSet.v1alpha2.jobset.x-k8s.io".into()];
        worker.unread.insert("Nodes".into(), "forbidden".into());
        worker.truncated_logs = vec!["logs/kueue.log".into()];
        worker.events_dropped = 12;
        let list = left_out(Some("team-a"), Some("app=train"), &[entry("manager"), worker]);
        let whats = whats(&list);
        for expected in [
            "LocalQueues, Workloads, jobs and events outside namespace team-a",
            "jobs not matching app=train, and their Workloads",
            "Topology on worker1",
            "JobSet.v1alpha2.jobset.x-k8s.io on worker1",
            "Nodes on worker1",
            "the start of 1 log(s) on worker1",
            "12 older event(s) on worker1",
        ] {
            assert!(whats.contains(&expected), "{expected} missing in {whats:#?}");
        }
        let nodes = list.iter().find(|l| l.what == "Nodes on worker1").unwrap();
        assert_eq!(nodes.why, "could not be read: forbidden");
    }
}
