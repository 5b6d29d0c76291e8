//! Default queues of every sandbox cluster: a ResourceFlavor, the ClusterQueue `cluster-queue`
//! and the LocalQueue `user-queue` in `default`. Quota equals the fake nodes' capacity or, on
//! kind, what the real nodes can still give job pods ([`Room`]); the manager's equals the sum of
//! its workers' and goes through the MultiKueue admission check.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::quantity;

pub const FLAVOR: &str = "default-flavor";
pub const CLUSTER_QUEUE: &str = "cluster-queue";
pub const LOCAL_QUEUE: &str = "user-queue";
pub const LOCAL_QUEUE_NAMESPACE: &str = "default";

const UNITS: [&str; 12] = ["", "m", "k", "M", "G", "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi"];

/// Why a node's capacity cannot be scaled into a queue's quota.
#[derive(Debug, thiserror::Error)]
pub enum BadQuantity {
    #[error("{quantity:?}: unit {unit:?} is not one of {}", UNITS[1..].join(", "))]
    Unit { quantity: String, unit: String },
    #[error("{0:?} is not a quantity like 8, 500m or 32Gi")]
    NotANumber(String),
}

/// `quantity` times `n`, keeping its unit: `8` × 4 = `32`, `32Gi` × 2 = `64Gi`.
pub fn scale_quantity(quantity: &str, n: u32) -> Result<String, BadQuantity> {
    let split = quantity.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(quantity.len());
    let (number, unit) = quantity.split_at(split);
    if !UNITS.contains(&unit) {
        return Err(BadQuantity::Unit { quantity: quantity.to_string(), unit: unit.to_string() });
    }
    let value: f64 = number.parse().map_err(|_| BadQuantity::NotANumber(quantity.to_string()))?;
    let total = value * f64::from(n);
    let total = if total.fract() == 0.0 { format!("{}", total as u64) } else { format!("{total}") };
    Ok(format!("{total}{unit}"))
}

/// CPU (cores) and memory (bytes) that nodes can still give job pods. A queue that admits more
/// than its nodes run leaves admitted pods Pending, the wait Kueue is there to spare its users.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Room {
    pub cpu: f64,
    pub memory: f64,
}

impl Room {
    /// The schedulable nodes' allocatable CPU and memory, less the requests of the pods bound to
    /// them and not finished, less `reserve`; never below zero.
    pub fn left_on(nodes: &[Node], pods: &[Pod], reserve: &BTreeMap<String, f64>) -> Room {
        let mut room: BTreeMap<String, f64> = BTreeMap::new();
        for node in nodes.iter().filter(|n| takes_job_pods(n)) {
            for (resource, amount) in node.status.as_ref().and_then(|s| s.allocatable.as_ref()).into_iter().flatten() {
                *room.entry(resource.clone()).or_default() += quantity::parse(&amount.0).unwrap_or(0.0);
            }
        }
        let placed = pods.iter().filter(|pod| {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            pod.spec.as_ref().is_some_and(|s| s.node_name.is_some()) && !matches!(phase, Some("Succeeded" | "Failed"))
        });
        let asked = placed
            .filter_map(|pod| serde_json::to_value(pod.spec.as_ref()?).ok())
            .map(|spec| quantity::pod_requests(&spec))
            .chain([reserve.clone()]);
        for requests in asked {
            for (resource, amount) in requests {
                *room.entry(resource).or_default() -= amount;
            }
        }
        let left = |resource: &str| room.get(resource).copied().unwrap_or(0.0).max(0.0);
        Room { cpu: left("cpu"), memory: left("memory") }
    }

    /// What `client`'s cluster can still give job pods, keeping room for one more replica of
    /// our controller (a roll starts the new one before the old one stops).
    pub async fn on_nodes(client: &Client) -> Result<Room, kube::Error> {
        let nodes = Api::<Node>::all(client.clone()).list(&Default::default()).await?.items;
        let pods = Api::<Pod>::all(client.clone()).list(&Default::default()).await?.items;
        let controller = crate::manifests::deployment("");
        let reserve = quantity::pod_requests(&controller["spec"]["template"]["spec"]);
        Ok(Room::left_on(&nodes, &pods, &reserve))
    }

