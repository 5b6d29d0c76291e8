//! "Has this cache listed once?" for many reconciles at a time. A kube-runtime `Store`'s own
//! readiness future wakes only the last of several concurrent waiters (it polls a oneshot
//! receiver, which keeps one waker), and a restarted controller starts a reconcile for every
//! job at once: the others would wait for good. One task awaits the stores and broadcasts.

use std::future::Future;

use tokio::sync::watch;

#[derive(Clone)]
pub struct Readiness(watch::Receiver<bool>);

impl Readiness {
    /// Ready once `listed` returns true; never if it returns false (a watch ended first).
    /// Spawns on the current tokio runtime.
    pub fn once(listed: impl Future<Output = bool> + Send + 'static) -> Readiness {
        let (ready, readiness) = watch::channel(false);
        tokio::spawn(async move {
            if listed.await {
                let _ = ready.send(true);
            }
        });
        Readiness(readiness)
    }

    /// Waits until ready; `false` if it never will be.
    pub async fn wait(&self) -> bool {
        self.0.clone().wait_for(|ready| *ready).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn wakes_every_waiter_and_tells_a_watch_that_ended() {
        let (listed, gate) = tokio::sync::oneshot::channel::<bool>();
        let readiness = Readiness::once(async move { gate.await.unwrap_or(false) });
        let waiters: Vec<_> = (0..8)
            .map(|_| {
                let readiness = readiness.clone();
                tokio::spawn(async move { readiness.wait().await })
            })
            .collect();
        listed.send(true).unwrap();
        for waiter in waiters {
            let woke = tokio::time::timeout(Duration::from_secs(5), waiter).await;
            assert!(woke.expect("every waiter wakes").unwrap());
        }
        assert!(!Readiness::once(async { false }).wait().await, "a watch that ended is never ready");
    }
}
