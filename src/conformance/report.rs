//! The outcome of a conformance run and its two renderings: a table for people, JSON for tools.

use serde::Serialize;

use super::catalog::Check;
use super::diff::Difference;

/// Why a check failed: what the contract expects, what the cluster showed, on which objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evidence {
    pub expected: String,
    pub observed: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<Difference>,
    /// Waiting longer cannot change the verdict (a pod's node selector never changes).
    #[serde(skip)]
    pub settled: bool,
}

impl Evidence {
    pub fn new(expected: impl Into<String>, observed: impl Into<String>) -> Evidence {
        Evidence { expected: expected.into(), observed: observed.into(), ..Evidence::default() }
    }

    pub fn settled(mut self, settled: bool) -> Evidence {
        self.settled = settled;
        self
    }

    pub fn on(mut self, object: impl Into<String>) -> Evidence {
        let object = object.into();
        if !self.objects.contains(&object) {
            self.objects.push(object);
        }
        self
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "lowercase")]
pub enum CheckOutcome {
    Pass,
    Fail { evidence: Evidence },
    Skipped { reason: String },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    pub check: Check,
    pub title: &'static str,
    #[serde(flatten)]
    pub outcome: CheckOutcome,
    /// The cluster and namespace it ran in (none when skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// `Kind.version.group`.
    pub kind: String,
    /// Where the kind's description came from: `built-in`, or the sandbox's integrations file.
    pub description: String,
    /// `built-in`, or the sample file.
    pub sample: String,
    pub single_cluster: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multikueue: Option<String>,
    pub passed: bool,
    pub checks: Vec<CheckResult>,
}

impl Report {
    pub fn new(kind: &str, description: &str, sample: &str, single: &str, multikueue: Option<&str>) -> Report {
        Report {
            kind: kind.into(),
            description: description.into(),
            sample: sample.into(),
            single_cluster: single.into(),
            multikueue: multikueue.map(String::from),
            passed: true,
            checks: Vec::new(),
        }
    }

    pub fn push(&mut self, result: CheckResult) {
        self.passed &= !matches!(result.outcome, CheckOutcome::Fail { .. });
        self.checks.push(result);
    }

    fn count(&self, pick: fn(&CheckOutcome) -> bool) -> usize {
        self.checks.iter().filter(|c| pick(&c.outcome)).count()
    }
}

const CHECK_WIDTH: usize = 22;

/// The table: one row per check; under a failure its evidence, under a skip its reason.
pub fn table(report: &Report) -> String {
    let mut out =
        format!("Kueue contract of {} (description: {}; sample: {})\n", report.kind, report.description, report.sample);
    out.push_str(&match &report.multikueue {
        Some(manager) => {
            format!("single-cluster checks on {}, MultiKueue checks on {manager}\n\n", report.single_cluster)
        }
        None => format!("checks on {}; no MultiKueue workers\n\n", report.single_cluster),
    });
    out.push_str(&format!("{:<CHECK_WIDTH$} {:<7} {:>6}  {}\n", "CHECK", "RESULT", "TIME", "PROMISE"));
    for check in &report.checks {
        let (result, time) = match &check.outcome {
            CheckOutcome::Pass => ("pass", format!("{:.1}s", check.seconds)),
            CheckOutcome::Fail { .. } => ("FAIL", format!("{:.1}s", check.seconds)),
            CheckOutcome::Skipped { .. } => ("skipped", "-".to_string()),
        };
        out.push_str(&format!("{:<CHECK_WIDTH$} {result:<7} {time:>6}  {}\n", check.check.id(), check.title));
        match &check.outcome {
            CheckOutcome::Pass => {}
            CheckOutcome::Skipped { reason } => out.push_str(&format!("    reason:   {reason}\n")),
            CheckOutcome::Fail { evidence } => {
                out.push_str(&format!("    expected: {}\n", evidence.expected));
                out.push_str(&format!("    observed: {}\n", indent_rest(&evidence.observed)));
                if let (Some(cluster), Some(namespace)) = (&check.cluster, &check.namespace) {
                    out.push_str(&format!("    where:    cluster {cluster}, namespace {namespace}\n"));
                }
                if !evidence.objects.is_empty() {
                    out.push_str(&format!("    objects:  {}\n", evidence.objects.join(", ")));
                }
                for (i, difference) in evidence.diff.iter().enumerate() {
                    let label = if i == 0 { "diff:" } else { "" };
                    out.push_str(&format!("    {label:<9} {difference}\n"));
                }
            }
        }
    }
    let failed = report.count(|o| matches!(o, CheckOutcome::Fail { .. }));
    out.push_str(&format!(
        "\n{} checks: {} passed, {failed} failed, {} skipped\n",
        report.checks.len(),
        report.count(|o| matches!(o, CheckOutcome::Pass)),
        report.count(|o| matches!(o, CheckOutcome::Skipped { .. })),
    ));
    out
}

