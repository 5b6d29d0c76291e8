//! The next step a queue or quota reason calls for: the command to run or the field to change.
//! Steps are read from Kueue v0.19's reasons and messages (its scheduler's flavor assigner,
//! its Workload controller's queue checks); where the model cannot tell which step applies,
//! none is offered.

use crate::model::{Shortfall, WorkloadFacts};

/// Where a Workload waits for quota: its ClusterQueue, on a worker or on the job's own cluster.
pub struct Place<'a> {
    pub cluster_queue: Option<&'a str>,
    /// The worker, for a copy MultiKueue dispatched.
    pub on: Option<&'a str>,
}

impl Place<'_> {
    fn queue(&self) -> String {
        let queue = match self.cluster_queue {
            Some(name) => format!("ClusterQueue {name}"),
            None => "its ClusterQueue".into(),
        };
        match self.on {
            Some(worker) => format!("{queue} on {worker}"),
            None => queue,
        }
    }
}

pub fn label_a_queue(namespace: &str) -> String {
    format!(
        "to have Kueue manage it, resubmit it with the label kueue.x-k8s.io/queue-name naming a LocalQueue of \
         namespace {namespace} (kubectl get localqueues -n {namespace})."
    )
}

pub fn create_local_queue(queue: &str, namespace: &str) -> String {
    format!(
        "create LocalQueue {queue} in namespace {namespace} (its spec.clusterQueue names the ClusterQueue), or \
         resubmit the job with a kueue.x-k8s.io/queue-name that exists."
    )
}

pub fn resume_local_queue(queue: &str, namespace: &str) -> String {
    format!("kubectl kueue resume localqueue {queue} -n {namespace} (or set its spec.stopPolicy to None).")
}

pub fn create_cluster_queue(cluster_queue: &str, queue: &str, namespace: &str) -> String {
    format!(
        "create ClusterQueue {cluster_queue}, or point LocalQueue {queue}'s spec.clusterQueue at one that exists \
         (kubectl get clusterqueues; kubectl edit localqueue {queue} -n {namespace})."
    )
}

pub fn resume_cluster_queue(cluster_queue: &str) -> String {
    format!("kubectl kueue resume clusterqueue {cluster_queue} (or set its spec.stopPolicy to None).")
}

/// For each reason Kueue v0.19 gives an inactive ClusterQueue.
pub fn activate_cluster_queue(cluster_queue: &str, reason: &str) -> String {
    let describe = format!("kubectl describe clusterqueue {cluster_queue}");
    match reason {
        "FlavorNotFound" => format!(
            "create the ResourceFlavors its spec.resourceGroups name (kubectl get resourceflavors), or remove them \
             from ClusterQueue {cluster_queue}."
        ),
        "AdmissionCheckNotFound" => format!(
            "create the AdmissionChecks its spec.admissionChecksStrategy names (kubectl get admissionchecks), or \
             remove them from ClusterQueue {cluster_queue}."
        ),
        "AdmissionCheckInactive" => {
            "see why its AdmissionCheck is inactive (kubectl get admissionchecks; kubectl describe admissioncheck \
             NAME)."
                .into()
        }
        "MultipleMultiKueueAdmissionChecks" => {
            format!(
                "keep one MultiKueue AdmissionCheck in spec.admissionChecksStrategy of ClusterQueue {cluster_queue}."
            )
        }
        "MultiKueueAdmissionCheckAppliedPerFlavor" => format!(
            "apply the MultiKueue AdmissionCheck to every flavor: remove its onFlavors in \
             spec.admissionChecksStrategy of ClusterQueue {cluster_queue}."
        ),
        "MultiKueueWithProvisioningRequest" => format!(
            "use either MultiKueue or a ProvisioningRequest AdmissionCheck on ClusterQueue {cluster_queue}, not both."
        ),
        "TopologyNotFound" => format!(
            "create the Topology its ResourceFlavors name in spec.topologyName (kubectl get topologies), or remove \
             it from them ({describe})."
        ),
        "Terminating" => format!(
            "ClusterQueue {cluster_queue} is being deleted: point the LocalQueues it feeds at another ClusterQueue."
        ),
        _ => format!("see its Active condition ({describe})."),
    }
}

pub fn reactivate(workload: &str, namespace: &str) -> String {
    format!("kubectl kueue resume workload {workload} -n {namespace} (or set its spec.active to true).")
}

pub fn pods_not_ready_in_time(namespace: &str) -> String {
    format!(
        "see why its pods were not ready in time (kubectl get events -n {namespace} --field-selector type=Warning), \
         or raise waitForPodsReady.timeout in Kueue's Configuration."
    )
}

pub fn preempted() -> String {
    "nothing, if it may wait: Kueue admits it again when there is room; to be preempted less, give it a higher \
     priority (label kueue.x-k8s.io/priority-class)."
        .into()
}

pub fn not_evaluated() -> String {
    "wait for Kueue's scheduler; if this lasts, check Kueue (kubectl kueue-ext doctor).".into()
}

