//! Each benchmark is a program that prints its table: without `harness = false` cargo runs it
//! as a libtest harness, which finds no test and measures nothing while reporting success.

#[test]
fn every_benchmark_is_declared_without_libtests_harness() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let benches: Vec<String> = std::fs::read_dir(root.join("benches"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    assert!(!benches.is_empty());
    for bench in benches {
        let declared = format!("[[bench]]\nname = \"{bench}\"\nharness = false\n");
        assert!(manifest.contains(&declared), "Cargo.toml must declare:\n{declared}");
    }
}
