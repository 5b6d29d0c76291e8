//! End-to-end: `submit` against a real sandbox — samples run to completion, and a bad batch
//! is refused as a whole with errors naming file, document and field.

use std::path::Path;
use std::process::Command;

use crate::common::{BIN, Sandbox, addons_built, api, text};

/// The README's quick start: its first `sh` block after the heading, line by line.
fn quick_start() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme.split("\n## Quick start\n").nth(1).expect("README.md has a Quick start");
    let block = section.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).expect("a sh block");
    block.lines().map(str::to_string).collect()
}

/// A newcomer's first run, exactly as the README writes it: `kubectl kueue-ext` through
/// kubectl's plugin lookup, from a clone, with the state in a private dir and on the runtime the
/// suite runs (KUEUE_EXT_RUNTIME, which `up` reads).
#[test]
fn the_readmes_quick_start_works_as_written() {
    let sandbox = Sandbox::unstarted();
    let toolchain = Command::new(BIN).args(["toolchain", "path"]).output().unwrap();
    let toolchain = String::from_utf8_lossy(&toolchain.stdout).trim().to_string();
    let plugin_dir = Path::new(BIN).parent().unwrap().display().to_string();
    let path = format!("{plugin_dir}:{toolchain}:{}", std::env::var("PATH").unwrap_or_default());
    let runtime = std::env::var("KUEUE_EXT_RUNTIME").unwrap_or_else(|_| "process".into());
    let lines = quick_start();
    assert!(lines.len() >= 5 && lines.iter().all(|l| l.starts_with("kubectl kueue-ext ")), "{lines:?}");
    let mut said = Vec::new();
    for line in &lines {
        let output = Command::new("sh")
            .args(["-c", line])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("PATH", &path)
            .env("KUEUE_EXT_HOME", &sandbox.dir)
            .env("KUEUE_EXT_RUNTIME", &runtime)
            .output()
            .unwrap();
        assert!(output.status.success(), "`{line}` failed:\n{}", text(&output));
        said.push((line.split_whitespace().nth(2).unwrap_or_default().to_string(), text(&output)));
    }
    let of = |command: &str| said.iter().find(|(c, _)| c == command).map(|(_, out)| out.as_str()).unwrap_or_default();
    for line in [
        "externaljob.kueue-ext.dev/train-small succeeded",
        "wrappedjob.kueue-ext.dev/train-with-server succeeded",
        "job.batch/sample-job succeeded",
        "externaljob.kueue-ext.dev/too-big pending",
    ] {
        assert!(of("submit").contains(line), "submit: missing {line:?} in:\n{}", of("submit"));
    }
    assert!(of("watch").contains("train-small") && of("watch").contains("too-big"), "{}", of("watch"));
    assert!(of("explain").contains("is waiting for quota"), "{}", of("explain"));
    assert!(!sandbox.dir.join("state.json").exists(), "down left the sandbox's state behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn submit_runs_the_samples_and_refuses_bad_batches_whole() {
    addons_built("jobset");
    // Every sample, add-ons' included (-R): JobSet's controller runs beside Kueue, and our
    // configured integration queues JobSets.
    let jobsets = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/addons/jobset/jobset-integration.yaml");
    let sandbox = Sandbox::up(&["--workers", "0", "--addons", "jobset", "--integrations", jobsets]);
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples");

    let ran = sandbox.run("submit", &["-R", "-f", samples, "--wait=3m"]);
    let out = text(&ran);
    assert!(ran.status.success(), "{out}");
    for line in [
        "job.batch/sample-job created",
        "externaljob.kueue-ext.dev/train-small created",
        "externaljob.kueue-ext.dev/driver-and-workers created",
        "externaljob.kueue-ext.dev/train-small succeeded",
        "externaljob.kueue-ext.dev/urgent succeeded",
        "externaljob.kueue-ext.dev/too-big pending: couldn't assign flavors to pod set main",
        "AppWrapper from-appwrapper is submitted as a WrappedJob",
        "wrappedjob.kueue-ext.dev/train-with-server succeeded",
        "wrappedjob.kueue-ext.dev/from-appwrapper succeeded",
        "wrappedjob.kueue-ext.dev/declared-pod-sets succeeded",
        "wrappedjob.kueue-ext.dev/mk-wrapped succeeded",
        "externaljob.kueue-ext.dev/mk-external succeeded",
        "job.batch/configured-job succeeded",
        "jobset.jobset.x-k8s.io/training-jobset succeeded",
        "wrappedjob.kueue-ext.dev/wrapped-jobset succeeded",
        "job-integration.yaml:1 (document 1): skipped, an integrations file",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    let pending = text(&sandbox.run("explain", &["too-big"]));
    assert!(pending.contains("is waiting for quota in queue user-queue") && pending.contains("cpu"), "{pending}");
    let done = text(&sandbox.run("explain", &["externaljob/train-small"]));
    assert!(done.contains("has finished: Succeeded"), "{done}");
    let wrapped = text(&sandbox.run("explain", &["wj/train-with-server"]));
    assert!(wrapped.contains("WrappedJob default/train-with-server has finished"), "{wrapped}");
    let batch = text(&sandbox.run("explain", &["job/sample-job"]));
    assert!(batch.contains("Job default/sample-job has finished: Succeeded"), "{batch}");

    let again = sandbox.run("submit", &["--recursive", samples]);
    assert!(
        text(&again).contains("externaljob.kueue-ext.dev/urgent unchanged (already submitted)"),
        "{}",
        text(&again)
    );
    let again = sandbox.run("submit", &["-R", "--filename", samples, "-o", "name"]);
    assert!(
        again.status.success() && text(&again).contains("externaljob.kueue-ext.dev/train-small"),
        "{}",
        text(&again)
    );

    let dir = tempfile::tempdir().unwrap();
    let batch = dir.path().join("batch.yaml");
    std::fs::write(
        &batch,
        r#"apiVersion: kueue-ext.dev/v1alpha1
kind: ExternalJob
metadata: {name: fine, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: x}]}}
---
apiVersion: kueue-ext.dev/v1alpha1
kind: ExternalJob
metadata: {name: lost, labels: {kueue.x-k8s.io/queue-name: no-such-queue}}
spec:
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: x}]}}
---
apiVersion: kueue-ext.dev/v1alpha1
kind: ExternalJob
metadata: {name: broken}
spec:
  podSets: []
"#,
    )
    .unwrap();
    let refused = sandbox.run("submit", &[batch.to_str().unwrap()]);
    let out = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{out}");
    let file = batch.display().to_string();
    assert!(out.contains(&format!("{file}:10 (document 2): metadata.labels[kueue.x-k8s.io/queue-name]: LocalQueue default/no-such-queue does not exist")), "{out}");
    assert!(out.contains("(document 3)") && out.contains("spec.podSets"), "{out}");
    assert!(out.contains("nothing was applied"), "{out}");
    let client = sandbox.client("manager").await;
    let jobs = api(&client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    assert!(jobs.get_opt("fine").await.unwrap().is_none(), "a valid document of a refused batch is not applied");

    let usage = sandbox.run("submit", &[]);
    assert_eq!(usage.status.code(), Some(2), "no path is a usage error");
}
