//! What keeps a job's pods from running, on the cluster where they run, in one sentence, and
//! the step it calls for. Whether that cluster is a kind cluster comes from its nodes'
//! provider IDs; an image pull's cause from the kubelet's own message, never from a guess.

use super::{Explanation, PodProblemAt};
use crate::model::{JobCopy, JobRow, Model, PodProblem, PodReason};

/// `pod train-0`, or `pod train-0 (and 2 more pods)`.
fn who(problem: &PodProblem) -> String {
    match problem.pods.saturating_sub(1) {
        0 => format!("pod {}", problem.pod),
        1 => format!("pod {} (and 1 more pod)", problem.pod),
        more => format!("pod {} (and {more} more pods)", problem.pod),
    }
}

/// `: message` without the message's own final period, or nothing.
fn said(message: &str) -> String {
    match message.trim().trim_end_matches('.') {
        "" => String::new(),
        message => format!(": {message}"),
    }
}

fn sentence(cluster: &str, p: &PodProblem) -> String {
    let who = who(p);
    let container = p.container.as_deref().unwrap_or("?");
    let message = said(&p.message);
    match p.reason {
        PodReason::Unschedulable => format!("On {cluster}, {who} cannot be scheduled ({}){message}.", p.reason),
        PodReason::ErrImagePull | PodReason::ImagePullBackOff => {
            let image = p.image.as_deref().map(|i| format!("image {i}")).unwrap_or("its image".into());
            format!("On {cluster}, {who} cannot pull {image} for container {container} ({}){message}.", p.reason)
        }
        PodReason::CrashLoopBackOff => {
            let code = p.exit_code.map(|c| format!(", last exit code {c}")).unwrap_or_default();
            format!("On {cluster}, {who} keeps crashing in container {container} ({}{code}){message}.", p.reason)
        }
        PodReason::OomKilled => {
            let code = p.exit_code.map(|c| format!(", exit code {c}")).unwrap_or_default();
            format!("On {cluster}, {who} ran out of memory in container {container} ({}{code}){message}.", p.reason)
        }
    }
}

/// What the kubelet's pull error says of the registry.
#[derive(Debug, PartialEq)]
enum Registry {
    /// The nodes could not reach it (name lookup, dial, timeout).
    Unreachable,
    /// It answered: no such image, or not for us.
    Refused,
    /// The message does not say (`Back-off pulling image "…"`).
    Unknown,
}

fn registry(message: &str) -> Registry {
    const UNREACHABLE: [&str; 7] = [
        "dial tcp",
        "no such host",
        "i/o timeout",
        "network is unreachable",
        "connection refused",
        "server misbehaving",
        "TLS handshake timeout",
    ];
    const REFUSED: [&str; 5] = ["not found", "manifest unknown", "pull access denied", "unauthorized", "403 Forbidden"];
    if UNREACHABLE.iter().any(|m| message.contains(m)) {
        Registry::Unreachable
    } else if REFUSED.iter().any(|m| message.contains(m)) {
        Registry::Refused
    } else {
        Registry::Unknown
    }
}

/// An image without a tag or tagged `latest` is pulled on every start (imagePullPolicy
/// defaults to Always for it), so a loaded copy is not used.
fn pulled_every_time(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let name = image.rsplit('/').next().unwrap_or(image);
    name.split_once(':').is_none_or(|(_, tag)| tag == "latest")
}

fn image_pull_step(cluster: &str, kind: Option<&str>, p: &PodProblem, look: &str) -> String {
    let image = p.image.as_deref().unwrap_or("IMAGE");
    let load = kind.map(|kind| {
        let latest = if pulled_every_time(image) {
            ", and set imagePullPolicy: IfNotPresent in the job's pod template (an image tagged latest is pulled even \
             when loaded)"
        } else {
            ""
        };
        (kind, format!("kind load docker-image {image} --name {kind}"), latest)
    });
    match (registry(&p.message), load) {
        (Registry::Unreachable, Some((kind, load, latest))) => format!(
            "no registry is reachable from the nodes of kind cluster {kind}: load the image into them ({load}){latest}."
        ),
        (Registry::Refused, Some((kind, load, latest))) => format!(
            "the registry has no image {image} or refuses it: fix the image in the job's pod template, or load a \
             local image into the nodes of kind cluster {kind} ({load}){latest}."
        ),
        (Registry::Unknown, Some((kind, load, latest))) => format!(
            "if no registry is reachable from the nodes of kind cluster {kind}, load the image into them \
             ({load}){latest}; else check the image name ({look})."
        ),
        (Registry::Unreachable, None) => format!(
            "no registry is reachable from the nodes of {cluster}: make the registry of {image} reachable from them, \
             or use an image from one that is ({look})."
        ),
        (Registry::Refused, None) => format!(
            "the registry has no image {image} or refuses it: fix the image in the job's pod template, or give the \
             pods an imagePullSecret that may pull it."
        ),
        (Registry::Unknown, None) => {
            format!("check that image {image} exists and that the nodes of {cluster} may pull it ({look}).")
        }
    }
}

