//! Drawing: a header (where the clusters come from, which answer, jobs per state), the current
//! view, and a footer (key hints, the prompt, or the last command's outcome). Draws only from
//! the [`App`]; nothing here calls the API. Only the rows on screen are built, so a frame costs
//! the same with ten jobs or ten thousand.

mod detail;
mod pending;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Table, Wrap};

use super::app::{App, Mode, View};
use super::columns;
use crate::model::RowStatus;

/// Colours of states, as kdash and k9s use them: green runs, dim is done, amber waits, red
/// needs a human.
pub fn status_style(status: RowStatus) -> Style {
    let color = match status {
        RowStatus::Running => Color::Green,
        RowStatus::Admitted | RowStatus::Reserved => Color::Cyan,
        RowStatus::Pending | RowStatus::NoWorkload => Color::Yellow,
        RowStatus::Evicted => Color::Magenta,
        RowStatus::Blocked | RowStatus::Failed => Color::Red,
        RowStatus::Succeeded | RowStatus::Unmanaged => Color::DarkGray,
    };
    Style::new().fg(color)
}

const COLUMN_SPACING: u16 = 2;

pub fn render(frame: &mut Frame, app: &App) {
    let [header, body, footer] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    render_header(frame, header, app);
    match &app.detail {
        Some(detail) => detail::render(frame, body, app, detail),
        None => match app.view {
            View::Jobs => render_jobs(frame, body, app),
            View::Queues => render_queues(frame, body, app),
            View::Pending => pending::render(frame, body, app),
            View::Clusters => render_clusters(frame, body, app),
        },
    }
    render_footer(frame, footer, app);
    match &app.mode {
        Mode::Help => render_help(frame, body),
        Mode::ConfirmDelete(key) => {
            let text =
                format!("Delete {key} on {}? It cannot be undone.  y: delete   any other key: keep", key.cluster);
            render_popup(frame, body, " Confirm ", vec![Line::from(text).red().bold()]);
        }
        _ => {}
    }
}

fn render_header(frame: &mut Frame, area: Rect, app: &App) {
    let mut clusters = vec![Span::raw("kueue-ext watch").bold(), Span::raw(format!(" · {} · ", app.origin))];
    for cluster in app.model.clusters.iter().filter(|c| c.context.is_some()) {
        let (mark, color) = if !cluster.reachable {
            ("✗", Color::Red)
        } else if cluster.problems.is_empty() {
            ("●", Color::Green)
        } else {
            ("◐", Color::Yellow)
        };
        clusters.push(Span::raw(format!("{} ", cluster.name)));
        clusters.push(Span::styled(format!("{mark} "), Style::new().fg(color)));
    }
    let mut counts = vec![Span::raw(format!("{} jobs", app.model.jobs.len()))];
    for (status, n) in app.model.counts() {
        counts.push(Span::raw(" · "));
        counts.push(Span::styled(format!("{n} {}", status.to_string().to_lowercase()), status_style(status)));
    }
    counts.push(Span::raw(format!(" · {} queues", app.model.queues.len())));
    frame.render_widget(Paragraph::new(vec![Line::from(clusters), Line::from(counts)]), area);
}

fn title(app: &App, shown: usize, total: usize) -> String {
    let filter = if app.filter.is_empty() { String::new() } else { format!(" /{}", app.filter) };
    format!(" {} ({shown}/{total}){filter} ", app.view.title())
}

/// First row to draw so that `selected` is on screen, moving the window as little as possible.
pub(super) fn window(app: &App, rows: usize, height: usize) -> std::ops::Range<usize> {
    let height = height.max(1);
    let selected = app.selected();
    let mut offset = app.offset.get().min(rows.saturating_sub(1));
    if selected < offset {
        offset = selected;
    } else if selected >= offset + height {
        offset = selected + 1 - height;
    }
    app.offset.set(offset);
    offset..(offset + height).min(rows)
}

fn header_row<const N: usize>(headers: [&str; N]) -> Row<'static> {
    Row::new(headers.map(|h| Cell::from(h.to_string()))).style(Style::new().bold().fg(Color::Gray))
}

