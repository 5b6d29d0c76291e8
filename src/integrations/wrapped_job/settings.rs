//! How patient the controller is with a WrappedJob: grace periods, retry limit and which exit
//! codes end it for good. AppWrapper's defaults, overridable per job by annotation under our
//! own prefix, each clipped to a ceiling so a job cannot hold quota for ever.

use crate::go_duration::parse_go_duration;
use std::collections::BTreeMap;
use std::time::Duration;

/// Annotation prefix of the per-job overrides; the keys are AppWrapper's, so a converted
/// AppWrapper keeps its settings.
pub const PREFIX: &str = "kueue-ext.dev/";

/// The per-job setting keys, AppWrapper's names (durations, the retry limit, exit codes).
pub const KEYS: [&str; 10] = [
    "admissionGracePeriodDuration",
    "warmupGracePeriodDuration",
    "failureGracePeriodDuration",
    "retryPausePeriodDuration",
    "retryLimit",
    "forcefulDeletionGracePeriodDuration",
    "deletionOnFailureGracePeriodDuration",
    "successTTLDuration",
    "terminalExitCodes",
    "retryableExitCodes",
];

const MINUTE: Duration = Duration::from_secs(60);
/// No grace period may exceed this.
pub const CEILING: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// From admission until every component exists and enough pods were created.
    pub admission_grace: Duration,
    /// From admission until the pods that exist are ready.
    pub warmup_grace: Duration,
    /// From the first failed pod until the job is reset.
    pub failure_grace: Duration,
    /// From the failure until the reset job resumes.
    pub retry_pause: Duration,
    /// Resets before the job fails.
    pub retry_limit: i32,
    /// From the start of a deletion until what is left is deleted without grace.
    pub forceful_deletion_grace: Duration,
    /// How long a failed job keeps its components (for debugging) before they are deleted.
    pub deletion_on_failure_grace: Duration,
    /// How long a succeeded job keeps its finished components.
    pub success_ttl: Duration,
    /// Exit codes that fail the job without a retry.
    pub terminal_exit_codes: Vec<i32>,
    /// When set, only these exit codes are retried.
    pub retryable_exit_codes: Option<Vec<i32>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            admission_grace: MINUTE,
            warmup_grace: 5 * MINUTE,
            failure_grace: MINUTE,
            retry_pause: Duration::from_secs(90),
            retry_limit: 3,
            forceful_deletion_grace: 10 * MINUTE,
            deletion_on_failure_grace: Duration::ZERO,
            success_ttl: CEILING,
            terminal_exit_codes: Vec::new(),
            retryable_exit_codes: None,
        }
    }
}

/// One annotation that could not be used; the default stays in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    pub annotation: String,
    pub why: String,
}

impl Settings {
    /// The defaults overridden by the job's annotations. Bad values are reported and ignored
    /// rather than failing a job that is already admitted.
    pub fn from_annotations(annotations: &BTreeMap<String, String>) -> (Settings, Vec<Ignored>) {
        let mut settings = Settings::default();
        let mut ignored = Vec::new();
        let durations: [(&str, &mut Duration); 7] = [
            ("admissionGracePeriodDuration", &mut settings.admission_grace),
            ("warmupGracePeriodDuration", &mut settings.warmup_grace),
            ("failureGracePeriodDuration", &mut settings.failure_grace),
            ("retryPausePeriodDuration", &mut settings.retry_pause),
            ("forcefulDeletionGracePeriodDuration", &mut settings.forceful_deletion_grace),
            ("deletionOnFailureGracePeriodDuration", &mut settings.deletion_on_failure_grace),
            ("successTTLDuration", &mut settings.success_ttl),
        ];
        for (key, slot) in durations {
            let annotation = format!("{PREFIX}{key}");
            let Some(text) = annotations.get(&annotation) else { continue };
            match parse_go_duration(text) {
                Ok(value) => *slot = value.min(CEILING),
                Err(why) => ignored.push(Ignored { annotation, why: why.to_string() }),
            }
        }
        let annotation = format!("{PREFIX}retryLimit");
        if let Some(text) = annotations.get(&annotation) {
            match text.trim().parse::<i32>() {
                Ok(limit) if limit >= 0 => settings.retry_limit = limit,
                _ => ignored.push(Ignored { annotation, why: format!("{text:?} is not a whole number ≥ 0") }),
            }
        }
        for (key, slot) in
            [("terminalExitCodes", Some(&mut settings.terminal_exit_codes)), ("retryableExitCodes", None)]
        {
            let annotation = format!("{PREFIX}{key}");
            let Some(text) = annotations.get(&annotation) else { continue };
            match parse_exit_codes(text) {
                Ok(codes) => match slot {
                    Some(slot) => *slot = codes,
                    None => settings.retryable_exit_codes = Some(codes),
                },
                Err(why) => ignored.push(Ignored { annotation, why: why.to_string() }),
            }
        }
        (settings, ignored)
    }

