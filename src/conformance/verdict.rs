//! Each check's verdict from the objects observed: pure, so every rule is tested without a
//! cluster. `Err` carries the evidence: what the contract expects, what was seen, on what.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use serde_json::Value;

use super::diff::differences;
use super::report::Evidence;
use crate::api::condition;
use crate::api::kueue::{FINISHED, MULTIKUEUE_CONTROLLER, PODS_READY, QUOTA_RESERVED, Workload};
use crate::integrations::declarative::ConfiguredJob;
use crate::jobframework::generic_job::GenericJob;
use crate::jobframework::podset::PODSET_LABEL;
use crate::jobframework::workload;
use crate::quantity;

pub type Verdict = Result<(), Evidence>;

/// `ExternalJob ns/name`.
pub fn job_ref(job: &ConfiguredJob) -> String {
    format!("{} {}/{}", job.gvk().kind, job.namespace().unwrap_or_default(), job.name_any())
}

pub fn workload_ref(wl: &Workload) -> String {
    format!("Workload {}/{}", wl.namespace().unwrap_or_default(), wl.name_any())
}

fn pod_ref(pod: &Pod) -> String {
    format!("Pod {}/{}", pod.namespace().unwrap_or_default(), pod.name_any())
}

fn controller_of(wl: &Workload) -> Option<&OwnerReference> {
    wl.owner_references().iter().find(|o| o.controller == Some(true))
}

fn is_controlled_by(wl: &Workload, job: &ConfiguredJob) -> bool {
    let gvk = job.gvk();
    controller_of(wl)
        .is_some_and(|o| o.kind == gvk.kind && o.name == job.name_any() && Some(o.uid.as_str()) == job.uid().as_deref())
}

fn describe_controller(wl: &Workload) -> String {
    match controller_of(wl) {
        Some(o) => format!("controller {} {} uid {}", o.kind, o.name, o.uid),
        None => "no controller".into(),
    }
}

fn describe_condition(wl: &Workload, type_: &str) -> String {
    match condition::find(wl.conditions(), type_) {
        Some(c) => format!("{type_}={} reason {:?} message {:?}", c.status, c.reason, c.message),
        None => format!("no {type_} condition"),
    }
}

