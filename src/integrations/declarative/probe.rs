//! Answering a configured [`Probe`] from a job's fields.

use serde_json::Value;

use super::config::{AtLeast, Probe};
use super::count::number;
use super::path::FieldPath;

/// The condition of `kind` in `status.conditions`.
pub fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == kind)
}

impl Probe {
    /// Whether the probe holds for `object`, whose pod sets ask for `pods` pods.
    pub fn holds(&self, object: &Value, pods: i64) -> bool {
        if let Some(kind) = &self.condition {
            let wanted = self.status.as_deref().unwrap_or("True");
            return condition(object, kind).is_some_and(|c| c["status"] == wanted);
        }
        if let (Some(path), Some(values)) = (&self.path, &self.equals) {
            let value = path.get(object).unwrap_or(&Value::Null);
            return values.contains(value);
        }
        if let (Some(paths), Some(at_least)) = (&self.sum, &self.at_least) {
            let threshold = match at_least {
                AtLeast::Number(n) => *n,
                AtLeast::Pods => pods,
                AtLeast::Sum(fields) => sum(fields, object),
            };
            return sum(paths, object) >= threshold;
        }
        false
    }

    /// The message of the condition the probe looks at, if it is one.
    pub fn message(&self, object: &Value) -> Option<String> {
        let kind = self.condition.as_ref()?;
        condition(object, kind)?.get("message")?.as_str().map(String::from)
    }
}

/// The numbers at `paths` in `object` added up; an absent field or one that holds no number
/// adds nothing.
fn sum(paths: &[FieldPath], object: &Value) -> i64 {
    paths.iter().flat_map(|p| p.values(object)).filter_map(number).sum()
}
