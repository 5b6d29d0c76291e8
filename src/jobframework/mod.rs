//! The Rust counterpart of Kueue's jobframework: the `GenericJob` contract, one generic
//! reconciler that keeps a job and its Workload in step, and the webhook rules every kind shares.

pub mod api_error;
pub mod dispatch;
pub mod events;
pub mod generic_job;
pub mod managed_by;
pub mod naming;
pub mod podset;
pub mod readiness;
mod reconcile_context;
pub mod reconciler;
pub mod status;
pub mod watches;
pub mod webhook;
pub mod workload;
