//! What keeps a job's pods from running, in the kubelet's and the scheduler's words: read per
//! pod, then reduced per job to the one problem most of its pods share, so `explain` names
//! one cause, not one line per pod.

use std::fmt;

use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod, PodStatus};
use serde::Serialize;

/// Kubernetes' word for what keeps a pod from running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PodReason {
    /// `PodScheduled=False`, reason `Unschedulable`: no node takes it.
    Unschedulable,
    ErrImagePull,
    ImagePullBackOff,
    /// The container's last (or current) termination was `OOMKilled`.
    #[serde(rename = "OOMKilled")]
    OomKilled,
    CrashLoopBackOff,
}

impl PodReason {
    /// Where in a pod's life it is met: scheduled, then pulled, then run. Of problems shared by
    /// as many pods, the earliest is the one to fix first.
    fn stage(self) -> u8 {
        match self {
            PodReason::Unschedulable => 0,
            PodReason::ErrImagePull | PodReason::ImagePullBackOff => 1,
            PodReason::OomKilled => 2,
            PodReason::CrashLoopBackOff => 3,
        }
    }

    pub fn is_image_pull(self) -> bool {
        self.stage() == 1
    }
}

impl fmt::Display for PodReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PodReason::OomKilled => f.write_str("OOMKilled"),
            other => fmt::Debug::fmt(other, f),
        }
    }
}

/// The problem of a job's pods on one cluster, told by one pod that has it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodProblem {
    pub reason: PodReason,
    /// The pod it is told by: the first by name of those that have it.
    pub pod: String,
    /// `None` for a pod no node takes.
    pub container: Option<String>,
    /// The image a container cannot pull, as the pod names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The kubelet's or the scheduler's message.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How many of the job's pods have it.
    pub pods: u32,
}

/// The problem of one container, if it has one the model names.
fn container_problem(pod: &str, status: &ContainerStatus) -> Option<PodProblem> {
    let state = status.state.as_ref();
    let waiting = state.and_then(|s| s.waiting.as_ref());
    let said = waiting.and_then(|w| w.reason.as_deref());
    let last = status.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    let problem = |reason, message: Option<&String>, exit_code| PodProblem {
        reason,
        pod: pod.into(),
        container: Some(status.name.clone()),
        image: None,
        message: message.cloned().unwrap_or_default(),
        exit_code,
        pods: 1,
    };
    let pull = match said {
        Some("ErrImagePull") => Some(PodReason::ErrImagePull),
        Some("ImagePullBackOff") => Some(PodReason::ImagePullBackOff),
        _ => None,
    };
    if let Some(reason) = pull {
        let image = Some(status.image.clone()).filter(|i| !i.is_empty());
        return Some(PodProblem { image, ..problem(reason, waiting.and_then(|w| w.message.as_ref()), None) });
    }
    let oom_killed = |t: &&ContainerStateTerminated| t.reason.as_deref() == Some("OOMKilled");
    if let Some(killed) = state.and_then(|s| s.terminated.as_ref()).into_iter().chain(last).find(oom_killed) {
        return Some(problem(PodReason::OomKilled, killed.message.as_ref(), Some(killed.exit_code)));
    }
    (said == Some("CrashLoopBackOff")).then(|| {
        problem(PodReason::CrashLoopBackOff, waiting.and_then(|w| w.message.as_ref()), last.map(|t| t.exit_code))
    })
}

/// The problem of one pod: unschedulable, else its containers' (init containers first) that
/// comes earliest in a pod's life.
pub fn problem_of(pod: &Pod) -> Option<PodProblem> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref()?;
    let unschedulable = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable"));
    if let Some(condition) = unschedulable {
        return Some(PodProblem {
            reason: PodReason::Unschedulable,
            pod: name.into(),
            container: None,
            image: None,
            message: condition.message.clone().unwrap_or_default(),
            exit_code: None,
            pods: 1,
        });
    }
    let containers = status.init_container_statuses.iter().flatten().chain(status.container_statuses.iter().flatten());
    containers.filter_map(|c| container_problem(name, c)).min_by_key(|p| p.reason.stage())
}

/// The problem most of a job's pods share (an image pull counts once, whichever back-off step
/// it is at); of as many, the earliest in a pod's life.
pub fn dominant(mut problems: Vec<PodProblem>) -> Option<PodProblem> {
    problems.sort_by(|a, b| a.pod.cmp(&b.pod));
    let shared = |stage: u8| problems.iter().filter(|p| p.reason.stage() == stage).count();
    let stage = problems.iter().map(|p| p.reason.stage()).min_by_key(|&s| (std::cmp::Reverse(shared(s)), s))?;
    let pods = u32::try_from(shared(stage)).unwrap_or(u32::MAX);
    problems.into_iter().find(|p| p.reason.stage() == stage).map(|p| PodProblem { pods, ..p })
}

