//! The end-to-end suite, against real sandboxes: real kube-apiservers, etcd and Kueue, as local
//! processes or kind clusters. One test binary (the crate is linked once), kept out of a plain
//! `cargo test` since it needs Go, the pinned toolchain, Docker and tmux: `hack/test.sh` runs it
//! with `cargo test --features e2e`.

mod common;
#[path = "../cli/completion_support.rs"]
mod completion_support;
mod condition_timeline;
mod fixtures;

mod addons;
mod capture;
mod completion;
mod configured_kind;
mod conformance;
mod crash;
mod crash_safety;
mod declarative;
mod doctor;
mod external_job;
mod kind;
mod kind_soak;
mod kubectl_plugin;
mod manifests;
mod multikueue;
mod own_cluster;
mod pod_templates;
mod published_manifests;
mod queue_position;
mod replay;
mod sandbox_robustness;
mod security;
mod simulate;
mod single_cluster;
mod submit;
mod watch;
mod wrapped_job;
mod wrapped_vs_appwrapper;
