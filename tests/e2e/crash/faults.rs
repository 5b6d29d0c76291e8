//! The faults of a crash-safety round, at random moments: our controller SIGKILLed on a random
//! cluster and started again (several times), then Kueue's manager process on the manager
//! cluster restarted, then a worker's kube-apiserver restarted.

use std::time::Duration;

use super::Rng;
use crate::common::{Restarts, Sandbox};

/// Controller kills per round: the issue asks for at least five.
pub const CONTROLLER_KILLS_PER_ROUND: usize = 5;

#[derive(Debug, Default, Clone, Copy)]
pub struct Injected {
    pub controller_kills: usize,
    pub kueue_restarts: usize,
    pub api_server_restarts: usize,
}

impl Injected {
    pub fn total(&self) -> usize {
        self.controller_kills + self.kueue_restarts + self.api_server_restarts
    }
}

pub struct Injector {
    /// Our controller on the manager (0) and on each worker.
    controllers: Vec<Restarts>,
    kueue: Restarts,
    /// The kube-apiserver of each worker.
    api_servers: Vec<Restarts>,
    pub injected: Injected,
}

impl Injector {
    pub fn new(sandbox: &Sandbox, workers: usize) -> Self {
        Injector {
            controllers: (0..=workers).map(|c| Restarts::of(sandbox, c, "kueue-ext-controller")).collect(),
            kueue: Restarts::of(sandbox, 0, "kueue"),
            api_servers: (1..=workers).map(|c| Restarts::of(sandbox, c, "kube-apiserver")).collect(),
            injected: Injected::default(),
        }
    }

    async fn pause(rng: &mut Rng, low_ms: u64, high_ms: u64) {
        tokio::time::sleep(Duration::from_millis(rng.between(low_ms, high_ms))).await;
    }

    /// One round of faults; `round` picks the worker whose API server restarts.
    pub async fn round(&mut self, round: usize, rng: &mut Rng) {
        for _ in 0..CONTROLLER_KILLS_PER_ROUND {
            Self::pause(rng, 1_500, 7_000).await;
            let which = rng.between(0, self.controllers.len() as u64 - 1) as usize;
            self.controllers[which].kill();
            Self::pause(rng, 0, 2_000).await;
            self.controllers[which].start();
            self.injected.controller_kills += 1;
        }
        Self::pause(rng, 2_000, 6_000).await;
        self.kueue.kill();
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.kueue.start();
        self.injected.kueue_restarts += 1;
        if !self.api_servers.is_empty() {
            Self::pause(rng, 2_000, 6_000).await;
            let worker = round % self.api_servers.len();
            self.api_servers[worker].kill();
            tokio::time::sleep(Duration::from_secs(2)).await;
            self.api_servers[worker].start();
            self.injected.api_server_restarts += 1;
        }
    }
}
