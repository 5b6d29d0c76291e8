//! Keys against the fixture scene, without a cluster or a terminal.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::model::fixtures::{NOW, scene};
use crate::model::join;

fn app() -> App {
    let mut app = App::new("sandbox kueue-ext (/state)".into(), false);
    app.now = NOW;
    app.update(join(&scene()));
    app
}

fn press(app: &mut App, keys: &str) -> Vec<Command> {
    keys.chars().filter_map(|c| app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))).collect()
}

fn key(app: &mut App, code: KeyCode) -> Option<Command> {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn ctrl(app: &mut App, c: char) -> Option<Command> {
    app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn names(app: &App) -> Vec<String> {
    app.jobs_in(0..app.job_count()).map(|j| j.key.name.clone()).collect()
}

#[test]
fn the_filter_narrows_live_and_esc_clears_it() {
    let mut app = app();
    assert_eq!(app.job_count(), 7);
    press(&mut app, "/train");
    assert_eq!(app.mode, Mode::Filter);
    assert_eq!(names(&app), ["training"], "filters while typing");
    key(&mut app, KeyCode::Enter);
    assert_eq!((app.mode.clone(), app.filter.as_str()), (Mode::Normal, "train"));
    press(&mut app, "/trainx");
    key(&mut app, KeyCode::Backspace);
    press(&mut app, "y");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.filter, "trainy", "a new filter replaces the old one");
    assert_eq!(app.job_count(), 0);
    key(&mut app, KeyCode::Esc);
    assert_eq!((app.filter.as_str(), app.job_count()), ("", 7));
    press(&mut app, "/blocked");
    assert_eq!(names(&app), ["too-big"], "any column matches, the status too");
    key(&mut app, KeyCode::Esc);
    assert_eq!((app.mode.clone(), app.job_count()), (Mode::Normal, 7), "esc at the prompt drops the filter");
}

#[test]
fn colon_switches_views_and_unknown_names_are_told() {
    let mut app = app();
    for (command, view) in
        [(":queues", View::Queues), (":mkc", View::Clusters), (":jobs", View::Jobs), (":cq", View::Queues)]
    {
        press(&mut app, command);
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.view, view, "{command}");
    }
    press(&mut app, ":pods");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view, View::Queues);
    assert!(app.message.as_deref().unwrap_or_default().contains("unknown command \"pods\""));
    press(&mut app, ":q");
    key(&mut app, KeyCode::Enter);
    assert!(app.should_quit());
}

#[test]
fn enter_opens_the_selected_job_and_esc_goes_back() {
    let mut app = app();
    press(&mut app, "jj");
    let selected = app.selected_job().map(|j| j.key.name.clone());
    key(&mut app, KeyCode::Enter);
    let detail = app.detail.clone().expect("detail open");
    assert_eq!((Some(detail.key.name), detail.tab), (selected, Tab::Describe));
    press(&mut app, "y");
    assert_eq!(app.detail.as_ref().map(|d| d.tab), Some(Tab::Yaml));
    press(&mut app, "jjj");
    assert_eq!(app.detail.as_ref().map(|d| d.scroll), Some(3), "arrows scroll the detail");
    key(&mut app, KeyCode::Esc);
    assert!(app.detail.is_none());
    press(&mut app, "q");
    assert!(app.should_quit());
}

#[test]
fn the_selection_follows_its_job_when_rows_change() {
    let mut app = app();
    press(&mut app, "/training");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Esc);
    let at = names(&app).iter().position(|n| n == "training").unwrap_or_default();
    for _ in 0..at {
        press(&mut app, "j");
    }
    assert_eq!(app.selected_job().map(|j| j.key.name.as_str()), Some("training"));
    let mut fewer = scene();
    fewer.clusters[0].jobs.retain(|j| j.object.metadata.name.as_deref() != Some("done"));
    app.update(join(&fewer));
    assert_eq!(app.selected_job().map(|j| j.key.name.as_str()), Some("training"));
}

