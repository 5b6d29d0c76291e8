//! The interactive loop: draws on every change (debounced, so a burst of watch events costs one
//! join), reads keys, carries out commands in the background, and asks Kueue's visibility API
//! the order of the queues at an interval (it serves no watch). The join runs on a blocking
//! thread, so keys are answered even while thousands of jobs are being joined. The terminal is given back as it
//! was on `q`, ctrl-c, SIGINT, SIGTERM and on a panic (ratatui's hook).

use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;
use ratatui::DefaultTerminal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use super::app::{App, Command};
use super::{actions, view};
use crate::model::join;
use crate::model::snapshot::Visibility;
use crate::model::source::{Source, visibility};

/// How long watch events are gathered before the model is joined again.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// How often the visibility API is asked: positions follow admissions within it, and each
/// Kueue answers one request per ClusterQueue that often, which it serves from memory.
const VISIBILITY_EVERY: Duration = Duration::from_secs(10);

pub fn now() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_second()
}

/// The terminal is all that can fail here: a watch that fails shows in the view instead.
pub async fn run(source: Source, readonly: bool) -> std::io::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, source, readonly).await;
    ratatui::try_restore()?;
    result
}

fn execute(source: &Source, app: &mut App, command: Command, done: &mpsc::UnboundedSender<String>) {
    let cluster = match &command {
        Command::SetSuspend { key, .. } | Command::Delete(key) => key.cluster.clone(),
    };
    let Some(client) = source.client(&cluster) else {
        app.message = Some(format!("no connection to {cluster}"));
        return;
    };
    let done = done.clone();
    tokio::spawn(async move {
        let _ = done.send(actions::execute(client, command).await);
    });
}

async fn event_loop(terminal: &mut DefaultTerminal, mut source: Source, readonly: bool) -> std::io::Result<()> {
    let mut app = App::new(source.origin.clone(), readonly);
    app.now = now();
    app.update(join(&source.snapshot()));
    let mut keys = EventStream::new();
    let mut ages = tokio::time::interval(Duration::from_secs(1));
    let mut terminate = signal(SignalKind::terminate())?;
    let (done, mut outcomes) = mpsc::unbounded_channel();
    let (joined, mut models) = mpsc::channel(1);
    let mut joining = false;
    let mut refresh_at: Option<Instant> = None;
    let mut ask_visibility = tokio::time::interval(VISIBILITY_EVERY);
    let (answered, mut answers) = mpsc::channel(1);
    let mut asking = false;
    // The last answers, put in every snapshot until the next.
    let mut orders: Vec<Visibility> = Vec::new();
    let mut dirty = true;
    while !app.should_quit() {
        if dirty {
            terminal.draw(|frame| view::render(frame, &app))?;
            dirty = false;
        }
        tokio::select! {
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind == KeyEventKind::Press => {
                    if let Some(command) = app.handle_key(key) {
                        execute(&source, &mut app, command, &done);
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            () = source.changed() => {
                refresh_at.get_or_insert_with(|| Instant::now() + DEBOUNCE);
            }
            // One join at a time; changes meanwhile wait for the next.
            () = sleep_until(refresh_at.unwrap_or_else(Instant::now)), if refresh_at.is_some() && !joining => {
                refresh_at = None;
                joining = true;
                let (mut snapshot, joined) = (source.snapshot(), joined.clone());
                visibility::apply(&mut snapshot, &orders);
                // Fails only once the loop has ended, when no one needs the model.
                tokio::task::spawn_blocking(move || {
                    let _ = joined.blocking_send(join(&snapshot));
                });
            }
            // One round of asking at a time: a Kueue slow to answer is not asked again meanwhile.
            _ = ask_visibility.tick(), if !asking => {
                asking = true;
                let (snapshot, answered) = (source.snapshot(), answered.clone());
                let clients = source.clients(&snapshot);
                tokio::spawn(async move {
                    let _ = answered.send(visibility::read(clients, &snapshot.clusters).await).await;
                });
            }
            Some(answer) = answers.recv() => {
                asking = false;
                orders = answer;
                refresh_at.get_or_insert_with(Instant::now);
            }
            Some(model) = models.recv() => {
                joining = false;
                app.update(model);
                dirty = true;
            }
            _ = ages.tick() => {
                app.now = now();
                dirty = true;
            }
            Some(outcome) = outcomes.recv() => {
                app.message = Some(outcome);
                dirty = true;
            }
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = terminate.recv() => return Ok(()),
        }
    }
    Ok(())
}
