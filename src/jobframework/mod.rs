//! The Rust counterpart of Kueue's jobframework: the `GenericJob` contract, one generic
//! reconciler that keeps a job and its Workload in step, and the webhook rules every kind shares.

pub mod admission;
pub mod api_error;
pub mod authorizer;
pub mod decision;
pub mod dry_run;
pub mod events;
pub mod field_manager;
#[cfg(test)]
pub mod fixtures;
pub mod generic_job;
pub mod integration_callbacks;
pub mod managed_by;
pub mod multikueue_nudge;
pub mod naming;
pub mod our_workloads;
pub mod own_writes;
pub mod podset;
pub mod queue_cache;
pub mod readiness;
mod reconcile_context;
pub mod reconciler;
pub mod served_kinds;
pub mod setup;
pub mod status;
pub mod watches;
pub mod webhook;
pub mod workload;
