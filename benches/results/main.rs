//! Rewrites the Performance table of docs/performance.md from the results files beside this
//! one (`table.rs`): `cargo bench --bench results`. tests/cli/performance.rs fails when the
//! table and the files disagree.

mod figures;
mod names;
mod table;

use std::path::Path;

fn main() {
    // `cargo bench` passes `--bench`; anything else (e.g. `cargo test --benches`) runs nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match table::regenerate(root, &names::BENCHES) {
        Ok(doc) => {
            std::fs::write(root.join("docs/performance.md"), doc).expect("docs/performance.md is writable");
            println!("wrote the table of docs/performance.md from benches/results/");
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
