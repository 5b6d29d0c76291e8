//! MultiKueue between clusters, as Kueue documents it and nothing admin-only: on each worker a
//! ServiceAccount bound to the role MultiKueue needs and a token for it; on the manager a
//! kubeconfig Secret and a MultiKueueCluster per worker, one MultiKueueConfig, and the
//! AdmissionCheck. The sandbox's `up` wires its clusters through [`wire`]; `connect` does the
//! same between clusters where `install` put this project, adds what they lack (the worker's
//! queues, the check on the manager's ClusterQueue, MultiKueue's external frameworks in Kueue's
//! Configuration) and waits until Kueue reports every worker connected. Every object it makes is
//! labelled [`CONNECTED_BY`], so that `disconnect` takes out exactly those.

mod kinds;
mod manager;
mod preflight;
mod server;
mod status;
mod undo;
mod worker;

use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

use crate::install::{self, IntegrationsUnreadable, KueueConfigError, kueue_config};
use crate::kube_util::{self, ApplyError, FIELD_MANAGER};
use crate::manifests;
pub use kinds::{JobResource, for_workers, with_multikueue_adapter};
pub use manager::{ADMISSION_CHECK, CONFIG, CONTROLLER_NAME, Names, admission_checks, secret_name};
pub use server::{ChosenServer, choose as choose_server, kind_cluster_of, kind_control_plane};
pub use status::{ClusterConnection, Connections, connections};
pub use undo::{DisconnectError, disconnect};
pub use worker::{SERVICE_ACCOUNT, Worker, worker_role_rules};

/// Where a worker's ServiceAccount lives: Kueue's namespace there.
pub const WORKER_NAMESPACE: &str = "kueue-system";
/// The label on every object `connect` (and the sandbox's wiring) makes.
pub const CONNECTED_BY: (&str, &str) = ("kueue-ext.dev/connected-by", "kueue-ext");
const POLL: Duration = Duration::from_millis(500);

/// `obj` labelled as made by `connect` and as part of this project.
pub fn connected(obj: Value) -> Value {
    let mut obj = manifests::labelled(obj);
    obj["metadata"]["labels"][CONNECTED_BY.0] = CONNECTED_BY.1.into();
    obj
}

/// Whether `obj` carries [`CONNECTED_BY`].
pub fn is_connected(obj: &Value) -> bool {
    obj["metadata"]["labels"][CONNECTED_BY.0] == CONNECTED_BY.1
}

#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    #[error("worker {worker}: {source}")]
    Apply {
        worker: String,
        #[source]
        source: ApplyError,
    },
    #[error("worker {worker}: requesting a token for {WORKER_NAMESPACE}/{SERVICE_ACCOUNT}: {source}")]
    Token {
        worker: String,
        #[source]
        source: kube::Error,
    },
    #[error("manager: {0}")]
    Manager(#[source] ApplyError),
}

/// What the wiring makes beyond the fixed objects.
pub struct Wiring<'a> {
    pub names: &'a Names,
    /// The kinds MultiKueue copies to the workers beyond batch/Job and ours.
    pub kinds: &'a [JobResource],
    /// How long each worker's token lasts.
    pub token_seconds: i64,
    /// The ClusterQueues `connect` added the AdmissionCheck to, recorded on the MultiKueueConfig.
    pub checked_queues: &'a [String],
    /// The workers the MultiKueueConfig listed before, which it keeps listing.
    pub connected_before: &'a [String],
}

