//! The plugin as a user meets it on the command line: usage mistakes, failures, and its errors
//! when the machine lacks something.

use std::process::Command;

use crate::{BIN, text};

#[test]
fn a_machine_without_go_is_told_what_to_install() {
    let cache = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args(["toolchain", "install"])
        .env("PATH", "/nonexistent")
        .env("KUEUE_EXT_CACHE", cache.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message = text(&output);
    assert!(message.contains("Go was not found") && message.contains("install Go 1.26"), "{message}");
}

#[test]
fn usage_errors_exit_with_2() {
    let output = Command::new(BIN).args(["up", "--workers", "many"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

/// Runs the plugin with no sandbox and no kubeconfig of the user's: what it says must come from
/// the arguments alone.
fn run_alone(args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(BIN)
        .args(args)
        .env("HOME", home.path())
        .env("KUEUE_EXT_HOME", home.path().join("state"))
        .env("KUBECONFIG", home.path().join("no-such-kubeconfig"))
        .output()
        .unwrap()
}

#[test]
fn usage_mistakes_exit_2_with_error_first_before_any_kubeconfig_is_read() {
    let mistakes: &[&[&str]] = &[
        &["submit"],
        &["submit", "-f"],
        &["submit", "--wait=soon", "x.yaml"],
        &["submit", "--dry-run=maybe", "-f", "x.yaml"],
        &["submit", "-f", "x.yaml", "-o", "wide"],
        &["explain", ""],
        &["explain", "job/"],
        &["explain", "job/a/b"],
        &["conformance", "--kind", "Bogus"],
        &["watch", "--worker-context", "=bad"],
        &["watch", "--worker-context", "w1="],
        &["watch", "-A", "-n", "team"],
        &["status", "-o", "xml"],
        &["version", "-o", "wide"],
        &["manifests", "-o", "name"],
        &["up", "--workers", "many"],
        &["-v=x", "version"],
        &["no-such-command"],
    ];
    for args in mistakes {
        let output = run_alone(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(stderr.starts_with("error:"), "{args:?}: stderr does not start with error:\n{stderr}");
        assert!(!stderr.contains("kubeconfig"), "{args:?}: read a kubeconfig before checking the arguments:\n{stderr}");
    }
}

#[test]
fn the_bare_command_answers_with_its_help_on_stdout() {
    let output = run_alone(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Commands:") && stdout.contains("Examples:"), "{stdout}");
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn kubectls_verbosity_flag_is_taken() {
    let output = run_alone(&["-v=4", "version", "-o", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout stays JSON");
    assert!(json["pluginVersion"].is_string(), "{json}");
}

#[test]
fn failures_say_error_first() {
    let status = run_alone(&["status"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&status.stderr).starts_with("error: no sandbox at"), "{}", text(&status));
}

/// A kubeconfig whose one context points at a port nothing listens on.
fn kubeconfig_of_a_stopped_cluster(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: stopped\n\
             clusters: [{{name: c, cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\n\
             contexts: [{{name: stopped, context: {{cluster: c, user: u}}}}]\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn an_unreachable_cluster_is_said_once_and_never_shown_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig_of_a_stopped_cluster(dir.path());
    let kubeconfig = kubeconfig.to_str().unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/job.yaml");
    for args in [
        vec!["watch", "--once", "--kubeconfig", kubeconfig],
        vec!["watch", "--once", "-o", "json", "--kubeconfig", kubeconfig],
        vec!["explain", "x", "--kubeconfig", kubeconfig],
        vec!["submit", "-f", sample, "--kubeconfig", kubeconfig],
    ] {
        let output = run_alone(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", text(&output));
        assert!(output.stdout.is_empty(), "{args:?}: printed a result:\n{}", text(&output));
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: said more than once:\n{stderr}");
        assert!(
            lines[0].starts_with("error: the server https://127.0.0.1:")
                && lines[0].contains("(context stopped) cannot be reached"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("not found") && !stderr.contains("No jobs"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_missing_entry_of_a_kubeconfig_list_is_skipped_as_kubectl_does() {
    let dir = tempfile::tempdir().unwrap();
    let real = kubeconfig_of_a_stopped_cluster(dir.path());
    let list = format!("{}:{}", dir.path().join("missing").display(), real.display());
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args(["explain", "x"])
        .env("HOME", home.path())
        .env("KUEUE_EXT_HOME", home.path().join("state"))
        .env("KUBECONFIG", &list)
        .output()
        .unwrap();
    // It got as far as the cluster the second file names.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("(context stopped) cannot be reached"), "{stderr}");
}

/// A tar.gz of `files` (path, content).
fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        tar.append_data(&mut header, path, content.as_bytes()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

#[test]
fn up_from_a_bad_capture_names_the_file_and_what_is_wrong_and_starts_nothing() {
    let manifest = |format: &str| {
        format!(
            r#"{{"format": "{format}", "capturedAt": "2026-01-01T00:00:00Z", "pluginVersion": "0.1.0", "origin": "test",
                 "clusters": [{{"name": "manager", "context": "m", "role": "manager", "counts": {{}},
                               "files": {{"clusterqueues.json": "ClusterQueue objects"}}}}],
                 "leftOut": []}}"#
        )
    };
    let current = manifest("kueue-ext.dev/capture/v1alpha1");
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("plain.yaml", b"kind: Configuration\n".to_vec(), "not a gzip-compressed archive"),
        ("empty.tgz", tar_gz(&[]), "capture.json: missing: not a capture archive"),
        (
            "future.tgz",
            tar_gz(&[("capture.json", &manifest("kueue-ext.dev/capture/v2"))]),
            "capture.json: format is \"kueue-ext.dev/capture/v2\"; this plugin reads \"kueue-ext.dev/capture/v1alpha1\"",
        ),
        (
            "partial.tgz",
            tar_gz(&[("capture.json", &current)]),
            "manager/clusterqueues.json: listed in capture.json but not in the archive",
        ),
    ];
    for (name, bytes, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let state = dir.path().join("state");
        let output = run_alone(&["up", "--from", file.to_str().unwrap(), "--state-dir", state.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {}", text(&output));
        let first = format!("error: {}: {expected}", file.display());
        assert!(stderr.starts_with(&first), "{name}: expected {first}\n{stderr}");
        assert!(stderr.contains("nothing was started"), "{name}: {stderr}");
        assert!(!state.exists(), "{name}: a state dir was made");
    }
}