pub(super) fn table<'a, const N: usize>(
    rows: Vec<Row<'a>>,
    headers: [&str; N],
    widths: [Constraint; N],
    title: String,
    selected: Option<usize>,
) -> (Table<'a>, ratatui::widgets::TableState) {
    let table = Table::new(rows, widths)
        .header(header_row(headers))
        .block(Block::bordered().title(title))
        .column_spacing(COLUMN_SPACING)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        // Also a mark, for terminals (and screen captures) without reverse video.
        .highlight_symbol("> ");
    (table, ratatui::widgets::TableState::new().with_selected(selected))
}

/// Columns as wide as their widest cell on screen (or header), as kubectl aligns them. When
/// they do not fit, the widest of the columns not in `keep` give way first — computed here
/// rather than left to the layout solver, so a frame is the same every time.
pub(super) fn fitted<const N: usize>(
    headers: [&str; N],
    rows: &[[String; N]],
    keep: &[usize],
    area: Rect,
) -> [Constraint; N] {
    let mut widths: [usize; N] = std::array::from_fn(|i| {
        rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0).max(headers[i].chars().count())
    });
    // Borders, the selection mark and the spaces between columns.
    let room = (area.width as usize).saturating_sub(4 + COLUMN_SPACING as usize * N.saturating_sub(1));
    let mut excess = widths.iter().sum::<usize>().saturating_sub(room);
    while excess > 0 {
        let shrinkable = (0..N).filter(|i| !keep.contains(i) && widths[*i] > 0);
        let Some(widest) = shrinkable.max_by_key(|&i| (widths[i], i)) else { break };
        widths[widest] -= 1;
        excess -= 1;
    }
    widths.map(|w| Constraint::Length(w.min(u16::MAX as usize) as u16))
}

fn render_jobs(frame: &mut Frame, area: Rect, app: &App) {
    let visible = app.job_count();
    // Borders and the header row take three lines.
    let range = window(app, visible, area.height.saturating_sub(3) as usize);
    let manager = app.manager();
    let (cells, styles): (Vec<_>, Vec<_>) = app
        .jobs_in(range.clone())
        .map(|job| (columns::job_cells(job, manager, app.now), status_style(job.status)))
        .unzip();
    // Name and status say the most; the rest may be cut short.
    let widths = fitted(columns::JOB_HEADERS, &cells, &[1, 3], area);
    let rows = cells.into_iter().zip(styles).map(|(cells, style)| Row::new(cells).style(style)).collect();
    let selected = (visible > 0).then(|| app.selected().saturating_sub(range.start));
    let (table, mut state) =
        table(rows, columns::JOB_HEADERS, widths, title(app, visible, app.model.jobs.len()), selected);
    frame.render_stateful_widget(table, area, &mut state);
}

fn render_queues(frame: &mut Frame, area: Rect, app: &App) {
    let queues = app.visible_queues();
    let range = window(app, queues.len(), area.height.saturating_sub(3) as usize);
    let shown = &queues[range.clone()];
    let cells: Vec<_> = shown.iter().map(|q| columns::queue_cells(q)).collect();
    let widths = fitted(columns::QUEUE_HEADERS, &cells, &[1], area);
    let rows = cells
        .into_iter()
        .zip(shown)
        .map(|(cells, q)| {
            let healthy = q.is_active() && q.stop_policy.is_none();
            Row::new(cells).style(if healthy { Style::new() } else { Style::new().fg(Color::Red) })
        })
        .collect();
    let selected = (!queues.is_empty()).then(|| app.selected().saturating_sub(range.start));
    let (table, mut state) =
        table(rows, columns::QUEUE_HEADERS, widths, title(app, queues.len(), app.model.queues.len()), selected);
    frame.render_stateful_widget(table, area, &mut state);
}

