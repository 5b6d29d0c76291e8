//! The pending view: one ClusterQueue's pending Workloads in the order Kueue admits them, and
//! where that order comes from (Kueue's visibility API, or rebuilt from creation times).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::widgets::Row;

use super::{fitted, table, window};
use crate::model::PositionSource;
use crate::tui::app::App;
use crate::tui::columns;

/// ` Pending in ClusterQueue team-a on manager (2/5) · creation order: positions need the
/// visibility API (why) `.
fn title(app: &App, shown: usize) -> String {
    let Some((cluster, cq)) = &app.line else { return " Pending: no ClusterQueue has pending Workloads ".into() };
    let line = app.pending_line();
    let total = line.map_or(0, |l| l.workloads.len());
    let filter = if app.filter.is_empty() { String::new() } else { format!(" /{}", app.filter) };
    let source = match line {
        None => String::new(),
        Some(l) if l.source == PositionSource::VisibilityApi => " · Kueue's visibility API".into(),
        Some(l) => match &l.fallback {
            Some(why) => format!(" · creation order: positions need the visibility API ({why})"),
            None => " · creation order: positions need the visibility API".into(),
        },
    };
    format!(" Pending in ClusterQueue {cq} on {cluster} ({shown}/{total}){filter}{source} ")
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let waiting = app.visible_waiting();
    let range = window(app, waiting.len(), area.height.saturating_sub(3) as usize);
    let shown = &waiting[range.clone()];
    let cells: Vec<_> = shown.iter().map(|w| columns::waiting_cells(w, app.now)).collect();
    // Position and job say the most.
    let widths = fitted(columns::PENDING_HEADERS, &cells, &[0, 3], area);
    let rows = cells
        .into_iter()
        .zip(shown)
        .map(|(cells, w)| {
            Row::new(cells).style(if w.job.is_some() { Style::new() } else { Style::new().fg(Color::DarkGray) })
        })
        .collect();
    let selected = (!waiting.is_empty()).then(|| app.selected().saturating_sub(range.start));
    let (table, mut state) = table(rows, columns::PENDING_HEADERS, widths, title(app, waiting.len()), selected);
    frame.render_stateful_widget(table, area, &mut state);
}