pub fn watch_worker(worker: &str) -> String {
    format!("pass --worker-context {worker}=CONTEXT to see its copy there.")
}

/// `2 cpu in flavor default-flavor and 1Gi memory in flavor default-flavor`.
fn amounts<'a>(of: impl Iterator<Item = (&'a str, &'a str, &'a str)>) -> String {
    of.map(|(amount, resource, flavor)| format!("{amount} {resource} in flavor {flavor}"))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The step for a Workload that has no quota, from Kueue's reason and message. Reasons of the
/// queues themselves (`LocalQueue … doesn't exist`, `ClusterQueue … is inactive`) are told by
/// the queues' own sentences, with their steps.
pub fn quota(wl: &WorkloadFacts, place: &Place, namespace: &str) -> Option<String> {
    let condition = wl.condition(crate::api::kueue::QUOTA_RESERVED)?;
    let (reason, message) = (condition.reason.as_str(), condition.message.as_str());
    let queue = place.queue();
    let capacity: Vec<_> = wl
        .shortfalls
        .iter()
        .filter_map(|s| match s {
            Shortfall::Capacity { resource, flavor, maximum } => {
                Some((maximum.as_str(), resource.as_str(), flavor.as_str()))
            }
            Shortfall::Unused { .. } => None,
        })
        .collect();
    let unused: Vec<_> = wl
        .shortfalls
        .iter()
        .filter_map(|s| match s {
            Shortfall::Unused { resource, flavor, more } => Some((more.as_str(), resource.as_str(), flavor.as_str())),
            Shortfall::Capacity { .. } => None,
        })
        .collect();
    let step = if !capacity.is_empty() {
        format!(
            "ask for at most {} (delete the job and resubmit it with smaller requests or fewer pods), or raise the \
             nominalQuota of {queue}.",
            amounts(capacity.into_iter())
        )
    } else if reason == "ExceedsMaxQuota" {
        format!(
            "ask for no more than {queue} can ever give (delete the job and resubmit it with smaller requests or \
             fewer pods), or raise its nominalQuota."
        )
    } else if !unused.is_empty() {
        format!(
            "wait until other Workloads release {}, or raise the nominalQuota of {queue}.",
            amounts(unused.into_iter())
        )
    } else if reason == "NoMatchingFlavor"
        || message.contains("doesn't match node affinity")
        || message.contains("untolerated taint")
    {
        format!(
            "make the job's nodeSelector, affinity and tolerations match a ResourceFlavor of {queue} (kubectl get \
             resourceflavors -o yaml), then delete and resubmit the job."
        )
    } else if let Some((_, resource)) =
        message.split_once(" unavailable in ClusterQueue").and_then(|(before, _)| before.rsplit_once("resource "))
    {
        format!(
            "add {resource} with a quota to the resourceGroups of {queue}, or delete and resubmit the job without \
             requesting it."
        )
    } else if message.contains("doesn't match ClusterQueue selector") {
        format!(
            "label namespace {namespace} to match the namespaceSelector of {queue}, or use a LocalQueue whose \
             ClusterQueue admits namespace {namespace}."
        )
    } else if message.contains("resources validation failed") || message.contains("LimitRange") {
        "fix the job's resource requests and limits as Kueue says (requests no more than limits, within the \
         namespace's LimitRange), then delete and resubmit the job."
            .into()
    } else if matches!(reason, "Waiting" | "WaitingForPodsReady") || message.contains("in PodsReady condition") {
        "wait: with waitForPodsReady, Kueue admits nothing new until the pods of every admitted job are ready.".into()
    } else if reason == "AdmissionGated" {
        format!(
            "the controllers that annotation kueue.x-k8s.io/admission-gated-by of Workload {} names let it in; \
             remove the annotation to let Kueue admit it now.",
            wl.name
        )
    } else if reason == "WaitingForPreemptedWorkloads" || message.contains("preemption targets") {
        "wait: Kueue admits it once the Workloads it preempted have released their quota.".into()
    } else if reason == "WaitingForQuota" || message.contains("no longer fits") {
        format!("wait: Kueue tries again once {queue} has room.")
    } else if reason == "PendingEvaluation"
        || (reason == "Pending" && (message.is_empty() || message.contains("pending evaluation")))
    {
        not_evaluated()
    } else if reason == "TopologyPlacementFailed" {
        format!(
            "its pods cannot be placed in the Topology of {queue}'s flavor even with every other Workload preempted: \
             ask for a wider level in annotation kueue.x-k8s.io/podset-required-topology (or use \
             kueue.x-k8s.io/podset-preferred-topology), or for fewer pods, then delete and resubmit the job."
        )
    } else if reason == "OnHold" {
        "its job is on hold (a StatefulSet scaled to zero replicas) and Kueue released its quota: scale it up to \
         queue it again."
            .into()
    } else if reason == "Misconfigured" && !message.contains("doesn't exist") {
        format!(
            "fix what Kueue's message names on the job or on {queue} (kubectl describe workload {} -n {namespace}), \
             then delete and resubmit the job.",
            wl.name
        )
    } else {
        return None;
    };
    Some(step)
}
