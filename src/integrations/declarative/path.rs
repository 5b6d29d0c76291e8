//! Field paths into an object, written as the API server writes field errors:
//! `spec.template`, `spec.tasks[0].replicas`, `metadata.annotations[example.com/pods]`.
//! A bracket holds an array index, or a map key that contains dots; `[*]` is every entry of a
//! list or every value of a map (only where values are summed:
//! `status.replicatedJobsStatus[*].active`, `status.replicaStatuses[*].active`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
    Every,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    segments: Vec<Segment>,
}

/// Text that is not a field path, and why.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not a field path: {why}")]
pub struct NotAFieldPath {
    text: String,
    why: Malformed,
}

#[derive(Debug, thiserror::Error)]
enum Malformed {
    #[error("it is empty")]
    Empty,
    #[error("a '[' is not closed")]
    Unclosed,
    #[error("empty brackets")]
    EmptyBrackets,
    #[error("an empty name between dots")]
    EmptyName,
    #[error("it ends with a dot")]
    TrailingDot,
}

/// Why a field cannot be set.
#[derive(Debug, thiserror::Error)]
pub enum Unsettable {
    #[error("{path}: no entry {index}")]
    NoEntry { path: String, index: usize },
    #[error("{path}: something that is not an object is in the way")]
    NotAnObject { path: String },
    #[error("{path}: `[*]` names many fields, not one to set")]
    Many { path: String },
}

impl FieldPath {
    pub fn parse(text: &str) -> Result<FieldPath, NotAFieldPath> {
        let mut segments = Vec::new();
        let mut rest = text;
        let bad = |why| Err(NotAFieldPath { text: text.to_string(), why });
        if rest.is_empty() {
            return bad(Malformed::Empty);
        }
        while !rest.is_empty() {
            if let Some(inner) = rest.strip_prefix('[') {
                let Some(end) = inner.find(']') else { return bad(Malformed::Unclosed) };
                let key = &inner[..end];
                if key.is_empty() {
                    return bad(Malformed::EmptyBrackets);
                }
                segments.push(match key.parse::<usize>() {
                    Ok(index) => Segment::Index(index),
                    Err(_) if key == "*" => Segment::Every,
                    Err(_) => Segment::Key(key.to_string()),
                });
                rest = &inner[end + 1..];
                rest = rest.strip_prefix('.').unwrap_or(rest);
                continue;
            }
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            if key.is_empty() {
                return bad(Malformed::EmptyName);
            }
            segments.push(Segment::Key(key.to_string()));
            rest = &rest[end..];
            if let Some(after) = rest.strip_prefix('.') {
                if after.is_empty() {
                    return bad(Malformed::TrailingDot);
                }
                rest = after;
            }
        }
        Ok(FieldPath { text: text.to_string(), segments })
    }

    /// The path below `self` (for fields of one entry of a list).
    pub fn join(&self, below: &FieldPath) -> FieldPath {
        let mut segments = self.segments.clone();
        segments.extend(below.segments.iter().cloned());
        FieldPath { text: format!("{}.{}", self.text, below.text), segments }
    }

    /// The path to entry `index` of the list at `self`.
    pub fn index(&self, index: usize) -> FieldPath {
        let mut segments = self.segments.clone();
        segments.push(Segment::Index(index));
        FieldPath { text: format!("{}[{index}]", self.text), segments }
    }

    /// The path to the entry `key` of the map at `self`, written in brackets when it holds a dot.
    pub fn key(&self, key: &str) -> FieldPath {
        let mut segments = self.segments.clone();
        segments.push(Segment::Key(key.to_string()));
        let text = if key.contains('.') { format!("{}[{key}]", self.text) } else { format!("{}.{key}", self.text) };
        FieldPath { text, segments }
    }

    /// True when the path starts at `spec` (what a job's owner may change).
    pub fn in_spec(&self) -> bool {
        self.segments.first() == Some(&Segment::Key("spec".into()))
    }

    /// Whether a structural schema (a CRD version's `openAPIV3Schema`) has room for the field:
    /// each name a property or a map's entry, each index a list's item, or anything below a
    /// field that keeps unknown fields.
    pub fn in_schema(&self, schema: &Value) -> bool {
        let mut node = schema;
        for segment in &self.segments {
            if node["x-kubernetes-preserve-unknown-fields"] == true {
                return true;
            }
            let below = match segment {
                Segment::Key(key) => node["properties"].get(key).or_else(|| node.get("additionalProperties")),
                Segment::Index(_) => node.get("items"),
                Segment::Every => node.get("items").or_else(|| node.get("additionalProperties")),
            };
            match below {
                Some(below) if below.is_object() => node = below,
                _ => return false,
            }
        }
        true
    }