/// Continuation lines of a multi-line observation line up under its first line.
fn indent_rest(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join(&format!("\n{:14}", ""))
}

pub fn json(report: &Report) -> String {
    serde_json::to_string_pretty(report).expect("a report serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Report {
        let mut report = Report::new("Job.v1.batch", "integrations.yaml", "built-in", "manager", None);
        report.push(CheckResult {
            check: Check::SuspendedOnCreate,
            title: Check::SuspendedOnCreate.title(),
            outcome: CheckOutcome::Pass,
            cluster: Some("manager".into()),
            namespace: Some("conformance-00000-suspended-on-create".into()),
            seconds: 0.3,
        });
        report.push(CheckResult {
            check: Check::StopAndRestore,
            title: Check::StopAndRestore.title(),
            outcome: CheckOutcome::Fail {
                evidence: Evidence {
                    expected: "the spec as created".into(),
                    observed: "1 field differs\nafter the stop".into(),
                    objects: vec!["Job ns/sample".into()],
                    diff: vec![Difference {
                        path: "spec.template.spec.nodeSelector".into(),
                        before: None,
                        after: Some(json!({"type": "kwok"})),
                    }],
                    settled: false,
                },
            },
            cluster: Some("manager".into()),
            namespace: Some("conformance-00000-stop-and-restore".into()),
            seconds: 12.0,
        });
        report.push(CheckResult {
            check: Check::StatusFromWorker,
            title: Check::StatusFromWorker.title(),
            outcome: CheckOutcome::Skipped { reason: "no MultiKueue workers".into() },
            cluster: None,
            namespace: None,
            seconds: 0.0,
        });
        report
    }

    #[test]
    fn a_failure_fails_the_report_and_a_skip_does_not() {
        let report = report();
        assert!(!report.passed);
        let mut skipped_only = Report::new("K.v1.g", "built-in", "built-in", "manager", None);
        skipped_only.push(report.checks[2].clone());
        assert!(skipped_only.passed);
    }

    #[test]
    fn the_table_shows_evidence_under_failures_and_reasons_under_skips() {
        assert_eq!(
            table(&report()),
            "\
Kueue contract of Job.v1.batch (description: integrations.yaml; sample: built-in)
checks on manager; no MultiKueue workers

CHECK                  RESULT    TIME  PROMISE
suspended-on-create    pass      0.3s  a queued job is suspended when created
stop-and-restore       FAIL     12.0s  on eviction the job is suspended and its spec restored
    expected: the spec as created
    observed: 1 field differs
              after the stop
    where:    cluster manager, namespace conformance-00000-stop-and-restore
    objects:  Job ns/sample
    diff:     spec.template.spec.nodeSelector: (absent) → {\"type\":\"kwok\"}
status-from-worker     skipped      -  a worker's run is copied back: the manager's job finishes
    reason:   no MultiKueue workers

3 checks: 1 passed, 1 failed, 1 skipped
"
        );
    }

    #[test]
    fn json_carries_the_same_results() {
        let value: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        assert_eq!(value["passed"], false);
        assert_eq!(value["checks"][0]["check"], "suspended-on-create");
        assert_eq!(value["checks"][0]["result"], "pass");
        assert_eq!(value["checks"][1]["result"], "fail");
        assert_eq!(value["checks"][1]["evidence"]["diff"][0]["path"], "spec.template.spec.nodeSelector");
        assert_eq!(value["checks"][1]["evidence"]["diff"][0]["before"], serde_json::Value::Null);
        assert_eq!(
            value["checks"][2],
            json!({
                "check": "status-from-worker",
                "title": Check::StatusFromWorker.title(),
                "result": "skipped",
                "reason": "no MultiKueue workers",
                "seconds": 0.0,
            })
        );
    }
}