/// Creates the worker credentials and the manager objects that use them, telling `say` what
/// each write did (`worker: kind/name created`).
pub async fn wire(
    manager: &Client,
    workers: &[Worker<'_>],
    wiring: &Wiring<'_>,
    say: &dyn Fn(String),
) -> Result<(), WiringError> {
    let on_manager = |obj: Value| async move {
        let applied = kube_util::apply_reporting(manager, &obj, false).await.map_err(WiringError::Manager)?;
        say(format!("manager: {} {applied}", kube_util::object_ref(&obj)));
        Ok::<_, WiringError>(())
    };
    for worker in workers {
        let failed = |source| WiringError::Apply { worker: worker.name.to_string(), source };
        for obj in worker::worker_rbac(wiring.kinds) {
            let applied = kube_util::apply_reporting(worker.client, &obj, false).await.map_err(failed)?;
            say(format!("{}: {} {applied}", worker.name, kube_util::object_ref(&obj)));
        }
        let kubeconfig = worker::kubeconfig(manager, worker, wiring, say).await?;
        for obj in manager::objects_for(wiring.names, worker.name, &kubeconfig) {
            on_manager(obj).await?;
        }
    }
    let names: Vec<&str> = workers.iter().map(|w| w.name).collect();
    let clusters = manager::joined_clusters(wiring.connected_before, &names);
    let clusters: Vec<&str> = clusters.iter().map(String::as_str).collect();
    for obj in manager::shared_objects(wiring.names, &clusters, wiring.checked_queues) {
        on_manager(obj).await?;
    }
    Ok(())
}

/// What `connect` is asked for.
pub struct Options {
    pub admission_check: String,
    pub config: String,
    /// The manager's ClusterQueue whose Workloads go to the workers.
    pub cluster_queue: String,
    pub token_seconds: i64,
    /// How long to wait for Kueue to report every worker connected.
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    KueueConfig(Box<KueueConfigError>),
    #[error(transparent)]
    Integrations(#[from] IntegrationsUnreadable),
    #[error(
        "the manager has no ClusterQueue {0}: create it (its quota is what the workers get too), or name another with --cluster-queue"
    )]
    NoClusterQueue(String),
    #[error(
        "worker {0}: namespace {WORKER_NAMESPACE} does not exist: is Kueue installed there? (`kubectl kueue-ext install` needs it too)"
    )]
    NoKueueNamespace(String),
    #[error("{cluster}: reading {what}: {source}")]
    Read {
        cluster: String,
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{cluster}: {source}")]
    Apply {
        cluster: String,
        #[source]
        source: ApplyError,
    },
    #[error(
        "worker {worker} does not serve {}, which the manager's Kueue integrates and MultiKueue copies to its workers: Kueue would keep {worker} inactive until it does. Install them on {worker} (`kubectl kueue-ext install` for this project's kinds), or take the others out of the manager's Kueue Configuration (integrations.frameworks) or integrations file",
        kinds.join(", ")
    )]
    KindsNotServed { worker: String, kinds: Vec<String> },
    #[error("worker {worker}: {source}")]
    Preflight {
        worker: String,
        #[source]
        source: install::preflight::PreflightError,
    },
    #[error(transparent)]
    Wiring(#[from] WiringError),
    #[error("MultiKueue did not connect within {seconds}s: {detail}")]
    NotConnected { seconds: u64, detail: String },
}

impl From<KueueConfigError> for ConnectError {
    fn from(error: KueueConfigError) -> Self {
        ConnectError::KueueConfig(Box::new(error))
    }
}

fn read_failed(cluster: &str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> ConnectError {
    let (cluster, what) = (cluster.to_string(), what.into());
    move |source| ConnectError::Read { cluster, what, source }
}

/// A Kueue API of `kind` (`plural`) on `client`, across namespaces.
fn kueue_api(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind);
    Api::all_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, plural))
}

