//! Kubernetes quantities (`500m`, `32Gi`, `1e3`) as numbers, so quota, usage and templates can be
//! compared and a shortfall told in the units a user wrote.

use std::collections::BTreeMap;

/// Text that is not a Kubernetes quantity.
#[derive(Debug, thiserror::Error)]
#[error("must be a quantity such as 500m, 2 or 1Gi")]
pub struct NotAQuantity;

/// A Kubernetes quantity: a non-negative decimal number, optional exponent, optional suffix.
pub fn check_quantity(text: &str) -> Result<(), NotAQuantity> {
    const SUFFIXES: [&str; 13] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T"];
    let number_end = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+')).unwrap_or(text.len());
    let (number, rest) = text.split_at(number_end);
    let number = number.strip_prefix('+').unwrap_or(number);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 || number.contains('+') {
        return Err(NotAQuantity);
    }
    let suffix_ok = rest.is_empty()
        || SUFFIXES.contains(&rest)
        || rest.strip_prefix(['e', 'E']).is_some_and(|exp| {
            let exp = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            !exp.is_empty() && exp.bytes().all(|b| b.is_ascii_digit())
        })
        || rest == "P"
        || rest == "E";
    if suffix_ok { Ok(()) } else { Err(NotAQuantity) }
}

/// The value of a quantity in base units (cores, bytes), or `None` if it is not one.
pub fn parse(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => 10f64.powi(exponent.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    Some(number * scale)
}

/// Resources counted in bytes, shown in binary units.
fn is_bytes(resource: &str) -> bool {
    resource.contains("memory") || resource.contains("storage") || resource.starts_with("hugepages-")
}

/// A value of `resource` as a short quantity: whole numbers plainly, fractions in millis, bytes
/// in the largest binary unit that divides them.
pub fn format(resource: &str, value: f64) -> String {
    let rounded = value.round();
    if (value - rounded).abs() < 1e-9 {
        let whole = rounded as i64;
        let units = [("Ti", 1i64 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)];
        if is_bytes(resource)
            && let Some((unit, size)) = units.iter().find(|(_, size)| whole != 0 && whole % size == 0)
        {
            return format!("{}{unit}", whole / size);
        }
        return whole.to_string();
    }
    format!("{}m", (value * 1000.0).round() as i64)
}

/// What one pod asks of its node, by resource, from its spec: its containers' requests summed,
/// an init container's when larger (it runs alone), a limit standing for a request left out, as
/// the API server defaults it.
pub fn pod_requests(spec: &serde_json::Value) -> BTreeMap<String, f64> {
    let mut per_pod: BTreeMap<String, f64> = BTreeMap::new();
    for container in spec["containers"].as_array().into_iter().flatten() {
        for (resource, amount) in container_requests(container) {
            *per_pod.entry(resource).or_default() += amount;
        }
    }
    for container in spec["initContainers"].as_array().into_iter().flatten() {
        for (resource, amount) in container_requests(container) {
            let entry = per_pod.entry(resource).or_default();
            *entry = entry.max(amount);
        }
    }
    per_pod
}

fn container_requests(container: &serde_json::Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for field in ["limits", "requests"] {
        for (resource, amount) in container["resources"][field].as_object().into_iter().flatten() {
            if let Some(amount) = amount.as_str().and_then(parse) {
                out.insert(resource.clone(), amount);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        for ok in ["1", "500m", "1.5", "2Gi", "1e3", "+4", "0.5Ki", "1E2"] {
            assert!(check_quantity(ok).is_ok(), "{ok}");
        }
        for bad in ["", "lots", "1.2.3", "Gi", "1 Gi", "-1", ".", "1e"] {
            assert!(check_quantity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quantities_parse_in_every_notation() {
        let cases = [
            ("4", Some(4.0)),
            ("500m", Some(0.5)),
            ("32Gi", Some(32.0 * 1024f64.powi(3))),
            ("1k", Some(1000.0)),
            ("1e3", Some(1000.0)),
            ("1.5", Some(1.5)),
            ("Gi", None),
            ("4 cores", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), expected, "{text}");
        }
    }

    #[test]
    fn values_format_in_the_shortest_unit() {
        let cases = [
            ("cpu", 2.0, "2"),
            ("cpu", 0.25, "250m"),
            ("cpu", 1.5, "1500m"),
            ("cpu", 1024.0, "1024"),
            ("memory", 16.0 * 1024f64.powi(3), "16Gi"),
            ("memory", 0.0, "0"),
        ];
        for (resource, value, expected) in cases {
            assert_eq!(format(resource, value), expected, "{resource} {value}");
        }
    }
}
