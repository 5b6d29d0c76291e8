//! The watches behind `watch` and `explain`: per cluster, a kube-runtime reflector store per
//! kind, kept current by the API server's watch events (no polling). [`Source::snapshot`]
//! reads the stores into the model's input. A cluster that cannot be reached shows up as
//! such in the snapshot, with the reason; its watches keep retrying with backoff.

use crate::api::kueue::untyped_resource as kueue;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Node, NodeSpec, Pod};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::config::Kubeconfig;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::pods;
use super::snapshot::{ClusterSnapshot, JobKind, JobObject, Role, Snapshot, event_line, pod_counts, pod_problems};
use crate::integrations::registry::{KindRegistry, Origin};
use crate::jobframework::api_error;
use crate::kube_util::KubeconfigError;
use crate::manifests;

pub mod visibility;

/// One cluster to watch.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The name MultiKueue knows it by (`worker1`); the manager is `manager`.
    pub name: String,
    pub context: String,
    pub role: Role,
}

/// The clusters to watch and where they were found.
#[derive(Clone, Debug)]
pub struct Targets {
    /// For the header: `sandbox kueue-ext (/state/dir)` or `kubeconfig /home/me/.kube/config`.
    pub origin: String,
    pub kubeconfig: Kubeconfig,
    /// The kubeconfig file, when it is not kubectl's default: a kubectl command we print for
    /// the user names it.
    pub file: Option<std::path::PathBuf>,
    pub clusters: Vec<Target>,
}

impl Targets {
    /// The namespace the manager's context names, if it names one.
    pub fn manager_namespace(&self) -> Option<String> {
        let manager = self.clusters.iter().find(|c| c.role == Role::Manager)?;
        let context = self.kubeconfig.contexts.iter().find(|c| c.name == manager.context)?;
        context.context.as_ref()?.namespace.clone()
    }
}

/// What one watch has managed so far.
#[derive(Clone, Debug, PartialEq)]
enum Health {
    Listing,
    Ready,
    Failed(String),
}

type HealthMap = Arc<Mutex<BTreeMap<String, Health>>>;

/// Whether a watch's kind must be served: a kind Kueue integrates itself (JobSet) may simply
/// not be installed on a cluster, which is then no problem to report.
#[derive(Clone, Copy, PartialEq)]
enum Served {
    Required,
    Optional,
    /// Read if allowed: nodes only sharpen a next step, and a user may not be allowed to list them.
    IfAllowed,
}

/// Starts one watch feeding a store; reports its health under `kind` and bumps `changed` on
/// every event, so the UI redraws when (and only when) something changed.
#[allow(clippy::too_many_arguments)]
fn spawn_watch<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: Writer<K>,
    kind: String,
    served: Served,
    health: HealthMap,
    changed: watch::Sender<u64>,
    trim: fn(&mut K),
) -> JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash,
{
    let set = move |h: Health| {
        if let Ok(mut map) = health.lock() {
            map.insert(kind.clone(), h);
        }
    };
    set(Health::Listing);
    tokio::spawn(async move {
        let stream = reflector::reflector(writer, watcher(api, config).modify(trim).default_backoff());
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::InitDone) => set(Health::Ready),
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => continue,
                Ok(_) => {}
                Err(e) if served == Served::Optional && is_unserved(&e) => set(Health::Ready),
                Err(e) if served == Served::IfAllowed && is_forbidden(&e) => set(Health::Ready),
                Err(e) => set(Health::Failed(short_error(&e))),
            }
            changed.send_modify(|generation| *generation += 1);
        }
    })
}

fn is_unserved(error: &watcher::Error) -> bool {
    api_failure(error).is_some_and(api_error::is_unserved)
}

fn is_forbidden(error: &watcher::Error) -> bool {
    api_failure(error).is_some_and(api_error::is_forbidden)
}

fn api_failure(error: &watcher::Error) -> Option<&kube::Error> {
    match error {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            Some(e)
        }
        _ => None,
    }
}

/// A watch error in words a user can act on; the kind it is about is said beside it.
fn short_error(error: &watcher::Error) -> String {
    match error {
        error if is_unserved(error) => "the cluster does not serve it: is its CRD installed (kubectl get crds)?".into(),
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            api_error::in_words(e)
        }
        watcher::Error::WatchError(status) => status.message.clone(),
        other => other.to_string(),
    }
}