#[test]
fn delete_asks_first_and_only_y_confirms() {
    let mut app = app();
    let first = app.selected_job().map(|j| j.key.clone()).expect("a job");
    assert_eq!(ctrl(&mut app, 'd'), None);
    assert_eq!(app.mode, Mode::ConfirmDelete(first.clone()));
    assert_eq!(press(&mut app, "n"), []);
    assert_eq!((app.mode.clone(), app.message.as_deref()), (Mode::Normal, Some("delete cancelled")));
    ctrl(&mut app, 'd');
    assert_eq!(press(&mut app, "y"), [Command::Delete(first)]);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn s_suspends_a_running_job_and_resumes_a_suspended_one() {
    let mut app = app();
    press(&mut app, "/training");
    key(&mut app, KeyCode::Enter);
    let commands = press(&mut app, "s");
    let [Command::SetSuspend { key: job, suspend }] = commands.as_slice() else {
        panic!("not one suspend: {commands:?}")
    };
    assert_eq!((job.name.as_str(), *suspend), ("training", true));
    press(&mut app, "/queued");
    key(&mut app, KeyCode::Enter);
    assert!(matches!(press(&mut app, "s").as_slice(), [Command::SetSuspend { suspend: false, .. }]));
}

#[test]
fn readonly_refuses_writes() {
    let mut app = app();
    app.readonly = true;
    assert_eq!(press(&mut app, "s"), []);
    assert_eq!(ctrl(&mut app, 'd'), None);
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.message.as_deref().unwrap_or_default().contains("read-only"));
}

#[test]
fn help_opens_and_closes_and_ctrl_c_always_quits() {
    let mut app = app();
    press(&mut app, "?");
    assert_eq!(app.mode, Mode::Help);
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, "/abc");
    ctrl(&mut app, 'c');
    assert!(app.should_quit(), "even while typing a filter");
}

#[test]
fn a_cluster_drills_down_to_its_jobs() {
    let mut app = app();
    press(&mut app, ":clusters");
    key(&mut app, KeyCode::Enter);
    press(&mut app, "jj");
    key(&mut app, KeyCode::Enter);
    assert_eq!((app.view, app.filter.as_str()), (View::Jobs, "worker2"));
    assert_eq!(names(&app), ["training"]);
}

#[test]
fn p_jumps_to_the_jobs_queue_with_it_selected_and_esc_comes_back() {
    let mut app = app();
    press(&mut app, "/too-big");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Enter);
    assert!(app.detail.is_some(), "from the detail view too");
    press(&mut app, "p");
    assert_eq!(app.view, View::Pending);
    assert_eq!(app.line, Some(("manager".to_string(), "cluster-queue".to_string())));
    let order: Vec<String> =
        app.visible_waiting().iter().filter_map(|w| w.job.as_ref()).map(|k| k.name.clone()).collect();
    assert_eq!(order, ["queued", "too-big", "preempted"], "Kueue's order (creation, then UID)");
    assert_eq!(app.selected(), 1, "the job is selected");
    app.update(join(&scene()));
    let selected = app.visible_waiting().get(app.selected()).and_then(|w| w.job.clone()).map(|k| k.name);
    assert_eq!(
        selected.as_deref(),
        Some("too-big"),
        "an update leaves the selection on the job, not its jobs-table row"
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.detail.as_ref().map(|d| d.key.name.as_str()), Some("too-big"), "enter opens the selected job");
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Esc);
    assert_eq!((app.view, app.filter.as_str()), (View::Jobs, "too-big"), "back where it came from");
    assert_eq!(names(&app), ["too-big"]);
}

#[test]
fn a_queue_opens_its_pending_line_and_an_admitted_job_is_said_not_pending() {
    let mut app = app();
    press(&mut app, ":queues");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Enter);
    assert_eq!((app.view, app.visible_waiting().len()), (View::Pending, 3));
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.view, View::Queues);
    press(&mut app, ":jobs");
    key(&mut app, KeyCode::Enter);
    press(&mut app, "/training");
    key(&mut app, KeyCode::Enter);
    press(&mut app, "p");
    assert_eq!(app.view, View::Pending);
    assert_eq!(
        app.message.as_deref(),
        Some("WrappedJob default/training is not pending in ClusterQueue cluster-queue")
    );
}
