//! MultiKueue's wiring on the manager: each worker connected, its kubeconfig Secret there, the
//! AdmissionCheck active over a MultiKueueConfig that lists the workers, and every queue a
//! dispatched job needs present on every worker.

use std::collections::BTreeSet;

use serde_json::json;

use super::{ClusterFacts, Facts, Finding, ObjectRef};
use crate::api::kueue::MULTIKUEUE_CONTROLLER;
use crate::model::read::message_or_reason;

/// `kubectl kueue-ext connect` for worker `name`: its context when it is one we were given.
fn connect(facts: &Facts, manager: &ClusterFacts, name: &str) -> String {
    let context = facts.clusters.iter().find(|c| c.name == name).map_or("CONTEXT", |c| c.context.as_str());
    format!("{} --worker-context {name}={context}", facts.plugin("connect", manager))
}

/// The manager, when its MultiKueue objects were read.
fn manager(facts: &Facts) -> Option<&ClusterFacts> {
    facts.manager().filter(|m| m.unreachable.is_none())
}

pub fn connections(facts: &Facts) -> Vec<Finding> {
    let Some(manager) = manager(facts).filter(|m| m.read("MultiKueueClusters")) else { return Vec::new() };
    let mut out = Vec::new();
    for cluster in &manager.multikueue_clusters {
        let active = cluster.active.as_ref().filter(|c| !c.is_true());
        let problem = match (&cluster.active, active) {
            (None, _) => "not connected: Kueue has not set its Active condition".to_string(),
            (Some(_), Some(c)) => format!("not connected: {}: {}", c.reason, message_or_reason(c)),
            (Some(_), None) => continue,
        };
        out.push(
            Finding::error(manager, problem)
                .on(ObjectRef::cluster_scoped("MultiKueueCluster", &cluster.name))
                .fix(connect(facts, manager, &cluster.name)),
        );
    }
    for worker in facts.clusters.iter().filter(|c| c.role == crate::api::kueue::Role::Worker) {
        if !manager.multikueue_clusters.iter().any(|c| c.name == worker.name) {
            out.push(
                Finding::error(
                    manager,
                    format!("no MultiKueueCluster for worker {}: MultiKueue never reaches it", worker.name),
                )
                .on(ObjectRef::cluster_scoped("MultiKueueCluster", &worker.name))
                .fix(connect(facts, manager, &worker.name)),
            );
        }
    }
    out
}

/// Each MultiKueueCluster's kubeconfig Secret, in Kueue's namespace where Kueue reads it.
pub fn kubeconfig_secrets(facts: &Facts) -> Vec<Finding> {
    let Some(manager) = manager(facts).filter(|m| m.read("Secrets")) else { return Vec::new() };
    let clusters = manager.multikueue_clusters.iter();
    let missing =
        clusters.filter_map(|c| Some((c, c.secret.as_ref()?))).filter(|(_, s)| !manager.kueue_secrets.contains(*s));
    missing
        .map(|(cluster, secret)| {
            Finding::error(
                manager,
                format!(
                    "the kubeconfig Secret of MultiKueueCluster {} is missing from Kueue's namespace",
                    cluster.name
                ),
            )
            .on(ObjectRef::new("Secret", &manager.kueue_namespace, secret))
            .fix(connect(facts, manager, &cluster.name))
        })
        .collect()
}

/// MultiKueue's AdmissionCheck: present when there are workers, active, and its
/// MultiKueueConfig exists and lists every worker, each with a MultiKueueCluster.
pub fn admission_check(facts: &Facts) -> Vec<Finding> {
    let Some(manager) = manager(facts).filter(|m| m.read("AdmissionChecks")) else { return Vec::new() };
    let checks: Vec<_> = manager.admission_checks.iter().filter(|c| c.is_multikueue()).collect();
    let workers: Vec<&ClusterFacts> =
        facts.clusters.iter().filter(|c| c.role == crate::api::kueue::Role::Worker).collect();
    let mut out = Vec::new();
    if checks.is_empty() && !workers.is_empty() {
        let first = workers[0].name.as_str();
        out.push(
            Finding::error(
                manager,
                format!("no AdmissionCheck with controllerName {MULTIKUEUE_CONTROLLER}: no job goes to a worker"),
            )
            .fix(connect(facts, manager, first)),
        );
    }
    for check in checks {
        let object = ObjectRef::cluster_scoped("AdmissionCheck", &check.name);
        match check.active.as_ref() {
            Some(c) if c.is_true() => {}
            Some(c) => out.push(
                Finding::error(manager, format!("not active: {}: {}", c.reason, message_or_reason(c)))
                    .on(object.clone())
                    .fix(format!("{} describe admissioncheck {}", facts.kubectl(manager), check.name)),
            ),
            None => out.push(
                Finding::error(manager, "not active: Kueue has not set its Active condition")
                    .on(object.clone())
                    .fix(format!("{} describe admissioncheck {}", facts.kubectl(manager), check.name)),
            ),
        }
        let Some(config_name) = &check.multikueue_config else {
            out.push(Finding::error(manager, "its parameters name no MultiKueueConfig").on(object));
            continue;
        };
        if !manager.read("MultiKueueConfigs") {
            continue;
        }
        let config = ObjectRef::cluster_scoped("MultiKueueConfig", config_name);
        let Some(listed) = manager.multikueue_configs.get(config_name) else {
            out.push(
                Finding::error(manager, format!("AdmissionCheck {} names it, but it does not exist", check.name))
                    .on(config)
                    .fix(connect(facts, manager, workers.first().map_or("NAME", |w| w.name.as_str()))),
            );
            continue;
        };
        for name in listed.iter().filter(|n| !manager.multikueue_clusters.iter().any(|c| &c.name == *n)) {
            out.push(
                Finding::error(manager, format!("lists {name}, which has no MultiKueueCluster"))
                    .on(config.clone())
                    .fix(connect(facts, manager, name)),
            );
        }
        for worker in workers.iter().filter(|w| !listed.contains(&w.name)) {
            out.push(
                Finding::warning(
                    manager,
                    format!("does not list worker {}: no job of its AdmissionCheck goes there", worker.name),
                )
                .on(config.clone())
                .fix(connect(facts, manager, &worker.name)),
            );
        }
    }
    out
}

