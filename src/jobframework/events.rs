//! Events are written beside the reconciles, not inside them: a reconcile queues its event and
//! goes on, and a few writers drain the queue (as client-go's event broadcaster decouples them;
//! unlike it, an event is stamped when written, and one job's events may be written out of order).
//! Awaited inline, each event held one of a controller's bounded reconcile slots for a whole API
//! round trip, and every job writes three. A full queue drops the event: events are a courtesy
//! to the user, never state a reconcile relies on.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, Recorder, Reporter};
use tokio::sync::mpsc;
use tracing::debug;

/// Events waiting to be written; a burst of a thousand jobs fits.
const QUEUE: usize = 4096;
/// Events written at once.
const WRITERS: usize = 4;

type Queued = (Event, ObjectReference);

pub struct EventSink {
    queue: mpsc::Sender<Queued>,
}

impl EventSink {
    /// Starts the writers, which run as long as a sink is alive.
    pub fn start(client: Client, reporter: Reporter) -> EventSink {
        let (queue, pending) = mpsc::channel(QUEUE);
        tokio::spawn(write_all(pending, client, reporter));
        EventSink { queue }
    }

    /// A sink whose events stay in the returned queue, for tests to read.
    #[cfg(test)]
    pub fn held() -> (EventSink, mpsc::Receiver<Queued>) {
        let (queue, pending) = mpsc::channel(QUEUE);
        (EventSink { queue }, pending)
    }

    pub fn publish(&self, event: Event, about: ObjectReference) {
        if self.queue.try_send((event, about)).is_err() {
            debug!("event queue full or closed; event dropped");
        }
    }
}

async fn write_all(mut pending: mpsc::Receiver<Queued>, client: Client, reporter: Reporter) {
    use futures::StreamExt;
    futures::stream::poll_fn(|cx| pending.poll_recv(cx))
        .for_each_concurrent(WRITERS, |(event, about)| {
            // A Recorder of its own per event: a shared one keeps every event it wrote for six
            // minutes, to count repeats into a series, and ours never repeat (one per job and
            // step). Shared, that cache was the largest allocation in a heap profile of 1,000
            // jobs (a 5.9 MB table).
            let recorder = Recorder::new(client.clone(), reporter.clone());
            async move {
                if let Err(err) = recorder.publish(&event, &about).await {
                    debug!(%err, "could not publish event");
                }
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use kube::runtime::events::EventType;

    use super::*;

    fn event(reason: &str) -> Event {
        Event { type_: EventType::Normal, reason: reason.into(), note: None, action: reason.into(), secondary: None }
    }

    #[tokio::test]
    async fn events_queue_in_order_and_a_full_queue_drops_instead_of_waiting() {
        let (sink, mut pending) = EventSink::held();
        for i in 0..QUEUE + 1 {
            sink.publish(event(&format!("E{i}")), ObjectReference::default());
        }
        assert_eq!(pending.recv().await.unwrap().0.reason, "E0");
        assert_eq!(pending.len(), QUEUE - 1, "the event past the queue's size was dropped");
    }
}
