/// Every benchmark of `benches/sandbox`, by the name `KUEUE_EXT_BENCH_ONLY` takes, in the order
/// a run measures them and the Performance table lists them.
pub const BENCHES: [&str; 7] = ["up-kind", "up", "single", "scheduler-perf", "multikueue", "webhook", "wrappers"];
