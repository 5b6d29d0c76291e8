//! The state of the `watch` UI and what each key does to it, with k9s's vocabulary: arrows or
//! j/k, enter, esc, `/` filter, `:` views, `?` help, `d` describe, `y` YAML, `p` the job's
//! place in its queue, `s` suspend or resume, ctrl-d delete (confirmed), `q` quit. Pure: a key changes the state and may ask for a
//! [`Command`]; the loop in `run` carries commands out against the clusters.

use std::cell::Cell;
use std::ops::Range;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::columns;
use crate::model::{JobKey, JobRow, Model, PendingLine, Waiting};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Jobs,
    Queues,
    /// One ClusterQueue's pending Workloads, in order.
    Pending,
    Clusters,
}

impl View {
    pub fn title(self) -> &'static str {
        match self {
            View::Jobs => "Jobs",
            View::Queues => "ClusterQueues",
            View::Pending => "Pending",
            View::Clusters => "Clusters",
        }
    }

    /// The view a `:` command names (k9s style: plural, singular or short name).
    fn named(command: &str) -> Option<View> {
        match command {
            "jobs" | "job" | "j" | "ej" | "wj" | "workloads" | "workload" | "wl" | "kwl" => Some(View::Jobs),
            "queues" | "queue" | "cq" | "clusterqueues" | "clusterqueue" | "lq" => Some(View::Queues),
            "clusters" | "cluster" | "mkc" | "ctx" | "contexts" => Some(View::Clusters),
            "pending" | "pw" | "line" => Some(View::Pending),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Describe,
    Yaml,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Detail {
    pub key: JobKey,
    pub tab: Tab,
    pub scroll: u16,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    Normal,
    /// Typing after `/`.
    Filter,
    /// Typing after `:`.
    Command,
    Help,
    ConfirmDelete(JobKey),
}

/// What a key asks of the clusters.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    SetSuspend { key: JobKey, suspend: bool },
    Delete(JobKey),
}

const PAGE: usize = 10;

pub struct App {
    pub model: Model,
    /// Where the clusters come from, for the header.
    pub origin: String,
    pub readonly: bool,
    /// Seconds since the epoch, for ages; set by the loop so frames are reproducible in tests.
    pub now: i64,
    pub view: View,
    pub mode: Mode,
    /// Text being typed at a `/` or `:` prompt.
    pub input: String,
    pub filter: String,
    pub detail: Option<Detail>,
    /// The outcome of the last command, or a hint.
    pub message: Option<String>,
    /// Indices of the jobs the filter lets through, in model order.
    visible: Vec<usize>,
    selected: usize,
    /// The selected job, so it stays selected when rows come and go.
    selected_key: Option<JobKey>,
    /// First row drawn; kept by the view so the window scrolls only when the cursor leaves it.
    pub offset: Cell<usize>,
    /// The ClusterQueue the pending view shows: `(cluster, name)`.
    pub line: Option<(String, String)>,
    /// Where esc goes back to from the pending view: the view, its selection and its filter.
    back: Option<(View, usize, String)>,
    quit: bool,
}

impl App {
    pub fn new(origin: String, readonly: bool) -> Self {
        App {
            model: Model::default(),
            origin,
            readonly,
            now: 0,
            view: View::Jobs,
            mode: Mode::Normal,
            input: String::new(),
            filter: String::new(),
            detail: None,
            message: None,
            visible: Vec::new(),
            selected: 0,
            selected_key: None,
            offset: Cell::new(0),
            line: None,
            back: None,
            quit: false,
        }
    }

    pub fn should_quit(&self) -> bool {
        self.quit
    }

    pub fn manager(&self) -> &str {
        self.model.clusters.first().map(|c| c.name.as_str()).unwrap_or("manager")
    }

    /// A new model from the watches; the selected job stays selected if it still exists.
    pub fn update(&mut self, model: Model) {
        self.model = model;
        self.refilter();
        // The selection stays on its job, wherever the update moved it in the view's rows.
        let kept = self.selected_key.as_ref().and_then(|key| match self.view {
            View::Jobs => self.jobs_in(0..self.job_count()).position(|j| &j.key == key),
            View::Pending => self.visible_waiting().iter().position(|w| w.job.as_ref() == Some(key)),
            View::Queues | View::Clusters => None,
        });
        if let Some(at) = kept {
            self.selected = at;
        }
        self.clamp();
    }

    /// Case-insensitive substring of any cell, as k9s filters.
    fn matches(&self, cells: &[String]) -> bool {
        let needle = self.filter.to_lowercase();
        needle.is_empty() || cells.iter().any(|c| c.to_lowercase().contains(&needle))
    }

    /// Kept rather than recomputed per frame: a frame over thousands of jobs draws only the
    /// rows on screen.
    fn refilter(&mut self) {
        let manager = self.manager();
        self.visible = if self.filter.is_empty() {
            (0..self.model.jobs.len()).collect()
        } else {
            let keep = |j: &JobRow| self.matches(&columns::job_cells(j, manager, self.now));
            self.model.jobs.iter().enumerate().filter(|(_, j)| keep(j)).map(|(i, _)| i).collect()
        };
    }

    pub fn job_count(&self) -> usize {
        self.visible.len()
    }

    /// The visible jobs at positions `range` (clipped to what there is).
    pub fn jobs_in(&self, range: Range<usize>) -> impl Iterator<Item = &JobRow> {
        let end = range.end.min(self.visible.len());
        let start = range.start.min(end);
        self.visible[start..end].iter().filter_map(|&i| self.model.jobs.get(i))
    }

    pub fn visible_queues(&self) -> Vec<&crate::model::QueueRow> {
        self.model.queues.iter().filter(|q| self.matches(&columns::queue_cells(q))).collect()
    }

    /// The ClusterQueue's line the pending view shows, if anything waits there.
    pub fn pending_line(&self) -> Option<&PendingLine> {
        let (cluster, cq) = self.line.as_ref()?;
        self.model.pending_line(cluster, cq)
    }

    pub fn visible_waiting(&self) -> Vec<&Waiting> {
        let workloads = self.pending_line().map(|l| l.workloads.as_slice()).unwrap_or_default();
        workloads.iter().filter(|w| self.matches(&columns::waiting_cells(w, self.now))).collect()
    }

    pub fn visible_clusters(&self) -> Vec<&crate::model::ClusterRow> {
        self.model.clusters.iter().filter(|c| self.matches(&columns::cluster_cells(c))).collect()
    }

    fn row_count(&self) -> usize {
        match self.view {
            View::Jobs => self.job_count(),
            View::Queues => self.visible_queues().len(),
            View::Pending => self.visible_waiting().len(),
            View::Clusters => self.visible_clusters().len(),
        }
    }

    pub fn selected(&self) -> usize {
        self.selected
    }

    pub fn selected_job(&self) -> Option<&JobRow> {
        match &self.detail {
            Some(detail) => self.model.job(&detail.key),
            None if self.view == View::Jobs => self.jobs_in(self.selected..self.selected + 1).next(),
            None => None,
        }
    }

    fn clamp(&mut self) {
        self.selected = self.selected.min(self.row_count().saturating_sub(1));
        let key = match self.view {
            View::Jobs => self.jobs_in(self.selected..self.selected + 1).next().map(|j| j.key.clone()),
            View::Pending => self.visible_waiting().get(self.selected).and_then(|w| w.job.clone()),
            View::Queues | View::Clusters => return,
        };
        self.selected_key = key;
    }

    fn move_by(&mut self, delta: isize) {
        self.selected = self.selected.saturating_add_signed(delta);
        self.clamp();
    }

    fn switch_to(&mut self, view: View) {
        // `:pending` from elsewhere shows the first ClusterQueue anything waits in.
        if view == View::Pending && self.line.is_none() {
            self.line = self.model.pending.first().map(|l| (l.cluster.clone(), l.cluster_queue.clone()));
        }
        self.view = view;
        self.detail = None;
        self.filter.clear();
        self.refilter();
        self.selected = 0;
        self.offset.set(0);
        self.clamp();
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Option<Command> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return None;
        }
        match self.mode.clone() {
            Mode::Filter | Mode::Command => {
                self.prompt_key(key);
                None
            }
            Mode::Help => {
                if matches!(key.code, KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') | KeyCode::Enter) {
                    self.mode = Mode::Normal;
                }
                None
            }
            Mode::ConfirmDelete(job) => {
                self.mode = Mode::Normal;
                if matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                    self.message = Some(format!("deleting {job} on {}…", job.cluster));
                    return Some(Command::Delete(job));
                }
                self.message = Some("delete cancelled".into());
                None
            }
            Mode::Normal => self.normal_key(key),
        }
    }

    fn prompt_key(&mut self, key: KeyEvent) {
        let filtering = self.mode == Mode::Filter;
        match key.code {
            KeyCode::Esc => {
                if filtering {
                    self.filter.clear();
                }
                self.input.clear();
                self.mode = Mode::Normal;
            }
            KeyCode::Enter => {
                self.mode = Mode::Normal;
                let input = std::mem::take(&mut self.input);
                if !filtering {
                    self.run_command(input.trim());
                }
            }
            KeyCode::Backspace => {
                self.input.pop();
            }
            KeyCode::Char(c) => self.input.push(c),
            _ => {}
        }
        // The filter follows the typing, as in k9s.
        if filtering && self.mode == Mode::Filter {
            self.filter = self.input.clone();
        }
        self.refilter();
        self.clamp();
    }

    fn run_command(&mut self, command: &str) {
        match command {
            "q" | "q!" | "quit" => self.quit = true,
            "help" => self.mode = Mode::Help,
            _ => match View::named(command) {
                Some(view) => self.switch_to(view),
                None => {
                    self.message =
                        Some(format!("unknown command {command:?}: try :jobs, :queues, :pending or :clusters"))
                }
            },
        }
    }

    fn normal_key(&mut self, key: KeyEvent) -> Option<Command> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('d') if ctrl => return self.ask_delete(),
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('/') if self.detail.is_none() => {
                self.mode = Mode::Filter;
                self.input.clear();
            }
            KeyCode::Char(':') => {
                self.mode = Mode::Command;
                self.input.clear();
            }
            KeyCode::Esc if self.detail.is_some() => self.detail = None,
            KeyCode::Esc if self.view == View::Pending && self.filter.is_empty() => self.go_back(),
            KeyCode::Esc => {
                self.filter.clear();
                self.refilter();
            }
            KeyCode::Enter => self.enter(),
            KeyCode::Char('d') => self.open(Tab::Describe),
            KeyCode::Char('y') => self.open(Tab::Yaml),
            KeyCode::Char('p') => self.jump_to_queue(),
            KeyCode::Char('s') => return self.toggle_suspend(),
            KeyCode::Up | KeyCode::Char('k') => self.scroll(-1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll(1),
            KeyCode::PageUp => self.scroll(-(PAGE as isize)),
            KeyCode::PageDown => self.scroll(PAGE as isize),
            KeyCode::Home | KeyCode::Char('g') => self.scroll(isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.scroll(isize::MAX / 2),
            _ => {}
        }
        self.clamp();
        None
    }

    fn scroll(&mut self, delta: isize) {
        match &mut self.detail {
            Some(detail) => {
                let lines = delta.clamp(i16::MIN as isize, i16::MAX as isize) as i16;
                detail.scroll = detail.scroll.saturating_add_signed(lines);
            }
            None => self.move_by(delta),
        }
    }

    fn enter(&mut self) {
        match self.view {
            View::Jobs if self.detail.is_none() => self.open(Tab::Describe),
            View::Queues => {
                let queue = self.visible_queues().get(self.selected).map(|q| (q.cluster.clone(), q.name.clone()));
                if let Some(queue) = queue {
                    self.show_line(queue, None);
                }
            }
            View::Pending if self.detail.is_none() => {
                let job = self.visible_waiting().get(self.selected).and_then(|w| w.job.clone());
                match job {
                    Some(key) => self.detail = Some(Detail { key, tab: Tab::Describe, scroll: 0 }),
                    None => self.message = Some("no job of this Workload is watched".into()),
                }
            }
            // A cluster drills down to the jobs it runs.
            View::Clusters => {
                if let Some(name) = self.visible_clusters().get(self.selected).map(|c| c.name.clone()) {
                    self.switch_to(View::Jobs);
                    self.filter = name;
                    self.refilter();
                }
            }
            _ => {}
        }
    }

    /// The pending view of ClusterQueue `(cluster, name)`, with `job` selected when it waits
    /// there; esc comes back to where this was called from.
    fn show_line(&mut self, queue: (String, String), job: Option<&JobKey>) {
        if self.view != View::Pending {
            self.back = Some((self.view, self.selected, self.filter.clone()));
        }
        self.switch_to(View::Pending);
        self.line = Some(queue);
        let at = job.and_then(|key| self.visible_waiting().iter().position(|w| w.job.as_ref() == Some(key)));
        self.selected = at.unwrap_or(0);
        self.clamp();
    }

    /// The selected job's ClusterQueue, the job selected in it.
    fn jump_to_queue(&mut self) {
        let Some(job) = self.selected_job() else { return };
        let (key, cluster) = (job.key.clone(), job.key.cluster.clone());
        let admitted_to = job.workload.as_ref().and_then(|w| w.cluster_queue()).map(String::from);
        let fed_by = job.queue.as_deref().and_then(|q| self.model.local_queue(&cluster, &key.namespace, q));
        let Some(cq) = admitted_to.or_else(|| fed_by.map(|lq| lq.cluster_queue.clone())) else {
            self.message = Some(format!("{key} is in no ClusterQueue"));
            return;
        };
        self.show_line((cluster, cq.clone()), Some(&key));
        if !self.visible_waiting().iter().any(|w| w.job.as_ref() == Some(&key)) {
            self.message = Some(format!("{key} is not pending in ClusterQueue {cq}"));
        }
    }

    fn go_back(&mut self) {
        let (view, selected, filter) = self.back.take().unwrap_or((View::Queues, 0, String::new()));
        self.switch_to(view);
        self.filter = filter;
        self.refilter();
        self.selected = selected;
        self.clamp();
    }

    fn open(&mut self, tab: Tab) {
        if let Some(detail) = &mut self.detail {
            detail.tab = tab;
            detail.scroll = 0;
        } else if let Some(job) = self.selected_job() {
            self.detail = Some(Detail { key: job.key.clone(), tab, scroll: 0 });
        }
    }

    fn toggle_suspend(&mut self) -> Option<Command> {
        if self.readonly {
            self.message = Some("read-only: suspend and resume are off (--readonly)".into());
            return None;
        }
        let job = self.selected_job()?;
        let (key, suspend) = (job.key.clone(), !job.job.suspended);
        let verb = if suspend { "suspending" } else { "resuming" };
        self.message = Some(format!("{verb} {key} on {}…", key.cluster));
        Some(Command::SetSuspend { key, suspend })
    }

    fn ask_delete(&mut self) -> Option<Command> {
        if self.readonly {
            self.message = Some("read-only: delete is off (--readonly)".into());
            return None;
        }
        if let Some(job) = self.selected_job() {
            self.mode = Mode::ConfirmDelete(job.key.clone());
        }
        None
    }
}

#[cfg(test)]
mod tests;