    pub fn plus(self, other: Room) -> Room {
        Room { cpu: self.cpu + other.cpu, memory: self.memory + other.memory }
    }

    /// As quota: CPU in millis and memory in MiB, each rounded down (after the sums' float error:
    /// 2 − 0.95 − 0.05 is 0.9999999999999998).
    pub fn quota(&self) -> (String, String) {
        let millis = (self.cpu * 1000.0 + 1e-6).floor() as u64;
        let mib = (self.memory / (1024.0 * 1024.0)).floor() as u64;
        (format!("{millis}m"), format!("{mib}Mi"))
    }
}

/// A node job pods can go to: schedulable and with no taint that keeps pods off.
fn takes_job_pods(node: &Node) -> bool {
    let spec = node.spec.as_ref();
    let unschedulable = spec.and_then(|s| s.unschedulable).unwrap_or(false);
    let taints = spec.and_then(|s| s.taints.as_ref()).into_iter().flatten();
    !unschedulable && !taints.into_iter().any(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
}

/// The three queue objects, with `admission_check` on the ClusterQueue when given.
pub fn default_queues(cpu: &str, memory: &str, admission_check: Option<&str>) -> Vec<Value> {
    let mut spec = json!({
        "namespaceSelector": {},
        "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": FLAVOR, "resources": [
                {"name": "cpu", "nominalQuota": cpu},
                {"name": "memory", "nominalQuota": memory},
            ]}],
        }],
    });
    if let Some(check) = admission_check {
        spec["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": check}]});
    }
    vec![
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE}, "spec": spec}),
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE, "namespace": LOCAL_QUEUE_NAMESPACE},
            "spec": {"clusterQueue": CLUSTER_QUEUE},
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_scale_in_their_unit() {
        assert_eq!(scale_quantity("8", 4).unwrap(), "32");
        assert_eq!(scale_quantity("32Gi", 8).unwrap(), "256Gi");
        assert_eq!(scale_quantity("500m", 3).unwrap(), "1500m");
        assert_eq!(scale_quantity("1.5", 3).unwrap(), "4.5");
        assert!(scale_quantity("8 cores", 2).unwrap_err().to_string().contains("unit"));
        assert!(scale_quantity("Gi", 2).is_err());
    }

    #[test]
    fn manager_queue_goes_through_the_admission_check() {
        let queues = default_queues("64", "256Gi", Some("multikueue"));
        assert_eq!(queues[1]["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["name"], "multikueue");
        assert_eq!(queues[1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"], "64");
        let worker = default_queues("32", "128Gi", None);
        assert!(worker[1]["spec"].get("admissionChecksStrategy").is_none());
        assert_eq!(worker[2]["metadata"]["namespace"], "default");
    }

    fn node(name: &str, cpu: &str, memory: &str, extra_spec: Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name}, "spec": extra_spec,
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
        }))
        .unwrap()
    }

    fn pod(node: Option<&str>, phase: &str, cpu: &str, memory: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn the_room_on_real_nodes_is_what_they_hold_less_what_placed_pods_and_a_spare_replica_ask() {
        let nodes = [
            node("kind-control-plane", "2", "4Gi", json!({})),
            node("cordoned", "8", "8Gi", json!({"unschedulable": true})),
            node("tainted", "8", "8Gi", json!({"taints": [{"key": "k", "effect": "NoSchedule"}]})),
        ];
        let pods = [
            pod(Some("kind-control-plane"), "Running", "950m", "1Gi"),
            pod(Some("kind-control-plane"), "Succeeded", "1", "1Gi"),
            pod(None, "Pending", "1", "1Gi"),
        ];
        let reserve = BTreeMap::from([("cpu".to_string(), 0.05), ("memory".to_string(), 64.0 * 1024.0 * 1024.0)]);
        let room = Room::left_on(&nodes, &pods, &reserve);
        assert_eq!(room.quota(), ("1000m".to_string(), "3008Mi".to_string()), "{room:?}");
        let doubled = room.plus(room).quota();
        assert_eq!(doubled, ("2000m".to_string(), "6016Mi".to_string()), "a manager's quota is its workers' sum");
        let crowded = [pod(Some("kind-control-plane"), "Running", "3", "1Gi")];
        assert_eq!(Room::left_on(&nodes, &crowded, &reserve).quota().0, "0m", "never below zero");
    }
}
