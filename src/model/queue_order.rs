//! A pending job's place in its queues: its position in its ClusterQueue and LocalQueue, and the
//! Workloads ahead of it. Kueue's visibility API says it where it is served; elsewhere the order
//! is rebuilt from the cluster's Workloads with Kueue's own rule, and said to be so.
//!
//! Kueue v0.19.2's rule (`pkg/cache/queue/cluster_queue.go`, `baseCompareFunc`; the visibility
//! API sorts the same snapshot with it, admissible and inadmissible Workloads together, so it
//! holds for StrictFIFO and BestEffortFIFO queues alike): the higher `spec.priority` first (0 when
//! unset, `pkg/util/priority`); then the earlier queue-order timestamp
//! (`workload.Ordering.GetQueueOrderTimestamp`: the Evicted condition's transition time when
//! evicted by `PodsReadyTimeout` — under the default `requeuingStrategy.timestamp: Eviction` — or
//! by `AdmissionCheck`, else the creation time); then the UID. Not rebuilt: the priority-boost
//! annotation (gate `PriorityBoost`, off by default), admission fair sharing's usage order and the
//! sticky preemptor, which only Kueue's memory holds.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::snapshot::{Visibility, VisiblePending};
use super::{JobKey, LocalQueueFacts};

/// Workloads ahead that a position lists by name; the count says the rest.
pub const AHEAD_LISTED: usize = 10;

/// Where an order comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PositionSource {
    VisibilityApi,
    CreationOrder,
}

/// A place in one queue: 1 is the next Workload Kueue tries, `of` how many are pending there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    pub position: usize,
    pub of: usize,
}

/// A pending Workload ahead of the job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ahead {
    /// `namespace/name` of the Workload.
    pub workload: String,
    /// `namespace/name` of the job that owns it, when known.
    pub job: Option<String>,
    pub local_queue: String,
    pub priority: i32,
    /// Seconds since the epoch.
    pub created: Option<i64>,
    /// Seconds from its creation to when the cluster was read.
    pub age: Option<i64>,
}

/// A pending job's place in its ClusterQueue and LocalQueue.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueuePosition {
    pub source: PositionSource,
    /// Why the order was rebuilt from creation times, when it was.
    pub fallback: Option<String>,
    pub cluster_queue: String,
    /// `namespace/name`.
    pub local_queue: String,
    pub in_cluster_queue: Place,
    pub in_local_queue: Place,
    /// The first Workloads ahead in the ClusterQueue, in order: at most [`AHEAD_LISTED`] of the
    /// `in_cluster_queue.position - 1` there are.
    pub ahead: Vec<Ahead>,
}

/// One pending Workload in its ClusterQueue's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Waiting {
    /// 1 is the next Workload Kueue tries.
    pub position: usize,
    pub in_local_queue: usize,
    pub namespace: String,
    pub workload: String,
    /// The LocalQueue's name (in the Workload's namespace).
    pub local_queue: String,
    /// The job that owns it, where the join found it.
    pub job: Option<JobKey>,
    pub priority: i32,
    /// Seconds since the epoch.
    pub created: Option<i64>,
    /// What its pod sets ask, by resource.
    pub requests: BTreeMap<String, f64>,
}

/// A ClusterQueue's pending Workloads in the order Kueue admits them, and where that order
/// comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingLine {
    pub cluster: String,
    pub cluster_queue: String,
    pub source: PositionSource,
    /// Why the order was rebuilt from creation times, when it was.
    pub fallback: Option<String>,
    pub workloads: Vec<Waiting>,
}

/// A Workload waiting in a queue, as the order needs it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Queued {
    pub namespace: String,
    pub name: String,
    /// The LocalQueue's name (in the Workload's namespace).
    pub local_queue: String,
    pub priority: i32,
    pub created: Option<i64>,
    /// Kueue's queue-order timestamp.
    pub order_time: Option<i64>,
    pub uid: String,
    /// `namespace/name` of its job.
    pub job: Option<String>,
    /// What its pod sets ask, by resource (`status.resourceRequests`).
    pub requests: BTreeMap<String, f64>,
}

