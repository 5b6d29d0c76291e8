//! `simulate`: would these jobs be admitted, and where? Answered by Kueue's own scheduler in a
//! throwaway sandbox that replays a capture with its jobs (`up --from … --with-jobs`), never by a
//! model of it. What is decided from the Workloads the throwaway clusters hold is pure and lives
//! here: when the replayed jobs have settled ([`settled`]), when a submitted job is decided
//! ([`decided`]), whom it preempted ([`preempted_by`]) and what it comes to ([`outcome`]).
//! [`run`] does the I/O: the capture, the sandbox, the submission and the watch.

pub mod run;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::api::kueue::{ADMITTED, EVICTED, QUOTA_RESERVED};

/// What the replay cannot reproduce, said with every answer.
pub const CAVEATS: [&str; 2] = [
    "the capture's jobs were replayed in creation order as placeholders: Kueue admitted them anew, which may differ \
     from the captured admissions",
    "under MultiKueue, the worker a replayed job landed on is Kueue's choice in the throwaway sandbox, and may differ \
     from the capture where several fit",
];

/// The answer for one submitted job.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// `kind.group/name`, as kubectl names it.
    pub job: String,
    pub namespace: String,
    /// Where it came from: `file` or `file#document`.
    pub origin: String,
    pub admitted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
    /// Pod set → the flavors it was given, each once.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub flavors: BTreeMap<String, Vec<String>>,
    /// The worker MultiKueue picked (`status.clusterName`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// The jobs whose Workloads were preempted for it, `kind.group/namespace/name` on a cluster.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preempts: Vec<String>,
    /// While it waits: Kueue's QuotaReserved (or Admitted) reason and message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// While it waits: `explain`'s reasons, from the joined model of the throwaway clusters.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

impl Outcome {
    /// The answer in one sentence, for the table.
    pub fn sentence(&self) -> String {
        let mut out = if self.admitted {
            let mut out = "admitted".to_string();
            if let Some(worker) = &self.worker {
                out.push_str(&format!(" on {worker}"));
            }
            let flavors: Vec<&str> = self.flavors.values().flatten().map(String::as_str).collect();
            let mut unique = flavors.clone();
            unique.sort();
            unique.dedup();
            match unique.as_slice() {
                [] => {}
                [one] => out.push_str(&format!(" with flavor {one}")),
                _ => {
                    let sets: Vec<String> =
                        self.flavors.iter().map(|(set, f)| format!("{set}: {}", f.join("+"))).collect();
                    out.push_str(&format!(" with flavors {}", sets.join(", ")));
                }
            }
            out
        } else {
            let how = match (&self.reason, &self.message) {
                (Some(reason), Some(message)) if !message.is_empty() => format!("{reason}: {message}"),
                (Some(reason), _) => reason.clone(),
                (None, _) => "Kueue did not decide in time".to_string(),
            };
            format!("not admitted: {how}")
        };
        if !self.preempts.is_empty() {
            out.push_str(&format!("; preempts {}", self.preempts.join(", ")));
        }
        out
    }
}

/// Every simulated job's answer and what the replay could not reproduce.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The capture the throwaway sandbox replayed.
    pub capture: String,
    pub jobs: Vec<Outcome>,
    /// Caveats of any replay, then what this capture's replay did not reproduce.
    pub not_as_captured: Vec<String>,
}

impl Report {
    pub fn all_admitted(&self) -> bool {
        self.jobs.iter().all(|j| j.admitted)
    }
}

