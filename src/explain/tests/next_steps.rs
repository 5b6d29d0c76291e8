//! The next step each reason calls for: Kueue v0.19's quota reasons and messages, the queues'
//! states, each admission check state.

use serde_json::{Value, json};

use super::explain_job;
use crate::model::fixtures::*;
use crate::model::snapshot::Snapshot;

/// The next steps `explain` gives for `train`, without their `next: `.
fn steps(snapshot: &Snapshot) -> Vec<String> {
    let lines = explain_job(snapshot, "train");
    lines.iter().filter_map(|l| l.strip_prefix(crate::explain::NEXT)).map(String::from).collect()
}

#[test]
fn each_quota_reason_kueue_gives_has_its_step() {
    let never = "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, \
                 previously considered podsets requests (0) + current podset request (2k) > maximum capacity (4)";
    let short = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, \
                 2 more needed, insufficient unused quota for memory in flavor default-flavor, 1Gi more needed";
    let flavors = "make the job's nodeSelector, affinity and tolerations match a ResourceFlavor of ClusterQueue \
                   cluster-queue (kubectl get resourceflavors -o yaml), then delete and resubmit the job.";
    let evaluation = "wait for Kueue's scheduler; if this lasts, check Kueue (kubectl kueue-ext doctor).";
    let cases: [(&str, &str, Option<&str>); 21] = [
        (
            "Pending",
            never,
            Some(
                "ask for at most 4 cpu in flavor default-flavor (delete the job and resubmit it with smaller requests \
                 or fewer pods), or raise the nominalQuota of ClusterQueue cluster-queue.",
            ),
        ),
        (
            "ExceedsMaxQuota",
            "couldn't assign flavors to pod set main: a message of a later Kueue",
            Some(
                "ask for no more than ClusterQueue cluster-queue can ever give (delete the job and resubmit it with \
                 smaller requests or fewer pods), or raise its nominalQuota.",
            ),
        ),
        (
            "WaitingForQuota",
            short,
            Some(
                "wait until other Workloads release 2 cpu in flavor default-flavor and 1Gi memory in flavor \
                 default-flavor, or raise the nominalQuota of ClusterQueue cluster-queue.",
            ),
        ),
        (
            "Pending",
            "couldn't assign flavors to pod set main: flavor default-flavor doesn't match node affinity",
            Some(flavors),
        ),
        (
            "NoMatchingFlavor",
            "couldn't assign flavors to pod set main: untolerated taint {gpu true NoSchedule <nil>} in flavor gpu",
            Some(flavors),
        ),
        (
            "Pending",
            "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue",
            Some(
                "add nvidia.com/gpu with a quota to the resourceGroups of ClusterQueue cluster-queue, or delete and \
                 resubmit the job without requesting it.",
            ),
        ),
        (
            "Misconfigured",
            "workload namespace doesn't match ClusterQueue selector",
            Some(
                "label namespace default to match the namespaceSelector of ClusterQueue cluster-queue, or use a \
                 LocalQueue whose ClusterQueue admits namespace default.",
            ),
        ),
        (
            "Inadmissible",
            "resources validation failed: spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: \
             Invalid value: \"2\": must be less than or equal to cpu limit of 1",
            Some(
                "fix the job's resource requests and limits as Kueue says (requests no more than limits, within the \
                 namespace's LimitRange), then delete and resubmit the job.",
            ),
        ),
        (
            "Waiting",
            "waiting for all admitted workloads to be in PodsReady condition",
            Some(
                "wait: with waitForPodsReady, Kueue admits nothing new until the pods of every admitted job are ready.",
            ),
        ),
        (
            "AdmissionGated",
            "Admission is gated by: example.com/gate",
            Some(
                "the controllers that annotation kueue.x-k8s.io/admission-gated-by of Workload externaljob-train-12345 \
                 names let it in; remove the annotation to let Kueue admit it now.",
            ),
        ),
        (
            "WaitingForPreemptedWorkloads",
            "Workload has overlapping preemption targets with another workload, but will fit after these preemptions \
             complete",
            Some("wait: Kueue admits it once the Workloads it preempted have released their quota."),
        ),
        (
            "Pending",
            "Workload no longer fits after processing another workload",
            Some("wait: Kueue tries again once ClusterQueue cluster-queue has room."),
        ),
        ("PendingEvaluation", "Workload is pending evaluation in the scheduling queue", Some(evaluation)),
        (
            "TopologyPlacementFailed",
            "couldn't assign flavors to pod set main: topology \"default\" doesn't allow to fit any of 4 pod(s)",
            Some(
                "its pods cannot be placed in the Topology of ClusterQueue cluster-queue's flavor even with every \
                 other Workload preempted: ask for a wider level in annotation kueue.x-k8s.io/podset-required-topology \
                 (or use kueue.x-k8s.io/podset-preferred-topology), or for fewer pods, then delete and resubmit the \
                 job.",
            ),
        ),
        (
            "OnHold",
            "Job is on hold",
            Some(
                "its job is on hold (a StatefulSet scaled to zero replicas) and Kueue released its quota: scale it up \
                 to queue it again.",
            ),
        ),
        (
            "Misconfigured",
            "DRA resource claims not supported",
            Some(
                "fix what Kueue's message names on the job or on ClusterQueue cluster-queue (kubectl describe workload \
                 externaljob-train-12345 -n default), then delete and resubmit the job.",
            ),
        ),
        // Told by the queues' own sentences.
        ("Suspended", "LocalQueue user-queue is inactive", None),
        ("Pending", "", Some(evaluation)),
        // The queues' own sentences tell these, with their steps.
        ("Inadmissible", "LocalQueue user-queue is stopped", None),
        ("Misconfigured", "ClusterQueue cluster-queue doesn't exist", None),
        // The checks' own lines tell this.
        ("Pending", "The workload has failed admission checks", None),
    ];
    for (reason, message, expected) in cases {
        let snapshot = single(|_, _, w| pending(w, reason, message, "1"));
        let expected: Vec<&str> = expected.into_iter().collect();
        assert_eq!(steps(&snapshot), expected, "{reason}: {message}");
    }
}