fn step(row: &JobRow, cluster: &str, cluster_queue: Option<&str>, model: &Model, p: &PodProblem) -> String {
    let namespace = &row.key.namespace;
    // A kubectl command runs against the user's context: name the cluster when it is another.
    let on = if cluster == row.key.cluster { String::new() } else { format!("on {cluster}: ") };
    let look = format!("{on}kubectl describe pod {} -n {namespace}", p.pod);
    let container = p.container.as_deref().unwrap_or("?");
    match p.reason {
        PodReason::ErrImagePull | PodReason::ImagePullBackOff => {
            let kind = model.cluster(cluster).and_then(|c| c.kind_cluster.as_deref());
            image_pull_step(cluster, kind, p, &look)
        }
        PodReason::Unschedulable if p.message.contains("Insufficient") => {
            let queue = cluster_queue.map(|q| format!("ClusterQueue {q}")).unwrap_or("its ClusterQueue".into());
            format!(
                "the nodes of {cluster} lack the room Kueue's quota promised: add nodes, or lower the nominalQuota of \
                 {queue} to what the nodes hold ({on}kubectl describe nodes)."
            )
        }
        PodReason::Unschedulable => format!(
            "make the job's nodeSelector, affinity and tolerations fit a node of {cluster}, or change the nodes \
             ({look})."
        ),
        PodReason::CrashLoopBackOff => format!(
            "read why it exits ({on}kubectl logs {} -c {container} -n {namespace} --previous), fix the command or \
             image, then delete and resubmit the job.",
            p.pod
        ),
        PodReason::OomKilled => format!(
            "raise the memory limit of container {container} (resources.limits.memory) in the job's pod template, \
             then delete and resubmit the job."
        ),
    }
}

/// Names the problem of `copy`'s pods, if they have one, and keeps it apart for `-o json|yaml`.
pub fn problem(row: &JobRow, copy: &JobCopy, cluster_queue: Option<&str>, model: &Model, out: &mut Explanation) {
    let Some(problem) = &copy.pod_problem else { return };
    let cluster = &copy.cluster;
    out.push(sentence(cluster, problem));
    out.next(step(row, cluster, cluster_queue, model, problem));
    out.pod_problem = Some(PodProblemAt { cluster: cluster.clone(), problem: problem.clone() });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubelets_pull_error_tells_whether_the_registry_answered() {
        let cases = [
            (
                "failed to pull and unpack image \"docker.io/library/app:1\": failed to resolve reference: failed to \
                 do request: Head \"https://registry-1.docker.io/v2/library/app/manifests/1\": dial tcp: lookup \
                 registry-1.docker.io on 172.18.0.1:53: no such host",
                Registry::Unreachable,
            ),
            (
                "failed to pull and unpack image \"docker.io/library/app:nope\": failed to resolve reference \
                 \"docker.io/library/app:nope\": docker.io/library/app:nope: not found",
                Registry::Refused,
            ),
            ("Back-off pulling image \"app:1\"", Registry::Unknown),
        ];
        for (message, expected) in cases {
            assert_eq!(registry(message), expected, "{message}");
        }
    }

    #[test]
    fn untagged_and_latest_images_are_pulled_every_time() {
        for (image, every_time) in [
            ("busybox", true),
            ("busybox:latest", true),
            ("localhost:5000/app", true),
            ("localhost:5000/app:1", false),
            ("kueue-ext.local/busybox:1", false),
            ("app@sha256:0123", false),
        ] {
            assert_eq!(pulled_every_time(image), every_time, "{image}");
        }
    }
}
