//! What a Kueue flavor-assignment message says is short, read out of its words (Kueue's
//! flavorassigner: `insufficient unused quota for cpu in flavor f, 2 more needed`).

use serde::Serialize;

/// One shortfall Kueue named in a QuotaReserved message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Shortfall {
    /// `insufficient unused quota for cpu in flavor f, 2 more needed`: others hold the rest.
    Unused { resource: String, flavor: String, more: String },
    /// `insufficient quota for cpu in flavor f, … > maximum capacity (64)`: it can never fit.
    Capacity { resource: String, flavor: String, maximum: String },
}

/// `<resource> in flavor <flavor>, <rest>` right after `marker`, for every occurrence.
fn after<'a>(message: &'a str, marker: &str) -> Vec<(&'a str, &'a str, &'a str)> {
    message
        .match_indices(marker)
        .filter_map(|(at, _)| {
            let tail = &message[at + marker.len()..];
            let (resource, tail) = tail.split_once(" in flavor ")?;
            let (flavor, rest) = tail.split_once(", ")?;
            Some((resource, flavor, rest))
        })
        .collect()
}

/// The shortfalls a Kueue flavor-assignment message names (Kueue's flavorassigner wording).
pub fn parse(message: &str) -> Vec<Shortfall> {
    let mut out = Vec::new();
    for (resource, flavor, rest) in after(message, "insufficient unused quota for ") {
        if let Some(more) = rest.split_once(" more needed").map(|(more, _)| more) {
            out.push(Shortfall::Unused { resource: resource.into(), flavor: flavor.into(), more: more.into() });
        }
    }
    for (resource, flavor, rest) in after(message, "insufficient quota for ") {
        let maximum = rest.split_once("maximum capacity (").and_then(|(_, m)| m.split_once(')')).map(|(m, _)| m);
        if let Some(maximum) = maximum {
            out.push(Shortfall::Capacity { resource: resource.into(), flavor: flavor.into(), maximum: maximum.into() });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kueue_messages_name_resource_flavor_and_amount() {
        let message = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor \
                       default-flavor, 2 more needed, insufficient unused quota for memory in flavor default-flavor, \
                       1Gi more needed; couldn't assign flavors to pod set aux: insufficient quota for nvidia.com/gpu \
                       in flavor gpu, previously considered podsets requests (0) + current podset request (9) > \
                       maximum capacity (8)";
        assert_eq!(
            parse(message),
            [
                Shortfall::Unused { resource: "cpu".into(), flavor: "default-flavor".into(), more: "2".into() },
                Shortfall::Unused { resource: "memory".into(), flavor: "default-flavor".into(), more: "1Gi".into() },
                Shortfall::Capacity { resource: "nvidia.com/gpu".into(), flavor: "gpu".into(), maximum: "8".into() },
            ]
        );
        assert!(parse("LocalQueue user-queue doesn't exist").is_empty());
    }
}