/// Keeps of a pod what the model reads (owner, labels, phase, the scheduler's verdict, each
/// container's state): a cluster can hold many pods.
pub fn trim(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    pod.metadata.annotations = None;
    pod.spec = None;
    let Some(status) = pod.status.take() else { return };
    let containers = |list: Option<Vec<ContainerStatus>>| {
        list.map(|list| {
            list.into_iter()
                .map(|c| ContainerStatus {
                    name: c.name,
                    image: c.image,
                    state: c.state,
                    last_state: c.last_state,
                    ..Default::default()
                })
                .collect()
        })
    };
    let unscheduled = status
        .conditions
        .map(|list| list.into_iter().filter(|c| c.type_ == "PodScheduled" && c.status == "False").collect::<Vec<_>>());
    pod.status = Some(PodStatus {
        phase: status.phase,
        conditions: unscheduled.filter(|list| !list.is_empty()),
        container_statuses: containers(status.container_statuses),
        init_container_statuses: containers(status.init_container_statuses),
        ..Default::default()
    });
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn pod(name: &str, status: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": true}]},
            "status": status,
        }))
        .expect("pod")
    }

    fn container(name: &str, state: Value, last: Value) -> Value {
        json!({"name": name, "image": "example.com/app:1", "imageID": "", "ready": false, "restartCount": 3,
               "state": state, "lastState": last})
    }

    fn waiting(reason: &str, message: &str) -> Value {
        json!({"waiting": {"reason": reason, "message": message}})
    }

    fn terminated(reason: &str, exit_code: i32) -> Value {
        json!({"terminated": {"reason": reason, "exitCode": exit_code}})
    }

    fn unschedulable(message: &str) -> Value {
        json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]})
    }

    fn running(containers: Vec<Value>) -> Value {
        json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}],
               "containerStatuses": containers})
    }

    #[test]
    fn each_pod_says_what_keeps_it_from_running() {
        let no_node = "0/1 nodes are available: 1 Insufficient cpu.";
        let back_off = "Back-off pulling image \"example.com/app:1\"";
        let restarting = "back-off 40s restarting failed container=main pod=train-a_default(u)";
        let cases = [
            ("unschedulable", unschedulable(no_node), Some((PodReason::Unschedulable, None, None, no_node, None))),
            (
                "image pull in an init container first",
                json!({"phase": "Pending",
                       "initContainerStatuses": [container("setup", waiting("ImagePullBackOff", back_off), json!({}))],
                       "containerStatuses": [container("main", waiting("PodInitializing", ""), json!({}))]}),
                Some((PodReason::ImagePullBackOff, Some("setup"), Some("example.com/app:1"), back_off, None)),
            ),
            (
                "crash loop with its last exit code",
                running(vec![container("main", waiting("CrashLoopBackOff", restarting), terminated("Error", 2))]),
                Some((PodReason::CrashLoopBackOff, Some("main"), None, restarting, Some(2))),
            ),
            (
                "out of memory is named over the crash loop it causes",
                running(vec![container("main", waiting("CrashLoopBackOff", restarting), terminated("OOMKilled", 137))]),
                Some((PodReason::OomKilled, Some("main"), None, "", Some(137))),
            ),
            (
                "out of memory on a pod that does not restart",
                json!({"phase": "Failed", "containerStatuses": [container("main", terminated("OOMKilled", 137), json!({}))]}),
                Some((PodReason::OomKilled, Some("main"), None, "", Some(137))),
            ),
            ("running fine", running(vec![container("main", json!({"running": {}}), json!({}))]), None),
            ("not yet reported", json!({"phase": "Pending"}), None),
        ];
        for (case, status, expected) in cases {
            let problem = problem_of(&pod("train-a", status));
            let seen = problem
                .as_ref()
                .map(|p| (p.reason, p.container.as_deref(), p.image.as_deref(), p.message.as_str(), p.exit_code));
            assert_eq!(seen, expected, "{case}");
        }
    }

    #[test]
    fn a_job_gets_the_problem_most_of_its_pods_share() {
        let pull = |name: &str, reason: &str| {
            pod(
                name,
                json!({"phase": "Pending", "containerStatuses": [container("main", waiting(reason, "x"), json!({}))]}),
            )
        };
        let stuck = pod("train-a", unschedulable("0/1 nodes are available"));
        let pods = [pull("train-c", "ErrImagePull"), stuck.clone(), pull("train-b", "ImagePullBackOff")];
        let of_job = |pods: &[Pod]| dominant(pods.iter().filter_map(problem_of).collect()).expect("a problem");
        let train = of_job(&pods);
        assert_eq!((train.reason, train.pod.as_str(), train.pods), (PodReason::ImagePullBackOff, "train-b", 2));

        let tied = [pull("train-b", "ErrImagePull"), stuck];
        let train = of_job(&tied);
        assert_eq!((train.reason, train.pods), (PodReason::Unschedulable, 1), "scheduling comes first");
    }

    #[test]
    fn trimming_keeps_what_is_read() {
        let mut full = pod(
            "train-a",
            json!({"phase": "Running", "podIP": "10.0.0.1",
                   "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}],
                   "containerStatuses": [container("main", waiting("CrashLoopBackOff", "m"), terminated("Error", 1))]}),
        );
        let before = problem_of(&full);
        trim(&mut full);
        assert_eq!(problem_of(&full), before);
        let status = full.status.as_ref().expect("status");
        assert_eq!(
            (status.phase.as_deref(), status.pod_ip.as_deref(), status.conditions.as_ref()),
            (Some("Running"), None, None)
        );
    }
}
