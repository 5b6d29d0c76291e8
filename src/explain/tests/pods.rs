//! The problem of a job's pods, named on the cluster where they run, with its next step; and
//! the Workload Kueue admitted around MultiKueue.

use serde_json::json;

use super::explain_job;
use crate::explain::{PodProblemAt, explanation};
use crate::model::fixtures::*;
use crate::model::snapshot::{ObjectKey, Snapshot};
use crate::model::{PodProblem, PodReason, join};

const BACK_OFF: &str = "Back-off pulling image \"example.com/app:1\"";
const NO_HOST: &str = "failed to pull and unpack image \"example.com/app:1\": failed to resolve reference \
                       \"example.com/app:1\": dial tcp: lookup example.com on 172.18.0.1:53: no such host";

fn image_pull(reason: PodReason, image: &str, message: &str) -> PodProblem {
    PodProblem { image: Some(image.into()), ..pod_problem(reason, "train-a", Some("main"), message) }
}

fn exited(reason: PodReason, exit_code: i32, message: &str) -> PodProblem {
    PodProblem { exit_code: Some(exit_code), ..pod_problem(reason, "train-a", Some("main"), message) }
}

/// `train` admitted and running on one cluster, two pods pending with `problem`.
fn on_one_cluster(problem: PodProblem) -> Snapshot {
    single(|s, j, w| {
        j["spec"]["suspend"] = json!(false);
        admitted(w);
        let owner = ObjectKey::new("ExternalJob", "default", "train");
        s.clusters[0].pods.insert(owner.clone(), pods(2, 0, 0, 0));
        s.clusters[0].pod_problems.insert(owner, problem);
    })
}

/// `train` dispatched to worker1, its copy running there with two pods pending with `problem`;
/// worker1 a kind cluster when `kind` says so.
fn on_a_worker(problem: PodProblem, kind: bool) -> Snapshot {
    let name = "externaljob-train-00000";
    let mut copy = mirror_of(&job(&built_in_kind("ExternalJob"), "train"), name);
    copy["spec"]["suspend"] = json!(false);
    let mut remote = remote_workload(name);
    admitted(&mut remote);
    let mut snapshot = on_worker1(Some(copy), Some(remote), pods(2, 0, 0, 0));
    snapshot.clusters[1].pod_problems.insert(ObjectKey::new("ExternalJob", "default", "train"), problem);
    if kind {
        snapshot.clusters[1].provider_ids = kind_nodes("kueue-ext-worker1");
    }
    snapshot
}

#[test]
fn the_pods_problem_is_named_where_they_run_with_its_next_step() {
    let two_pods = PodProblem { pods: 2, ..image_pull(PodReason::ImagePullBackOff, "example.com/app:1", BACK_OFF) };
    let taint = "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}. preemption: 0/1 nodes are \
                 available: 1 Preemption is not helpful for scheduling.";
    let restarting = "back-off 40s restarting failed container=main pod=train-a_default(u)";
    let cases = [
        (
            "an image pull on one cluster whose nodes are not known",
            on_one_cluster(two_pods),
            vec![
                "On manager, pod train-a (and 1 more pod) cannot pull image example.com/app:1 for container main \
                 (ImagePullBackOff): Back-off pulling image \"example.com/app:1\".",
                "next: check that image example.com/app:1 exists and that the nodes of manager may pull it (kubectl \
                 describe pod train-a -n default).",
            ],
        ),
        (
            "an image pull on a kind worker that reaches no registry",
            on_a_worker(image_pull(PodReason::ErrImagePull, "example.com/app:1", NO_HOST), true),
            vec![
                "On worker1, pod train-a cannot pull image example.com/app:1 for container main (ErrImagePull): \
                 failed to pull and unpack image \"example.com/app:1\": failed to resolve reference \
                 \"example.com/app:1\": dial tcp: lookup example.com on 172.18.0.1:53: no such host.",
                "next: no registry is reachable from the nodes of kind cluster kueue-ext-worker1: load the image into \
                 them (kind load docker-image example.com/app:1 --name kueue-ext-worker1).",
            ],
        ),
        (
            "an untagged image on a kind worker, the cause unsaid",
            on_a_worker(image_pull(PodReason::ImagePullBackOff, "busybox", "Back-off pulling image \"busybox\""), true),
            vec![
                "On worker1, pod train-a cannot pull image busybox for container main (ImagePullBackOff): Back-off \
                 pulling image \"busybox\".",
                "next: if no registry is reachable from the nodes of kind cluster kueue-ext-worker1, load the image \
                 into them (kind load docker-image busybox --name kueue-ext-worker1), and set imagePullPolicy: \
                 IfNotPresent in the job's pod template (an image tagged latest is pulled even when loaded); else \
                 check the image name (on worker1: kubectl describe pod train-a -n default).",
            ],
        ),
        (
            "the same on a worker that is no kind cluster",
            on_a_worker(image_pull(PodReason::ErrImagePull, "example.com/app:1", NO_HOST), false),
            vec![
                "On worker1, pod train-a cannot pull image example.com/app:1 for container main (ErrImagePull): \
                 failed to pull and unpack image \"example.com/app:1\": failed to resolve reference \
                 \"example.com/app:1\": dial tcp: lookup example.com on 172.18.0.1:53: no such host.",
                "next: no registry is reachable from the nodes of worker1: make the registry of example.com/app:1 \
                 reachable from them, or use an image from one that is (on worker1: kubectl describe pod train-a -n \
                 default).",
            ],
        ),
        (
            "nodes smaller than the quota",
            on_a_worker(
                pod_problem(PodReason::Unschedulable, "train-a", None, "0/1 nodes are available: 1 Insufficient cpu."),
                true,
            ),
            vec![
                "On worker1, pod train-a cannot be scheduled (Unschedulable): 0/1 nodes are available: 1 \
                 Insufficient cpu.",
                "next: the nodes of worker1 lack the room Kueue's quota promised: add nodes, or lower the \
                 nominalQuota of ClusterQueue cluster-queue to what the nodes hold (on worker1: kubectl describe \
                 nodes).",
            ],
        ),
        (
            "no node that takes the pods",
            on_one_cluster(pod_problem(PodReason::Unschedulable, "train-a", None, taint)),
            vec![
                "On manager, pod train-a cannot be scheduled (Unschedulable): 0/1 nodes are available: 1 node(s) had \
                 untolerated taint {gpu: true}. preemption: 0/1 nodes are available: 1 Preemption is not helpful \
                 for scheduling.",
                "next: make the job's nodeSelector, affinity and tolerations fit a node of manager, or change the \
                 nodes (kubectl describe pod train-a -n default).",
            ],
        ),
        (
            "a crash loop",
            on_one_cluster(exited(PodReason::CrashLoopBackOff, 2, restarting)),
            vec![
                "On manager, pod train-a keeps crashing in container main (CrashLoopBackOff, last exit code 2): \
                 back-off 40s restarting failed container=main pod=train-a_default(u).",
                "next: read why it exits (kubectl logs train-a -c main -n default --previous), fix the command or \
                 image, then delete and resubmit the job.",
            ],
        ),
        (
            "out of memory on a worker",
            on_a_worker(exited(PodReason::OomKilled, 137, ""), false),
            vec![
                "On worker1, pod train-a ran out of memory in container main (OOMKilled, exit code 137).",
                "next: raise the memory limit of container main (resources.limits.memory) in the job's pod template, \
                 then delete and resubmit the job.",
            ],
        ),
    ];
    for (case, snapshot, expected) in cases {
        let lines = explain_job(&snapshot, "train");
        assert_eq!(lines[lines.len() - 2..], expected, "{case}: {lines:?}");
    }
}

