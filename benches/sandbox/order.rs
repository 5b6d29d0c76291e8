//! Who goes first in each run of a versus benchmark. Runs come in ABBA order (ours then the
//! peers, the peers then ours, …) and in whole pairs, so each side goes first as often as last
//! and a drift of the machine's load, or a cluster warmed by the side before, weighs on both
//! alike.

/// `runs` rounded up to whole ABBA pairs.
pub fn whole_pairs(runs: usize) -> usize {
    runs.max(1).next_multiple_of(2)
}

/// Whether our side goes first in run `run` (counted from 0).
pub fn ours_first(run: usize) -> bool {
    run.is_multiple_of(2)
}

/// Measures ours and then each peer, or the peers in reverse and then ours, as `run`'s place in
/// the ABBA order says; returns ours and the peers' results in the peers' order.
pub fn measure<T>(run: usize, ours: impl FnOnce() -> T, peers: Vec<Box<dyn FnOnce() -> T + '_>>) -> (T, Vec<T>) {
    if ours_first(run) {
        let ours = ours();
        (ours, peers.into_iter().map(|peer| peer()).collect())
    } else {
        let mut results: Vec<T> = peers.into_iter().rev().map(|peer| peer()).collect();
        results.reverse();
        (ours(), results)
    }
}
