//! Default queues of every sandbox cluster: a ResourceFlavor, the ClusterQueue `cluster-queue`
//! and the LocalQueue `user-queue` in `default`. Quota equals the fake nodes' capacity; the
//! manager's equals the sum of its workers' and goes through the MultiKueue admission check.

use serde_json::{Value, json};

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
}