#[test]
fn each_queue_state_has_its_step() {
    let cq_inactive = |reason: &str| {
        let reason = reason.to_string();
        single(move |s, _, _| {
            let mut cq = cluster_queue("cluster-queue", "4", "16Gi", "0", None);
            set_condition(&mut cq, condition("Active", false, &reason, "Can't admit new workloads"));
            s.clusters[0].cluster_queues = vec![object(cq)];
        })
    };
    let stopped = |lq: bool| {
        single(move |s, _, _| {
            if lq {
                let mut queue = local_queue("default", "user-queue", "cluster-queue");
                queue["spec"]["stopPolicy"] = json!("Hold");
                s.clusters[0].local_queues = vec![object(queue)];
            } else {
                let mut cq = cluster_queue("cluster-queue", "4", "16Gi", "0", None);
                cq["spec"]["stopPolicy"] = json!("HoldAndDrain");
                s.clusters[0].cluster_queues = vec![object(cq)];
            }
        })
    };
    let cases = [
        (
            "no queue",
            single(|_, j, w| {
                j["metadata"]["labels"] = json!({});
                *w = Value::Null;
            }),
            "to have Kueue manage it, resubmit it with the label kueue.x-k8s.io/queue-name naming a LocalQueue of \
             namespace default (kubectl get localqueues -n default).",
        ),
        (
            "LocalQueue stopped",
            stopped(true),
            "kubectl kueue resume localqueue user-queue -n default (or set its spec.stopPolicy to None).",
        ),
        (
            "ClusterQueue stopped",
            stopped(false),
            "kubectl kueue resume clusterqueue cluster-queue (or set its spec.stopPolicy to None).",
        ),
        (
            "ClusterQueue missing",
            single(|s, _, _| s.clusters[0].cluster_queues.clear()),
            "create ClusterQueue cluster-queue, or point LocalQueue user-queue's spec.clusterQueue at one that exists \
             (kubectl get clusterqueues; kubectl edit localqueue user-queue -n default).",
        ),
        (
            "FlavorNotFound",
            cq_inactive("FlavorNotFound"),
            "create the ResourceFlavors its spec.resourceGroups name (kubectl get resourceflavors), or remove them \
             from ClusterQueue cluster-queue.",
        ),
        (
            "AdmissionCheckNotFound",
            cq_inactive("AdmissionCheckNotFound"),
            "create the AdmissionChecks its spec.admissionChecksStrategy names (kubectl get admissionchecks), or \
             remove them from ClusterQueue cluster-queue.",
        ),
        (
            "AdmissionCheckInactive",
            cq_inactive("AdmissionCheckInactive"),
            "see why its AdmissionCheck is inactive (kubectl get admissionchecks; kubectl describe admissioncheck \
             NAME).",
        ),
        (
            "MultipleMultiKueueAdmissionChecks",
            cq_inactive("MultipleMultiKueueAdmissionChecks"),
            "keep one MultiKueue AdmissionCheck in spec.admissionChecksStrategy of ClusterQueue cluster-queue.",
        ),
        (
            "MultiKueueAdmissionCheckAppliedPerFlavor",
            cq_inactive("MultiKueueAdmissionCheckAppliedPerFlavor"),
            "apply the MultiKueue AdmissionCheck to every flavor: remove its onFlavors in spec.admissionChecksStrategy \
             of ClusterQueue cluster-queue.",
        ),
        (
            "MultiKueueWithProvisioningRequest",
            cq_inactive("MultiKueueWithProvisioningRequest"),
            "use either MultiKueue or a ProvisioningRequest AdmissionCheck on ClusterQueue cluster-queue, not both.",
        ),
        (
            "TopologyNotFound",
            cq_inactive("TopologyNotFound"),
            "create the Topology its ResourceFlavors name in spec.topologyName (kubectl get topologies), or remove it \
             from them (kubectl describe clusterqueue cluster-queue).",
        ),
        (
            "Terminating",
            cq_inactive("Terminating"),
            "ClusterQueue cluster-queue is being deleted: point the LocalQueues it feeds at another ClusterQueue.",
        ),
        (
            "another reason",
            cq_inactive("Unknown"),
            "see its Active condition (kubectl describe clusterqueue cluster-queue).",
        ),
        (
            "Workload deactivated",
            single(|_, _, w| w["spec"]["active"] = json!(false)),
            "kubectl kueue resume workload externaljob-train-12345 -n default (or set its spec.active to true).",
        ),
    ];
    for (case, snapshot, expected) in cases {
        assert_eq!(steps(&snapshot).first().map(String::as_str), Some(expected), "{case}");
    }
}