/// Wires MultiKueue from `manager` to `workers` as [`wire`] does, and first gives each worker
/// the queues the manager's `options.cluster_queue` needs; adds the AdmissionCheck to that queue
/// and our kinds to MultiKueue's external frameworks in Kueue's Configuration (restarting
/// Kueue); then waits until Kueue reports every worker connected. Returns the workers the
/// MultiKueueConfig lists: those connected before, then `workers`.
pub async fn connect(
    manager: &Client,
    workers: &[Worker<'_>],
    options: &Options,
    say: &dyn Fn(String),
) -> Result<Vec<String>, ConnectError> {
    let kueue = kueue_config::locate(manager).await?;
    let integrations = install::installed_integrations(manager).await?;
    let kinds = for_workers(&integrations, &kueue.built_in_frameworks(manager).await?);
    for worker in workers {
        let missing = preflight::unserved(worker.client, &kinds)
            .await
            .map_err(|source| ConnectError::Preflight { worker: worker.name.to_string(), source })?;
        if !missing.is_empty() {
            return Err(ConnectError::KindsNotServed { worker: worker.name.to_string(), kinds: missing });
        }
    }
    let names = Names {
        kueue_namespace: kueue.namespace.clone(),
        admission_check: options.admission_check.clone(),
        config: options.config.clone(),
    };
    let queue_name = &options.cluster_queue;
    let cluster_queues = kueue_api(manager, "ClusterQueue", "clusterqueues");
    let cluster_queue = cluster_queues
        .get_opt(queue_name)
        .await
        .map_err(read_failed("manager", format!("ClusterQueue {queue_name}")))?
        .ok_or_else(|| ConnectError::NoClusterQueue(queue_name.clone()))?;
    let cluster_queue = serde_json::to_value(cluster_queue).unwrap_or_default();
    let queues = manager_queues(manager, &cluster_queue).await?;
    for worker in workers {
        give_queues(worker, &queues, say).await?;
    }

    let configs = kueue_api(manager, "MultiKueueConfig", "multikueueconfigs");
    let existing = configs.get_opt(&names.config).await.map_err(read_failed("manager", "MultiKueueConfig"))?;
    let existing = existing.map(|c| serde_json::to_value(c).unwrap_or_default());
    let connected_before = existing.as_ref().map(manager::clusters_of).unwrap_or_default();
    let mut checked_queues = existing.as_ref().map(manager::checked_queues);
    let adding = manager::adding_check(&cluster_queue, &names.admission_check);
    let checked_queues = checked_queues.get_or_insert_with(Vec::new);
    if adding.is_some() && !checked_queues.contains(queue_name) {
        checked_queues.push(queue_name.clone());
    }
    let wiring = Wiring {
        names: &names,
        kinds: &kinds,
        token_seconds: options.token_seconds,
        checked_queues,
        connected_before: &connected_before,
    };
    wire(manager, workers, &wiring, say).await?;

    let queue_ref = format!("clusterqueue.kueue.x-k8s.io/{queue_name}");
    let check = &names.admission_check;
    let added = kube_util::again_on_conflict(|| add_check(&cluster_queues, queue_name, check)).await;
    let added = added.map_err(|source| ConnectError::Apply {
        cluster: "manager".into(),
        source: ApplyError::Api { kind: "ClusterQueue".into(), name: queue_name.clone(), source },
    })?;
    match added {
        true => say(format!("manager: {queue_ref} configured: admission check {check} added")),
        false => say(format!("manager: {queue_ref} unchanged: it has admission check {check}")),
    }

    let frameworks = manifests::external_frameworks(&integrations);
    match kueue.adding(manager, &frameworks, true, &[]).await {
        Err(KueueConfigError::NoConfigFile { namespace, name, .. }) => say(format!(
            "manager: Kueue's Deployment {namespace}/{name} reads no configuration file: add {} to multiKueue.externalFrameworks of the file you give it",
            frameworks.join(", ")
        )),
        Err(error) => return Err(error.into()),
        Ok(Some(change)) => {
            kueue.write(manager, &change, false).await?;
            let (config_map, _) = kueue.config.clone().unwrap_or_default();
            say(format!(
                "manager: configmap/{config_map} (Kueue's Configuration) configured: MultiKueue's external frameworks {}; Kueue {}/{} restarted to read it",
                frameworks.join(", "),
                kueue.namespace,
                kueue.name
            ));
        }
        Ok(None) => say(format!(
            "manager: Kueue's Configuration unchanged: MultiKueue's external frameworks list {}",
            frameworks.join(", ")
        )),
    }
    wait_connected(manager, workers, &names, options.timeout).await?;
    let named: Vec<&str> = workers.iter().map(|w| w.name).collect();
    Ok(manager::joined_clusters(&connected_before, &named))
}

/// Adds admission check `check` to ClusterQueue `queue_name` as it is now, unless it has it:
/// whether it was added. The patch is pinned to the version read, so a status written meanwhile
/// makes it a conflict to read again on, not a lost update.
async fn add_check(queues: &Api<DynamicObject>, queue_name: &str, check: &str) -> Result<bool, kube::Error> {
    let queue = serde_json::to_value(queues.get(queue_name).await?).unwrap_or_default();
    let Some(patch) = manager::adding_check(&queue, check) else { return Ok(false) };
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let merge = Patch::Merge(&patch);
    kube_util::patiently(|| queues.patch(queue_name, &params, &merge)).await?;
    Ok(true)
}

/// The manager's objects a worker's queues copy: the ClusterQueue, its ResourceFlavors and the
/// LocalQueues that point to it.
async fn manager_queues(manager: &Client, cluster_queue: &Value) -> Result<Vec<Value>, ConnectError> {
    let name = cluster_queue["metadata"]["name"].as_str().unwrap_or_default();
    let flavors_api = kueue_api(manager, "ResourceFlavor", "resourceflavors");
    let mut flavors = Vec::new();
    for flavor in worker::flavors_of(cluster_queue) {
        let found =
            flavors_api.get_opt(&flavor).await.map_err(read_failed("manager", format!("ResourceFlavor {flavor}")))?;
        flavors.extend(found.map(|f| serde_json::to_value(f).unwrap_or_default()));
    }
    let local_queues = kueue_api(manager, "LocalQueue", "localqueues")
        .list(&ListParams::default())
        .await
        .map_err(read_failed("manager", "LocalQueues"))?;
    let pointing: Vec<Value> = local_queues
        .items
        .into_iter()
        .map(|q| serde_json::to_value(q).unwrap_or_default())
        .filter(|q| q["spec"]["clusterQueue"] == name)
        .collect();
    Ok(worker::worker_queues(cluster_queue, &flavors, &pointing))
}

/// Creates on `worker` each of `queues` it lacks; one it has stays as it is.
async fn give_queues(worker: &Worker<'_>, queues: &[Value], say: &dyn Fn(String)) -> Result<(), ConnectError> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(worker.client.clone());
    let found = namespaces.get_opt(WORKER_NAMESPACE).await.map_err(read_failed(worker.name, "namespaces"))?;
    if found.is_none() {
        return Err(ConnectError::NoKueueNamespace(worker.name.to_string()));
    }
    for obj in queues {
        let failed = |source| ConnectError::Apply { cluster: worker.name.to_string(), source };
        let (api, kind, name) = kube_util::api_for(worker.client, obj).await.map_err(failed)?;
        let created: DynamicObject = serde_json::from_value(obj.clone()).unwrap_or_else(|_| DynamicObject {
            types: None,
            metadata: Default::default(),
            data: Value::Null,
        });
        let params = PostParams::default();
        let outcome = match kube_util::patiently(|| api.create(&params, &created)).await {
            Ok(_) => "created",
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let there = api.get(&name).await.map_err(|source| failed(ApplyError::Api { kind, name, source }))?;
                if is_connected(&serde_json::to_value(there).unwrap_or_default()) {
                    "unchanged"
                } else {
                    "unchanged (it was there before: left as it is, and disconnect leaves it)"
                }
            }
            Err(source) => return Err(failed(ApplyError::Api { kind, name, source })),
        };
        say(format!("{}: {} {outcome}", worker.name, kube_util::object_ref(obj)));
    }
    Ok(())
}

