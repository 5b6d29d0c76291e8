//! What each cluster has free, and whether a job's requests fit a worker: from the ClusterQueues'
//! quotas and reservations alone (their `status.flavorsReservation`), as a MultiKueue manager's
//! user asks it. Nodes are not looked at: a fit here is Kueue's quota, not the scheduler's.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{FlavorQuota, Model, QueueRow, Role};

/// A cluster's quota, reservations and usage summed over its ClusterQueues, per flavor and
/// resource.
pub fn of_cluster<'a>(queues: impl IntoIterator<Item = &'a QueueRow>) -> Vec<FlavorQuota> {
    let mut sums: BTreeMap<(String, String), FlavorQuota> = BTreeMap::new();
    for q in queues.into_iter().flat_map(|queue| &queue.quotas) {
        let sum = sums.entry((q.flavor.clone(), q.resource.clone())).or_insert_with(|| FlavorQuota {
            flavor: q.flavor.clone(),
            resource: q.resource.clone(),
            nominal: 0.0,
            borrowing_limit: None,
            reserved: 0.0,
            used: 0.0,
        });
        sum.nominal += q.nominal;
        sum.reserved += q.reserved;
        sum.used += q.used;
    }
    sums.into_values().collect()
}

/// Whether a worker's ClusterQueue could give a job its requests.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "fit", rename_all = "camelCase")]
pub enum Fit {
    /// Every resource has a flavor with enough free now.
    Now,
    /// Within its quota, but held by other Workloads: `free` is the most one flavor has free.
    NotNow { resource: String, asked: f64, free: f64 },
    /// More than the ClusterQueue can ever give; `most` is what its largest flavor can.
    Never { resource: String, asked: f64, most: f64 },
    /// The worker has no LocalQueue of that name in the namespace, or no ClusterQueue behind it.
    NoQueue,
}

/// One worker's answer for a job.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerFit {
    pub worker: String,
    pub cluster_queue: Option<String>,
    #[serde(flatten)]
    pub fit: Fit,
}

/// For each worker we watch, whether the ClusterQueue behind its LocalQueue `namespace/queue`
/// (where MultiKueue puts the copy) fits `requests`.
pub fn on_workers(model: &Model, namespace: &str, queue: &str, requests: &BTreeMap<String, f64>) -> Vec<WorkerFit> {
    let workers = model.clusters.iter().filter(|c| c.role == Role::Worker && c.context.is_some() && c.reachable);
    workers
        .map(|worker| {
            let cq = model
                .local_queue(&worker.name, namespace, queue)
                .and_then(|lq| model.cluster_queue(&worker.name, &lq.cluster_queue));
            let queues = model.queues.iter().filter(|q| q.cluster == worker.name);
            WorkerFit {
                worker: worker.name.clone(),
                cluster_queue: cq.map(|q| q.name.clone()),
                fit: cq.map_or(Fit::NoQueue, |cq| fit(cq, queues, requests)),
            }
        })
        .collect()
}

/// Resource by resource: never where no flavor could ever hold it, else not now where none
/// holds it free. Kueue gives each resource group one flavor; resources are judged apart here,
/// which can only say "fits" too early, never "never" too soon.
pub fn fit<'a>(
    queue: &QueueRow,
    cluster_queues: impl IntoIterator<Item = &'a QueueRow> + Clone,
    requests: &BTreeMap<String, f64>,
) -> Fit {
    let mut not_now = None;
    for (resource, &asked) in requests.iter().filter(|(_, asked)| **asked > 0.0) {
        let most = most_of(queue, cluster_queues.clone(), resource);
        if asked > most {
            return Fit::Never { resource: resource.clone(), asked, most };
        }
        let flavors = queue.quotas.iter().filter(|q| &q.resource == resource);
        let free = flavors.map(|q| (q.nominal - q.reserved).max(0.0)).fold(0.0, f64::max);
        if asked > free && not_now.is_none() {
            not_now = Some(Fit::NotNow { resource: resource.clone(), asked, free });
        }
    }
    not_now.unwrap_or(Fit::Now)
}