fn trim_object(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
}

/// Workloads repeat their job's pod templates; the model never reads them.
fn trim_workload(object: &mut DynamicObject) {
    trim_object(object);
    if let Some(spec) = object.data.get_mut("spec").and_then(|s| s.as_object_mut()) {
        spec.remove("podSets");
    }
}

/// Of a node only its provider ID is read: it tells a kind cluster, and which one.
fn trim_node(node: &mut Node) {
    node.metadata.managed_fields = None;
    node.metadata.annotations = None;
    node.metadata.labels = None;
    node.spec = node.spec.take().map(|spec| NodeSpec { provider_id: spec.provider_id, ..Default::default() });
    node.status = None;
}

fn trim_event(event: &mut Event) {
    event.metadata.managed_fields = None;
}

/// Events of the job kinds and of these are kept; a pod's events would outnumber everything else.
const EVENT_KINDS: [&str; 1] = ["Workload"];

struct ClusterWatch {
    target: Target,
    client: Result<Client, KubeconfigError>,
    health: HealthMap,
    jobs: Vec<(JobKind, Store<DynamicObject>)>,
    workloads: Option<Store<DynamicObject>>,
    local_queues: Option<Store<DynamicObject>>,
    cluster_queues: Option<Store<DynamicObject>>,
    admission_checks: Option<Store<DynamicObject>>,
    multikueue_clusters: Option<Store<DynamicObject>>,
    pods: Option<Store<Pod>>,
    nodes: Option<Store<Node>>,
    events: Vec<Store<Event>>,
    tasks: Vec<JoinHandle<()>>,
}

impl ClusterWatch {
    fn start(
        target: Target,
        client: Result<Client, KubeconfigError>,
        kinds: &[JobKind],
        namespace: Option<&str>,
        changed: &watch::Sender<u64>,
    ) -> Self {
        let mut watch = ClusterWatch {
            target,
            client,
            health: Arc::default(),
            jobs: Vec::new(),
            workloads: None,
            local_queues: None,
            cluster_queues: None,
            admission_checks: None,
            multikueue_clusters: None,
            pods: None,
            nodes: None,
            events: Vec::new(),
            tasks: Vec::new(),
        };
        let Some(client) = watch.client.as_ref().ok().cloned() else { return watch };
        let namespaced = |resource: &ApiResource| match namespace {
            Some(ns) => Api::<DynamicObject>::namespaced_with(client.clone(), ns, resource),
            None => Api::all_with(client.clone(), resource),
        };
        let mut dynamic =
            |resource: ApiResource, api: Api<DynamicObject>, served: Served, trim: fn(&mut DynamicObject)| {
                let writer = Writer::new(resource.clone());
                let store = writer.as_reader();
                let health = watch.health.clone();
                let config = watcher::Config::default();
                let task = spawn_watch(api, config, writer, resource.kind, served, health, changed.clone(), trim);
                watch.tasks.push(task);
                store
            };
        for kind in kinds {
            let resource = kind.api_resource();
            // Our kinds and the configured ones must be served; those Kueue integrates itself may be absent.
            let served = match (kind.compiled(), kind.origin()) {
                (None, Origin::BuiltIn) => Served::Optional,
                _ => Served::Required,
            };
            let store = dynamic(resource.clone(), namespaced(&resource), served, trim_object);
            watch.jobs.push((kind.clone(), store));
        }
        let workloads = kueue("Workload", "workloads");
        watch.workloads = Some(dynamic(workloads.clone(), namespaced(&workloads), Served::Required, trim_workload));
        let local_queues = kueue("LocalQueue", "localqueues");
        let queues = dynamic(local_queues.clone(), namespaced(&local_queues), Served::Required, trim_object);
        watch.local_queues = Some(queues);
        for (slot, resource) in [
            (&mut watch.cluster_queues, kueue("ClusterQueue", "clusterqueues")),
            (&mut watch.admission_checks, kueue("AdmissionCheck", "admissionchecks")),
            (&mut watch.multikueue_clusters, kueue("MultiKueueCluster", "multikueueclusters")),
        ] {
            let api = Api::all_with(client.clone(), &resource);
            *slot = Some(dynamic(resource, api, Served::Required, trim_object));
        }
        let pods: Api<Pod> = match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let (store, writer) = reflector::store();
        let pod_watch = spawn_watch(
            pods,
            watcher::Config::default(),
            writer,
            "Pod".into(),
            Served::Required,
            watch.health.clone(),
            changed.clone(),
            pods::trim,
        );
        watch.tasks.push(pod_watch);
        watch.pods = Some(store);
        let (store, writer) = reflector::store();
        let node_watch = spawn_watch(
            Api::<Node>::all(client.clone()),
            watcher::Config::default(),
            writer,
            "Node".into(),
            Served::IfAllowed,
            watch.health.clone(),
            changed.clone(),
            trim_node,
        );
        watch.tasks.push(node_watch);
        watch.nodes = Some(store);
        let event_kinds = kinds.iter().map(|k| k.name().to_string()).chain(EVENT_KINDS.map(String::from));
        let event_kinds: BTreeSet<String> = event_kinds.collect();
        for kind in event_kinds {
            let events: Api<Event> = match namespace {
                Some(ns) => Api::namespaced(client.clone(), ns),
                None => Api::all(client.clone()),
            };
            let config = watcher::Config::default().fields(&format!("involvedObject.kind={kind}"));
            let (store, writer) = reflector::store();
            let health = watch.health.clone();
            watch.tasks.push(spawn_watch(
                events,
                config,
                writer,
                format!("Event ({kind})"),
                Served::Required,
                health,
                changed.clone(),
                trim_event,
            ));
            watch.events.push(store);
        }
        watch
    }