#[test]
fn the_pods_problem_is_kept_apart_for_json() {
    let snapshot = on_a_worker(image_pull(PodReason::ErrImagePull, "example.com/app:1", NO_HOST), true);
    let model = join(&snapshot);
    let row = model.jobs.iter().find(|j| j.key.name == "train").expect("train");
    let explained = explanation(row, &model);
    let problem = explained.pod_problem.as_ref().map(|p| serde_json::to_value(p).expect("json"));
    assert_eq!(
        problem,
        Some(json!({"cluster": "worker1", "reason": "ErrImagePull", "pod": "train-a", "container": "main",
                    "image": "example.com/app:1", "message": NO_HOST, "pods": 1}))
    );
    assert_eq!(
        explained.reasons(),
        [
            "Admitted; MultiKueue runs it on worker cluster worker1.",
            "On worker1, pods: 2 pending.",
            &explain_job(&snapshot, "train")[2],
        ]
    );
    assert_eq!(explained.next_steps().len(), 1, "{:?}", explained.next_steps());
    let unschedulable = pod_problem(PodReason::Unschedulable, "train-a", None, "0/1 nodes are available");
    let model = join(&on_one_cluster(unschedulable.clone()));
    let explained = explanation(&model.jobs[0], &model);
    assert_eq!(explained.pod_problem, Some(PodProblemAt { cluster: "manager".into(), problem: unschedulable }));
}

#[test]
fn a_workload_admitted_around_multikueue_will_never_run_on_a_worker() {
    let jobset = built_in_kind("JobSet");
    let admitted_without_check = |flavorless: bool| {
        let mut snapshot = sandbox();
        dispatched(
            &mut snapshot,
            &jobset,
            "train",
            |_, w| {
                admitted(w);
                if flavorless {
                    w["status"]["admission"]["podSetAssignments"][0]["flavors"] = json!({});
                }
            },
            None,
        );
        explain_job(&snapshot, "train")
    };
    assert_eq!(
        admitted_without_check(true),
        [
            "Workload jobset-train-00000 was admitted without its MultiKueue admission check multikueue: its pods \
             request no resource, so Kueue assigned no flavor and applied none of the checks of ClusterQueue \
             cluster-queue; MultiKueue never dispatches it, so it will never run on a worker.",
            "next: give every container of the job resource requests (resources.requests), then delete and resubmit \
             it (kubectl delete jobset.jobset.x-k8s.io/train -n default).",
        ]
    );
    assert_eq!(
        admitted_without_check(false),
        [
            "Workload jobset-train-00000 was admitted without its MultiKueue admission check multikueue \
             (status.admissionChecks has no entry for it): MultiKueue never dispatches it, so it will never run on \
             a worker.",
            "next: delete and resubmit the job (kubectl delete jobset.jobset.x-k8s.io/train -n default).",
        ]
    );

    let mut ready = sandbox();
    dispatched(
        &mut ready,
        &jobset,
        "train",
        |_, w| {
            admitted(w);
            check(w, "multikueue", "Ready", "");
        },
        None,
    );
    assert_eq!(explain_job(&ready, "train"), ["Admitted; kueue.x-k8s.io/multikueue is to run it."]);
}
