//! The kind CLI behind a trait, so the runtime is tested with a fake and runs with the real
//! `kind` binary.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::error::KindError;

/// The kind tool: the commands of its CLI the runtime uses.
pub trait KindTool {
    /// Where the binary is, for messages.
    fn program(&self) -> &Path;
    /// What `kind version` prints.
    fn version(&self) -> impl Future<Output = Result<String, KindError>>;
    /// Names of the existing kind clusters.
    fn clusters(&self) -> impl Future<Output = Result<Vec<String>, KindError>>;
    /// Creates a cluster from a config; kind writes its context into `kubeconfig` (never the
    /// user's own kubeconfig). A cluster that fails is kept for [`KindTool::export_logs`]; deleting
    /// it is the caller's.
    fn create_cluster(
        &self,
        name: &str,
        config: &str,
        image: &str,
        kubeconfig: &Path,
    ) -> impl Future<Output = Result<(), KindError>>;
    /// The cluster's admin kubeconfig as seen from this machine.
    fn kubeconfig(&self, name: &str) -> impl Future<Output = Result<String, KindError>>;
    /// Loads an image archive (`docker save` format) into every node of the cluster.
    fn load_image_archive(&self, name: &str, archive: &Path) -> impl Future<Output = Result<(), KindError>>;
    fn delete_cluster(&self, name: &str, kubeconfig: &Path) -> impl Future<Output = Result<(), KindError>>;
    /// Copies the logs of the cluster's nodes (kubelet, containerd, control-plane pods) into `dir`.
    fn export_logs(&self, name: &str, dir: &Path) -> impl Future<Output = Result<(), KindError>>;
}

/// The first executable called `name` in the `PATH`-style list `path`.
pub fn find_on_path(name: &str, path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The version `kind version` names: `kind v0.32.0 go1.25.1 linux/amd64`, or just `0.32.0`
/// with `-q`.
pub fn parse_version(output: &str) -> Option<String> {
    output
        .split_whitespace()
        .filter(|word| *word != "kind")
        .map(|word| word.trim_start_matches('v'))
        .find(|word| word.chars().next().is_some_and(|c| c.is_ascii_digit()) && word.contains('.'))
        .map(|word| format!("v{word}"))
}

/// Names printed by `kind get clusters`; kind says "No kind clusters found." on stderr when
/// there are none, so stdout holds only names.
pub fn parse_clusters(stdout: &str) -> Vec<String> {
    stdout.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}

/// The real `kind` binary.
pub struct KindCli {
    program: PathBuf,
}

impl KindCli {
    pub fn new(program: PathBuf) -> Self {
        KindCli { program }
    }

    /// `kind` from `PATH`, if there is one.
    pub fn from_path() -> Option<Self> {
        let path = std::env::var("PATH").unwrap_or_default();
        find_on_path("kind", &path).map(KindCli::new)
    }

    async fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String, KindError> {
        let command = format!("{} {}", self.program.display(), args.join(" "));
        let spawn = |source| KindError::Spawn { command: command.clone(), source };
        let mut child = Command::new(&self.program)
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(spawn)?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // A kind that exits before reading its input is reported by its exit status below.
            match pipe.write_all(text.as_bytes()).await {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.map_err(spawn)?,
            }
            drop(pipe);
        }
        let output = child.wait_with_output().await.map_err(spawn)?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            return Ok(stdout);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(KindError::Command { command, status: output.status.to_string(), output: last_lines(&stderr, 20) })
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

impl KindTool for KindCli {
    fn program(&self) -> &Path {
        &self.program
    }

    async fn version(&self) -> Result<String, KindError> {
        self.run(&["version"], None).await
    }

    async fn clusters(&self) -> Result<Vec<String>, KindError> {
        Ok(parse_clusters(&self.run(&["get", "clusters"], None).await?))
    }

    async fn create_cluster(&self, name: &str, config: &str, image: &str, kubeconfig: &Path) -> Result<(), KindError> {
        let kubeconfig = path_arg(kubeconfig);
        let args =
            ["create", "cluster", "--name", name, "--image", image, "--config", "-", "--kubeconfig", &kubeconfig];
        // kind waits for the node to be Ready only when asked; Kueue's pods need a Ready node.
        // A node that never gets there is retained, so that its logs can be read.
        let args: Vec<&str> = args.into_iter().chain(["--wait", "3m", "--retain"]).collect();
        self.run(&args, Some(config)).await.map(drop)
    }

    async fn kubeconfig(&self, name: &str) -> Result<String, KindError> {
        self.run(&["get", "kubeconfig", "--name", name], None).await
    }

    async fn load_image_archive(&self, name: &str, archive: &Path) -> Result<(), KindError> {
        self.run(&["load", "image-archive", &path_arg(archive), "--name", name], None).await.map(drop)
    }

    async fn delete_cluster(&self, name: &str, kubeconfig: &Path) -> Result<(), KindError> {
        self.run(&["delete", "cluster", "--name", name, "--kubeconfig", &path_arg(kubeconfig)], None).await.map(drop)
    }

    async fn export_logs(&self, name: &str, dir: &Path) -> Result<(), KindError> {
        self.run(&["export", "logs", &path_arg(dir), "--name", name], None).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn versions_are_read_from_either_output_form() {
        assert_eq!(parse_version("kind v0.32.0 go1.25.1 linux/amd64\n").as_deref(), Some("v0.32.0"));
        assert_eq!(parse_version("0.32.0\n").as_deref(), Some("v0.32.0"));
        assert_eq!(parse_version("kind v0.33.0-alpha+abc go1.26 linux/arm64").as_deref(), Some("v0.33.0-alpha+abc"));
        assert_eq!(parse_version("command not found"), None);
    }

    #[test]
    fn cluster_list_skips_blank_lines() {
        assert_eq!(parse_clusters("kind\nkueue-ext-manager\n\n"), ["kind", "kueue-ext-manager"]);
        assert!(parse_clusters("").is_empty());
    }

    #[test]
    fn only_executables_on_path_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join("kind"), b"").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("kind"), b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(bin.join("kind"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", plain.display(), bin.display());
        assert_eq!(find_on_path("kind", &path), Some(bin.join("kind")));
        assert_eq!(find_on_path("kind", &plain.display().to_string()), None);
    }

    #[tokio::test]
    async fn a_failing_command_reports_its_command_line_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("kind");
        std::fs::write(&fake, "#!/bin/sh\necho \"ERROR: failed to create cluster: $*\" >&2\nexit 1\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let kind = KindCli::new(fake);
        let err = kind.create_cluster("c", "kind: Cluster", "img", Path::new("/k")).await.unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("create cluster --name c --image img --config - --kubeconfig /k --wait 3m --retain"),
            "{message}"
        );
        assert!(message.contains("ERROR: failed to create cluster"), "{message}");
    }
}
