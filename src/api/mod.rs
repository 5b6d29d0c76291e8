//! API types: this project's CRDs and the parts of Kueue's v1beta2 API it reads and writes.

pub mod condition;
pub mod external_job;
pub mod kueue;
pub mod wrapped_job;

pub use external_job::{ExternalJob, ExternalJobSpec, ExternalJobStatus, ExternalPodSet};

/// API group of this project's kinds.
pub const GROUP: &str = "kueue-ext.dev";
/// API version of this project's kinds.
pub const VERSION: &str = "v1alpha1";

/// The ClusterRole with the controller's rights, named in the errors that ask for more of them.
pub const CONTROLLER_ROLE: &str = "kueue-ext-controller";
