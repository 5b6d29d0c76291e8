//! A healthy MultiKueue setup, as `doctor` would read it: a manager and two workers, Kueue in
//! a Deployment that lists our kinds, our controller as a process (its webhook answering), the
//! default queues everywhere, every worker connected. Each test breaks one thing.

use std::collections::{BTreeMap, BTreeSet};

use super::{AdmissionCheck, ClusterFacts, Configuration, Facts, Job, KueueApi, KueueFacts, MultiKueueCluster};
use crate::api::condition::Condition;
use crate::api::kueue::Role;
use crate::model::{FlavorQuota, LocalQueueFacts, QueueRow};

const KINDS: [&str; 2] = ["ExternalJob.v1alpha1.kueue-ext.dev", "WrappedJob.v1alpha1.kueue-ext.dev"];

fn cluster_queue(cluster: &str, cpu: f64, checks: &[&str]) -> QueueRow {
    QueueRow {
        cluster: cluster.into(),
        name: "cluster-queue".into(),
        cohort: None,
        active: Some(Condition::new("Active", true, "Ready", "Can admit new workloads")),
        stop_policy: None,
        pending: 0,
        reserving: 0,
        admitted: 0,
        admission_checks: checks.iter().map(|c| c.to_string()).collect(),
        quotas: vec![
            FlavorQuota {
                flavor: "default-flavor".into(),
                resource: "cpu".into(),
                nominal: cpu,
                borrowing_limit: None,
                reserved: 0.0,
                used: 0.0,
            },
            FlavorQuota {
                flavor: "default-flavor".into(),
                resource: "memory".into(),
                nominal: 128.0 * 1024.0 * 1024.0 * 1024.0,
                borrowing_limit: None,
                reserved: 0.0,
                used: 0.0,
            },
        ],
        local_queues: vec!["default/user-queue".into()],
    }
}

fn local_queue(cluster: &str) -> LocalQueueFacts {
    LocalQueueFacts {
        cluster: cluster.into(),
        namespace: "default".into(),
        name: "user-queue".into(),
        cluster_queue: "cluster-queue".into(),
        stop_policy: None,
        active: None,
        pending: 0,
        admitted: 0,
    }
}

fn cluster(name: &str, role: Role) -> ClusterFacts {
    let mut cluster = ClusterFacts::new(name, &format!("kueue-ext-{name}"), role);
    cluster.kueue_api = Some(KueueApi::Served);
    let multikueue = if role == Role::Manager { KINDS.map(String::from).to_vec() } else { Vec::new() };
    cluster.kueue = Some(KueueFacts {
        namespace: "kueue-system".into(),
        name: "kueue-controller-manager".into(),
        image: "registry.k8s.io/kueue/kueue:v0.19.2".into(),
        unavailable: None,
        configuration: Configuration::Read {
            config_map: "kueue-system/kueue-manager-config".into(),
            integrations: KINDS.map(String::from).to_vec(),
            multikueue,
        },
    });
    cluster.controller.webhook_configured = true;
    cluster.namespaces = BTreeSet::from(["default".into(), "kube-system".into(), "kueue-system".into()]);
    cluster.local_queues = vec![local_queue(name)];
    cluster
}

pub fn healthy() -> Facts {
    let mut manager = cluster("manager", Role::Manager);
    manager.cluster_queues = vec![cluster_queue("manager", 64.0, &["multikueue"])];
    manager.admission_checks = vec![AdmissionCheck {
        name: "multikueue".into(),
        controller: "kueue.x-k8s.io/multikueue".into(),
        active: Some(Condition::new("Active", true, "Active", "The admission check is active")),
        multikueue_config: Some("kueue-ext".into()),
    }];
    manager.multikueue_configs = BTreeMap::from([("kueue-ext".into(), vec!["worker1".into(), "worker2".into()])]);
    manager.multikueue_clusters = ["worker1", "worker2"]
        .map(|name| MultiKueueCluster {
            name: name.into(),
            secret: Some(format!("multikueue-{name}")),
            active: Some(Condition::new("Active", true, "Active", "Connected")),
        })
        .to_vec();
    manager.kueue_secrets = BTreeSet::from(["multikueue-worker1".into(), "multikueue-worker2".into()]);
    let workers = ["worker1", "worker2"].map(|name| {
        let mut worker = cluster(name, Role::Worker);
        worker.cluster_queues = vec![cluster_queue(name, 32.0, &[])];
        worker
    });
    let mut clusters = vec![manager];
    clusters.extend(workers);
    Facts { kubeconfig: None, clusters, kinds: KINDS.map(String::from).to_vec(), kinds_unread: None }
}

pub fn manager_mut(facts: &mut Facts) -> &mut ClusterFacts {
    facts.clusters.iter_mut().find(|c| c.role == Role::Manager).expect("a manager")
}

pub fn worker_mut<'a>(facts: &'a mut Facts, name: &str) -> &'a mut ClusterFacts {
    facts.clusters.iter_mut().find(|c| c.name == name).expect("the worker")
}

/// An ExternalJob in `default`.
pub fn job(name: &str, queue: Option<&str>, from_multikueue: bool) -> Job {
    Job {
        kind: "ExternalJob".into(),
        resource: "externaljobs.kueue-ext.dev".into(),
        namespace: "default".into(),
        name: name.into(),
        queue: queue.map(String::from),
        managed_by: None,
        from_multikueue,
        finished: false,
    }
}
