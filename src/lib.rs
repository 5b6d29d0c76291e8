//! kueue-ext: a kubectl plugin with a local Kueue + MultiKueue sandbox and a Rust counterpart of
//! Kueue's job integration framework.
//!
//! Data flows one way, down these layers: a module imports only from layers below its own
//! (`hack/import-circles.py` checks it, reading this list).
//! 1. `cli`
//! 2. `simulate`: jobs tried in a throwaway sandbox that replays a capture
//! 3. `sandbox`, `controller`, `tui`, `submit`, `conformance`, `doctor`
//! 4. `capture`: a setup in one archive, which `sandbox` replays
//! 5. `connect`: MultiKueue between clusters where `install` put this project (the sandbox's wiring too)
//! 6. `install`: this project onto any cluster that runs Kueue (the kind sandbox's way too)
//! 7. `explain`: why a job runs or not, which `tui` shows and `cli` prints
//! 8. `model`: the jobs, Workloads and queues of every cluster, joined
//! 9. `manifests`: what this project installs on a cluster, and its names
//! 10. `integrations`: one registry of job kinds, each a leaf
//! 11. `jobframework`
//! 12. `api`
//! 13. `kube_util`, `quantity`, `go_duration`: shared utilities

pub mod api;
pub mod capture;
pub mod cli;
pub mod conformance;
pub mod connect;
pub mod controller;
pub mod doctor;
pub mod explain;
pub mod go_duration;
pub mod install;
pub mod integrations;
pub mod jobframework;
pub mod kube_util;
pub mod manifests;
pub mod model;
pub mod quantity;
pub mod sandbox;
pub mod simulate;
pub mod submit;
#[cfg(test)]
mod test_api_server;
pub mod tui;
