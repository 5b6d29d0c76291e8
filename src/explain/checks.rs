//! Admission checks: the state of each on the Workload and the step it calls for, and the
//! Workload Kueue admitted on a MultiKueue manager without the MultiKueue check at all.

use super::Explanation;
use crate::api::kueue::MULTIKUEUE_CONTROLLER;
use crate::model::{JobRow, Model, WorkloadFacts, WorkloadState};

/// The controller of Kueue's ProvisioningRequest admission check.
const PROVISIONING_CONTROLLER: &str = "kueue.x-k8s.io/provisioning-request";

/// Each check that is not Ready, what keeps it so, and the step.
pub fn states(row: &JobRow, wl: &WorkloadFacts, model: &Model, out: &mut Explanation) {
    let waiting: Vec<_> = wl.checks.iter().filter(|c| c.state != "Ready").collect();
    if waiting.is_empty() && !wl.checks.is_empty() && wl.state() != WorkloadState::Admitted {
        out.push("Every admission check is Ready: Kueue admits the Workload next.".into());
    }
    for check in waiting {
        let message = if check.message.is_empty() { String::new() } else { format!(": {}", check.message) };
        out.push(format!("Admission check {} is {}{message}.", check.name, check.state));
        let ac = model.admission_check(&wl.cluster, &check.name);
        let inactive = ac.and_then(|ac| ac.active.as_ref().filter(|c| !c.is_true()));
        if let Some(active) = inactive {
            out.push(format!("AdmissionCheck {} is not active ({}): {}.", check.name, active.reason, active.message));
        }
        let multikueue = ac.is_some_and(|ac| ac.controller == MULTIKUEUE_CONTROLLER);
        let mut unusable = Vec::new();
        if multikueue {
            for cluster in &model.clusters {
                if let Some(connection) = cluster.connection.as_ref().filter(|a| !a.is_true()) {
                    out.push(format!(
                        "MultiKueue cannot use worker {} ({}): {}.",
                        cluster.name, connection.reason, connection.message
                    ));
                    unusable.push(cluster.name.as_str());
                }
            }
        }
        let describe = format!("kubectl describe admissioncheck {}", check.name);
        let step = match check.state.as_str() {
            "Rejected" => Some(format!(
                "Kueue deactivates a Workload that a check rejects: fix what the check says, then delete and resubmit \
                 the job (kubectl delete {} -n {}).",
                row.key.object_name(),
                row.key.namespace
            )),
            "Retry" => {
                Some("nothing, unless it repeats: Kueue releases the quota and tries again after a backoff.".into())
            }
            "Pending" if !unusable.is_empty() => Some(format!(
                "fix MultiKueue's connection to {}: the kubeconfig Secret of its MultiKueueCluster must reach that \
                 cluster's API server (kubectl describe multikueuecluster {}).",
                unusable.join(", "),
                unusable.join(" ")
            )),
            "Pending" if inactive.is_some() => Some(format!("see why it is inactive ({describe}).")),
            "Pending" if multikueue && row.mirrors.is_empty() => Some(
                "wait for a worker to admit its copy; MultiKueue dispatches copies to the workers its \
                 MultiKueueConfig lists (kubectl get multikueueconfigs -o yaml)."
                    .into(),
            ),
            // The copies on the workers say why they wait, each with its step.
            "Pending" if multikueue => None,
            "Pending" => Some(match ac.map(|ac| ac.controller.as_str()) {
                Some(PROVISIONING_CONTROLLER) => format!(
                    "wait for the cluster autoscaler to provision room (kubectl get provisioningrequests -n {} shows \
                     its progress).",
                    row.key.namespace
                ),
                Some(controller) => format!("{controller} sets this check: see it at work ({describe})."),
                None => format!("see the AdmissionCheck and whether its controller runs ({describe})."),
            }),
            _ => None,
        };
        if let Some(step) = step {
            out.next(step);
        }
    }
}

/// A Workload admitted on a MultiKueue manager with no state for the MultiKueue check its
/// ClusterQueue names. Kueue applies a ClusterQueue's checks by the flavors it assigned
/// (v0.19's `AdmissionChecksForWorkload`), so a Workload whose pods request nothing gets no
/// flavor and is admitted without any check; MultiKueue then never dispatches it. Says so and
/// returns true when that is the case.
pub fn admitted_around_multikueue(row: &JobRow, wl: &WorkloadFacts, model: &Model, out: &mut Explanation) -> bool {
    if wl.cluster_name.is_some() {
        return false;
    }
    let Some(cq) = wl.cluster_queue().and_then(|name| model.cluster_queue(&wl.cluster, name)) else {
        return false;
    };
    let is_multikueue = |name: &&String| {
        model.admission_check(&wl.cluster, name).is_some_and(|ac| ac.controller == MULTIKUEUE_CONTROLLER)
    };
    let Some(check) =
        cq.admission_checks.iter().filter(is_multikueue).find(|name| !wl.checks.iter().any(|c| &c.name == *name))
    else {
        return false;
    };
    let flavorless = wl.admission.as_ref().is_some_and(|a| a.pod_set_assignments.iter().all(|p| p.flavors.is_empty()));
    let name = &wl.name;
    let delete = format!("kubectl delete {} -n {}", row.key.object_name(), row.key.namespace);
    let never = "MultiKueue never dispatches it, so it will never run on a worker";
    if flavorless {
        out.push(format!(
            "Workload {name} was admitted without its MultiKueue admission check {check}: its pods request no \
             resource, so Kueue assigned no flavor and applied none of the checks of ClusterQueue {}; {never}.",
            cq.name
        ));
        out.next(format!(
            "give every container of the job resource requests (resources.requests), then delete and resubmit it \
             ({delete})."
        ));
    } else {
        out.push(format!(
            "Workload {name} was admitted without its MultiKueue admission check {check} (status.admissionChecks has \
             no entry for it): {never}."
        ));
        out.next(format!("delete and resubmit the job ({delete})."));
    }
    true
}
