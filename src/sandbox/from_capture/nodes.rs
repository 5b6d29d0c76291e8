//! The captured nodes as kwok nodes: each with its name, labels, taints, allocatable and
//! capacity. `--scale` keeps a fraction of each group of identical nodes (at least one per
//! group), so a thousand-node capture replays on a laptop with every kind of node still there.

use serde_json::{Value, json};

use crate::sandbox::process_runtime::kwok;

/// Labels every node has its own value of: not what makes two nodes alike.
const PER_NODE_LABELS: [&str; 1] = ["kubernetes.io/hostname"];

/// What makes nodes alike: labels but the per-node ones, taints, allocatable and capacity.
fn group_key(node: &Value) -> String {
    let mut labels = node["metadata"]["labels"].clone();
    if let Some(map) = labels.as_object_mut() {
        map.retain(|key, _| !PER_NODE_LABELS.contains(&key.as_str()));
    }
    let status = &node["status"];
    json!([labels, node["spec"]["taints"], status["allocatable"], status["capacity"]]).to_string()
}

/// How many of a group of `count` nodes `scale` keeps: the nearest whole number, at least one.
pub fn kept(count: usize, scale: f64) -> usize {
    ((count as f64 * scale).round() as usize).clamp(1, count.max(1))
}

/// The groups of identical nodes, in the order their first node was captured.
pub fn groups(nodes: &[Value]) -> Vec<Vec<&Value>> {
    let mut groups: Vec<(String, Vec<&Value>)> = Vec::new();
    for node in nodes {
        let key = group_key(node);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(node),
            None => groups.push((key, vec![node])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// The kwok nodes that replay `captured` at `scale`: the first nodes of each group.
pub fn replayed(captured: &[Value], scale: f64) -> Vec<Value> {
    let kept_of = |group: Vec<&Value>| {
        let keep = kept(group.len(), scale);
        group.into_iter().take(keep).map(kwok_node).collect::<Vec<_>>()
    };
    groups(captured).into_iter().flat_map(kept_of).collect()
}

/// A captured node as kwok runs it: only what hands it to kwok is added.
fn kwok_node(node: &Value) -> Value {
    let (metadata, status) = (&node["metadata"], &node["status"]);
    let labels = if metadata["labels"].is_object() { metadata["labels"].clone() } else { json!({}) };
    let name = metadata["name"].as_str().unwrap_or_default();
    kwok::node(name, &labels, &node["spec"]["taints"], &status["allocatable"], &status["capacity"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, pool: &str, cpu: &str, taint: bool) -> Value {
        let mut node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"pool": pool, "kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu}, "capacity": {"cpu": cpu}},
        });
        if taint {
            node["spec"] = json!({"taints": [{"key": "gpu", "effect": "NoSchedule"}]});
        }
        node
    }

    #[test]
    fn a_fraction_of_each_group_is_kept_and_never_none() {
        let cases = [(10, 0.1, 1), (10, 0.5, 5), (3, 0.1, 1), (4, 1.0, 4), (1, 0.01, 1), (7, 0.25, 2)];
        for (count, scale, expected) in cases {
            assert_eq!(kept(count, scale), expected, "{count} nodes at {scale}");
        }
    }

    #[test]
    fn nodes_are_grouped_by_everything_but_their_name() {
        let captured = [
            node("a-0", "a", "8", false),
            node("b-0", "b", "8", false),
            node("a-1", "a", "8", false),
            node("a-2", "a", "16", false),
            node("a-3", "a", "8", true),
            node("a-4", "a", "8", false),
        ];
        fn names<'a>(group: &[&'a Value]) -> Vec<&'a str> {
            group.iter().filter_map(|n| n["metadata"]["name"].as_str()).collect()
        }
        let groups = groups(&captured);
        assert_eq!(
            groups.iter().map(|g| names(g)).collect::<Vec<_>>(),
            [vec!["a-0", "a-1", "a-4"], vec!["b-0"], vec!["a-2"], vec!["a-3"]]
        );
        let replayed: Vec<String> =
            replayed(&captured, 0.1).iter().map(|n| n["metadata"]["name"].as_str().unwrap().into()).collect();
        assert_eq!(replayed, ["a-0", "b-0", "a-2", "a-3"], "one of each kind of node");
        assert_eq!(super::replayed(&captured, 1.0).len(), 6);
    }

    #[test]
    fn a_replayed_node_keeps_what_was_captured_and_is_handed_to_kwok() {
        let captured = node("gpu-0", "gpu", "32", true);
        let replayed = kwok_node(&captured);
        assert_eq!(replayed["metadata"]["labels"], captured["metadata"]["labels"]);
        assert_eq!(replayed["spec"]["taints"], captured["spec"]["taints"]);
        assert_eq!(replayed["status"], captured["status"]);
        assert_eq!(replayed["metadata"]["annotations"]["kwok.x-k8s.io/node"], "fake");
    }
}
