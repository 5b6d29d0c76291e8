//! Why the controller process stops.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("the {0} cache never synced")]
    NeverSynced(&'static str),
    #[error("loading the serving certificate from {}: {source}", dir.display())]
    Certificate { dir: PathBuf, source: std::io::Error },
    #[error("loading the serving certificate from its Secret: {0}")]
    SecretCertificate(std::io::Error),
    #[error("the task keeping the serving certificate ended")]
    KeeperGone,
    #[error("serving webhooks: {0}")]
    Serve(std::io::Error),
    #[error("cannot start the {name} thread: {source}")]
    Thread { name: String, source: std::io::Error },
    #[error("the webhook server's thread ended without a word")]
    ServerGone,
    #[error("leader election: {0}")]
    Lease(String),
    /// The Lease it names went to another replica.
    #[error("lost the {0} Lease; exiting so another replica leads")]
    LostLease(&'static str),
    #[error("waiting for a signal: {0}")]
    Signal(std::io::Error),
}
