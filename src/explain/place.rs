//! A pending job's place in its queues, in one line: its positions, the first Workloads ahead
//! of it, and whether Kueue said so (its visibility API) or the order was rebuilt from the
//! Workloads, as creation order.

use crate::model::{PositionSource, QueuePosition, age};

/// Workloads ahead named in the sentence; the count says the rest.
const NAMED_AHEAD: usize = 3;

/// `queue: position 5 of 5 in ClusterQueue team-a (2 of 2 in LocalQueue default/user-queue),
/// behind default/job-x (priority 100, 2m), default/job-y (priority 0, 1m), default/job-z
/// (priority 0, 1m) and 1 more.`; nothing for a Workload alone in its ClusterQueue, where a
/// place says nothing the reason does not.
pub fn sentence(place: &QueuePosition) -> Option<String> {
    if place.in_cluster_queue.of < 2 {
        return None;
    }
    let (cq, lq) = (place.in_cluster_queue, place.in_local_queue);
    let mut out = format!(
        "queue: position {} of {} in ClusterQueue {} ({} of {} in LocalQueue {})",
        cq.position, cq.of, place.cluster_queue, lq.position, lq.of, place.local_queue
    );
    let ahead_count = cq.position.saturating_sub(1);
    if ahead_count == 0 {
        out.push_str(", first in line");
    } else {
        let named: Vec<String> = place
            .ahead
            .iter()
            .take(NAMED_AHEAD)
            .map(|a| {
                let name = a.job.as_deref().unwrap_or(&a.workload);
                match a.age {
                    Some(seconds) => format!("{name} (priority {}, {})", a.priority, age(seconds)),
                    None => format!("{name} (priority {})", a.priority),
                }
            })
            .collect();
        out.push_str(&format!(", behind {}", named.join(", ")));
        let more = ahead_count.saturating_sub(named.len());
        if more > 0 {
            out.push_str(&format!(" and {more} more"));
        }
    }
    match (place.source, &place.fallback) {
        (PositionSource::CreationOrder, Some(why)) => {
            out.push_str(&format!("; creation order: positions need the visibility API ({why})."))
        }
        (PositionSource::CreationOrder, None) => out.push_str("; creation order: positions need the visibility API."),
        (PositionSource::VisibilityApi, _) => out.push_str(" (Kueue's visibility API)."),
    }
    Some(out)
}
