//! kwok: fake nodes on which the real scheduler binds pods, and the stages that make those pods
//! run and complete.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::sandbox::{NodePool, SANDBOX_NODE_LABEL};

/// Node and pod stages of kwok's own "fast" profile, as shipped in its module; pods complete
/// through the sandbox's own stages ([`POD_RUN_STAGES`]) instead.
const STAGES: [&str; 4] = [
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-delete.yaml",
];

/// Stages that run a ready pod for a while, then succeed or fail as its annotations ask.
pub const POD_RUN_STAGES: &str = include_str!("kwok_stages.yaml");

/// Annotation: how long a pod runs on a fake node (a Go duration such as `20s`).
pub const RUN_DURATION_ANNOTATION: &str = "kueue-ext.dev/run-duration";
/// Annotation: the pod fails with this exit code instead of succeeding.
pub const EXIT_CODE_ANNOTATION: &str = "kueue-ext.dev/exit-code";

/// kwok's configuration file: its own settings followed by the stage documents.
pub fn config(stage_dir: &Path) -> std::io::Result<String> {
    // kwok leaves these at zero when its configuration comes from a file, and then refuses to start.
    let mut out = String::from(
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  \
         podPlayStageParallelism: 4\n  nodePlayStageParallelism: 4\n  nodeLeaseParallelism: 4\n  \
         podsOnNodeSyncParallelism: 2\n",
    );
    for stage in STAGES {
        let path: PathBuf = stage_dir.join(stage);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("kwok stage {}: {e}", path.display())))?;
        out.push_str("---\n");
        out.push_str(text.trim_start_matches("---\n"));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push_str("---\n");
    out.push_str(POD_RUN_STAGES);
    Ok(out)
}

/// Node objects kwok will manage, `pool.count` alike.
pub fn nodes(pool: &NodePool) -> Vec<Value> {
    (0..pool.count)
        .map(|i| {
            let name = format!("kwok-node-{i}");
            let resources = json!({"cpu": pool.cpu, "memory": pool.memory, "pods": "110"});
            let labels = json!({
                "type": "kwok",
                (SANDBOX_NODE_LABEL.0): SANDBOX_NODE_LABEL.1,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            });
            let mut node = node(&name, &labels, &Value::Null, &resources, &resources);
            node["spec"]["podCIDR"] = json!(format!("10.244.{i}.0/24"));
            node
        })
        .collect()
}

/// A node kwok manages (selected by its annotation) with these labels, taints (`null`: none)
/// and resources.
pub fn node(name: &str, labels: &Value, taints: &Value, allocatable: &Value, capacity: &Value) -> Value {
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": labels,
        },
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": capacity},
    });
    if taints.is_array() {
        node["spec"]["taints"] = taints.clone();
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_carry_the_requested_capacity_and_kwok_annotation() {
        let pool = NodePool { count: 2, cpu: "4".into(), memory: "8Gi".into() };
        let nodes = nodes(&pool);
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1]["metadata"]["name"], "kwok-node-1");
        assert_eq!(nodes[1]["metadata"]["annotations"]["kwok.x-k8s.io/node"], "fake");
        assert_eq!(nodes[1]["status"]["allocatable"]["cpu"], "4");
        assert_ne!(nodes[0]["spec"]["podCIDR"], nodes[1]["spec"]["podCIDR"]);
    }

    #[test]
    fn config_concatenates_the_stages() {
        let dir = tempfile::tempdir().unwrap();
        for stage in STAGES {
            let path = dir.path().join(stage);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("kind: Stage\nmetadata:\n  name: {stage}\n")).unwrap();
        }
        let text = config(dir.path()).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        assert_eq!(docs.len(), 1 + STAGES.len() + 2);
        assert_eq!(docs[0]["kind"], "KwokConfiguration");
        let names: Vec<&str> = docs.iter().filter_map(|d| d["metadata"]["name"].as_str()).collect();
        assert!(names.contains(&"kueue-ext-pod-succeed") && names.contains(&"kueue-ext-pod-fail"));
    }

    #[test]
    fn run_stages_read_the_documented_annotations() {
        assert!(POD_RUN_STAGES.contains(RUN_DURATION_ANNOTATION));
        assert!(POD_RUN_STAGES.contains(EXIT_CODE_ANNOTATION));
    }

    #[test]
    fn missing_stage_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = config(dir.path()).unwrap_err();
        assert!(err.to_string().contains("node-initialize.yaml"));
    }
}
