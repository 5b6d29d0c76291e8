//! What of an object goes into a capture: pure functions over untyped objects. A capture is
//! handed to others (a maintainer, an issue), so what the API server keeps for its own
//! bookkeeping goes, and so does anything that may carry a credential a user put inline.

use serde_json::{Map, Value, json};

/// kubectl's record of the last apply: a second copy of the object, as it was applied.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What an inline environment variable's value becomes.
pub const REDACTED: &str = "(left out by kueue-ext capture)";

/// Fields of a container that hold pods' containers, wherever a pod template sits in a job.
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// An object as a capture keeps it: without `metadata.managedFields`, kubectl's
/// last-applied annotation, and the values of inline environment variables of any container
/// of any pod template it holds (their names and `valueFrom` references stay).
pub fn object(mut object: Value) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
        if let Some(annotations) = metadata.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove(LAST_APPLIED);
            if annotations.is_empty() {
                metadata.remove("annotations");
            }
        }
    }
    redact_env(&mut object);
    object
}

/// Replaces every `env[].value` of every container list found anywhere in `value`.
fn redact_env(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if CONTAINER_LISTS.contains(&key.as_str()) {
                    for container in child.as_array_mut().into_iter().flatten() {
                        redact_container(container);
                    }
                }
                redact_env(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_env),
        _ => {}
    }
}

fn redact_container(container: &mut Value) {
    let env = container.get_mut("env").and_then(Value::as_array_mut);
    for variable in env.into_iter().flatten() {
        if let Some(value) = variable.get_mut("value").filter(|v| !v.is_null()) {
            *value = Value::String(REDACTED.into());
        }
    }
}

/// A node as a capture keeps it: its name, labels, taints, allocatable and capacity. Nothing
/// else (addresses, images, annotations, system info) leaves the cluster.
pub fn node(node: &Value) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".into(), node["metadata"]["name"].clone());
    if node["metadata"]["labels"].is_object() {
        metadata.insert("labels".into(), node["metadata"]["labels"].clone());
    }
    let mut out = json!({"apiVersion": "v1", "kind": "Node", "metadata": metadata});
    if node["spec"]["taints"].is_array() {
        out["spec"] = json!({"taints": node["spec"]["taints"]});
    }
    let status = &node["status"];
    out["status"] = json!({"allocatable": status["allocatable"], "capacity": status["capacity"]});
    out
}

/// The tag of an image reference (`registry.k8s.io/kueue/kueue:v0.19.2` → `v0.19.2`), or the
/// whole reference where it has none (a digest, an untagged name).
pub fn image_tag(image: &str) -> String {
    let name = image.split('@').next().unwrap_or(image);
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, tag)) if !tag.is_empty() => tag.to_string(),
        _ => image.to_string(),
    }
}

/// The last `max_lines` lines of `text`, at most `max_bytes` of them (cut at a line start), and
/// whether anything was cut.
pub fn tail(text: &[u8], max_lines: usize, max_bytes: usize) -> (&[u8], bool) {
    let mut start = text.len().saturating_sub(max_bytes);
    if start > 0 {
        // Not half a line: from the first line that starts inside the bound.
        start = text[start..].iter().position(|b| *b == b'\n').map_or(text.len(), |i| start + i + 1);
    }
    let body = text[start..].strip_suffix(b"\n").unwrap_or(&text[start..]);
    let breaks: Vec<usize> = body.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i).collect();
    if breaks.len() >= max_lines && max_lines > 0 {
        start += breaks[breaks.len() - max_lines] + 1;
    }
    (&text[start..], start > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookkeeping_and_inline_values_go_references_stay() {
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {
                "name": "train", "namespace": "team",
                "managedFields": [{"manager": "kubectl"}],
                "annotations": {LAST_APPLIED: "{\"secret\":\"x\"}"},
                "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
            },
            "spec": {"template": {"spec": {
                "initContainers": [{"name": "fetch", "env": [{"name": "TOKEN", "value": "s3cr3t"}]}],
                "containers": [{"name": "main", "env": [
                    {"name": "PASSWORD", "value": "hunter2"},
                    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                ]}],
            }}},
        });
        let kept = object(job);
        let text = kept.to_string();
        for gone in ["managedFields", LAST_APPLIED, "s3cr3t", "hunter2", "annotations"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        let env = &kept["spec"]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(env[0], json!({"name": "PASSWORD", "value": REDACTED}));
        assert_eq!(env[1]["valueFrom"]["secretKeyRef"]["name"], "db", "a reference is kept");
        assert_eq!(kept["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "user-queue");
    }

    #[test]
    fn workload_pod_sets_are_redacted_too_and_other_annotations_stay() {
        let workload = json!({
            "metadata": {"name": "w", "annotations": {"keep": "me", LAST_APPLIED: "x"}},
            "spec": {"podSets": [{"name": "main", "template": {"spec": {"containers": [
                {"name": "main", "env": [{"name": "K", "value": "v"}]}]}}}]},
        });
        let kept = object(workload);
        assert_eq!(kept["metadata"]["annotations"], json!({"keep": "me"}));
        assert_eq!(kept["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["env"][0]["value"], REDACTED);
    }

    #[test]
    fn a_node_keeps_labels_taints_and_resources_only() {
        let full = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"type": "kwok"}, "annotations": {"node.alpha/ttl": "0"},
                         "uid": "u", "managedFields": []},
            "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}], "providerID": "kind://docker/x/n1",
                     "podCIDR": "10.0.0.0/24"},
            "status": {"allocatable": {"cpu": "32"}, "capacity": {"cpu": "32"},
                       "addresses": [{"type": "InternalIP", "address": "10.1.2.3"}],
                       "nodeInfo": {"bootID": "b"}, "images": [{"names": ["x"]}]},
        });
        assert_eq!(
            node(&full),
            json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": "n1", "labels": {"type": "kwok"}},
                "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
                "status": {"allocatable": {"cpu": "32"}, "capacity": {"cpu": "32"}},
            })
        );
    }

    #[test]
    fn an_image_names_its_tag() {
        assert_eq!(image_tag("registry.k8s.io/kueue/kueue:v0.19.2"), "v0.19.2");
        assert_eq!(image_tag("localhost:5000/kueue:v0.19.2@sha256:abc"), "v0.19.2");
        assert_eq!(image_tag("localhost:5000/kueue"), "localhost:5000/kueue");
        assert_eq!(image_tag("kueue@sha256:abc"), "kueue@sha256:abc");
    }

    #[test]
    fn a_tail_keeps_whole_last_lines_within_both_bounds() {
        assert_eq!(tail(b"a\nb\nc\n", 2, 100), (&b"b\nc\n"[..], true));
        assert_eq!(tail(b"a\nb\nc", 5, 100), (&b"a\nb\nc"[..], false));
        assert_eq!(tail(b"first line\nsecond\n", 10, 9), (&b"second\n"[..], true), "no half line");
        assert_eq!(tail(b"", 10, 10), (&b""[..], false));
        assert_eq!(tail(b"one\n", 1, 10), (&b"one\n"[..], false));
    }
}