/// Kueue's order: higher priority, then earlier queue-order timestamp, then UID.
pub fn kueue_order(a: &Queued, b: &Queued) -> Ordering {
    b.priority.cmp(&a.priority).then(a.order_time.cmp(&b.order_time)).then_with(|| a.uid.cmp(&b.uid))
}

/// One ClusterQueue's pending Workloads in order, with each one's position in its LocalQueue.
#[derive(Debug, Default)]
struct Line {
    queued: Vec<Queued>,
    in_local_queue: Vec<usize>,
    local_totals: HashMap<(String, String), usize>,
    at: HashMap<(String, String), usize>,
}

impl Line {
    /// From Workloads already in order, numbering their places in each LocalQueue.
    fn ordered(queued: Vec<Queued>) -> Self {
        let mut line = Line::default();
        for (i, q) in queued.iter().enumerate() {
            let total = line.local_totals.entry((q.namespace.clone(), q.local_queue.clone())).or_insert(0);
            *total += 1;
            line.in_local_queue.push(*total);
            line.at.insert((q.namespace.clone(), q.name.clone()), i);
        }
        line.queued = queued;
        line
    }

    fn rebuilt(mut queued: Vec<Queued>) -> Self {
        queued.sort_by(kueue_order);
        Line::ordered(queued)
    }

    /// As the visibility API listed it: its positions, not ours.
    fn visible(items: &[VisiblePending]) -> Self {
        let mut items: Vec<&VisiblePending> = items.iter().collect();
        items.sort_by_key(|item| item.position_in_cluster_queue);
        let queued = items.iter().map(|item| from_visible(item)).collect();
        let mut line = Line::ordered(queued);
        for (place, item) in line.in_local_queue.iter_mut().zip(&items) {
            *place = usize::try_from(item.position_in_local_queue).unwrap_or_default() + 1;
        }
        line
    }

    fn place(&self, namespace: &str, name: &str, read_at: Option<i64>) -> Option<(Place, Place, Vec<Ahead>)> {
        let i = *self.at.get(&(namespace.to_string(), name.to_string()))?;
        let me = &self.queued[i];
        let local_of = self.local_totals.get(&(me.namespace.clone(), me.local_queue.clone())).copied().unwrap_or(1);
        let ahead = self.queued[..i]
            .iter()
            .take(AHEAD_LISTED)
            .map(|q| Ahead {
                workload: format!("{}/{}", q.namespace, q.name),
                job: q.job.clone(),
                local_queue: format!("{}/{}", q.namespace, q.local_queue),
                priority: q.priority,
                created: q.created,
                age: q.created.zip(read_at).map(|(created, now)| (now - created).max(0)),
            })
            .collect();
        let in_cluster_queue = Place { position: i + 1, of: self.queued.len() };
        Some((in_cluster_queue, Place { position: self.in_local_queue[i], of: local_of }, ahead))
    }
}

fn from_visible(item: &VisiblePending) -> Queued {
    let meta = &item.metadata;
    let namespace = meta.namespace.clone().unwrap_or_default();
    // The API keeps each owner's kind and name, not which owner is the controller: a job owns it alone.
    let job = meta.owner_references.iter().flatten().next().map(|owner| format!("{namespace}/{}", owner.name));
    Queued {
        name: meta.name.clone().unwrap_or_default(),
        local_queue: item.local_queue_name.clone(),
        priority: item.priority,
        created: meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
        order_time: None,
        uid: String::new(),
        job,
        namespace,
        requests: BTreeMap::new(),
    }
}

/// Every ClusterQueue's order on one cluster.
pub struct ClusterOrders {
    /// `(namespace, LocalQueue)` → its ClusterQueue.
    local_queues: HashMap<(String, String), String>,
    rebuilt: BTreeMap<String, Line>,
    visible: BTreeMap<String, Line>,
    /// Why positions are rebuilt on this cluster, when the visibility API gave none.
    unavailable: String,
    read_at: Option<i64>,
}

