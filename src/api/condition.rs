//! `metav1.Condition`-shaped conditions and the helpers to keep them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A condition as Kubernetes APIs write them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    // Always written: metav1.Condition requires both, even empty.
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    pub fn new(type_: &str, status: bool, reason: &str, message: impl Into<String>) -> Self {
        Condition {
            type_: type_.to_string(),
            status: if status { "True" } else { "False" }.to_string(),
            reason: reason.to_string(),
            message: message.into(),
            last_transition_time: None,
            observed_generation: None,
        }
    }

    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(Condition::is_true)
}

/// Sets `new` in `conditions`, keeping the transition time when the status does not change.
/// Returns whether anything changed.
pub fn set(conditions: &mut Vec<Condition>, mut new: Condition, now: &str) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(old) if old.status == new.status && old.reason == new.reason && old.message == new.message => false,
        Some(old) => {
            new.last_transition_time =
                if old.status == new.status { old.last_transition_time.clone() } else { Some(now.to_string()) };
            *old = new;
            true
        }
        None => {
            new.last_transition_time = Some(now.to_string());
            conditions.push(new);
            true
        }
    }
}

/// Now, as Kubernetes writes times (RFC 3339, seconds, UTC).
pub fn now() -> String {
    timestamp(time::OffsetDateTime::now_utc())
}

/// `t` as the API server writes times: RFC 3339, whole seconds.
pub fn timestamp(t: time::OffsetDateTime) -> String {
    let t = t.replace_nanosecond(0).unwrap_or(t);
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_keeps_transition_time_while_status_holds() {
        let mut conditions = Vec::new();
        assert!(set(&mut conditions, Condition::new("Running", true, "Started", "a"), "t1"));
        assert!(!set(&mut conditions, Condition::new("Running", true, "Started", "a"), "t2"));
        assert!(set(&mut conditions, Condition::new("Running", true, "Started", "b"), "t3"));
        assert_eq!(conditions[0].last_transition_time.as_deref(), Some("t1"));
        assert!(set(&mut conditions, Condition::new("Running", false, "Stopped", "c"), "t4"));
        assert_eq!(conditions[0].last_transition_time.as_deref(), Some("t4"));
        assert!(!is_true(&conditions, "Running"));
    }

    #[test]
    fn now_is_rfc3339_without_fraction() {
        let now = now();
        assert!(now.ends_with('Z') && !now.contains('.'), "{now}");
    }
}
