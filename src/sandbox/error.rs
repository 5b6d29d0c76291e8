use std::path::PathBuf;

use super::cluster_setup::addons::AddonError;
use super::kind_runtime::error::KindError;
use super::toolchain::ToolchainError;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What can go wrong with a sandbox; every variant names the component and where to look.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    #[error(transparent)]
    Kind(#[from] KindError),
    #[error(transparent)]
    Addon(Box<AddonError>),
    #[error("{0}")]
    Usage(String),
    #[error("port {port} for {what} is already in use on 127.0.0.1; free it or choose another port")]
    PortInUse { port: u16, what: String },
    #[error("{component} of cluster {cluster} exited during start-up; its log {log} ends with:\n{tail}")]
    Died { cluster: String, component: String, log: PathBuf, tail: String },
    #[error("{component} of cluster {cluster} was not ready after {seconds}s ({last_error}); see its log {log}")]
    NotReady { cluster: String, component: String, seconds: u64, last_error: String, log: PathBuf },
    #[error("cluster {cluster}: {step}: {source}")]
    Step {
        cluster: String,
        step: String,
        #[source]
        source: BoxError,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "a sandbox exists at {dir} but is not healthy: {problems}.\nRun `kubectl kueue-ext down` to remove it, then `up` again"
    )]
    Broken { dir: PathBuf, problems: String },
    #[error("the sandbox at {dir} {mismatch}; run `kubectl kueue-ext down` first, then `up` with the new settings")]
    SettingsMismatch { dir: PathBuf, mismatch: String },
    #[error("interrupted: what `up` had started is stopped; `kubectl kueue-ext down` removes the rest")]
    Interrupted,
    #[error("no sandbox at {dir}; start one with `kubectl kueue-ext up`")]
    NotUp { dir: PathBuf },
    #[error(
        "{dir} holds files but no sandbox record (state.json): it is not a sandbox's state dir, so `down` leaves it as it is; pass the dir `up` used (--state-dir or $KUEUE_EXT_HOME)"
    )]
    NotASandbox { dir: PathBuf },
}

impl From<AddonError> for SandboxError {
    fn from(err: AddonError) -> Self {
        SandboxError::Addon(Box::new(err))
    }
}

impl SandboxError {
    pub fn step(cluster: &str, step: impl Into<String>, source: impl Into<BoxError>) -> Self {
        SandboxError::Step { cluster: cluster.to_string(), step: step.into(), source: source.into() }
    }

    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SandboxError {
        let path = path.into();
        move |source| SandboxError::Io { path, source }
    }
}
