//! The plugin's command line, without a cluster: what it parses, refuses and prints, its
//! documentation's commands, the krew package, the benchmarks' declarations and the Performance
//! table. Runs under a plain `cargo test`, in seconds.

mod benches;
mod completion;
mod completion_support;
mod docs;
mod krew;
mod performance;
mod usage;
mod version;

use std::process::Output;

pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-kueue_ext");

/// What a run printed, stdout then stderr.
pub fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}