    /// The one value at the path; `None` when absent or when the path names many (`[*]`).
    pub fn get<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        self.segments.iter().try_fold(object, |value, segment| match segment {
            Segment::Key(key) => value.get(key),
            Segment::Index(index) => value.get(index),
            Segment::Every => None,
        })
    }

    /// Every value at the path: one at most, or one per entry of each list (or map) named by `[*]`.
    pub fn values<'a>(&self, object: &'a Value) -> Vec<&'a Value> {
        let mut found = vec![object];
        for segment in &self.segments {
            found = found
                .into_iter()
                .flat_map(|value| match segment {
                    Segment::Key(key) => value.get(key).into_iter().collect::<Vec<_>>(),
                    Segment::Index(index) => value.get(index).into_iter().collect(),
                    Segment::Every => match value {
                        Value::Array(list) => list.iter().collect(),
                        Value::Object(map) => map.values().collect(),
                        _ => vec![],
                    },
                })
                .collect();
        }
        found
    }

    /// Whether the path names many fields (`[*]`).
    pub fn is_many(&self) -> bool {
        self.segments.contains(&Segment::Every)
    }

    /// Sets the field, creating the maps on the way; fails where a list entry is missing or
    /// something that is not a map is in the way.
    pub fn set(&self, object: &mut Value, new: Value) -> Result<(), Unsettable> {
        let (last, parents) = self.segments.split_last().expect("a parsed path has a segment");
        let mut value = object;
        for segment in parents {
            value = match segment {
                Segment::Key(key) => {
                    let map = as_map(value, &self.text)?;
                    map.entry(key.clone()).or_insert_with(|| Value::Object(Map::new()))
                }
                Segment::Index(index) => value.get_mut(index).ok_or_else(|| self.no_entry(*index))?,
                Segment::Every => return Err(Unsettable::Many { path: self.text.clone() }),
            };
            if value.is_null() {
                *value = Value::Object(Map::new());
            }
        }
        match last {
            Segment::Key(key) => {
                as_map(value, &self.text)?.insert(key.clone(), new);
            }
            Segment::Index(index) => {
                *value.get_mut(index).ok_or_else(|| self.no_entry(*index))? = new;
            }
            Segment::Every => return Err(Unsettable::Many { path: self.text.clone() }),
        }
        Ok(())
    }

    fn no_entry(&self, index: usize) -> Unsettable {
        Unsettable::NoEntry { path: self.text.clone(), index }
    }

    /// Removes the field if it is there.
    pub fn remove(&self, object: &mut Value) {
        let (last, parents) = self.segments.split_last().expect("a parsed path has a segment");
        let parent = parents.iter().try_fold(object, |value, segment| match segment {
            Segment::Key(key) => value.get_mut(key),
            Segment::Index(index) => value.get_mut(index),
            Segment::Every => None,
        });
        if let (Some(Value::Object(map)), Segment::Key(key)) = (parent, last) {
            map.remove(key);
        }
    }
}

fn as_map<'a>(value: &'a mut Value, path: &str) -> Result<&'a mut Map<String, Value>, Unsettable> {
    value.as_object_mut().ok_or_else(|| Unsettable::NotAnObject { path: path.to_string() })
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for FieldPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for FieldPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        FieldPath::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn path(text: &str) -> FieldPath {
        FieldPath::parse(text).unwrap()
    }

    #[test]
    fn paths_read_dots_indexes_and_bracketed_keys() {
        let object =
            json!({"spec": {"tasks": [{"replicas": 3}]}, "metadata": {"annotations": {"example.com/pods": "4"}}});
        assert_eq!(path("spec.tasks[0].replicas").get(&object), Some(&json!(3)));
        assert_eq!(path("metadata.annotations[example.com/pods]").get(&object), Some(&json!("4")));
        assert_eq!(path("spec.tasks[1].replicas").get(&object), None);
        assert_eq!(path("spec.tasks").index(0).join(&path("replicas")).get(&object), Some(&json!(3)));
        assert_eq!(path("spec.tasks").index(0).join(&path("replicas")).to_string(), "spec.tasks[0].replicas");
    }

    #[test]
    fn every_entry_of_a_list_or_map_is_read_and_found_in_a_schema() {
        let status = json!({"status": {
            "replicatedJobsStatus": [{"active": 1}, {"active": 2}, {}],
            "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 3}},
        }});
        let numbers = |text: &str| -> Vec<Value> { path(text).values(&status).into_iter().cloned().collect() };
        assert_eq!(numbers("status.replicatedJobsStatus[*].active"), [json!(1), json!(2)]);
        assert_eq!(numbers("status.replicaStatuses[*].active"), [json!(1), json!(3)]);
        assert_eq!(numbers("status.replicaStatuses.Master.active[*]"), Vec::<Value>::new(), "a number has no entries");
        let schema = json!({"properties": {"status": {"properties": {"replicaStatuses": {
            "type": "object",
            "additionalProperties": {"properties": {"active": {"type": "integer"}}},
        }}}}});
        assert!(path("status.replicaStatuses[*].active").in_schema(&schema));
        assert!(!path("status.replicaStatuses[*].ready").in_schema(&schema));
    }

    #[test]
    fn malformed_paths_say_why() {
        for (bad, why) in
            [("", "empty"), ("spec..x", "empty name"), ("spec.", "ends with a dot"), ("a[b", "not closed")]
        {
            let err = FieldPath::parse(bad).unwrap_err();
            assert!(err.to_string().contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn set_creates_maps_and_remove_is_quiet() {
        let mut object = json!({"spec": {"x": null}});
        path("spec.x.y").set(&mut object, json!(true)).unwrap();
        path("spec.status").set(&mut object, json!("Pending")).unwrap();
        assert_eq!(object, json!({"spec": {"x": {"y": true}, "status": "Pending"}}));
        path("spec.status").remove(&mut object);
        path("spec.nothing.here").remove(&mut object);
        assert_eq!(object, json!({"spec": {"x": {"y": true}}}));
        assert!(path("spec.x.y.z").set(&mut object, json!(1)).unwrap_err().to_string().contains("not an object"));
        assert!(path("spec.list[2]").set(&mut json!({"spec": {"list": []}}), json!(1)).is_err());
    }
}
