//! The name the controller writes under. Every create, update and patch it sends names it, so a
//! Workload's or a job's `managedFields` tell the controller's fields from Kueue's and the
//! user's: unnamed, the API server files a write under the client's user agent, and ours sends
//! none (`unknown`). The command line writes under a name of its own, `kube_util::FIELD_MANAGER`.
//! Deletes name no manager: they leave no fields behind. Events are kube's `Recorder`'s writes,
//! which name none; they carry this name as their `reportingController`.

use kube::api::{PatchParams, PostParams};

/// The controller's field manager, and the reporting controller of its events.
pub const MANAGER: &str = "kueue-ext-controller";

/// For a create or a whole-object update (`replace`, `replace_status`).
pub fn post_params() -> PostParams {
    PostParams { field_manager: Some(MANAGER.into()), ..PostParams::default() }
}

/// For a merge or JSON patch (not a server-side apply, which `PatchParams::apply` names).
pub fn patch_params() -> PatchParams {
    PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() }
}

/// What a write of ours adds to its path, as `test_api_server` records it.
#[cfg(test)]
pub const QUERY: &str = "?fieldManager=kueue-ext-controller";
