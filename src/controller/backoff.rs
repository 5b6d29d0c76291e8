//! The backoff of a controller's trigger watches and of the caches it reads. kube-runtime merges all of a controller's
//! watches into one stream and backs that stream off as a whole after any watch error, by
//! default up to 30 s a time. After a kube-apiserver restart every watch fails a few times
//! (503 while its paths install, 429 while each watch cache fills), and those errors, taken
//! one after another, kept a controller deaf to all its objects for minutes. A short cap keeps
//! a failing watch from silencing the healthy ones, and a cache from lagging for minutes; each
//! retry is one cheap request.

use std::time::Duration;

use kube::runtime::utils::Backoff;

const FIRST: Duration = Duration::from_millis(200);
const CAP: Duration = Duration::from_secs(2);

/// Doubles from 200 ms to at most 2 s; starts over after any event.
#[derive(Clone, Debug)]
pub struct TriggerBackoff {
    next: Duration,
}

impl Default for TriggerBackoff {
    fn default() -> Self {
        TriggerBackoff { next: FIRST }
    }
}

impl Iterator for TriggerBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(CAP);
        Some(now)
    }
}

impl Backoff for TriggerBackoff {
    fn reset(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_a_short_cap_and_starts_over_after_an_event() {
        let mut backoff = TriggerBackoff::default();
        let waits: Vec<u128> = backoff.by_ref().take(6).map(|d| d.as_millis()).collect();
        assert_eq!(waits, [200, 400, 800, 1600, 2000, 2000]);
        backoff.reset();
        assert_eq!(backoff.next(), Some(FIRST));
    }
}
