//! What every sandbox cluster is set up with, whichever runtime runs it: Kueue's configuration,
//! the add-ons, this project's controller's definitions, the default queues and MultiKueue
//! between the clusters. How a runtime puts Kueue, the add-ons and our controller on a cluster is
//! the runtime's own (`process_runtime/`, `kind_runtime/`); `up` applies the queues and wires
//! MultiKueue itself, once every cluster is up.

pub mod addons;
pub mod kueue;
pub mod kustomize;
pub mod multikueue;
pub mod our_controller;
pub mod queues;
