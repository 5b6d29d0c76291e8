//! The report as a table for people, in kubectl's manner: one line per finding, its fix on the
//! line below, and a last line that counts.

use super::{Report, Severity};

pub fn table(report: &Report) -> String {
    let clusters: Vec<String> = report
        .clusters
        .iter()
        .map(|c| match &c.kueue {
            Some(version) => format!("{} (Kueue {version})", c.name),
            None => c.name.clone(),
        })
        .collect();
    let mut out = String::new();
    if !report.findings.is_empty() {
        let rows: Vec<[String; 4]> = report
            .findings
            .iter()
            .map(|f| {
                let object = f.object.as_ref().map_or("-".to_string(), ToString::to_string);
                [f.severity.to_string(), f.cluster.clone(), object, f.problem.clone()]
            })
            .collect();
        let header = ["SEVERITY", "CLUSTER", "OBJECT", "PROBLEM"].map(String::from);
        let width = |i: usize| rows.iter().chain([&header]).map(|r| r[i].len()).max().unwrap_or(0);
        let widths = [width(0), width(1), width(2)];
        let line = |row: &[String; 4]| {
            format!(
                "{:w0$}   {:w1$}   {:w2$}   {}\n",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        };
        out.push_str(&line(&header));
        for (row, finding) in rows.iter().zip(&report.findings) {
            out.push_str(&line(row));
            if let Some(fix) = &finding.fix {
                out.push_str(&format!("{:indent$}fix: {fix}\n", "", indent = widths[0] + 3));
            }
        }
    }
    let infos = report.findings.iter().filter(|f| f.severity == Severity::Info).count();
    let counted = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let summary = match (report.errors, report.warnings) {
        (0, 0) => "no problems found".to_string(),
        (errors, warnings) => format!("{}, {}", counted(errors, "error"), counted(warnings, "warning")),
    };
    let skipped =
        if infos > 0 { format!(" ({} left out, said above)", counted(infos, "check")) } else { String::new() };
    out.push_str(&format!("{} checked: {summary}{skipped}\n", clusters.join(", ")));
    out
}

#[cfg(test)]
mod tests {
    use super::super::check;
    use super::super::fixtures::{healthy, manager_mut, worker_mut};
    use super::*;

    #[test]
    fn a_healthy_setup_is_one_line() {
        let report = check(&healthy(), 0);
        assert!(report.healthy());
        assert_eq!(
            table(&report),
            "manager (Kueue v0.19.2), worker1 (Kueue v0.19.2), worker2 (Kueue v0.19.2) checked: no problems found\n"
        );
    }

    #[test]
    fn findings_are_a_table_errors_first_each_with_its_fix_below() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker2").local_queues.clear();
        manager_mut(&mut facts).kueue = None;
        let report = check(&facts, 0);
        assert!(!report.healthy());
        let table = table(&report);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "SEVERITY   CLUSTER   OBJECT                          PROBLEM");
        assert!(
            lines[1]
                .starts_with("error      worker2   LocalQueue/default/user-queue   LocalQueue default/user-queue of"),
            "{table}"
        );
        assert!(lines[2].starts_with("           fix: kubectl --context kueue-ext-worker2 create -f -"), "{table}");
        assert!(
            lines[3]
                .starts_with("info       manager   -                               Kueue runs without a Deployment"),
            "{table}"
        );
        assert_eq!(
            lines[4],
            "manager, worker1 (Kueue v0.19.2), worker2 (Kueue v0.19.2) checked: 1 error, 0 warnings (1 check left out, said above)"
        );
    }
}
