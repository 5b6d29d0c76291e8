//! What the completion tests of both suites share: the plugin as kubectl finds it, and the
//! answers of its completion helper.

use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-kueue_ext");

/// What a successful run printed on stdout (panics with everything it said otherwise).
pub fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A directory holding the plugin and the helper kubectl looks for, both links to the binary
/// under test, as the README tells users to install them.
pub fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(BIN, dir.path().join("kubectl-kueue_ext")).unwrap();
    std::os::unix::fs::symlink(BIN, dir.path().join("kubectl_complete-kueue_ext")).unwrap();
    dir
}

pub fn values(answer: &str) -> Vec<&str> {
    answer.lines().map(|line| line.split('\t').next().unwrap_or_default()).collect()
}
