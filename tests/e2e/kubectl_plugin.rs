//! The plugin as kubectl finds it: `kubectl kueue-ext`, through kubectl's plugin lookup on PATH.

use std::process::Command;

use crate::common::{BIN, ensure_toolchain, text, toolchain_kubectl};

#[test]
fn kubectl_finds_the_plugin_on_path() {
    ensure_toolchain();
    let kubectl = toolchain_kubectl().expect("the toolchain's kubectl");
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
