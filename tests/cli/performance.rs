//! The Performance table of docs/performance.md is what `cargo bench --bench results` makes of
//! the results files in benches/results/: a figure edited by hand, or a results file added
//! without regenerating the table, fails here.

#[path = "../../benches/results/figures.rs"]
mod figures;
#[path = "../../benches/results/names.rs"]
mod names;
#[path = "../../benches/results/table.rs"]
mod table;

#[test]
fn the_performance_table_is_generated_from_the_kept_results() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let expected = table::regenerate(root, &names::BENCHES).unwrap_or_else(|e| panic!("{e}"));
    let doc = std::fs::read_to_string(root.join("docs/performance.md")).unwrap();
    assert!(expected == doc, "docs/performance.md differs from its results: run `cargo bench --bench results`");
}