    /// Whether a pod that exited with `code` ends the job without a retry.
    pub fn is_terminal(&self, code: i32) -> bool {
        self.terminal_exit_codes.contains(&code)
            || self.retryable_exit_codes.as_ref().is_some_and(|r| !r.contains(&code))
    }
}

/// An entry of an exit code list that is not a number.
#[derive(Debug, thiserror::Error)]
#[error("{entry:?} in {list:?} is not an exit code")]
struct NotAnExitCode {
    entry: String,
    list: String,
}

fn parse_exit_codes(text: &str) -> Result<Vec<i32>, NotAnExitCode> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<i32>().map_err(|_| NotAnExitCode { entry: s.to_string(), list: text.to_string() }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string())).collect()
    }

    #[test]
    fn defaults_are_appwrappers() {
        let (settings, ignored) = Settings::from_annotations(&BTreeMap::new());
        assert!(ignored.is_empty());
        assert_eq!(settings.admission_grace, MINUTE);
        assert_eq!(settings.warmup_grace, 5 * MINUTE);
        assert_eq!(settings.retry_pause, Duration::from_secs(90));
        assert_eq!(settings.retry_limit, 3);
        assert_eq!(settings.forceful_deletion_grace, 10 * MINUTE);
    }

    #[test]
    fn annotations_override_and_are_clipped() {
        let (settings, ignored) = Settings::from_annotations(&annotations(&[
            ("failureGracePeriodDuration", "2s"),
            ("retryPausePeriodDuration", "1s"),
            ("warmupGracePeriodDuration", "100h"),
            ("retryLimit", "1"),
            ("terminalExitCodes", "3, 42"),
        ]));
        assert!(ignored.is_empty(), "{ignored:?}");
        assert_eq!(settings.failure_grace, Duration::from_secs(2));
        assert_eq!(settings.retry_pause, Duration::from_secs(1));
        assert_eq!(settings.warmup_grace, CEILING, "clipped to the ceiling");
        assert_eq!(settings.retry_limit, 1);
        assert!(settings.is_terminal(42) && !settings.is_terminal(1));
    }

    #[test]
    fn bad_annotations_are_reported_and_ignored() {
        let (settings, ignored) = Settings::from_annotations(&annotations(&[
            ("failureGracePeriodDuration", "soon"),
            ("retryLimit", "-2"),
            ("retryableExitCodes", "1,x"),
        ]));
        assert_eq!(settings, Settings::default());
        let names: Vec<_> = ignored.iter().map(|i| i.annotation.trim_start_matches(PREFIX)).collect();
        assert_eq!(names, ["failureGracePeriodDuration", "retryLimit", "retryableExitCodes"]);
    }

    #[test]
    fn retryable_codes_make_every_other_code_terminal() {
        let (settings, _) = Settings::from_annotations(&annotations(&[("retryableExitCodes", "1")]));
        assert!(!settings.is_terminal(1));
        assert!(settings.is_terminal(2));
    }
}