fn render_clusters(frame: &mut Frame, area: Rect, app: &App) {
    let clusters = app.visible_clusters();
    let range = window(app, clusters.len(), area.height.saturating_sub(3) as usize);
    let shown = &clusters[range.clone()];
    let cells: Vec<_> = shown.iter().map(|c| columns::cluster_cells(c)).collect();
    let widths = fitted(columns::CLUSTER_HEADERS, &cells, &[0], area);
    let rows = cells
        .into_iter()
        .zip(shown)
        .map(|(cells, c)| {
            let healthy = c.reachable && c.connection.as_ref().is_none_or(|a| a.is_true());
            Row::new(cells).style(if healthy { Style::new() } else { Style::new().fg(Color::Red) })
        })
        .collect();
    let selected = (!clusters.is_empty()).then(|| app.selected().saturating_sub(range.start));
    let (table, mut state) =
        table(rows, columns::CLUSTER_HEADERS, widths, title(app, clusters.len(), app.model.clusters.len()), selected);
    frame.render_stateful_widget(table, area, &mut state);
}

fn hints(app: &App) -> &'static str {
    match (&app.detail, app.view) {
        (Some(_), _) => {
            "esc back  d describe  y yaml  p queue  ↑↓ scroll  s suspend/resume  ctrl-d delete  ? help  q quit"
        }
        (None, View::Jobs) => {
            "↑↓ move  enter describe  y yaml  p queue  / filter  : view  s suspend  ctrl-d delete  ? help  q quit"
        }
        (None, View::Clusters) => "↑↓ move  enter jobs on it  / filter  : view  ? help  q quit",
        (None, View::Queues) => "↑↓ move  enter pending  / filter  : view  ? help  q quit",
        (None, View::Pending) => "↑↓ move  enter describe  esc back  / filter  : view  ? help  q quit",
    }
}

fn render_footer(frame: &mut Frame, area: Rect, app: &App) {
    let line = match &app.mode {
        Mode::Filter => Line::from(vec![Span::raw("/").bold(), Span::raw(app.input.clone()), Span::raw("█")]),
        Mode::Command => Line::from(vec![Span::raw(":").bold(), Span::raw(app.input.clone()), Span::raw("█")]),
        _ => match &app.message {
            Some(message) => Line::from(message.clone()).yellow(),
            None => Line::from(hints(app)).dark_gray(),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

const HELP: [(&str, &str); 16] = [
    ("↑ ↓  j k", "move; scroll in a detail view"),
    ("pgup pgdn  g G", "page; first, last"),
    ("enter", "open: a job (describe), a queue (pending), a cluster (jobs)"),
    ("p", "the job's queue: pending Workloads in order"),
    ("d", "describe: why, conditions, copies, events"),
    ("y", "YAML of the job"),
    ("esc", "back; clear the filter"),
    ("/", "filter the view (any column, live)"),
    (":jobs :queues :pending :clusters", "switch view (also :wl, :cq, :pw, :mkc)"),
    ("s", "suspend or resume the job (spec.suspend)"),
    ("ctrl-d", "delete the job, after a confirmation"),
    ("?", "this help"),
    ("q  ctrl-c", "quit"),
    ("STATUS", "Running Admitted Reserved Pending Evicted Blocked …"),
    ("PODS", "pending/running/succeeded/failed, where the job runs"),
    ("COPIES D/W/R/X", "MultiKueue copies dispatched/won/removed/rejected"),
];

fn render_help(frame: &mut Frame, area: Rect) {
    let lines =
        HELP.iter().map(|(keys, what)| Line::from(vec![Span::raw(format!("{keys:<34}")).bold(), Span::raw(*what)]));
    render_popup(frame, area, " Help (esc to close) ", lines.collect());
}

/// A bordered box in the middle of `area`, over what is there.
fn render_popup(frame: &mut Frame, area: Rect, title: &str, lines: Vec<Line>) {
    let width = lines.iter().map(Line::width).max().unwrap_or(0).saturating_add(4).min(area.width as usize) as u16;
    let height = (lines.len() as u16).saturating_add(2).min(area.height);
    let [popup] = Layout::horizontal([Constraint::Length(width)]).flex(ratatui::layout::Flex::Center).areas(area);
    let [popup] = Layout::vertical([Constraint::Length(height)]).flex(ratatui::layout::Flex::Center).areas(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(Block::bordered().title(title.to_string())),
        popup,
    );
}
