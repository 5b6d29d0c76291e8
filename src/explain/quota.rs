//! "Short by how much of which resource in which flavor": from the message Kueue wrote on the
//! Workload, and from the ClusterQueue's reservations against its quota.

use crate::model::{QueueRow, Shortfall, WorkloadFacts};
use crate::quantity;

/// The shortfalls Kueue named, one sentence each.
pub fn kueue_sentences(workload: &WorkloadFacts) -> Vec<String> {
    workload
        .shortfalls
        .iter()
        .map(|shortfall| match shortfall {
            Shortfall::Unused { resource, flavor, more } => {
                format!("Kueue: {resource} in flavor {flavor} is short by {more} while other Workloads hold it.")
            }
            Shortfall::Capacity { resource, flavor, maximum } => format!(
                "Kueue: {resource} in flavor {flavor} can never fit: the most the ClusterQueue can give is {maximum}."
            ),
        })
        .collect()
}

/// For each resource the Workload asks for that no flavor of `queue` has free: what each
/// flavor has, holds and lacks.
pub fn queue_sentences(workload: &WorkloadFacts, queue: &QueueRow) -> Vec<String> {
    let mut out = Vec::new();
    for (resource, &asked) in &workload.requests {
        let flavors: Vec<_> = queue.quotas.iter().filter(|q| &q.resource == resource).collect();
        if flavors.is_empty() || flavors.iter().any(|q| q.nominal - q.reserved >= asked) {
            continue;
        }
        let amount = |v: f64| quantity::format(resource, v);
        let per_flavor: Vec<String> = flavors
            .iter()
            .map(|q| {
                let free = (q.nominal - q.reserved).max(0.0);
                if asked > q.nominal && q.borrowing_limit.is_none() && queue.cohort.is_none() {
                    format!("{} has {} in all, less than asked", q.flavor, amount(q.nominal))
                } else {
                    format!(
                        "{} has {} free of {} ({} reserved), short by {}",
                        q.flavor,
                        amount(free),
                        amount(q.nominal),
                        amount(q.reserved),
                        amount(asked - free)
                    )
                }
            })
            .collect();
        out.push(format!(
            "ClusterQueue {}: the job asks {} {resource}; {}.",
            queue.name,
            amount(asked),
            per_flavor.join("; ")
        ));
    }
    out
}
