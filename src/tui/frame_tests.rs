//! Frames of every view, drawn from the fixture scene on a test terminal and compared with the
//! committed snapshots in `snapshots/` (`cargo insta review` after an intended change).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::app::App;
use super::view;
use crate::model::fixtures::{NOW, scene};
use crate::model::join;

fn app() -> App {
    let mut app = App::new("sandbox kueue-ext (/state)".into(), false);
    app.now = NOW;
    app.update(join(&scene()));
    app
}

fn keys(app: &mut App, keys: &[KeyCode]) {
    for code in keys {
        app.handle_key(KeyEvent::new(*code, KeyModifiers::NONE));
    }
}

fn typed(text: &str) -> Vec<KeyCode> {
    text.chars().map(KeyCode::Char).collect()
}

fn frame(app: &App, width: u16, height: u16) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|f| view::render(f, app)).expect("draws");
    terminal.backend().clone()
}

#[test]
fn jobs_table() {
    insta::assert_snapshot!(frame(&app(), 150, 14));
}

#[test]
fn jobs_table_filtered_while_typing() {
    let mut app = app();
    keys(&mut app, &typed("/pre"));
    insta::assert_snapshot!(frame(&app, 150, 8));
}

#[test]
fn detail_describe() {
    let mut app = app();
    keys(&mut app, &typed("/training"));
    keys(&mut app, &[KeyCode::Enter, KeyCode::Enter]);
    insta::assert_snapshot!(frame(&app, 120, 44));
}

#[test]
fn detail_yaml() {
    let mut app = app();
    keys(&mut app, &typed("/dispatching"));
    keys(&mut app, &[KeyCode::Enter, KeyCode::Char('y')]);
    insta::assert_snapshot!(frame(&app, 100, 24));
}

#[test]
fn queues_view() {
    let mut app = app();
    keys(&mut app, &typed(":queues"));
    keys(&mut app, &[KeyCode::Enter]);
    insta::assert_snapshot!(frame(&app, 130, 9));
}

#[test]
fn clusters_view() {
    let mut snapshot = scene();
    snapshot.clusters[2].reachable = false;
    snapshot.clusters[2].problems.insert("Workload".into(), "connection refused".into());
    let mut app = app();
    app.update(join(&snapshot));
    keys(&mut app, &typed(":clusters"));
    keys(&mut app, &[KeyCode::Enter]);
    insta::assert_snapshot!(frame(&app, 160, 9));
}

/// `p` on a pending job: its ClusterQueue's line, in order, the job selected.
#[test]
fn pending_view_from_a_job() {
    let mut app = app();
    keys(&mut app, &typed("/queued"));
    keys(&mut app, &[KeyCode::Enter, KeyCode::Char('p')]);
    insta::assert_snapshot!(frame(&app, 150, 9));
}

#[test]
fn help_and_delete_confirmation_popups() {
    let mut app = app();
    keys(&mut app, &[KeyCode::Char('?')]);
    insta::assert_snapshot!("help", frame(&app, 100, 24));
    keys(&mut app, &[KeyCode::Esc]);
    app.handle_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL));
    insta::assert_snapshot!("confirm_delete", frame(&app, 100, 12));
}

#[test]
fn tiny_terminals_do_not_break_the_frame() {
    let mut app = app();
    for (width, height) in [(1, 1), (20, 4), (40, 6)] {
        frame(&app, width, height);
        keys(&mut app, &[KeyCode::Enter]);
        frame(&app, width, height);
        keys(&mut app, &[KeyCode::Esc, KeyCode::Char('?')]);
        frame(&app, width, height);
        keys(&mut app, &[KeyCode::Esc]);
    }
}
