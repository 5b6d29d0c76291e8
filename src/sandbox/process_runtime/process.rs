//! Processes the sandbox starts: each in its own process group, logs to a file, recorded by pid
//! and start time so that `down` stops exactly what `up` started, even after a pid is reused.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// A process the sandbox started.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ProcessRecord {
    pub pid: i32,
    /// Start time in clock ticks since boot (`/proc/<pid>/stat` field 22): tells our process
    /// apart from a later one that got the same pid.
    pub start_ticks: u64,
    pub log: PathBuf,
}

/// What to run.
pub struct Launch<'a> {
    pub program: &'a Path,
    pub args: Vec<String>,
    pub env: Vec<(&'a str, String)>,
    pub log: PathBuf,
}

/// Starts a daemon that outlives this process: stdin closed, output appended to the log, own
/// process group (so a terminal's ctrl-c on `up` does not reach it).
pub fn spawn(launch: Launch<'_>) -> std::io::Result<ProcessRecord> {
    if let Some(dir) = launch.log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let out = std::fs::OpenOptions::new().create(true).append(true).open(&launch.log)?;
    let err = out.try_clone()?;
    let child = Command::new(launch.program)
        .args(&launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()?;
    let pid = child.id() as i32;
    // The child is deliberately not waited for: it is a daemon, reaped by init once `up` exits.
    drop(child);
    let start_ticks = read_stat(pid).map(|s| s.start_ticks).unwrap_or_default();
    Ok(ProcessRecord { pid, start_ticks, log: launch.log })
}

struct Stat {
    state: char,
    threads: u64,
    start_ticks: u64,
}

fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `/proc/<pid>/stat`; the command name may hold spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        threads: fields.get(17)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

impl ProcessRecord {
    /// True while the recorded process runs. A reused pid counts as gone, and so does a
    /// zombie — but only once its last thread has exited: a leader thread turns zombie first
    /// while the others still hold the process's sockets open.
    pub fn is_running(&self) -> bool {
        match read_stat(self.pid) {
            Some(stat) => {
                stat.start_ticks == self.start_ticks && !(matches!(stat.state, 'Z' | 'X') && stat.threads <= 1)
            }
            None => false,
        }
    }

    /// SIGTERM to its process group, then SIGKILL after `grace`. Only ever signals the
    /// recorded process (checked by start time), never anything found by name.
    pub async fn stop(&self, grace: Duration) {
        if !self.is_running() {
            return;
        }
        let group = Pid::from_raw(self.pid);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while self.is_running() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if self.is_running() {
            let _ = killpg(group, Signal::SIGKILL);
            while self.is_running() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        let line = "4242 (kube (api) server) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 12 0 987654 1000 50";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.threads, 12);
        assert_eq!(stat.start_ticks, 987654);
        assert!(parse_stat("garbage").is_none());
    }

    #[tokio::test]
    async fn spawned_process_is_tracked_and_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let record = spawn(Launch {
            program: Path::new("sleep"),
            args: vec!["30".into()],
            env: vec![],
            log: dir.path().join("sleep.log"),
        })
        .unwrap();
        assert!(record.is_running());
        record.stop(Duration::from_secs(5)).await;
        assert!(!record.is_running());
    }

    #[test]
    fn reused_pid_is_not_ours() {
        let me = std::process::id() as i32;
        let mine = ProcessRecord { pid: me, start_ticks: read_stat(me).unwrap().start_ticks, log: PathBuf::new() };
        assert!(mine.is_running());
        let impostor = ProcessRecord { start_ticks: mine.start_ticks + 1, ..mine };
        assert!(!impostor.is_running());
    }
}
