//! A sandbox the benchmark brings up with the plugin itself and takes down when dropped, and
//! what it reads from the processes it recorded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use kueue_ext::sandbox::record::SandboxState;

pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-kueue_ext");

/// Runs a command to completion; its output on failure.
pub fn run(command: &mut Command) -> String {
    let output = command.output().expect("command runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{command:?} failed:\n{text}");
    text
}

pub struct Sandbox {
    _dir: tempfile::TempDir,
    pub state_dir: PathBuf,
    /// Seconds `up` took.
    pub up_seconds: f64,
    /// What `up` printed (its steps with their times).
    pub said: String,
}

impl Sandbox {
    /// `up` with these extra flags, in a fresh state dir.
    pub fn up(flags: &[&str]) -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let state_dir = dir.path().join("state");
        let started = Instant::now();
        let said = run(Command::new(BIN).arg("up").args(flags).arg("--state-dir").arg(&state_dir));
        Sandbox { _dir: dir, state_dir, up_seconds: started.elapsed().as_secs_f64(), said }
    }

    pub fn state(&self) -> SandboxState {
        SandboxState::load(&self.state_dir).expect("state.json readable").expect("a sandbox is recorded")
    }

    /// Pid of a component as `up` recorded it.
    pub fn pid(&self, cluster: &str, component: &str) -> i32 {
        let state = self.state();
        let cluster = state.cluster(cluster).expect("cluster recorded");
        cluster.components.iter().find(|c| c.name == component).expect("component recorded").process.pid
    }

    /// Every recorded pid.
    pub fn pids(&self) -> Vec<i32> {
        self.processes().into_iter().map(|(_, pid)| pid).collect()
    }

    /// Every recorded process as `cluster/component`, with its pid.
    pub fn processes(&self) -> Vec<(String, i32)> {
        let state = self.state();
        let named =
            |cluster: &str, c: &kueue_ext::sandbox::record::Component| (format!("{cluster}/{}", c.name), c.process.pid);
        state.clusters.iter().flat_map(|cluster| cluster.components.iter().map(|c| named(&cluster.name, c))).collect()
    }

    pub async fn client(&self, cluster: &str) -> kube::Client {
        let context = kueue_ext::sandbox::context_name(kueue_ext::sandbox::DEFAULT_NAME, cluster);
        kueue_ext::kube_util::client_for(&self.state_dir.join("kubeconfig"), &context).await.expect("client")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let status = Command::new(BIN).args(["down", "--state-dir"]).arg(&self.state_dir).output();
        if !status.is_ok_and(|s| s.status.success()) {
            eprintln!("down --state-dir {} failed; processes may be left", self.state_dir.display());
        }
    }
}

/// What /proc says of process `pid`; a process that is gone fails the benchmark rather than
/// reading as nothing used.
fn proc_file(pid: i32, file: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .unwrap_or_else(|e| panic!("process {pid} is gone (/proc/{pid}/{file}: {e}): a component died during the run"))
}

/// The peak resident set of a process so far (VmHWM), in MiB.
pub fn peak_rss_mib(pid: i32) -> f64 {
    let status = proc_file(pid, "status");
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or_else(|| panic!("/proc/{pid}/status has no VmHWM line"));
    kib / 1024.0
}

/// Clock ticks per second in /proc: fixed at 100 by the kernel's ABI on Linux.
const USER_HZ: f64 = 100.0;

/// CPU seconds (user + system) a process has used so far.
pub fn cpu_seconds(pid: i32) -> f64 {
    let stat = proc_file(pid, "stat");
    // Fields after the command name, which may itself contain spaces: utime and stime are the
    // 14th and 15th of the line, the 12th and 13th after it.
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / USER_HZ
}

/// Pids in a directory of `<name>.pid` files (kwokctl's record of what it started).
pub fn pids_in(dir: &Path) -> Vec<i32> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.filter_map(|e| std::fs::read_to_string(e.path()).ok()?.trim().parse().ok()).collect()
}
