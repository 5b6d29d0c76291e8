//! Field-by-field differences of two JSON objects, named by field path (as the API server names
//! fields), to show what a stopped job failed to put back.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub path: String,
    /// `None`: the field was absent.
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "(absent)".to_string(), Value::to_string);
        write!(f, "{}: {} → {}", self.path, show(&self.before), show(&self.after))
    }
}

/// Every leaf where `after` differs from `before`, below `path`. Lists of different lengths
/// differ as a whole; lists of one length are compared entry by entry.
pub fn differences(path: &str, before: &Value, after: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    walk(path, Some(before), Some(after), &mut out);
    out
}

fn walk(path: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Difference>) {
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let keys: BTreeSet<&String> = b.keys().chain(a.keys()).collect();
            for key in keys {
                walk(&child(path, key), b.get(key), a.get(key), out);
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(a))) if b.len() == a.len() => {
            for (i, (b, a)) in b.iter().zip(a).enumerate() {
                walk(&format!("{path}[{i}]"), Some(b), Some(a), out);
            }
        }
        (b, a) if b != a => out.push(Difference { path: path.to_string(), before: b.cloned(), after: a.cloned() }),
        _ => {}
    }
}

/// `parent.key`, or `parent[key]` for keys with dots or slashes (labels, annotations).
fn child(parent: &str, key: &str) -> String {
    if key.contains(['.', '/', '[', ']']) { format!("{parent}[{key}]") } else { format!("{parent}.{key}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_objects_have_no_differences() {
        let spec = json!({"suspend": true, "template": {"spec": {"containers": [{"name": "main"}]}}});
        assert_eq!(differences("spec", &spec, &spec.clone()), []);
    }

    #[test]
    fn an_injected_label_and_node_selector_are_named_by_path() {
        let before = json!({"template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}}});
        let after = json!({"template": {
            "metadata": {"labels": {"app": "x", "kueue.x-k8s.io/podset": "main"}},
            "spec": {"containers": [], "nodeSelector": {"type": "kwok"}}
        }});
        let found: Vec<String> = differences("spec", &before, &after).iter().map(ToString::to_string).collect();
        assert_eq!(
            found,
            [
                r#"spec.template.metadata.labels[kueue.x-k8s.io/podset]: (absent) → "main""#,
                r#"spec.template.spec.nodeSelector: (absent) → {"type":"kwok"}"#,
            ]
        );
    }

    #[test]
    fn lists_compare_by_entry_unless_their_lengths_differ() {
        let before = json!({"sets": [{"count": 2}, {"count": 1}], "tolerations": [1]});
        let after = json!({"sets": [{"count": 3}, {"count": 1}], "tolerations": [1, 2]});
        assert_eq!(
            differences("spec", &before, &after),
            [
                Difference { path: "spec.sets[0].count".into(), before: Some(json!(2)), after: Some(json!(3)) },
                Difference { path: "spec.tolerations".into(), before: Some(json!([1])), after: Some(json!([1, 2])) },
            ]
        );
    }

    #[test]
    fn a_changed_scalar_is_one_difference() {
        assert_eq!(
            differences("spec.suspend", &json!(true), &json!(false)),
            [Difference { path: "spec.suspend".into(), before: Some(json!(true)), after: Some(json!(false)) }]
        );
    }
}