/// The workers a ClusterQueue of the manager dispatches to: those its MultiKueueConfigs list,
/// or every worker when no list was read.
fn workers_of<'a>(facts: &'a Facts, manager: &ClusterFacts, queue: &crate::model::QueueRow) -> Vec<&'a ClusterFacts> {
    let configs = manager.multikueue_checks_of(queue).filter_map(|c| c.multikueue_config.as_ref());
    let listed: Vec<&String> = configs.filter_map(|name| manager.multikueue_configs.get(name)).flatten().collect();
    facts.workers().filter(|w| listed.is_empty() || listed.contains(&&w.name)).collect()
}

/// A LocalQueue as `kubectl create -f -` reads it.
fn local_queue_manifest(namespace: &str, name: &str, cluster_queue: &str) -> String {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
           "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cluster_queue}})
    .to_string()
}

/// MultiKueue creates a job's copy in the same namespace and LocalQueue on the worker: each
/// must exist there, or the copy is never admitted.
pub fn queues_on_workers(facts: &Facts) -> Vec<Finding> {
    let Some(manager) = manager(facts).filter(|m| m.read("LocalQueues") && m.read("ClusterQueues")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut namespaces_said = BTreeSet::new();
    for local in &manager.local_queues {
        let Some(queue) = manager.cluster_queue(&local.cluster_queue) else { continue };
        if manager.multikueue_checks_of(queue).next().is_none() {
            continue;
        }
        for worker in workers_of(facts, manager, queue) {
            let kubectl = facts.kubectl(worker);
            if worker.read("Namespaces")
                && !worker.namespaces.contains(&local.namespace)
                && namespaces_said.insert((worker.name.clone(), local.namespace.clone()))
            {
                out.push(
                    Finding::error(
                        worker,
                        format!(
                            "namespace {} is missing: MultiKueue cannot create jobs of {manager_queue} here",
                            local.namespace,
                            manager_queue = format_args!("{}/{}", local.namespace, local.name)
                        ),
                    )
                    .on(ObjectRef::cluster_scoped("Namespace", &local.namespace))
                    .fix(format!("{kubectl} create namespace {}", local.namespace)),
                );
            }
            if worker.read("LocalQueues") && worker.local_queue(&local.namespace, &local.name).is_none() {
                // The worker's ClusterQueue of the same name, else its only one.
                let cluster_queue = match worker.cluster_queue(&local.cluster_queue) {
                    Some(q) => q.name.as_str(),
                    None if worker.cluster_queues.len() == 1 => worker.cluster_queues[0].name.as_str(),
                    None => "CLUSTER_QUEUE",
                };
                out.push(
                    Finding::error(
                        worker,
                        format!(
                            "LocalQueue {}/{} of the manager is missing here: the copies MultiKueue makes of its jobs are never admitted",
                            local.namespace, local.name
                        ),
                    )
                    .on(ObjectRef::new("LocalQueue", &local.namespace, &local.name))
                    .fix(format!(
                        "{kubectl} create -f - <<<'{}'",
                        local_queue_manifest(&local.namespace, &local.name, cluster_queue)
                    )),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{healthy, manager_mut, worker_mut};
    use super::super::{AdmissionCheck, Severity};
    use super::*;
    use crate::api::condition::Condition;

    #[test]
    fn healthy_wiring_says_nothing() {
        let facts = healthy();
        for check in [connections, kubeconfig_secrets, admission_check, queues_on_workers] {
            assert_eq!(check(&facts), []);
        }
    }

    #[test]
    fn an_inactive_cluster_says_kueues_reason_and_message_verbatim() {
        let mut facts = healthy();
        manager_mut(&mut facts).multikueue_clusters[0].active =
            Some(Condition::new("Active", false, "ClientConnectionFailed", "jobsets.jobset.x-k8s.io is forbidden"));
        let found = connections(&facts);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].problem, "not connected: ClientConnectionFailed: jobsets.jobset.x-k8s.io is forbidden");
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "MultiKueueCluster/worker1");
        assert_eq!(
            found[0].fix.as_deref(),
            Some("kubectl kueue-ext connect --context kueue-ext-manager --worker-context worker1=kueue-ext-worker1")
        );
    }

    #[test]
    fn a_worker_without_a_multikueue_cluster_is_an_error() {
        let mut facts = healthy();
        manager_mut(&mut facts).multikueue_clusters.retain(|c| c.name != "worker2");
        let found = connections(&facts);
        assert_eq!(found[0].problem, "no MultiKueueCluster for worker worker2: MultiKueue never reaches it");
    }

    #[test]
    fn a_missing_kubeconfig_secret_is_named_in_kueues_namespace() {
        let mut facts = healthy();
        manager_mut(&mut facts).kueue_secrets.remove("multikueue-worker2");
        let found = kubeconfig_secrets(&facts);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "Secret/kueue-system/multikueue-worker2");
        assert!(found[0].fix.as_deref().unwrap().contains("--worker-context worker2=kueue-ext-worker2"));
    }

    #[test]
    fn the_admission_check_must_be_active_over_a_config_listing_the_workers() {
        let mut facts = healthy();
        let manager = manager_mut(&mut facts);
        manager.admission_checks[0].active =
            Some(Condition::new("Active", false, "MultiKueueConfigNotFound", "MultiKueueConfig kueue-ext not found"));
        manager.multikueue_configs.insert("kueue-ext".into(), vec!["worker1".into(), "worker3".into()]);
        let found = admission_check(&facts);
        let problems: Vec<&str> = found.iter().map(|f| f.problem.as_str()).collect();
        assert_eq!(
            problems,
            [
                "not active: MultiKueueConfigNotFound: MultiKueueConfig kueue-ext not found",
                "lists worker3, which has no MultiKueueCluster",
                "does not list worker worker2: no job of its AdmissionCheck goes there",
            ]
        );
        assert_eq!(found[2].severity, Severity::Warning);
        manager_mut(&mut facts).multikueue_configs.clear();
        assert_eq!(admission_check(&facts)[1].problem, "AdmissionCheck multikueue names it, but it does not exist");
    }

    #[test]
    fn workers_without_multikueues_admission_check_are_an_error() {
        let mut facts = healthy();
        manager_mut(&mut facts).admission_checks = vec![AdmissionCheck {
            name: "prov".into(),
            controller: "kueue.x-k8s.io/provisioning-request".into(),
            active: None,
            multikueue_config: None,
        }];
        let found = admission_check(&facts);
        assert_eq!(found.len(), 1);
        assert!(found[0].problem.starts_with("no AdmissionCheck with controllerName kueue.x-k8s.io/multikueue"));
    }

    #[test]
    fn a_local_queue_missing_on_a_worker_is_an_error_with_the_command_that_creates_it() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker2").local_queues.clear();
        let found = queues_on_workers(&facts);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].severity, found[0].cluster.as_str()), (Severity::Error, "worker2"));
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "LocalQueue/default/user-queue");
        assert_eq!(
            found[0].fix.as_deref(),
            Some(
                "kubectl --context kueue-ext-worker2 create -f - <<<'{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\
                 \"kind\":\"LocalQueue\",\"metadata\":{\"name\":\"user-queue\",\"namespace\":\"default\"},\
                 \"spec\":{\"clusterQueue\":\"cluster-queue\"}}'"
            )
        );
    }

    #[test]
    fn a_namespace_missing_on_a_worker_is_said_once_before_its_queues() {
        let mut facts = healthy();
        facts.kubeconfig = Some("/state/kubeconfig".into());
        let worker = worker_mut(&mut facts, "worker1");
        worker.namespaces.remove("default");
        worker.local_queues.clear();
        let found = queues_on_workers(&facts);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "Namespace/default");
        assert_eq!(
            found[0].fix.as_deref(),
            Some("kubectl --kubeconfig /state/kubeconfig --context kueue-ext-worker1 create namespace default")
        );
        assert_eq!(found[1].object.as_ref().unwrap().to_string(), "LocalQueue/default/user-queue");
    }

    #[test]
    fn queues_without_multikueue_are_not_wanted_on_workers() {
        let mut facts = healthy();
        manager_mut(&mut facts).cluster_queues[0].admission_checks.clear();
        worker_mut(&mut facts, "worker1").local_queues.clear();
        assert_eq!(queues_on_workers(&facts), []);
    }
}
