//! Which workers could take a job that waits in a MultiKueue queue, by their ClusterQueues'
//! quota: now, once others free it, or never (kubernetes-sigs/kueue#8602: the manager admits
//! what no worker ever can, and the job waits for ever).

use crate::model::capacity::{Fit, WorkerFit};
use crate::quantity;

/// One sentence over every worker, and a next step when none can ever take the job; nothing
/// when no worker is watched.
pub fn sentences(fits: &[WorkerFit]) -> (Option<String>, Option<String>) {
    if fits.is_empty() {
        return (None, None);
    }
    let nevers: Vec<(&WorkerFit, &str, f64, f64)> = fits
        .iter()
        .filter_map(|f| match &f.fit {
            Fit::Never { resource, asked, most } => Some((f, resource.as_str(), *asked, *most)),
            _ => None,
        })
        .collect();
    if nevers.len() == fits.len() {
        let (_, resource, asked, _) = nevers[0];
        let mosts: Vec<String> = nevers
            .iter()
            .map(|(f, resource, _, most)| {
                format!("{}'s {} {}", f.worker, queue_of(f), quantity::format(resource, *most))
            })
            .collect();
        let largest = nevers.iter().filter(|n| n.1 == resource).map(|n| n.3).fold(0.0, f64::max);
        return (
            Some(format!(
                "No worker can ever admit it: it asks {} {resource}, more than any worker's ClusterQueue can give \
                 (the most: {}), so it waits for ever, whatever the manager's quota.",
                quantity::format(resource, asked),
                mosts.join(", ")
            )),
            Some(format!(
                "ask for at most {} {resource}, or raise the nominalQuota of a worker's ClusterQueue \
                 (kubectl --context WORKER edit clusterqueue NAME)",
                quantity::format(resource, largest)
            )),
        );
    }
    let parts: Vec<String> = fits.iter().map(part).collect();
    (Some(format!("Workers: {}.", parts.join("; "))), None)
}

fn queue_of(fit: &WorkerFit) -> String {
    fit.cluster_queue.as_deref().map_or_else(|| "ClusterQueue".into(), |cq| format!("ClusterQueue {cq}"))
}

fn part(fit: &WorkerFit) -> String {
    let worker = &fit.worker;
    match &fit.fit {
        Fit::Now => format!("{worker} can fit it now ({})", queue_of(fit)),
        Fit::NotNow { resource, asked, free } => format!(
            "{worker} cannot now ({} {resource} asked, {} free in {})",
            quantity::format(resource, *asked),
            quantity::format(resource, *free),
            queue_of(fit)
        ),
        Fit::Never { resource, asked, most } => format!(
            "{worker} never can ({} {resource} asked, the most {} can give is {})",
            quantity::format(resource, *asked),
            queue_of(fit),
            quantity::format(resource, *most)
        ),
        Fit::NoQueue => format!("{worker} has no ClusterQueue for the job's LocalQueue"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(name: &str, fit: Fit) -> WorkerFit {
        WorkerFit { worker: name.into(), cluster_queue: Some("cq".into()), fit }
    }

    #[test]
    fn each_worker_is_named_with_whether_it_fits() {
        let fits = [
            worker("worker1", Fit::NotNow { resource: "cpu".into(), asked: 2.0, free: 0.5 }),
            worker("worker2", Fit::Now),
            worker("worker3", Fit::Never { resource: "cpu".into(), asked: 2.0, most: 1.0 }),
            WorkerFit { worker: "worker4".into(), cluster_queue: None, fit: Fit::NoQueue },
        ];
        let (sentence, next) = sentences(&fits);
        assert_eq!(
            sentence.unwrap(),
            "Workers: worker1 cannot now (2 cpu asked, 500m free in ClusterQueue cq); worker2 can fit it now \
             (ClusterQueue cq); worker3 never can (2 cpu asked, the most ClusterQueue cq can give is 1); worker4 \
             has no ClusterQueue for the job's LocalQueue."
        );
        assert_eq!(next, None);
    }

    #[test]
    fn a_job_no_worker_can_ever_take_is_named_so_with_what_to_ask() {
        let fits = [
            worker("worker1", Fit::Never { resource: "cpu".into(), asked: 100.0, most: 4.0 }),
            worker("worker2", Fit::Never { resource: "cpu".into(), asked: 100.0, most: 8.0 }),
        ];
        let (sentence, next) = sentences(&fits);
        assert_eq!(
            sentence.unwrap(),
            "No worker can ever admit it: it asks 100 cpu, more than any worker's ClusterQueue can give (the most: \
             worker1's ClusterQueue cq 4, worker2's ClusterQueue cq 8), so it waits for ever, whatever the manager's \
             quota."
        );
        assert!(next.unwrap().starts_with("ask for at most 8 cpu"));
    }

    #[test]
    fn no_watched_worker_says_nothing() {
        assert_eq!(sentences(&[]), (None, None));
    }
}
