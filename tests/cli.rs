//! The plugin as a user meets it: through kubectl's plugin mechanism, and its errors when the
//! machine lacks something.

mod common;

use std::process::Command;

use common::{BIN, ensure_toolchain, text};

#[test]
fn kubectl_finds_the_plugin_on_path() {
    ensure_toolchain();
    let path = Command::new(BIN).args(["toolchain", "path"]).output().unwrap();
    let kubectl = std::path::PathBuf::from(String::from_utf8_lossy(&path.stdout).trim()).join("kubectl");
    let plugin_dir = std::path::Path::new(BIN).parent().unwrap();
    let search = format!("{}:{}", plugin_dir.display(), std::env::var("PATH").unwrap_or_default());

    let listed = Command::new(&kubectl).args(["plugin", "list"]).env("PATH", &search).output().unwrap();
    assert!(text(&listed).contains("kubectl-kueue_ext"), "{}", text(&listed));
    let help = Command::new(&kubectl).args(["kueue-ext", "--help"]).env("PATH", &search).output().unwrap();
    assert!(help.status.success() && text(&help).contains("submit"), "{}", text(&help));
    let state = tempfile::tempdir().unwrap();
    let status = Command::new(&kubectl)
        .args(["kueue-ext", "status", "--state-dir"])
        .arg(state.path())
        .env("PATH", &search)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    assert!(text(&status).contains("no sandbox at"), "{}", text(&status));
}

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
