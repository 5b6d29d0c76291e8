//! kueue-ext: a kubectl plugin with a local Kueue + MultiKueue sandbox and a Rust counterpart of
//! Kueue's job integration framework.
//!
//! Data flows one way: `cli` → `sandbox`, `controller`, `tui`, `explain`, `submit`,
//! `conformance` → `model` → `integrations` (one registry of job kinds) → `jobframework` → `api`.

pub mod api;
pub mod cli;
pub mod conformance;
pub mod controller;
pub mod explain;
pub mod integrations;
pub mod jobframework;
pub mod kube_util;
pub mod manifests;
pub mod model;
pub mod quantity;
pub mod sandbox;
pub mod submit;
#[cfg(test)]
mod test_api_server;
pub mod tui;
