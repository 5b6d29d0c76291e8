//! The detail view of one job: `describe` (the explanation, then the job, its Workload, its
//! copies on workers and their events) or its YAML.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::status_style;
use crate::api::condition::Condition;
use crate::explain::explain;
use crate::model::{JobCopy, JobRow, Mirror, WorkloadFacts};
use crate::tui::app::{App, Detail, Tab};
use crate::tui::columns;

pub fn render(frame: &mut Frame, area: Rect, app: &App, detail: &Detail) {
    let tab =
        |t: Tab, name: &'static str| if detail.tab == t { Span::raw(name).bold().reversed() } else { Span::raw(name) };
    let mut title = vec![Span::raw(format!(" {} on {} · ", detail.key, detail.key.cluster))];
    title.extend([tab(Tab::Describe, "describe"), Span::raw(" "), tab(Tab::Yaml, "yaml"), Span::raw(" ")]);
    let lines = match app.model.job(&detail.key) {
        None => vec![Line::from(format!("{} is gone from {}.", detail.key, detail.key.cluster)).yellow()],
        Some(job) => match detail.tab {
            Tab::Describe => describe(app, job),
            Tab::Yaml => yaml(job),
        },
    };
    // Scrolling stops at the last line.
    let scroll = detail.scroll.min(lines.len().saturating_sub(1) as u16);
    let paragraph = Paragraph::new(lines).block(Block::bordered().title(Line::from(title))).scroll((scroll, 0));
    let paragraph = if detail.tab == Tab::Describe { paragraph.wrap(Wrap { trim: false }) } else { paragraph };
    frame.render_widget(paragraph, area);
}

fn heading(text: String) -> Line<'static> {
    Line::from(text).bold().fg(Color::LightBlue)
}

fn conditions(list: &[Condition], out: &mut Vec<Line<'static>>) {
    if list.is_empty() {
        out.push(Line::from("  (no conditions)").dark_gray());
    }
    for c in list {
        let style = if c.is_true() { Style::new() } else { Style::new().fg(Color::DarkGray) };
        let line = format!("  {:<18} {:<6} {:<22} {}", c.type_, c.status, c.reason, c.message);
        out.push(Line::styled(line, style));
    }
}

fn job_lines(job: &JobCopy, now: i64, out: &mut Vec<Line<'static>>) {
    let mut facts = format!(
        "  suspended {} · pods {} · age {}",
        if job.suspended { "yes" } else { "no" },
        columns::pods(job.pods),
        columns::age(job.created, now)
    );
    if let Some(by) = &job.managed_by {
        facts.push_str(&format!(" · managedBy {by}"));
    }
    if let Some(phase) = &job.phase {
        facts.push_str(&format!(" · phase {phase}"));
    }
    out.push(Line::from(facts));
    conditions(&job.conditions, out);
}

fn workload_lines(wl: &WorkloadFacts, out: &mut Vec<Line<'static>>) {
    let mut title = format!("Workload {} on {}: {}", wl.name, wl.cluster, wl.state());
    if let Some(cq) = wl.cluster_queue() {
        title.push_str(&format!(" in ClusterQueue {cq}"));
    }
    if let Some(chosen) = &wl.cluster_name {
        title.push_str(&format!(" · runs on {chosen}"));
    } else if !wl.nominated.is_empty() {
        title.push_str(&format!(" · nominated {}", wl.nominated.join(", ")));
    }
    out.push(heading(title));
    if let Some(admission) = &wl.admission {
        for assignment in &admission.pod_set_assignments {
            let flavors: Vec<String> = assignment.flavors.iter().map(|(r, f)| format!("{r}={f}")).collect();
            out.push(Line::from(format!("  pod set {}: {}", assignment.name, flavors.join(", "))));
        }
    }
    conditions(&wl.conditions, out);
    for check in &wl.checks {
        let line = format!("  check {:<14} {:<8} {}", check.name, check.state, check.message);
        out.push(Line::styled(
            line,
            if check.state == "Ready" { Style::new() } else { Style::new().fg(Color::Yellow) },
        ));
    }
}

fn mirror_lines(row: &JobRow, mirror: &Mirror, now: i64, out: &mut Vec<Line<'static>>) {
    out.push(heading(format!("Copy on {}: {}", mirror.cluster, mirror.state())));
    if let Some(why) = &mirror.unreachable {
        out.push(Line::from(format!("  cannot be read: {why}")).red());
    }
    match &mirror.job {
        Some(copy) => {
            out.push(Line::from(format!("  {} {}/{}", row.key.kind.name(), row.key.namespace, row.key.name)));
            job_lines(copy, now, out);
        }
        None => out.push(Line::from("  (no job copy)").dark_gray()),
    }
    if let Some(wl) = &mirror.workload {
        workload_lines(wl, out);
    }
}

fn describe(app: &App, row: &JobRow) -> Vec<Line<'static>> {
    let mut out = vec![heading("Why".into())];
    for sentence in explain(row, &app.model) {
        out.push(Line::from(format!("  • {sentence}")));
    }
    if let Some(timeline) = &row.multikueue {
        out.push(Line::raw(""));
        out.push(heading("MultiKueue (UTC)".into()));
        out.extend(timeline.lines().into_iter().map(|line| Line::from(format!("  {line}"))));
    }
    out.push(Line::raw(""));
    let status = Span::styled(row.status.to_string(), status_style(row.status));
    let queue = row.queue.as_deref().unwrap_or("-");
    out.push(Line::from(vec![
        Span::raw(format!("{} on {}: ", row.key, row.key.cluster)).bold().fg(Color::LightBlue),
        status,
        Span::raw(format!(" · queue {queue}")),
    ]));
    job_lines(&row.job, app.now, &mut out);
    match &row.workload {
        Some(wl) => workload_lines(wl, &mut out),
        None => out.push(Line::from("No Workload.").dark_gray()),
    }
    for mirror in &row.mirrors {
        out.push(Line::raw(""));
        mirror_lines(row, mirror, app.now, &mut out);
    }
    out.push(Line::raw(""));
    out.push(heading("Events (newest first)".into()));
    if row.events.is_empty() {
        out.push(Line::from("  (none)").dark_gray());
    }
    for e in &row.events {
        let event = &e.event;
        let line = format!(
            "  {:<4} {:<8} {:<7} {:<16} {}/{}: {}",
            columns::age(event.time, app.now),
            e.cluster,
            event.type_,
            event.reason,
            event.object.kind,
            event.object.name,
            event.message
        );
        out.push(if event.type_ == "Warning" { Line::from(line).yellow() } else { Line::from(line) });
    }
    out
}

fn yaml(row: &JobRow) -> Vec<Line<'static>> {
    let mut value = serde_json::to_value(row.job.object.as_ref()).unwrap_or_default();
    // List responses leave apiVersion and kind out of their items.
    let resource = row.key.kind.api_resource();
    value["apiVersion"] = resource.api_version.into();
    value["kind"] = resource.kind.into();
    match serde_saphyr::to_string(&value) {
        Ok(text) => text.lines().map(|l| Line::raw(l.to_string())).collect(),
        Err(e) => vec![Line::from(format!("cannot render YAML: {e}")).red()],
    }
}
