//! Kubernetes quantities (`500m`, `32Gi`, `1e3`) as numbers, so quota, usage and templates can be
//! compared and a shortfall told in the units a user wrote.

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

#[cfg(test)]
mod tests {
    use super::*;

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
