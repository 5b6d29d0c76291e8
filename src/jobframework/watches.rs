//! Watches that retry on their own. kube-runtime's `Controller` merges its trigger streams and,
//! after an error from any one of them, stops polling them all for a while (its
//! `trigger_backoff`). After a kube-apiserver restart every watch fails a few times in turn
//! (refused connections, 503 while its paths install, 410 for a resourceVersion the new watch
//! cache never held, 429 while it fills), and each of those errors held back the others: a
//! WrappedJob created then waited more than two minutes for its Workload once in CI, behind the
//! errors of its five component watches. So every watch backs off alone and briefly, and its
//! errors end here, logged; no error reaches a controller's triggers.

use std::fmt::Debug;
use std::time::Duration;

use futures::{Stream, StreamExt, future};
use kube::Resource;
use kube::api::Api;
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tracing::debug;

const FIRST: Duration = Duration::from_millis(200);
const CAP: Duration = Duration::from_secs(2);

/// A watch of `api` that retries with [`RetryBackoff`] and yields only events.
pub fn retrying<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    let resource = api.resource_url().to_owned();
    events_only(watcher(api, config), resource)
}

/// `watch` retried after each error with [`RetryBackoff`], its errors logged and dropped.
fn events_only<T: Send>(
    watch: impl Stream<Item = watcher::Result<T>> + Send,
    resource: String,
) -> impl Stream<Item = watcher::Result<T>> + Send {
    watch.backoff(RetryBackoff::default()).filter(move |event| {
        if let Err(error) = event {
            debug!(%resource, %error, "watch failed; retrying");
        }
        future::ready(event.is_ok())
    })
}

/// Doubles from 200 ms to at most 2 s; starts over after any event.
#[derive(Clone, Debug)]
pub struct RetryBackoff {
    next: Duration,
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff { next: FIRST }
    }
}

impl Iterator for RetryBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(CAP);
        Some(now)
    }
}

impl Backoff for RetryBackoff {
    fn reset(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_a_short_cap_and_starts_over_after_an_event() {
        let mut backoff = RetryBackoff::default();
        let waits: Vec<u128> = backoff.by_ref().take(6).map(|d| d.as_millis()).collect();
        assert_eq!(waits, [200, 400, 800, 1600, 2000, 2000]);
        backoff.reset();
        assert_eq!(backoff.next(), Some(FIRST));
    }

    #[tokio::test(start_paused = true)]
    async fn errors_are_retried_after_a_short_wait_and_never_handed_on() {
        let failed = || Err(watcher::Error::NoResourceVersion);
        let watch = futures::stream::iter([failed(), Ok(1), failed(), failed(), Ok(2)]);
        let started = tokio::time::Instant::now();
        let events: Vec<u32> = events_only(watch, "/apis/batch/v1/jobs".into()).map(Result::unwrap).collect().await;
        assert_eq!(events, [1, 2]);
        // 200 ms after the first error; after an event, 200 ms and then 400 ms again.
        assert_eq!(started.elapsed(), Duration::from_millis(800));
    }
}