#[test]
fn each_admission_check_state_has_its_step() {
    let with_check = |controller: Option<&'static str>, state: &'static str| {
        single(move |s, _, w| {
            s.clusters[0].cluster_queues = vec![object(cluster_queue("cluster-queue", "4", "16Gi", "1", Some("gate")))];
            if let Some(controller) = controller {
                s.clusters[0].admission_checks = vec![object(admission_check("gate", controller))];
            }
            reserved(w);
            check(w, "gate", state, "");
        })
    };
    let cases = [
        (
            with_check(Some("example.com/gate"), "Rejected"),
            Some(
                "Kueue deactivates a Workload that a check rejects: fix what the check says, then delete and resubmit \
                 the job (kubectl delete externaljob.kueue-ext.dev/train -n default).",
            ),
        ),
        (
            with_check(Some("example.com/gate"), "Retry"),
            Some("nothing, unless it repeats: Kueue releases the quota and tries again after a backoff."),
        ),
        (
            with_check(Some("kueue.x-k8s.io/provisioning-request"), "Pending"),
            Some(
                "wait for the cluster autoscaler to provision room (kubectl get provisioningrequests -n default shows \
                 its progress).",
            ),
        ),
        (
            with_check(Some("example.com/gate"), "Pending"),
            Some("example.com/gate sets this check: see it at work (kubectl describe admissioncheck gate)."),
        ),
        (
            with_check(None, "Pending"),
            Some("see the AdmissionCheck and whether its controller runs (kubectl describe admissioncheck gate)."),
        ),
        (with_check(Some("example.com/gate"), "Ready"), None),
    ];
    for (snapshot, expected) in cases {
        let expected: Vec<&str> = expected.into_iter().collect();
        assert_eq!(steps(&snapshot), expected);
    }
    assert_eq!(
        explain_job(&with_check(Some("example.com/gate"), "Ready"), "train"),
        [
            "Quota is reserved in ClusterQueue cluster-queue.",
            "Every admission check is Ready: Kueue admits the Workload next."
        ]
    );
}

#[test]
fn a_multikueue_check_waits_for_a_worker_or_its_connection() {
    let pending_check = |shape: fn(&mut Snapshot)| {
        let mut snapshot = sandbox();
        shape(&mut snapshot);
        dispatched(
            &mut snapshot,
            &built_in_kind("ExternalJob"),
            "train",
            |_, w| {
                reserved(w);
                check(w, "multikueue", "Pending", "");
            },
            None,
        );
        steps(&snapshot)
    };
    assert_eq!(
        pending_check(|_| {}),
        ["wait for a worker to admit its copy; MultiKueue dispatches copies to the workers its MultiKueueConfig \
             lists (kubectl get multikueueconfigs -o yaml)."]
    );
    assert_eq!(
        pending_check(|s| {
            let mut inactive = admission_check("multikueue", "kueue.x-k8s.io/multikueue");
            set_condition(&mut inactive, condition("Active", false, "NoUsableClusters", "No usable clusters"));
            s.clusters[0].admission_checks = vec![object(inactive)];
        }),
        ["see why it is inactive (kubectl describe admissioncheck multikueue)."]
    );
    let mut unwatched = on_worker1(None, None, pods(0, 0, 0, 0));
    unwatched.clusters.truncate(1);
    assert_eq!(steps(&unwatched), ["pass --worker-context worker1=CONTEXT to see its copy there."]);
}

#[test]
fn evictions_say_what_to_do_next() {
    let evicted = |reason: &'static str| {
        single(move |_, _, w| {
            set_condition(w, condition("Evicted", true, reason, "evicted"));
            set_condition(w, condition("QuotaReserved", false, "Pending", "The workload has failed admission checks"));
        })
    };
    assert_eq!(
        steps(&evicted("PodsReadyTimeout")),
        ["see why its pods were not ready in time (kubectl get events -n default --field-selector type=Warning), or \
             raise waitForPodsReady.timeout in Kueue's Configuration."]
    );
    assert_eq!(
        steps(&evicted("Preempted")),
        ["nothing, if it may wait: Kueue admits it again when there is room; to be preempted less, give it a \
             higher priority (label kueue.x-k8s.io/priority-class)."]
    );
}