    fn health(&self) -> BTreeMap<String, Health> {
        self.health.lock().map(|h| h.clone()).unwrap_or_default()
    }

    fn snapshot(&self) -> ClusterSnapshot {
        let mut out = ClusterSnapshot::empty(&self.target.name, &self.target.context, self.target.role);
        out.read_at = Some(k8s_openapi::jiff::Timestamp::now().as_second());
        if let Err(e) = &self.client {
            out.reachable = false;
            out.problems.insert("kubeconfig".into(), format!("context {}: {e}", self.target.context));
            return out;
        }
        let health = self.health();
        for (kind, h) in &health {
            match h {
                Health::Failed(why) => out.problems.insert(kind.clone(), why.clone()),
                Health::Listing => out.problems.insert(kind.clone(), "no answer yet".into()),
                Health::Ready => None,
            };
        }
        out.reachable = !health.values().all(|h| matches!(h, Health::Failed(_)));
        let state = |store: &Option<Store<DynamicObject>>| store.as_ref().map(Store::state).unwrap_or_default();
        for (kind, store) in &self.jobs {
            out.jobs.extend(store.state().into_iter().map(|object| JobObject { kind: kind.clone(), object }));
        }
        out.workloads = state(&self.workloads);
        out.local_queues = state(&self.local_queues);
        out.cluster_queues = state(&self.cluster_queues);
        out.admission_checks = state(&self.admission_checks);
        out.multikueue_clusters = state(&self.multikueue_clusters);
        if let Some(pods) = &self.pods {
            let pods = pods.state();
            out.pods = pod_counts(pods.iter().map(|p| p.as_ref()));
            out.pod_problems = pod_problems(pods.iter().map(|p| p.as_ref()));
        }
        if let Some(nodes) = &self.nodes {
            let ids = nodes.state().iter().filter_map(|n| n.spec.as_ref()?.provider_id.clone()).collect();
            out.provider_ids = ids;
        }
        out.events = self.events.iter().flat_map(|s| s.state()).filter_map(|e| event_line(&e)).collect();
        out
    }

    fn settled(&self) -> bool {
        self.client.is_err() || self.health().values().all(|h| *h != Health::Listing)
    }
}

