//! Crash safety under load: the jobs a run submits, the faults it injects, and the ledger of
//! what really happened on every cluster (pods that ran, Workloads, components), from which
//! "exactly once" is counted.

pub mod by_kueue;
pub mod end;
pub mod faults;
pub mod jobs;
pub mod kind_faults;
pub mod ledger;

/// A size a run takes from the environment variable `name`, else `default`.
pub fn env_size(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The seed a run takes from `name`, else the clock: printed, so that a failing run is replayed.
pub fn env_seed(name: &str) -> u64 {
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    env_size(name, clock.as_nanos() as u64)
}

/// A small seeded generator (xorshift64*): a failing run is replayed with the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}
