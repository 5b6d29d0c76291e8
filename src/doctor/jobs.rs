//! Jobs that MultiKueue cannot place: a Workload too big for every worker (it waits forever on
//! the manager, kubernetes-sigs/kueue#8602), one Kueue admitted on the manager around its
//! MultiKueue check (it never reaches a worker), and a job on a worker in the way of the copy
//! MultiKueue would make of a manager's job (kubernetes-sigs/kueue#11849).

use super::{ClusterFacts, Facts, Finding, ObjectRef, Workload};
use crate::api::kueue::MULTIKUEUE_CONTROLLER;
use crate::model::{QueueRow, capacity};
use crate::quantity;

/// `worker`'s ClusterQueue that takes copies of jobs queued to `namespace/queue`.
fn queue_on<'a>(worker: &'a ClusterFacts, namespace: &str, queue: &str) -> Option<&'a QueueRow> {
    worker.cluster_queue(&worker.local_queue(namespace, queue)?.cluster_queue)
}

fn kubectl_kind(kind: &str) -> String {
    kind.to_lowercase()
}

/// A pending Workload of the manager that asks, for some resource, more than the ClusterQueue
/// of every worker could ever give: MultiKueue dispatches it, no worker admits it, and it waits
/// forever.
pub fn never_fits(facts: &Facts) -> Vec<Finding> {
    let Some(manager) = facts.manager().filter(|m| m.read("Workloads") && m.read("LocalQueues")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let waiting = manager.workloads.iter().filter(|w| !w.done_waiting);
    for workload in waiting {
        let Some(queue) = workload.queue.as_deref() else { continue };
        if !manager.dispatches(&workload.namespace, queue) {
            continue;
        }
        let queues: Vec<(&ClusterFacts, &QueueRow)> =
            facts.workers().filter_map(|w| Some((w, queue_on(w, &workload.namespace, queue)?))).collect();
        if queues.is_empty() {
            continue;
        }
        for (resource, &asked) in &workload.requests {
            let most: Vec<(&ClusterFacts, &QueueRow, f64)> =
                queues.iter().map(|(w, q)| (*w, *q, capacity::most_of(q, &w.cluster_queues, resource))).collect();
            if asked <= 0.0 || most.iter().any(|(_, _, m)| asked <= *m) {
                continue;
            }
            out.push(too_big(facts, manager, workload, resource, asked, &most));
        }
    }
    out
}

fn too_big(
    facts: &Facts,
    manager: &ClusterFacts,
    workload: &Workload,
    resource: &str,
    asked: f64,
    most: &[(&ClusterFacts, &QueueRow, f64)],
) -> Finding {
    let amount = |v: f64| quantity::format(resource, v);
    let each: Vec<String> = most.iter().map(|(w, q, m)| format!("{} {}: {}", w.name, q.name, amount(*m))).collect();
    // The worker closest to fitting it: the first of the largest.
    let largest = most.iter().copied().reduce(|best, next| if next.2 > best.2 { next } else { best });
    let (worker, queue, _) = largest.unwrap_or((manager, most[0].1, 0.0));
    let resubmit = match &workload.owner {
        Some((kind, name)) => format!(
            "ask for less {resource}: {} -n {} delete {}/{name}, then submit it smaller; or ",
            facts.kubectl(manager),
            workload.namespace,
            kubectl_kind(kind)
        ),
        None => String::new(),
    };
    Finding::error(
        manager,
        format!(
            "asks for {} {resource} in all, more than the ClusterQueue of any worker has ({}): it can never be \
             admitted (kubernetes-sigs/kueue#8602)",
            amount(asked),
            each.join(", ")
        ),
    )
    .on(ObjectRef::new("Workload", &workload.namespace, &workload.name))
    .fix(format!(
        "{resubmit}raise the {resource} nominalQuota of a worker's ClusterQueue: {} edit clusterqueue {}",
        facts.kubectl(worker),
        queue.name
    ))
}

/// A running Workload of the manager, in a queue that dispatches, that no worker holds and that
/// has no state for its ClusterQueue's MultiKueue check: Kueue applies a ClusterQueue's checks
/// by the flavors it assigned, so a Workload whose pods request nothing is admitted with none,
/// and MultiKueue never dispatches it. It will never run.
pub fn admitted_around_multikueue(facts: &Facts) -> Vec<Finding> {
    let Some(manager) = facts.manager().filter(|m| m.read("Workloads") && m.read("LocalQueues")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for workload in manager.workloads.iter().filter(|w| w.running && w.placed_on.is_none()) {
        let Some(queue) = workload.queue.as_deref() else { continue };
        let local = manager.local_queue(&workload.namespace, queue);
        let Some(cluster_queue) = local.and_then(|q| manager.cluster_queue(&q.cluster_queue)) else { continue };
        let mut checks = manager.multikueue_checks_of(cluster_queue);
        let Some(check) = checks.find(|c| !workload.check_states.contains(&c.name)) else { continue };
        let resubmit = match &workload.owner {
            Some((kind, name)) => format!(
                "give every container of {}/{name} resource requests, then delete and resubmit it: {} -n {} delete {}/{name}",
                kubectl_kind(kind),
                facts.kubectl(manager),
                workload.namespace,
                kubectl_kind(kind)
            ),
            None => "give every container of its job resource requests, then delete and resubmit the job".into(),
        };
        out.push(
            Finding::error(
                manager,
                format!(
                    "admitted without its MultiKueue admission check {} (its pods request nothing, so Kueue \
                     applied no check of ClusterQueue {}): MultiKueue never dispatches it and it will never run",
                    check.name, cluster_queue.name
                ),
            )
            .on(ObjectRef::new("Workload", &workload.namespace, &workload.name))
            .fix(resubmit),
        );
    }
    out
}

/// A job on a worker with the name, namespace and kind of a manager's job that MultiKueue
/// dispatches, but not made by MultiKueue: the copy cannot be created there, and MultiKueue
/// may take the stranger for its own.
pub fn same_name_on_worker(facts: &Facts) -> Vec<Finding> {
    let Some(manager) = facts.manager().filter(|m| m.read("jobs")) else { return Vec::new() };
    let dispatched = manager.jobs.iter().filter(|job| {
        let by_queue = job.queue.as_deref().is_some_and(|q| manager.dispatches(&job.namespace, q));
        !job.finished && (by_queue || job.managed_by.as_deref() == Some(MULTIKUEUE_CONTROLLER))
    });
    let mut out = Vec::new();
    for job in dispatched {
        for worker in facts.workers().filter(|w| w.read("jobs")) {
            let same =
                worker.jobs.iter().find(|j| j.kind == job.kind && j.namespace == job.namespace && j.name == job.name);
            let Some(stranger) = same.filter(|j| !j.from_multikueue) else { continue };
            out.push(
                Finding::error(
                    worker,
                    format!(
                        "not made by MultiKueue (no label kueue.x-k8s.io/multikueue-origin), but named as the \
                         manager's {} {}/{}, which MultiKueue dispatches: its copy cannot be made here \
                         (kubernetes-sigs/kueue#11849)",
                        job.kind, job.namespace, job.name
                    ),
                )
                .on(ObjectRef::new(&stranger.kind, &stranger.namespace, &stranger.name))
                .fix(format!(
                    "{} -n {} delete {} {}   # or give one of the two another name",
                    facts.kubectl(worker),
                    stranger.namespace,
                    stranger.resource,
                    stranger.name
                )),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::Severity;
    use super::super::fixtures::{healthy, job, manager_mut, worker_mut};
    use super::*;

    fn workload(cpu: f64) -> Workload {
        Workload {
            namespace: "default".into(),
            name: "externaljob-too-big-1a2b3".into(),
            queue: Some("user-queue".into()),
            owner: Some(("ExternalJob".into(), "too-big".into())),
            done_waiting: false,
            running: false,
            placed_on: None,
            check_states: Vec::new(),
            requests: BTreeMap::from([("cpu".into(), cpu), ("memory".into(), 256.0 * 1024.0 * 1024.0)]),
        }
    }

    #[test]
    fn a_workload_that_fits_some_worker_says_nothing() {
        let mut facts = healthy();
        manager_mut(&mut facts).workloads = vec![workload(8.0)];
        assert_eq!(never_fits(&facts), []);
    }

    #[test]
    fn a_workload_too_big_for_every_worker_is_an_error_naming_the_resource() {
        let mut facts = healthy();
        manager_mut(&mut facts).workloads = vec![workload(2000.0)];
        let found = never_fits(&facts);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].severity, found[0].cluster.as_str()), (Severity::Error, "manager"));
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "Workload/default/externaljob-too-big-1a2b3");
        assert_eq!(
            found[0].problem,
            "asks for 2000 cpu in all, more than the ClusterQueue of any worker has (worker1 cluster-queue: 32, \
             worker2 cluster-queue: 32): it can never be admitted (kubernetes-sigs/kueue#8602)"
        );
        assert_eq!(
            found[0].fix.as_deref(),
            Some(
                "ask for less cpu: kubectl --context kueue-ext-manager -n default delete externaljob/too-big, then \
                 submit it smaller; or raise the cpu nominalQuota of a worker's ClusterQueue: kubectl --context \
                 kueue-ext-worker1 edit clusterqueue cluster-queue"
            )
        );
    }

    #[test]
    fn a_workload_admitted_without_its_multikueue_check_will_never_run() {
        let mut facts = healthy();
        let around = Workload { done_waiting: true, running: true, requests: BTreeMap::new(), ..workload(0.0) };
        let dispatched = Workload {
            name: "dispatched".into(),
            placed_on: Some("worker1".into()),
            check_states: vec!["multikueue".into()],
            ..around.clone()
        };
        let checked = Workload { name: "checked".into(), check_states: vec!["multikueue".into()], ..around.clone() };
        manager_mut(&mut facts).workloads = vec![around, dispatched, checked];
        let found = admitted_around_multikueue(&facts);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "Workload/default/externaljob-too-big-1a2b3");
        assert_eq!(
            found[0].problem,
            "admitted without its MultiKueue admission check multikueue (its pods request nothing, so Kueue applied \
             no check of ClusterQueue cluster-queue): MultiKueue never dispatches it and it will never run"
        );
        assert_eq!(
            found[0].fix.as_deref(),
            Some(
                "give every container of externaljob/too-big resource requests, then delete and resubmit it: kubectl \
                 --context kueue-ext-manager -n default delete externaljob/too-big"
            )
        );
    }

    #[test]
    fn admitted_or_local_workloads_are_not_judged() {
        let mut facts = healthy();
        let done = Workload { done_waiting: true, ..workload(2000.0) };
        let local = Workload { queue: Some("local-only".into()), ..workload(2000.0) };
        manager_mut(&mut facts).workloads = vec![done, local];
        assert_eq!(never_fits(&facts), []);
    }

    #[test]
    fn a_cohort_lends_up_to_its_borrowing_limit() {
        let mut facts = healthy();
        for name in ["worker1", "worker2"] {
            let worker = worker_mut(&mut facts, name);
            let mut lender = worker.cluster_queues[0].clone();
            lender.name = "lender".into();
            lender.cohort = Some("all".into());
            worker.cluster_queues[0].cohort = Some("all".into());
            worker.cluster_queues.push(lender);
        }
        manager_mut(&mut facts).workloads = vec![workload(60.0)];
        assert_eq!(never_fits(&facts), [], "32 own and 32 borrowed");
        worker_mut(&mut facts, "worker1").cluster_queues[0].quotas[0].borrowing_limit = Some(10.0);
        worker_mut(&mut facts, "worker2").cluster_queues[0].quotas[0].borrowing_limit = Some(10.0);
        assert_eq!(never_fits(&facts).len(), 1, "at most 42");
    }

    #[test]
    fn a_workers_own_job_named_as_a_dispatched_one_is_an_error() {
        let mut facts = healthy();
        manager_mut(&mut facts).jobs = vec![job("train", Some("user-queue"), false)];
        worker_mut(&mut facts, "worker1").jobs = vec![job("train", None, false)];
        worker_mut(&mut facts, "worker2").jobs = vec![job("train", Some("user-queue"), true)];
        let found = same_name_on_worker(&facts);
        assert_eq!(found.len(), 1, "MultiKueue's own copy on worker2 is no stranger: {found:?}");
        assert_eq!((found[0].severity, found[0].cluster.as_str()), (Severity::Error, "worker1"));
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "ExternalJob/default/train");
        assert!(found[0].problem.contains("kubernetes-sigs/kueue#11849"), "{}", found[0].problem);
        assert_eq!(
            found[0].fix.as_deref(),
            Some(
                "kubectl --context kueue-ext-worker1 -n default delete externaljobs.kueue-ext.dev train   # or give one \
                 of the two another name"
            )
        );
    }

    #[test]
    fn a_job_the_manager_keeps_or_finished_has_no_rival() {
        let mut facts = healthy();
        let kept = job("kept", Some("local-only"), false);
        let done = crate::doctor::Job { finished: true, ..job("done", Some("user-queue"), false) };
        manager_mut(&mut facts).jobs = vec![kept, done];
        worker_mut(&mut facts, "worker1").jobs = vec![job("kept", None, false), job("done", None, false)];
        assert_eq!(same_name_on_worker(&facts), []);
    }
}
