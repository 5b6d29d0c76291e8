//! Equality of pod-spec parts as Kueue's Go code sees it (`equality.Semantic.DeepEqual`): a field
//! left out equals its zero value, and quantities are equal by value. The prebuilt Workload a
//! worker receives has been through Go's types on the manager, which writes zero values out
//! (`divisor: "0"`, `resources: {}`) and quantities in canonical form (`0.5` becomes `500m`);
//! the job's own templates have not.

use serde::Serialize;
use serde_json::Value;

use crate::quantity;

/// Whether `a` and `b` serialize to semantically equal JSON.
pub fn equal<T: Serialize>(a: &T, b: &T) -> bool {
    match (serde_json::to_value(a), serde_json::to_value(b)) {
        (Ok(a), Ok(b)) => values_equal(&a, &b),
        _ => false,
    }
}

fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let absent = &Value::Null;
            x.iter().all(|(k, v)| values_equal(v, y.get(k).unwrap_or(absent)))
                && y.iter().filter(|(k, _)| !x.contains_key(*k)).all(|(_, v)| values_equal(absent, v))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b)),
        (Value::String(x), Value::String(y)) => x == y || same_quantity(x, y),
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ if is_zero(a) && is_zero(b) => true,
        (Value::String(s), other) | (other, Value::String(s)) if other.is_null() => same_quantity(s, "0"),
        _ => a == b,
    }
}

/// What Go writes for a field it has no value for, or leaves out.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.values().all(is_zero),
    }
}

fn same_quantity(a: &str, b: &str) -> bool {
    match (quantity::parse(a), quantity::parse(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn go_zero_values_equal_fields_left_out() {
        let ours = json!({"name": "main", "env": [{"name": "L", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]});
        let through_go = json!({"name": "main", "resources": {},
            "env": [{"name": "L", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}}]});
        assert!(values_equal(&ours, &through_go) && values_equal(&through_go, &ours));
    }

    #[test]
    fn quantities_are_equal_by_value() {
        let ours = json!({"requests": {"cpu": "0.5", "memory": "1024Mi"}, "limits": {"cpu": "1000m"}});
        let through_go = json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1"}});
        assert!(values_equal(&ours, &through_go));
        assert!(!values_equal(&json!({"cpu": "500m"}), &json!({"cpu": "501m"})));
    }

    #[test]
    fn real_differences_still_count() {
        assert!(!values_equal(&json!({"image": "a"}), &json!({"image": "b"})));
        assert!(!values_equal(&json!({"args": ["x"]}), &json!({})));
        assert!(!values_equal(&json!({"ports": [{"containerPort": 80}]}), &json!({"ports": [{"containerPort": 81}]})));
        assert!(!values_equal(&json!([{"name": "a"}]), &json!([{"name": "a"}, {"name": "b"}])));
        assert!(!values_equal(&json!({"divisor": "1"}), &json!({})));
    }
}
