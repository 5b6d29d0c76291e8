//! Completion as the shells and kubectl meet it: the scripts of `completion SHELL`, and the
//! answers of `kubectl_complete-kueue_ext`, the helper kubectl (1.26+) runs for
//! `kubectl kueue-ext <TAB>` and reads in Cobra's `__complete` format.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{BIN, Sandbox, ensure_toolchain, text};

const SUBCOMMANDS: [&str; 7] = ["up", "down", "watch", "explain", "submit", "version", "completion"];

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{}", text(output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A directory holding the plugin and the helper kubectl looks for, both links to the binary
/// under test, as the README tells users to install them.
fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(BIN, dir.path().join("kubectl-kueue_ext")).unwrap();
    std::os::unix::fs::symlink(BIN, dir.path().join("kubectl_complete-kueue_ext")).unwrap();
    dir
}

fn helper(dir: &Path, words: &[&str]) -> String {
    stdout(&Command::new(dir.join("kubectl_complete-kueue_ext")).args(words).output().unwrap())
}

fn values(answer: &str) -> Vec<&str> {
    answer.lines().map(|line| line.split('\t').next().unwrap_or_default()).collect()
}

fn kubeconfig(dir: &Path) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\ncurrent-context: kind-a\nclusters: []\nusers: []\ncontexts:\n\
         - name: kind-a\n  context: {cluster: a}\n- name: kind-b\n  context: {cluster: b}\n",
    )
    .unwrap();
    path
}

#[test]
fn every_shell_gets_a_script_naming_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&Command::new(BIN).args(["completion", shell]).output().unwrap());
        assert!(script.contains("kubectl-kueue_ext"), "{shell}: no binary name");
        for subcommand in SUBCOMMANDS {
            assert!(script.contains(subcommand), "{shell}: {subcommand} missing");
        }
        assert!(!script.contains("__complete"), "{shell}: the hidden entry leaked");
    }
}

#[test]
fn the_dynamic_script_asks_the_binary_and_the_binary_answers() {
    let script = stdout(&Command::new(BIN).args(["completion", "fish", "--dynamic"]).output().unwrap());
    assert!(script.contains("KUEUE_EXT_COMPLETE=fish kubectl-kueue_ext --"), "{script}");

    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path());
    let asked = |words: &[&str]| {
        stdout(
            &Command::new(BIN)
                .arg("--")
                .arg("kubectl-kueue_ext")
                .args(words)
                .env("KUEUE_EXT_COMPLETE", "fish")
                .output()
                .unwrap(),
        )
    };
    assert_eq!(values(&asked(&["wat"])), ["watch"]);
    let contexts = asked(&["explain", "--kubeconfig", config.to_str().unwrap(), "--context", "kind-"]);
    assert_eq!(contexts, "kind-a\tcluster a (current)\nkind-b\tcluster b\n");
}

#[test]
fn the_kubectl_helper_answers_in_cobra_format() {
    let dir = plugin_dir();
    let answer = helper(dir.path(), &[""]);
    let lines = values(&answer);
    assert_eq!(lines.last(), Some(&":4"), "{answer}");
    for subcommand in SUBCOMMANDS {
        assert!(lines.contains(&subcommand), "{subcommand} missing in {answer}");
    }
    assert!(answer.contains("version\tPrint the plugin's version"), "{answer}");
    // Cobra's own spelling, for wrapper scripts written as `kubectl kueue-ext __complete "$@"`.
    assert_eq!(stdout(&Command::new(BIN).args(["__complete", ""]).output().unwrap()), answer);

    let formats = helper(dir.path(), &["watch", "-o", ""]);
    assert_eq!(values(&formats), ["table", "wide", "json", "yaml", "name", ":4"]);
    assert!(formats.starts_with("table\tThe jobs table"), "{formats}");
    let config = kubeconfig(dir.path());
    let contexts =
        helper(dir.path(), &["watch", "--kubeconfig", config.to_str().unwrap(), "--worker-context", "w1=kind-b"]);
    assert_eq!(contexts, "w1=kind-b\tcluster b\n:4\n");
}

#[test]
fn a_cluster_that_does_not_answer_offers_nothing_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kubeconfig");
    // A non-routable address: the connection hangs rather than failing at once.
    std::fs::write(
        &config,
        "apiVersion: v1\nkind: Config\ncurrent-context: far\nusers: [{name: u, user: {token: t}}]\n\
         clusters: [{name: far, cluster: {server: 'https://10.255.255.1:6443', insecure-skip-tls-verify: true}}]\n\
         contexts: [{name: far, context: {cluster: far, user: u}}]\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let answer = stdout(
        &Command::new(BIN)
            .args(["__complete", "explain", "--kubeconfig", config.to_str().unwrap(), ""])
            .output()
            .unwrap(),
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(answer, ":4\n");
}

#[test]
fn kubectl_completes_the_plugin_through_the_helper() {
    ensure_toolchain();
    let path = Command::new(BIN).args(["toolchain", "path"]).output().unwrap();
    let kubectl = PathBuf::from(String::from_utf8_lossy(&path.stdout).trim()).join("kubectl");
    let dir = plugin_dir();
    let search = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
    // What kubectl's shell scripts run at each TAB: its own Cobra `__complete`.
    let answer = stdout(
        &Command::new(&kubectl)
            .args(["__complete", "kueue-ext", "wat"])
            .env("PATH", &search)
            .env("KUBECONFIG", dir.path().join("none"))
            .output()
            .unwrap(),
    );
    assert_eq!(values(&answer)[0], "watch", "{answer}");
    assert_eq!(answer.lines().last(), Some(":4"), "{answer}");
}

#[test]
fn jobs_and_namespaces_come_from_the_sandbox() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples");
    let batch = sandbox.dir.join("batch.yaml");
    std::fs::write(&batch, common::batch_job("nightly", 1, "1", "5s")).unwrap();
    for file in [format!("{samples}/queues.yaml"), format!("{samples}/externaljob-train-small.yaml")] {
        let submitted = sandbox.run("submit", &[&file]);
        assert!(submitted.status.success(), "{}", text(&submitted));
    }
    let submitted = sandbox.run("submit", &[batch.to_str().unwrap()]);
    assert!(submitted.status.success(), "{}", text(&submitted));

    let state = sandbox.dir.to_str().unwrap();
    let ask = |words: &[&str]| stdout(&Command::new(BIN).arg("__complete").args(words).output().unwrap());
    let jobs = ask(&["explain", "--state-dir", state, ""]);
    let offered = values(&jobs);
    for job in ["externaljob/train-small", "job/nightly", ":4"] {
        assert!(offered.contains(&job), "{job} missing in {jobs}");
    }
    assert!(jobs.contains("externaljob/train-small\tExternalJob in default"), "{jobs}");
    assert_eq!(values(&ask(&["explain", "--state-dir", state, "train"])), ["train-small", ":4"]);
    assert_eq!(values(&ask(&["explain", "--state-dir", state, "-n", "kube-system", ""])), [":4"]);

    let namespaces = ask(&["watch", "--state-dir", state, "-n", "kube-"]);
    assert!(values(&namespaces).contains(&"kube-system"), "{namespaces}");
    assert!(!values(&namespaces).contains(&"default"), "{namespaces}");
}