/// The job's conditions (or its whole status, for kinds without conditions), on one line.
pub fn job_status(job: &ConfiguredJob) -> String {
    let status = &job.object()["status"];
    match status["conditions"].as_array() {
        Some(conditions) if !conditions.is_empty() => conditions
            .iter()
            .map(|c| format!("{}={}", c["type"].as_str().unwrap_or("?"), c["status"].as_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", "),
        _ if status.is_null() => "no status".into(),
        _ => status.to_string(),
    }
}

pub fn suspended_on_create(job: &ConfiguredJob) -> Verdict {
    if job.is_suspended() {
        return Ok(());
    }
    let suspend = &job.integration().suspend;
    let wanted = suspend.suspended.clone().unwrap_or(Value::Bool(true));
    let found = suspend.path.get(job.object()).map_or_else(|| "(absent)".to_string(), Value::to_string);
    Err(Evidence::new(
        format!("{} = {wanted} in the object as created: the webhook suspends a job that names a queue", suspend.path),
        format!("{} = {found}", suspend.path),
    )
    .on(job_ref(job)))
}

pub fn one_workload(job: &ConfiguredJob, workloads: &[Workload]) -> Verdict {
    let expected = workload::name_for(job);
    if let [wl] = workloads
        && wl.name_any() == expected
        && is_controlled_by(wl, job)
    {
        return Ok(());
    }
    let seen: Vec<String> =
        workloads.iter().map(|w| format!("{} ({})", w.name_any(), describe_controller(w))).collect();
    let mut evidence = Evidence::new(
        format!(
            "exactly one Workload, {expected}, with a controller reference to {} {} uid {}",
            job.gvk().kind,
            job.name_any(),
            job.uid().unwrap_or_default()
        ),
        format!("{} Workload(s) in the namespace: {}", workloads.len(), list_or_none(&seen)),
    )
    .on(job_ref(job));
    for wl in workloads {
        evidence = evidence.on(workload_ref(wl));
    }
    Err(evidence)
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() { "none".into() } else { items.join(", ") }
}

/// Requests of each container, by name, as numbers (`1` and `1000m` are the same request).
fn requests(containers: &[Container]) -> BTreeMap<String, BTreeMap<String, Option<f64>>> {
    containers
        .iter()
        .map(|c| {
            let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
            let values = requests.into_iter().flatten().map(|(k, q)| (k.clone(), quantity::parse(&q.0))).collect();
            (c.name.clone(), values)
        })
        .collect()
}

fn show_requests(containers: &[Container]) -> String {
    containers
        .iter()
        .map(|c| {
            let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
            let list: Vec<String> = requests.into_iter().flatten().map(|(k, q)| format!("{k}={}", q.0)).collect();
            format!("{}: {}", c.name, if list.is_empty() { "none".into() } else { list.join(",") })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default()
}

/// Every pod set of the admitted Workload has as many pods as admitted, labelled with its name,
/// each asking what the pod set asks.
pub fn pod_sets_match(wl: &Workload, pods: &[Pod]) -> Verdict {
    let admitted_count =
        |name: &str| wl.admission()?.pod_set_assignments.iter().find(|a| a.name == name).and_then(|a| a.count);
    let mut problems = Vec::new();
    // Pods are not relabelled nor resized: a wrong one stays wrong; a missing one may come.
    let mut settled = false;
    let mut summary = Vec::new();
    for pod_set in &wl.spec.pod_sets {
        let count = admitted_count(&pod_set.name).unwrap_or(pod_set.count);
        let members: Vec<&Pod> = pods.iter().filter(|p| p.labels().get(PODSET_LABEL) == Some(&pod_set.name)).collect();
        summary.push(format!("{} × {count}", pod_set.name));
        if members.len() != count as usize {
            problems.push(format!(
                "pod set {}: {count} pod(s) admitted, {} labelled {PODSET_LABEL}={}",
                pod_set.name,
                members.len(),
                pod_set.name
            ));
        }
        let template = pod_set.template.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
        for pod in members {
            if requests(containers(pod)) != requests(template) {
                settled = true;
                problems.push(format!(
                    "{} asks {}, pod set {} asks {}",
                    pod_ref(pod),
                    show_requests(containers(pod)),
                    pod_set.name,
                    show_requests(template)
                ));
            }
        }
    }
    for pod in pods {
        match pod.labels().get(PODSET_LABEL) {
            None => problems.push(format!("{} has no {PODSET_LABEL} label", pod_ref(pod))),
            Some(name) if !wl.spec.pod_sets.iter().any(|p| &p.name == name) => {
                problems.push(format!("{} is labelled for pod set {name:?}, which the Workload has not", pod_ref(pod)))
            }
            Some(_) => continue,
        }
        settled = true;
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Evidence::new(
        format!(
            "per pod set of {} ({}): that many pods, labelled {PODSET_LABEL}=<pod set> at admission, with the pod \
             set's requests",
            workload_ref(wl),
            summary.join(", ")
        ),
        problems.join("\n"),
    )
    .settled(settled)
    .on(workload_ref(wl)))
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

/// The job runs, and every pod it made carries the flavor's node labels as its node selector
/// and runs (or has run) on a node.
pub fn started_with_flavor(
    job: &ConfiguredJob,
    flavor: &str,
    node_labels: &BTreeMap<String, String>,
    pods: &[Pod],
) -> Verdict {
    let mut problems = Vec::new();
    // A pod's node selector never changes: one without the flavor's labels settles it.
    let mut settled = false;
    if job.is_suspended() {
        problems.push("the job is still suspended".to_string());
    }
    if pods.is_empty() {
        problems.push("no pod created".to_string());
    }
    for pod in pods {
        let selector = pod.spec.as_ref().and_then(|s| s.node_selector.clone()).unwrap_or_default();
        if !node_labels.iter().all(|(k, v)| selector.get(k) == Some(v)) {
            settled = true;
            problems.push(format!("{} has nodeSelector {}", pod_ref(pod), show_map(&selector)));
        } else if !matches!(phase(pod), "Running" | "Succeeded") {
            problems.push(format!("{} is {}", pod_ref(pod), phase(pod)));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Evidence::new(
        format!(
            "the job unsuspended and each of its pods running with nodeSelector {} (nodeLabels of ResourceFlavor {flavor})",
            show_map(node_labels)
        ),
        problems.join("\n"),
    )
    .settled(settled)
    .on(job_ref(job)))
}

fn show_map(map: &BTreeMap<String, String>) -> String {
    if map.is_empty() {
        return "{}".into();
    }
    map.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

pub fn pods_ready(wl: &Workload, pods: &[Pod]) -> Verdict {
    if wl.is(PODS_READY) {
        return Ok(());
    }
    Err(Evidence::new(
        format!("{}: PodsReady=True once every pod runs ready (waitForPodsReady is on)", workload_ref(wl)),
        with_unscheduled(describe_condition(wl, PODS_READY), pods),
    )
    .on(workload_ref(wl)))
}

/// `observed`, and why the scheduler left pods unplaced if it did: a cluster short of room for
/// the sample, not the job's integration, is then what keeps it from running.
pub fn with_unscheduled(observed: String, pods: &[Pod]) -> String {
    let unplaced: Vec<String> = pods
        .iter()
        .filter_map(|pod| {
            let conditions = pod.status.as_ref()?.conditions.as_ref()?;
            let scheduled = conditions.iter().find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
            Some(format!("{} ({})", pod.name_any(), scheduled.message.as_deref().unwrap_or("no message")))
        })
        .collect();
    if unplaced.is_empty() {
        return observed;
    }
    format!("{observed}; {} pod(s) not scheduled: {}", unplaced.len(), unplaced.join(", "))
}

/// The job is suspended again and its spec is what it was before admission.
pub fn stopped_and_restored(job: &ConfiguredJob, spec_before: &Value) -> Verdict {
    let diff = differences("spec", spec_before, &job.object()["spec"]);
    if job.is_suspended() && diff.is_empty() {
        return Ok(());
    }
    let observed = match (job.is_suspended(), diff.len()) {
        (false, _) => "the job still runs (not suspended)".to_string(),
        (true, n) => format!("suspended, but {n} field(s) of its spec differ from before admission"),
    };
    let mut evidence = Evidence::new(
        "the job suspended again with its spec as before admission (admission's node selectors, labels and \
         counts taken back)",
        observed,
    )
    .on(job_ref(job));
    evidence.diff = diff;
    Err(evidence)
}

/// Judged the moment the Workload is seen without quota: no pod of the job may still run.
pub fn quota_released_after_pods(wl: &Workload, pods: &[Pod]) -> Verdict {
    let running: Vec<String> = pods
        .iter()
        .filter(|p| !is_terminal(p))
        .map(|p| {
            let deleting = if p.metadata.deletion_timestamp.is_some() { ", being deleted" } else { "" };
            format!("{} ({}{deleting})", pod_ref(p), phase(p))
        })
        .collect();
    if running.is_empty() {
        return Ok(());
    }
    Err(Evidence::new(
        format!("no pod of the job left when {} gives its quota back (QuotaReserved=False)", workload_ref(wl)),
        format!("quota released while {} pod(s) remained: {}", running.len(), running.join(", ")),
    )
    .on(workload_ref(wl)))
}

pub fn holds_quota(wl: &Workload) -> bool {
    wl.is(QUOTA_RESERVED)
}

/// The job ended, and its Workload says so with the same outcome.
pub fn finished(job: &ConfiguredJob, wl: &Workload) -> Verdict {
    let Some(end) = job.finished() else {
        return Err(Evidence::new(
            "the job to end (its pods run to completion)",
            format!("not finished by its description; status: {}", job_status(job)),
        )
        .on(job_ref(job)));
    };
    let reason = if end.success { "Succeeded" } else { "Failed" };
    let set = condition::find(wl.conditions(), FINISHED).is_some_and(|c| c.is_true() && c.reason == reason);
    if set {
        return Ok(());
    }
    Err(Evidence::new(
        format!(
            "{}: Finished=True reason {reason}, as the job {} ({:?})",
            workload_ref(wl),
            if end.success { "succeeded" } else { "failed" },
            end.message
        ),
        describe_condition(wl, FINISHED),
    )
    .on(job_ref(job))
    .on(workload_ref(wl)))
}

/// The prebuilt Workload is the job's only one, controlled by it, in sync and admitted; the job
/// runs.
pub fn prebuilt_adopted(job: &ConfiguredJob, prebuilt: &str, workloads: &[Workload]) -> Verdict {
    let mut problems = Vec::new();
    match workloads.iter().find(|w| w.name_any() == prebuilt) {
        None => problems.push(format!("Workload {prebuilt} is gone")),
        Some(wl) => {
            if !is_controlled_by(wl, job) {
                problems.push(format!("Workload {prebuilt} not adopted: {}", describe_controller(wl)));
            }
            if wl.is(FINISHED) {
                problems.push(format!("Workload {prebuilt}: {}", describe_condition(wl, FINISHED)));
            } else if !wl.is_admitted() || job.is_suspended() {
                problems.push(format!(
                    "not running yet: Workload {prebuilt} admitted: {}, job suspended: {}",
                    wl.is_admitted(),
                    job.is_suspended()
                ));
            }
        }
    }
    for other in workloads.iter().filter(|w| w.name_any() != prebuilt) {
        problems.push(format!("a second Workload {} ({})", other.name_any(), describe_controller(other)));
    }
    if problems.is_empty() {
        return Ok(());
    }
    let mut evidence = Evidence::new(
        format!(
            "Workload {prebuilt}, created before the job, adopted (controller reference to {} {}), in sync, admitted \
             and running the job; no other Workload",
            job.gvk().kind,
            job.name_any()
        ),
        problems.join("\n"),
    )
    .on(job_ref(job));
    for wl in workloads {
        evidence = evidence.on(workload_ref(wl));
    }
    Err(evidence)
}

pub fn managed_by_multikueue(job: &ConfiguredJob) -> Verdict {
    if job.managed_by() == Some(MULTIKUEUE_CONTROLLER) {
        return Ok(());
    }
    let path = job.integration().managed_by.as_ref().map(ToString::to_string).unwrap_or_default();
    Err(Evidence::new(
        format!(
            "{path} = {MULTIKUEUE_CONTROLLER:?} in the object as created: its queue's ClusterQueue has a MultiKueue \
             admission check"
        ),
        format!("{path} = {}", job.managed_by().map_or_else(|| "(absent)".to_string(), |m| format!("{m:?}"))),
    )
    .on(job_ref(job)))
}

/// The admission checks of `wl` that are not Ready, with what their controllers said (MultiKueue
/// says there why it does not dispatch).
fn checks_that_say_why(wl: &Workload) -> String {
    let checks = wl.status.as_ref().map(|s| s.admission_checks.as_slice()).unwrap_or_default();
    let unready: Vec<String> = checks
        .iter()
        .filter(|check| check.state != "Ready")
        .map(|check| match check.message.as_str() {
            "" => format!("{} is {}", check.name, check.state),
            message => format!("{} is {}: {message:?}", check.name, check.state),
        })
        .collect();
    if unready.is_empty() { String::new() } else { format!(" (admission check {})", unready.join("; ")) }
}

/// The manager's job, run by a worker, ends as the worker's copy did.
pub fn finished_from_worker(job: &ConfiguredJob, wl: Option<&Workload>) -> Verdict {
    if job.finished().is_some_and(|end| end.success) {
        return Ok(());
    }
    let placement = match wl {
        None => "no Workload".to_string(),
        Some(wl) => match wl.status.as_ref().and_then(|s| s.cluster_name.as_deref()) {
            Some(worker) => format!("{} runs on {worker}", workload_ref(wl)),
            None => format!("{} not dispatched to a worker{}", workload_ref(wl), checks_that_say_why(wl)),
        },
    };
    let mut evidence = Evidence::new(
        "the manager's job finished successfully: MultiKueue copies the worker's status back",
        format!("job status: {}; {placement}", job_status(job)),
    )
    .on(job_ref(job));
    if let Some(wl) = wl {
        evidence = evidence.on(workload_ref(wl));
    }
    Err(evidence)
}

#[cfg(test)]
mod tests;
