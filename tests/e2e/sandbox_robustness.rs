//! End-to-end sandbox robustness: `up` interrupted at any step leaves nothing `down` cannot
//! clean; a component that dies later is named by `status` and started again by `up`; two
//! sandboxes run side by side without sharing a port.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{
    BIN, Sandbox, down_leaves_nothing, pid_alive, port_free, recorded_process, recorded_processes_and_ports, text,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Processes anywhere on the machine whose command line names `dir`: what a sandbox started
/// there and did not stop (read from /proc by the test only; the plugin never looks by name).
fn processes_naming(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) && !cmdline.contains(" down --state-dir") && pid_alive(pid) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

/// Pids and ports in the state file right now (none before `up` wrote it).
fn recorded_now(sandbox: &Sandbox) -> (Vec<i64>, Vec<u16>) {
    match std::fs::read(sandbox.dir.join("state.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
        Some(serde_json::Value::Object(_)) => recorded_processes_and_ports(sandbox),
        _ => (Vec::new(), Vec::new()),
    }
}

const LAST_STEP: &str = "default queues";

/// Runs `up` and sends `signal` once a line of its progress contains `marker`; returns its
/// output and every pid and port the state file recorded meanwhile.
fn interrupted_up(sandbox: &Sandbox, marker: &str, signal: Signal) -> (String, BTreeSet<i64>, BTreeSet<u16>) {
    let dir = sandbox.dir.to_str().unwrap();
    let mut child = Command::new(BIN)
        .args(["up", "--state-dir", dir, "--workers", "0", "--runtime", "process"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(child.id() as i32);
    let lines = Arc::new(Mutex::new(String::new()));
    let reader = {
        let (stderr, lines, marker) = (child.stderr.take().unwrap(), lines.clone(), marker.to_string());
        std::thread::spawn(move || {
            let mut signalled = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !signalled && line.contains(&marker) {
                    kill(pid, signal).unwrap();
                    signalled = true;
                }
                lines.lock().unwrap().push_str(&format!("{line}\n"));
            }
        })
    };
    let (mut pids, mut ports) = (BTreeSet::new(), BTreeSet::new());
    let status = loop {
        let (p, q) = recorded_now(sandbox);
        pids.extend(p);
        ports.extend(q);
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    let output = lines.lock().unwrap().clone();
    assert!(!status.success() || signal == Signal::SIGINT, "up was killed before the end:\n{output}");
    // The last step is short: ctrl-c may land once `up` has finished, and `down` cleans that too.
    let finished_first = marker == LAST_STEP && status.success();
    if signal == Signal::SIGINT && !finished_first {
        assert_eq!(status.code(), Some(130), "ctrl-c ends up with 130:\n{output}");
        assert!(output.contains("interrupted"), "{output}");
    }
    (output, pids, ports)
}

#[test]
fn up_interrupted_at_any_step_leaves_nothing_down_cannot_clean() {
    for (marker, signal) in [
        ("Runtime: process", Signal::SIGINT),
        ("cluster manager: Kueue", Signal::SIGINT),
        (LAST_STEP, Signal::SIGINT),
        ("cluster manager: Kueue", Signal::SIGKILL),
    ] {
        let sandbox = Sandbox::unstarted();
        let (output, pids, ports) = interrupted_up(&sandbox, marker, signal);
        let down = sandbox.run("down", &[]);
        assert!(down.status.success(), "down after {signal} at {marker:?}: {}\n{output}", text(&down));
        assert!(!sandbox.dir.exists(), "down removes the state dir");
        for pid in &pids {
            assert!(!pid_alive(*pid), "process {pid} survived {signal} at {marker:?} and down:\n{output}");
        }
        for port in &ports {
            assert!(port_free(*port), "port {port} still bound after {signal} at {marker:?} and down");
        }
        assert_eq!(processes_naming(&sandbox.dir), Vec::<String>::new(), "{signal} at {marker:?}:\n{output}");
        if marker != "Runtime: process" {
            assert!(!pids.is_empty(), "{marker:?} comes after the first process started:\n{output}");
        }
    }
}

fn component_pid(sandbox: &Sandbox, component: &str) -> i32 {
    recorded_process(sandbox, 0, component).0
}

fn sigkill(pid: i32) {
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    while pid_alive(pid as i64) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn dead_components_are_named_and_restarted_and_two_sandboxes_share_no_port() {
    let first = Sandbox::unstarted();
    let second = first.beside();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| first.run("up", &["--workers", "0"]));
        let b = s.spawn(|| second.run("up", &["--workers", "0", "--name", "dev"]));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert!(a.status.success() && b.status.success(), "both start side by side:\n{}\n{}", text(&a), text(&b));
    let (_, first_ports) = recorded_processes_and_ports(&first);
    let (_, second_ports) = recorded_processes_and_ports(&second);
    let first_ports: BTreeSet<u16> = first_ports.into_iter().collect();
    let shared: Vec<&u16> = second_ports.iter().filter(|p| first_ports.contains(p)).collect();
    assert!(shared.is_empty(), "ports used by both: {shared:?}");
    for sandbox in [&first, &second] {
        assert_eq!(sandbox.status_json()["ready"], true);
    }
    // The named sandbox's contexts carry its name, and commands given its state dir find them.
    let named = second.status_json();
    assert_eq!((&named["name"], &named["clusters"][0]["context"]), (&"dev".into(), &"dev-manager".into()), "{named}");
    let queues = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/queues.yaml");
    let submitted = second.run("submit", &["-f", queues]);
    assert!(submitted.status.success(), "{}", text(&submitted));

    // Two components die: status names them and fails; up starts them again.
    let dead = ["kube-scheduler", "kueue-ext-controller"];
    let old: Vec<i32> = dead.iter().map(|c| component_pid(&first, c)).collect();
    old.iter().for_each(|pid| sigkill(*pid));
    let status = first.run("status", &[]);
    assert!(!status.status.success(), "status fails while a component is dead");
    for (component, pid) in dead.iter().zip(&old) {
        let out = text(&status);
        assert!(out.contains(component) && out.contains(&format!("process {pid} is not running")), "{out}");
    }
    let up = first.run("up", &["--workers", "0"]);
    let out = text(&up);
    assert!(up.status.success(), "{out}");
    assert!(
        out.contains("restarted kube-scheduler of cluster manager, kueue-ext-controller of cluster manager"),
        "{out}"
    );
    assert_eq!(first.status_json()["ready"], true, "ready again after up");
    for (component, pid) in dead.iter().zip(&old) {
        let now = component_pid(&first, component);
        assert!(now != *pid && pid_alive(now as i64), "{component} runs again under a new recorded pid");
    }
    let again = first.run("up", &["--workers", "0"]);
    assert!(text(&again).contains("already up"), "a healthy sandbox is left alone: {}", text(&again));

    // One sandbox going away leaves the other working, even when a component of it restarts
    // later (Kueue needs a certificate at a path both share).
    down_leaves_nothing(&first);
    assert_eq!(second.status_json()["ready"], true, "the other sandbox is untouched by down");
    sigkill(component_pid(&second, "kueue"));
    let up = second.run("up", &["--workers", "0"]);
    assert!(up.status.success() && text(&up).contains("restarted kueue of cluster manager"), "{}", text(&up));
    assert_eq!(second.status_json()["ready"], true);
    down_leaves_nothing(&second);
}
