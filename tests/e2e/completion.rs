//! Completion against a cluster: kubectl's own `__complete` through the plugin's helper, and
//! jobs and namespaces read from a running sandbox.

use std::process::Command;

use crate::common::{BIN, Sandbox, ensure_toolchain, text, toolchain_kubectl};
use crate::completion_support::{plugin_dir, stdout, values};

#[test]
fn kubectl_completes_the_plugin_through_the_helper() {
    ensure_toolchain();
    let kubectl = toolchain_kubectl().expect("the toolchain's kubectl");
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
    std::fs::write(&batch, crate::fixtures::batch_job("nightly", 1, "1", "5s")).unwrap();
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