/// Waits until Kueue reports each of `workers` and the AdmissionCheck Active.
async fn wait_connected(
    manager: &Client,
    workers: &[Worker<'_>],
    names: &Names,
    timeout: Duration,
) -> Result<(), ConnectError> {
    let expected: Vec<&str> = workers.iter().map(|w| w.name).collect();
    let deadline = Instant::now() + timeout;
    loop {
        let seen = connections(manager, &names.admission_check).await.map(|c| c.of(&expected));
        match seen {
            Ok(connections) if connections.all_active(expected.len()) => return Ok(()),
            _ if Instant::now() < deadline => tokio::time::sleep(POLL).await,
            Ok(connections) => {
                let detail = connections.in_words(expected.len());
                return Err(ConnectError::NotConnected { seconds: timeout.as_secs(), detail });
            }
            Err(e) => {
                return Err(ConnectError::NotConnected { seconds: timeout.as_secs(), detail: e.to_string() });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_api_server::{requested, scripted_client};
    use http::Method;
    use serde_json::json;

    #[tokio::test]
    async fn the_check_is_added_to_the_queue_as_it_is_after_kueue_wrote_its_status_meanwhile() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let (reads, patches) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (client, requests) = scripted_client(move |method, _| match *method {
            Method::GET => {
                let version = reads.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                          "metadata": {"name": "cq", "resourceVersion": version.to_string()},
                          "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "other"}]}}}))
            }
            // Kueue wrote the queue's status between the first read and its patch.
            _ if patches.fetch_add(1, Ordering::SeqCst) == 0 => Err(409),
            _ => {
                Ok(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}}))
            }
        });
        let queues = kueue_api(&client, "ClusterQueue", "clusterqueues");
        let added = kube_util::again_on_conflict(|| add_check(&queues, "cq", "mk")).await;
        assert!(matches!(added, Ok(true)), "{added:?}");
        let sent = requests.lock().unwrap().clone();
        let patched: Vec<(&str, &Value)> = sent
            .iter()
            .filter(|(request, _)| request.starts_with("PATCH"))
            .map(|(_, body)| (body["metadata"]["resourceVersion"].as_str().unwrap_or_default(), body))
            .collect();
        assert_eq!(patched.len(), 2, "{sent:?}");
        assert_eq!(patched[1].0, "2", "the second patch is computed from the second read");
        let checks = &patched[1].1["spec"]["admissionChecksStrategy"]["admissionChecks"];
        assert_eq!(*checks, json!([{"name": "other"}, {"name": "mk"}]), "the other check kept");
    }

    fn resources(group_version: &str, list: Value) -> Value {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list})
    }

    #[tokio::test]
    async fn a_worker_gets_the_queues_it_lacks_and_keeps_those_it_has() {
        let (client, requests) = scripted_client(|method, path| match (method.clone(), path) {
            (Method::GET, "/api/v1/namespaces/kueue-system") => {
                Ok(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}}))
            }
            (Method::GET, "/api/v1") => Ok(resources(
                "v1",
                json!([
                {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace", "verbs": ["create", "get"]}]),
            )),
            (Method::GET, "/apis/kueue.x-k8s.io/v1beta2") => Ok(resources(
                "kueue.x-k8s.io/v1beta2",
                json!([
                {"name": "localqueues", "singularName": "localqueue", "namespaced": true, "kind": "LocalQueue", "verbs": ["create", "get"]}]),
            )),
            (Method::POST, "/api/v1/namespaces") => Err(409),
            (Method::GET, "/api/v1/namespaces/default") => {
                Ok(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}))
            }
            (Method::POST, "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues") => Ok(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "user-queue", "namespace": "default"}})),
            _ => Err(404),
        });
        let queue = json!({"metadata": {"name": "user-queue", "namespace": "default"}});
        let objects: Vec<Value> =
            worker::worker_queues(&json!({"metadata": {"name": "cq"}, "spec": {}}), &[], &[queue])
                .into_iter()
                .filter(|o| o["kind"] != "ClusterQueue")
                .collect();
        let worker = Worker { name: "w1", client: &client, server: String::new(), ca_pem: "" };
        let said = std::sync::Mutex::new(Vec::new());
        give_queues(&worker, &objects, &|line| said.lock().unwrap().push(line)).await.unwrap();
        assert_eq!(
            *said.lock().unwrap(),
            [
                "w1: namespace/default unchanged (it was there before: left as it is, and disconnect leaves it)",
                "w1: localqueue.kueue.x-k8s.io/user-queue created",
            ]
        );
        let writes: Vec<String> = requested(&requests).into_iter().filter(|r| !r.starts_with("GET")).collect();
        assert_eq!(
            writes,
            ["POST /api/v1/namespaces", "POST /apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues"]
        );
        let created = &requests.lock().unwrap().iter().rev().find(|(r, _)| r.starts_with("POST")).unwrap().1.clone();
        assert!(is_connected(created), "labelled when created: {created}");
    }

    #[tokio::test]
    async fn a_worker_not_connected_in_time_is_said_in_kueues_words() {
        let (client, _) = scripted_client(|_, path| match path {
            "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters" => {
                Ok(json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": [
                {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": "w1"},
                 "status": {"conditions": [{"type": "Active", "status": "False", "reason": "BadConfig",
                                            "message": "load client config failed: no server"}]}}]}))
            }
            "/apis/kueue.x-k8s.io/v1beta2/admissionchecks/multikueue" => Ok(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "multikueue"},
                "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active", "message": ""}]}})),
            _ => Err(404),
        });
        let worker = Worker { name: "w1", client: &client, server: String::new(), ca_pem: "" };
        let error = wait_connected(&client, &[worker], &Names::default(), Duration::ZERO).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "MultiKueue did not connect within 0s: worker w1 is not connected (BadConfig: load client config failed: no server)"
        );
    }
}