impl ClusterOrders {
    /// From one cluster's LocalQueues and queued Workloads, and what its visibility API said.
    pub fn new(
        local_queues: impl IntoIterator<Item = LocalQueueFacts>,
        queued: impl IntoIterator<Item = Queued>,
        visibility: &Visibility,
        read_at: Option<i64>,
    ) -> Self {
        let local_queues: HashMap<(String, String), String> =
            local_queues.into_iter().map(|lq| ((lq.namespace, lq.name), lq.cluster_queue)).collect();
        let mut by_queue: BTreeMap<String, Vec<Queued>> = BTreeMap::new();
        for queued in queued {
            if let Some(cq) = local_queues.get(&(queued.namespace.clone(), queued.local_queue.clone())) {
                by_queue.entry(cq.clone()).or_default().push(queued);
            }
        }
        let rebuilt = by_queue.into_iter().map(|(cq, queued)| (cq, Line::rebuilt(queued))).collect();
        let (visible, unavailable) = match visibility {
            Visibility::Served(queues) => (
                queues.iter().map(|(cq, items)| (cq.clone(), Line::visible(items))).collect(),
                "the visibility API does not list it yet".to_string(),
            ),
            Visibility::Unavailable(why) => (BTreeMap::new(), why.clone()),
            Visibility::NotAsked => (BTreeMap::new(), "not asked yet".to_string()),
        };
        ClusterOrders { local_queues, rebuilt, visible, unavailable, read_at }
    }

    /// Every ClusterQueue's line on this cluster (`cluster`), as Kueue's visibility API lists
    /// it where it does, else rebuilt; ClusterQueues nothing waits in have none.
    pub fn lines(&self, cluster: &str) -> Vec<PendingLine> {
        let names: BTreeSet<&String> = self.rebuilt.keys().chain(self.visible.keys()).collect();
        let mut lines = Vec::with_capacity(names.len());
        for cq in names {
            let rebuilt = self.rebuilt.get(cq);
            let (line, source, fallback) = match (self.visible.get(cq), rebuilt) {
                (Some(line), _) => (line, PositionSource::VisibilityApi, None),
                (None, Some(line)) => (line, PositionSource::CreationOrder, Some(self.unavailable.clone())),
                (None, None) => continue,
            };
            // The visibility API does not say what a Workload asks; its Workload does.
            let requests = |q: &Queued| match (q.requests.is_empty(), rebuilt) {
                (true, Some(r)) => {
                    r.at.get(&(q.namespace.clone(), q.name.clone())).map(|&i| r.queued[i].requests.clone())
                }
                _ => Some(q.requests.clone()),
            };
            let workloads = line
                .queued
                .iter()
                .zip(&line.in_local_queue)
                .enumerate()
                .map(|(i, (q, in_local_queue))| Waiting {
                    position: i + 1,
                    in_local_queue: *in_local_queue,
                    namespace: q.namespace.clone(),
                    workload: q.name.clone(),
                    local_queue: q.local_queue.clone(),
                    job: None,
                    priority: q.priority,
                    created: q.created,
                    requests: requests(q).unwrap_or_default(),
                })
                .collect();
            lines.push(PendingLine {
                cluster: cluster.to_string(),
                cluster_queue: cq.clone(),
                source,
                fallback,
                workloads,
            });
        }
        lines
    }

    /// The place of pending Workload `namespace/name` that names LocalQueue `queue`: Kueue's, or
    /// rebuilt when Kueue's visibility API does not say it.
    pub fn place(&self, namespace: &str, name: &str, queue: &str) -> Option<QueuePosition> {
        let cluster_queue = self.local_queues.get(&(namespace.to_string(), queue.to_string()))?;
        let visible = self.visible.get(cluster_queue).and_then(|line| line.place(namespace, name, self.read_at));
        let (source, fallback, (in_cluster_queue, in_local_queue, ahead)) = match visible {
            Some(place) => (PositionSource::VisibilityApi, None, place),
            None => {
                let place = self.rebuilt.get(cluster_queue)?.place(namespace, name, self.read_at)?;
                (PositionSource::CreationOrder, Some(self.unavailable.clone()), place)
            }
        };
        Some(QueuePosition {
            source,
            fallback,
            cluster_queue: cluster_queue.clone(),
            local_queue: format!("{namespace}/{queue}"),
            in_cluster_queue,
            in_local_queue,
            ahead,
        })
    }
}

#[cfg(test)]
mod tests;