fn condition<'a>(workload: &'a Value, kind: &str) -> Option<&'a Value> {
    workload["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

fn is_true(workload: &Value, kind: &str) -> bool {
    condition(workload, kind).is_some_and(|c| c["status"] == "True")
}

/// The replayed jobs have settled when each has its Workload and Kueue has decided on every
/// Workload (QuotaReserved is there, True or False): `expected` is how many jobs Kueue queues.
pub fn settled(expected: usize, workloads: &[Value]) -> bool {
    workloads.len() >= expected && workloads.iter().all(|w| condition(w, QUOTA_RESERVED).is_some())
}

/// Kueue has decided on a submitted job's Workload: admitted (MultiKueue's check passed too),
/// or held with a reason that is not a preemption under way (its victims are still leaving).
pub fn decided(workload: &Value) -> bool {
    if is_true(workload, ADMITTED) {
        return true;
    }
    match condition(workload, QUOTA_RESERVED) {
        Some(c) if c["status"] == "False" => {
            c["reason"] != "WaitingForPreemptedWorkloads" && !message(c).contains("Pending the preemption of")
        }
        _ => false,
    }
}

fn message(condition: &Value) -> &str {
    condition["message"].as_str().unwrap_or_default()
}

/// The `JobUID` (else the Workload `UID`) a preempted Workload's Evicted condition names as the
/// preemptor, when it was preempted: Kueue writes "Preempted to accommodate a workload (UID: W,
/// JobUID: J) due to …".
pub fn preemptor(workload: &Value) -> Option<(String, String)> {
    let evicted = condition(workload, EVICTED).filter(|c| c["status"] == "True" && c["reason"] == "Preempted")?;
    let text = message(evicted);
    let field = |key: &str| {
        let start = text.find(key)? + key.len();
        let rest = &text[start..];
        let end = rest.find([',', ')']).unwrap_or(rest.len());
        Some(rest[..end].trim().to_string())
    };
    Some((field("(UID: ").unwrap_or_default(), field("JobUID: ").unwrap_or_default()))
}

/// The jobs preempted for the job of `job_uid` whose Workload has `workload_uid`, among
/// `(cluster, workload)` pairs, named `kind.group/namespace/name` after the Workload's owner
/// (and `on CLUSTER` off the manager). Workloads preempted before the submission are in
/// `before` (their uids) and are left out.
pub fn preempted_by(
    job_uid: &str,
    workload_uid: &str,
    workloads: &[(String, Value)],
    before: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = workloads
        .iter()
        .filter(|(_, w)| !before.iter().any(|uid| w["metadata"]["uid"] == uid.as_str()))
        .filter(|(_, w)| {
            preemptor(w)
                .is_some_and(|(wl, job)| (!job.is_empty() && job == job_uid) || (!wl.is_empty() && wl == workload_uid))
        })
        .map(|(cluster, w)| {
            let name = owner_job(w);
            if cluster == "manager" { name } else { format!("{name} on {cluster}") }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The job that owns a Workload, `kind.group/namespace/name`; the Workload itself without one.
fn owner_job(workload: &Value) -> String {
    let namespace = workload["metadata"]["namespace"].as_str().unwrap_or_default();
    let owners = workload["metadata"]["ownerReferences"].as_array();
    let owner = owners.and_then(|o| o.iter().find(|r| r["controller"] == true).or_else(|| o.first()));
    match owner {
        Some(owner) => {
            let kind = owner["kind"].as_str().unwrap_or_default().to_lowercase();
            let group = owner["apiVersion"].as_str().and_then(|v| v.rsplit_once('/')).map(|(g, _)| g);
            let name = owner["name"].as_str().unwrap_or_default();
            match group {
                Some(group) => format!("{kind}.{group}/{namespace}/{name}"),
                None => format!("{kind}/{namespace}/{name}"),
            }
        }
        None => format!("workload/{namespace}/{}", workload["metadata"]["name"].as_str().unwrap_or_default()),
    }
}

/// What a submitted job's Workload (none: Kueue made none in time) comes to; `job` and `origin`
/// name it, `preempts` are whom it preempted.
pub fn outcome(job: &str, namespace: &str, origin: &str, workload: Option<&Value>, preempts: Vec<String>) -> Outcome {
    let mut out = Outcome {
        job: job.to_string(),
        namespace: namespace.to_string(),
        origin: origin.to_string(),
        preempts,
        ..Outcome::default()
    };
    let Some(workload) = workload else {
        out.reason = Some("NoWorkload".into());
        out.message = Some("Kueue made no Workload for it in time: is it on a LocalQueue?".into());
        return out;
    };
    let admission = &workload["status"]["admission"];
    out.cluster_queue = admission["clusterQueue"].as_str().map(String::from);
    for set in admission["podSetAssignments"].as_array().into_iter().flatten() {
        let name = set["name"].as_str().unwrap_or("main").to_string();
        let mut flavors: Vec<String> = set["flavors"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(_, f)| f.as_str().map(String::from))
            .collect();
        flavors.sort();
        flavors.dedup();
        out.flavors.insert(name, flavors);
    }
    out.worker = workload["status"]["clusterName"].as_str().map(String::from);
    out.admitted = is_true(workload, ADMITTED);
    if !out.admitted {
        // Quota first: while it is not reserved nothing else is; once it is, Admitted says what is missing.
        let held = condition(workload, QUOTA_RESERVED)
            .filter(|c| c["status"] == "False")
            .or_else(|| condition(workload, ADMITTED).filter(|c| c["status"] == "False"));
        out.reason = Some(held.and_then(|c| c["reason"].as_str()).unwrap_or("Pending").to_string());
        out.message = held.map(|c| message(c).to_string());
    }
    out
}
