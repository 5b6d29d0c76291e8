//! Which address of a worker's API server the manager's Kueue dials: what the kubeconfig says is
//! where the user's kubectl reaches it, not always where the manager's pods do.

use k8s_openapi::api::core::v1::Node;

/// The API server port of a kind control-plane node inside kind's Docker network.
const KIND_API_PORT: u16 = 6443;

/// A worker's API server for the manager's pods, and why it is that one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChosenServer {
    pub url: String,
    pub because: String,
}

/// The server the manager's pods reach a worker at: `--worker-server` when given; on a kind
/// cluster the control-plane node's address on kind's Docker network (the kubeconfig names a
/// port published on the host's loopback, which a pod cannot reach); else the kubeconfig's.
pub fn choose(flag: Option<&str>, kind_node: Option<(&str, &str)>, kubeconfig: Option<&str>) -> Option<ChosenServer> {
    if let Some(url) = flag {
        return Some(ChosenServer { url: url.to_string(), because: "--worker-server".into() });
    }
    if let Some((node, address)) = kind_node {
        return Some(ChosenServer {
            url: format!("https://{address}:{KIND_API_PORT}"),
            because: format!("kind node {node}'s InternalIP on kind's Docker network"),
        });
    }
    kubeconfig.map(|url| ChosenServer { url: url.to_string(), because: "the kubeconfig's".into() })
}

/// The kind cluster a node belongs to, from its provider ID (`kind://docker/CLUSTER/NODE`).
pub fn kind_cluster_of(node: &Node) -> Option<String> {
    let id = node.spec.as_ref()?.provider_id.as_deref()?;
    crate::kube_util::kind_cluster_in(id).map(str::to_string)
}

/// On a kind cluster, the control-plane node's name and InternalIP.
pub fn kind_control_plane(nodes: &[Node]) -> Option<(String, String)> {
    let control_plane = nodes.iter().filter(|node| kind_cluster_of(node).is_some()).find(|node| {
        node.metadata.labels.as_ref().is_some_and(|labels| labels.contains_key("node-role.kubernetes.io/control-plane"))
    })?;
    let addresses = control_plane.status.as_ref()?.addresses.as_ref()?;
    let internal = addresses.iter().find(|address| address.type_ == "InternalIP")?;
    Some((control_plane.metadata.name.clone().unwrap_or_default(), internal.address.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, provider: &str, control_plane: bool, ip: &str) -> Node {
        let labels = if control_plane { json!({"node-role.kubernetes.io/control-plane": ""}) } else { json!({}) };
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"providerID": provider},
            "status": {"addresses": [{"type": "Hostname", "address": name}, {"type": "InternalIP", "address": ip}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_kind_worker_is_reached_at_its_control_planes_address() {
        let nodes = [
            node("east-worker", "kind://docker/east/east-worker", false, "172.18.0.4"),
            node("east-control-plane", "kind://docker/east/east-control-plane", true, "172.18.0.3"),
        ];
        assert_eq!(kind_cluster_of(&nodes[0]).as_deref(), Some("east"));
        let (name, address) = kind_control_plane(&nodes).unwrap();
        assert_eq!((name.as_str(), address.as_str()), ("east-control-plane", "172.18.0.3"));
        let chosen = choose(None, Some((&name, &address)), Some("https://127.0.0.1:40123")).unwrap();
        assert_eq!(chosen.url, "https://172.18.0.3:6443");
        assert!(chosen.because.contains("east-control-plane"), "{}", chosen.because);
        let cloud = [node("ip-10-0-0-1", "aws:///eu-west-1a/i-0abc", true, "10.0.0.1")];
        assert_eq!(kind_control_plane(&cloud), None);
    }

    #[test]
    fn the_flag_wins_and_the_kubeconfig_is_the_last_resort() {
        let flag = choose(Some("https://w.example:443"), Some(("n", "172.18.0.3")), Some("https://127.0.0.1:1"));
        assert_eq!(
            flag.unwrap(),
            ChosenServer { url: "https://w.example:443".into(), because: "--worker-server".into() }
        );
        let kubeconfig = choose(None, None, Some("https://api.w.example:6443")).unwrap();
        assert_eq!(kubeconfig.url, "https://api.w.example:6443");
        assert_eq!(choose(None, None, None), None);
    }
}
