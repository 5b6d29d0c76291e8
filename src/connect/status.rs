//! MultiKueue's connections as the manager's Kueue reports them: each MultiKueueCluster's and
//! the AdmissionCheck's `Active` condition, with Kueue's reason and message.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

/// A MultiKueueCluster as the manager's Kueue sees it.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct ClusterConnection {
    pub name: String,
    pub active: bool,
    pub reason: String,
    pub message: String,
}

/// MultiKueue's view on the manager: each worker connection and the AdmissionCheck.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct Connections {
    /// The AdmissionCheck these are seen through.
    #[serde(skip)]
    pub admission_check: String,
    pub admission_check_active: bool,
    pub clusters: Vec<ClusterConnection>,
}

impl Connections {
    pub fn all_active(&self, expected: usize) -> bool {
        self.admission_check_active && self.clusters.len() == expected && self.clusters.iter().all(|c| c.active)
    }

    /// Only the connections of `workers`.
    pub fn of(mut self, workers: &[&str]) -> Connections {
        self.clusters.retain(|c| workers.contains(&c.name.as_str()));
        self
    }

    /// What is not connected yet, in words: each inactive worker with Kueue's reason and message.
    pub fn in_words(&self, expected: usize) -> String {
        let mut parts: Vec<String> = self
            .clusters
            .iter()
            .filter(|c| !c.active)
            .map(|c| format!("worker {} is not connected ({}: {})", c.name, c.reason, c.message))
            .collect();
        if self.clusters.len() != expected {
            parts.push(format!("{} of {expected} MultiKueueClusters exist", self.clusters.len()));
        }
        if !self.admission_check_active {
            parts.push(format!("the AdmissionCheck {} is not active", self.admission_check));
        }
        parts.join("; ")
    }
}

fn active_condition(obj: &Value) -> (bool, String, String) {
    let found = obj["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Active");
    match found {
        Some(c) => (
            c["status"] == "True",
            c["reason"].as_str().unwrap_or_default().to_string(),
            c["message"].as_str().unwrap_or_default().to_string(),
        ),
        None => (false, "Pending".into(), "no Active condition yet".into()),
    }
}

/// Reads the MultiKueueClusters and the AdmissionCheck `admission_check` from the manager.
pub async fn connections(manager: &Client, admission_check: &str) -> Result<Connections, kube::Error> {
    let clusters = untyped(manager, "MultiKueueCluster", "multikueueclusters").list(&Default::default()).await?;
    let check = untyped(manager, "AdmissionCheck", "admissionchecks").get_opt(admission_check).await?;
    let check_active = check.map(|c| active_condition(&serde_json::to_value(c).unwrap_or_default()).0).unwrap_or(false);
    let mut out: Vec<ClusterConnection> = clusters
        .items
        .into_iter()
        .map(|c| {
            let value = serde_json::to_value(&c).unwrap_or_default();
            let (active, reason, message) = active_condition(&value);
            ClusterConnection { name: c.metadata.name.unwrap_or_default(), active, reason, message }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Connections {
        admission_check: admission_check.to_string(),
        admission_check_active: check_active,
        clusters: out,
    })
}

fn untyped(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "kueue.x-k8s.io/v1beta2".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::all_with(client.clone(), &resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connections() -> Connections {
        let cluster = |name: &str, active| ClusterConnection {
            name: name.into(),
            active,
            reason: if active { "Active" } else { "ClientConnectionFailed" }.into(),
            message: if active { "Connected" } else { "jobsets.jobset.x-k8s.io is forbidden" }.into(),
        };
        Connections {
            admission_check: "multikueue".into(),
            admission_check_active: false,
            clusters: vec![cluster("other", true), cluster("worker1", false)],
        }
    }

    #[test]
    fn connections_not_yet_active_are_said_in_words() {
        assert_eq!(
            connections().of(&["worker1"]).in_words(2),
            "worker worker1 is not connected (ClientConnectionFailed: jobsets.jobset.x-k8s.io is forbidden); \
             1 of 2 MultiKueueClusters exist; the AdmissionCheck multikueue is not active"
        );
    }

    #[test]
    fn only_the_named_workers_count() {
        let mut seen = connections();
        seen.admission_check_active = true;
        assert!(seen.clone().of(&["other"]).all_active(1));
        assert!(!seen.of(&["other", "worker1"]).all_active(2));
    }
}
