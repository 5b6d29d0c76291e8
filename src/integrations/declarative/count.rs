//! How many pods a pod set asks for, as a small expression over a job's fields, because real
//! kinds keep it in more than one place: a JobSet's replicated job runs `replicas` Jobs of
//! `min(parallelism, completions)` pods each (Kueue's `podsCount`), a PyTorchJob's replica type
//! `replicas` pods, defaulting to 1.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::path::FieldPath;

/// A whole number, also when written as a string (annotations).
pub fn number(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_str()?.trim().parse().ok())
}

/// Why a count expression in the integrations file cannot be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum InvalidCount {
    #[error("default {0}: must not be negative")]
    NegativeDefault(i64),
    #[error("must list at least one term")]
    NoTerms,
    #[error("{0}: `[*]` only goes in a probe's `sum`")]
    Many(String),
}

/// One of:
/// - `path`: the number there (a number or a numeric string); absent, nothing;
/// - `{path, default}`: the number there, or `default` when absent;
/// - `{product: [..]}`: the product of its factors, an absent factor counting as 1;
/// - `{min: [..]}`: the smallest of the present values; nothing when none is.
///
/// A pod set whose count comes to nothing asks for 1 pod.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Count {
    Path(FieldPath),
    Defaulted { path: FieldPath, default: i64 },
    Product { product: Vec<Count> },
    Min { min: Vec<Count> },
}

impl Count {
    /// The count in `object`, `None` when its fields are absent.
    pub fn eval(&self, object: &Value) -> Option<i64> {
        match self {
            Count::Path(path) => path.get(object).and_then(number),
            Count::Defaulted { path, default } => Some(path.get(object).and_then(number).unwrap_or(*default)),
            Count::Product { product } => {
                product.iter().try_fold(1i64, |total, factor| total.checked_mul(factor.eval(object).unwrap_or(1)))
            }
            Count::Min { min } => min.iter().filter_map(|term| term.eval(object)).min(),
        }
    }

    /// The same expression with every path below `base` (the fields of one entry of `each`).
    pub fn below(&self, base: &FieldPath) -> Count {
        let all = |terms: &[Count]| terms.iter().map(|t| t.below(base)).collect();
        match self {
            Count::Path(path) => Count::Path(base.join(path)),
            Count::Defaulted { path, default } => Count::Defaulted { path: base.join(path), default: *default },
            Count::Product { product } => Count::Product { product: all(product) },
            Count::Min { min } => Count::Min { min: all(min) },
        }
    }

    /// The field where admission writes a new count (partial admission): the count's own, or
    /// the first term's of a `min`, as Kueue lowers a Job's parallelism whatever its
    /// completions; a product has none.
    pub fn field(&self) -> Option<&FieldPath> {
        match self {
            Count::Path(path) | Count::Defaulted { path, .. } => Some(path),
            Count::Min { min } => min.first()?.field(),
            Count::Product { .. } => None,
        }
    }

    /// Every field the expression reads.
    pub fn paths(&self) -> Vec<&FieldPath> {
        match self {
            Count::Path(path) | Count::Defaulted { path, .. } => vec![path],
            Count::Product { product: terms } | Count::Min { min: terms } => {
                terms.iter().flat_map(Count::paths).collect()
            }
        }
    }

    pub fn validate(&self) -> Result<(), InvalidCount> {
        match self {
            Count::Path(path) | Count::Defaulted { path, .. } if path.is_many() => {
                Err(InvalidCount::Many(path.to_string()))
            }
            Count::Path(_) => Ok(()),
            Count::Defaulted { default, .. } if *default < 0 => Err(InvalidCount::NegativeDefault(*default)),
            Count::Defaulted { .. } => Ok(()),
            Count::Product { product: terms } | Count::Min { min: terms } if terms.is_empty() => {
                Err(InvalidCount::NoTerms)
            }
            Count::Product { product: terms } | Count::Min { min: terms } => terms.iter().try_for_each(Count::validate),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn count(yaml: &str) -> Count {
        serde_saphyr::from_str(yaml).unwrap()
    }

    /// Kueue's JobSet rule: `replicas × min(parallelism, completions)`, parallelism defaulting
    /// to 1 and completions to parallelism.
    #[test]
    fn a_jobset_replicated_job_counts_replicas_times_its_jobs_pods() {
        let rule = count(
            "product: [replicas, {min: [{path: template.spec.parallelism, default: 1}, template.spec.completions]}]",
        );
        let cases = [
            (json!({"replicas": 3, "template": {"spec": {"parallelism": 2, "completions": 4}}}), 6),
            (json!({"replicas": 2, "template": {"spec": {"parallelism": 4, "completions": 2}}}), 4),
            (json!({"replicas": 2, "template": {"spec": {"completions": 5}}}), 2),
            (json!({"template": {"spec": {"parallelism": 3}}}), 3),
            (json!({}), 1),
        ];
        for (replicated_job, pods) in cases {
            assert_eq!(rule.eval(&replicated_job), Some(pods), "{replicated_job}");
        }
    }

    #[test]
    fn absent_fields_count_as_nothing_unless_defaulted() {
        assert_eq!(count("spec.parallelism").eval(&json!({})), None);
        assert_eq!(count("{path: replicas, default: 1}").eval(&json!({})), Some(1));
        assert_eq!(count("{path: replicas, default: 1}").eval(&json!({"replicas": "4"})), Some(4));
        assert_eq!(count("{min: [a, b]}").eval(&json!({"b": 2})), Some(2));
        assert_eq!(count("{min: [a, b]}").eval(&json!({})), None);
    }

    #[test]
    fn paths_move_below_an_entry_and_only_plain_fields_are_writable() {
        let base = FieldPath::parse("spec.replicatedJobs[1]").unwrap();
        let rule = count("product: [replicas, template.spec.parallelism]").below(&base);
        let job = json!({"spec": {"replicatedJobs": [{}, {"replicas": 2, "template": {"spec": {"parallelism": 3}}}]}});
        assert_eq!(rule.eval(&job), Some(6));
        assert_eq!(rule.field(), None);
        let plain = count("{path: replicas, default: 1}").below(&base);
        assert_eq!(plain.field().map(ToString::to_string).as_deref(), Some("spec.replicatedJobs[1].replicas"));
        let job = count("{min: [{path: spec.parallelism, default: 1}, spec.completions]}");
        assert_eq!(job.field().map(ToString::to_string).as_deref(), Some("spec.parallelism"));
    }

    #[test]
    fn malformed_expressions_are_refused() {
        assert!(count("{product: []}").validate().unwrap_err().to_string().contains("at least one term"));
        assert!(count("{path: a, default: -1}").validate().unwrap_err().to_string().contains("must not be negative"));
        assert!(serde_saphyr::from_str::<Count>("{sum: [a]}").is_err());
        assert!(count("{product: [a, {min: [b, {path: c, default: 2}]}]}").validate().is_ok());
    }
}