impl Drop for ClusterWatch {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Every cluster's watches.
pub struct Source {
    pub origin: String,
    registry: KindRegistry,
    /// Why the manager's integrations could not be read, shown as a problem of the manager.
    registry_problem: Option<String>,
    clusters: Vec<ClusterWatch>,
    changed: watch::Receiver<u64>,
}

impl Source {
    /// Starts the watches of every target (jobs, Workloads, LocalQueues and pods only in
    /// `namespace` when given), for every kind the manager runs. Never fails: a cluster without
    /// a client is reported as such.
    pub async fn start(targets: Targets, namespace: Option<&str>) -> Source {
        let mut clients = Vec::new();
        for target in &targets.clusters {
            clients.push(crate::kube_util::watching_client_from(targets.kubeconfig.clone(), &target.context).await);
        }
        let manager = targets.clusters.iter().zip(&clients).find(|(t, _)| t.role == Role::Manager);
        let (registry, registry_problem) = match manager {
            Some((_, Ok(client))) => match KindRegistry::discover(client, manifests::NAMESPACE).await {
                Ok(registry) => (registry, None),
                Err(e) => (KindRegistry::built_in(), Some(e.to_string())),
            },
            _ => (KindRegistry::built_in(), None),
        };
        let (sender, changed) = watch::channel(0);
        let clusters = targets
            .clusters
            .into_iter()
            .zip(clients)
            .map(|(target, client)| ClusterWatch::start(target, client, registry.kinds(), namespace, &sender))
            .collect();
        // Kept alive by the watch tasks; the receiver learns of every change through it.
        drop(sender);
        Source { origin: targets.origin, registry, registry_problem, clusters, changed }
    }

    /// The job kinds watched: the built-in ones and those the manager's integrations name.
    pub fn registry(&self) -> &KindRegistry {
        &self.registry
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut clusters: Vec<ClusterSnapshot> = self.clusters.iter().map(ClusterWatch::snapshot).collect();
        if let (Some(problem), Some(manager)) =
            (&self.registry_problem, clusters.iter_mut().find(|c| c.role == Role::Manager))
        {
            manager.problems.insert("IntegrationConfig".into(), problem.clone());
        }
        Snapshot { clusters }
    }

    /// Waits until every watch has listed once or failed, at most `timeout`.
    pub async fn settle(&mut self, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        while !self.clusters.iter().all(ClusterWatch::settled) {
            match tokio::time::timeout_at(deadline, self.changed.changed()).await {
                Ok(Ok(())) => {}
                // Out of time, or no watch left to report.
                _ => return,
            }
        }
    }

    /// Resolves when a watch saw a change after the last call.
    pub async fn changed(&mut self) {
        if self.changed.changed().await.is_err() {
            // Every watch task ended (never, short of the runtime shutting down): wait forever.
            futures::future::pending::<()>().await;
        }
    }

    pub fn client(&self, cluster: &str) -> Option<Client> {
        self.clusters.iter().find(|c| c.target.name == cluster).and_then(|c| c.client.as_ref().ok().cloned())
    }

    /// Asks each cluster's Kueue, through its visibility API, the order of every ClusterQueue's
    /// pending Workloads, and puts the answers (or why there is none) in `snapshot`.
    pub async fn read_visibility(&self, snapshot: &mut Snapshot) {
        let answers = visibility::read(self.clients(snapshot), &snapshot.clusters).await;
        visibility::apply(snapshot, &answers);
    }

    /// Each cluster's client, in the snapshot's order, to ask without holding the source.
    pub fn clients(&self, snapshot: &Snapshot) -> Vec<Option<Client>> {
        snapshot.clusters.iter().map(|cluster| self.client(&cluster.name)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_errors_read_without_kubes_dump_of_the_status() {
        let status = |code: u16, reason: &str, message: &str| {
            kube::Error::Api(kube::core::Status::failure(message, reason).with_code(code).boxed())
        };
        let unserved =
            watcher::Error::InitialListFailed(status(404, "Failed to parse error data", "404 page not found"));
        assert_eq!(short_error(&unserved), "the cluster does not serve it: is its CRD installed (kubectl get crds)?");
        let forbidden = watcher::Error::WatchFailed(status(403, "Forbidden", "workloads is forbidden: no RBAC"));
        assert_eq!(short_error(&forbidden), "workloads is forbidden: no RBAC");
    }
}