/// The most of `resource` one Workload can get from `queue`, among its cluster's
/// `cluster_queues`: per flavor, its nominal quota and what the rest of its cohort could lend
/// (up to its borrowing limit); the best flavor counts, since a pod set takes each resource from
/// one flavor.
pub fn most_of<'a>(queue: &QueueRow, cluster_queues: impl IntoIterator<Item = &'a QueueRow>, resource: &str) -> f64 {
    let mates: Vec<&QueueRow> = match &queue.cohort {
        Some(cohort) => {
            cluster_queues.into_iter().filter(|q| q.name != queue.name && q.cohort.as_ref() == Some(cohort)).collect()
        }
        None => Vec::new(),
    };
    let each = queue.quotas.iter().filter(|q| q.resource == resource).map(|own| {
        let quotas = mates.iter().flat_map(|q| &q.quotas);
        let lent: f64 = quotas.filter(|q| q.flavor == own.flavor && q.resource == resource).map(|q| q.nominal).sum();
        own.nominal + own.borrowing_limit.map_or(lent, |limit| limit.min(lent))
    });
    each.fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::flavor_quota as quota;

    fn queue(cohort: Option<&str>, quotas: Vec<FlavorQuota>) -> QueueRow {
        QueueRow {
            cluster: "worker1".into(),
            name: "cq".into(),
            cohort: cohort.map(Into::into),
            active: None,
            stop_policy: None,
            pending: 0,
            reserving: 0,
            admitted: 0,
            admission_checks: Vec::new(),
            quotas,
            local_queues: Vec::new(),
        }
    }

    fn asks(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(r, v)| (r.to_string(), *v)).collect()
    }

    #[test]
    fn a_job_fits_now_later_or_never() {
        let two_flavors = queue(None, vec![quota("small", "cpu", 2.0, 2.0), quota("big", "cpu", 8.0, 5.0)]);
        let cases = [
            (asks(&[("cpu", 3.0)]), Fit::Now),
            (asks(&[("cpu", 4.0)]), Fit::NotNow { resource: "cpu".into(), asked: 4.0, free: 3.0 }),
            (asks(&[("cpu", 9.0)]), Fit::Never { resource: "cpu".into(), asked: 9.0, most: 8.0 }),
            (asks(&[("memory", 1.0)]), Fit::Never { resource: "memory".into(), asked: 1.0, most: 0.0 }),
            (asks(&[("cpu", 0.0), ("memory", 0.0)]), Fit::Now),
        ];
        for (requests, expected) in cases {
            assert_eq!(fit(&two_flavors, [&two_flavors], &requests), expected, "{requests:?}");
        }
    }

    #[test]
    fn never_wins_over_not_now_whatever_the_order_of_resources() {
        let full = queue(None, vec![quota("f", "cpu", 4.0, 4.0), quota("f", "memory", 8.0, 0.0)]);
        let requests = asks(&[("cpu", 1.0), ("memory", 16.0)]);
        assert_eq!(fit(&full, [&full], &requests), Fit::Never { resource: "memory".into(), asked: 16.0, most: 8.0 });
    }

    /// In a cohort a queue may borrow what the others hold, up to its limit.
    #[test]
    fn borrowing_moves_never_to_not_now() {
        let mut limited = quota("f", "cpu", 4.0, 4.0);
        limited.borrowing_limit = Some(2.0);
        let in_cohort = queue(Some("team"), vec![limited]);
        let mut lender = queue(Some("team"), vec![quota("f", "cpu", 8.0, 0.0)]);
        lender.name = "lender".into();
        let cluster = [&in_cohort, &lender];
        assert_eq!(
            fit(&in_cohort, cluster, &asks(&[("cpu", 7.0)])),
            Fit::Never { resource: "cpu".into(), asked: 7.0, most: 6.0 }
        );
        assert_eq!(
            fit(&in_cohort, cluster, &asks(&[("cpu", 5.0)])),
            Fit::NotNow { resource: "cpu".into(), asked: 5.0, free: 0.0 }
        );
        let unlimited = queue(Some("team"), vec![quota("f", "cpu", 4.0, 0.0)]);
        assert_eq!(
            fit(&unlimited, [&unlimited, &lender], &asks(&[("cpu", 12.0)])),
            Fit::NotNow { resource: "cpu".into(), asked: 12.0, free: 4.0 }
        );
        assert_eq!(
            fit(&unlimited, [&unlimited, &lender], &asks(&[("cpu", 13.0)])),
            Fit::Never { resource: "cpu".into(), asked: 13.0, most: 12.0 }
        );
    }

    #[test]
    fn a_clusters_quota_is_summed_over_its_queues() {
        let a = queue(None, vec![quota("f", "cpu", 4.0, 1.0), quota("f", "memory", 8.0, 2.0)]);
        let b = queue(None, vec![quota("f", "cpu", 2.0, 2.0)]);
        let summed = of_cluster([&a, &b]);
        let cpu = summed.iter().find(|q| q.resource == "cpu").unwrap();
        assert_eq!((summed.len(), cpu.nominal, cpu.reserved), (2, 6.0, 3.0));
    }
}
