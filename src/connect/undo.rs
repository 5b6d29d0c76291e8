//! `disconnect`: takes out what `connect` made, found by its label, and nothing else: on the
//! manager the AdmissionCheck from the ClusterQueues the MultiKueueConfig records it was added
//! to, then the AdmissionCheck, the MultiKueueConfig, the MultiKueueClusters and their Secrets;
//! on each worker its ServiceAccount and role (which ends the manager's access), then the queues
//! and namespaces `connect` created there. Named workers that are not all the manager's
//! connected ones leave on their own: their MultiKueueClusters and Secrets go, the
//! MultiKueueConfig stops listing them, and the others stay connected. Kueue's Configuration
//! keeps MultiKueue's external frameworks (`uninstall` takes those out with the rest).

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

use super::manager::{checked_queues, clusters_of, removing_check, secret_name};
use super::{CONNECTED_BY, kueue_api};
use crate::kube_util::{self, FIELD_MANAGER};

/// A kind of object `connect` makes, as `disconnect` lists it again.
#[derive(Clone, Copy, Debug)]
pub struct Made {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

const fn made(api_version: &'static str, kind: &'static str, plural: &'static str) -> Made {
    Made { api_version, kind, plural }
}

/// What `connect` makes on the manager, in the order `disconnect` deletes it: the check before
/// the config it names, the clusters before their Secrets.
pub const ON_MANAGER: [Made; 4] = [
    made("kueue.x-k8s.io/v1beta2", "AdmissionCheck", "admissionchecks"),
    made("kueue.x-k8s.io/v1beta2", "MultiKueueConfig", "multikueueconfigs"),
    made("kueue.x-k8s.io/v1beta2", "MultiKueueCluster", "multikueueclusters"),
    made("v1", "Secret", "secrets"),
];

/// What `connect` makes on a worker, in the order `disconnect` deletes it: the manager's access
/// first, namespaces last.
pub const ON_WORKER: [Made; 7] = [
    made("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings"),
    made("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles"),
    made("v1", "ServiceAccount", "serviceaccounts"),
    made("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues"),
    made("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues"),
    made("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "resourceflavors"),
    made("v1", "Namespace", "namespaces"),
];

impl Made {
    fn api(&self, client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
        let (group, version) = self.api_version.split_once('/').unwrap_or(("", self.api_version));
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, self.kind), self.plural);
        match namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        }
    }

    /// `kind.group/name` as kubectl prints it.
    fn object_ref(&self, name: &str) -> String {
        match self.api_version.split_once('/') {
            Some((group, _)) if group.contains('.') => format!("{}.{group}/{name}", self.kind.to_lowercase()),
            _ => format!("{}/{name}", self.kind.to_lowercase()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{cluster}: {what}: {source}")]
pub struct DisconnectError {
    cluster: String,
    what: String,
    #[source]
    source: kube::Error,
}

fn failed(cluster: &str, what: String) -> impl FnOnce(kube::Error) -> DisconnectError {
    let cluster = cluster.to_string();
    move |source| DisconnectError { cluster, what, source }
}

fn labelled() -> ListParams {
    ListParams::default().labels(&format!("{}={}", CONNECTED_BY.0, CONNECTED_BY.1))
}

/// Takes out what `connect` made on `manager` and on each of `workers` (by name), telling `say`
/// what each step did. With no worker named, or every connected one, all of it goes from the
/// manager; otherwise only what serves the named workers.
pub async fn disconnect(
    manager: &Client,
    workers: &[(&str, &Client)],
    say: &dyn Fn(String),
) -> Result<(), DisconnectError> {
    let named: Vec<&str> = workers.iter().map(|(name, _)| *name).collect();
    let connected = listed(manager, ON_MANAGER[2]).await?;
    let others_stay = !named.is_empty()
        && connected.iter().any(|cluster| cluster["metadata"]["name"].as_str().is_some_and(|n| !named.contains(&n)));
    if others_stay {
        unlist_workers(manager, &named, say).await?;
        let secrets: Vec<String> = named.iter().map(|w| secret_name(w)).collect();
        let serving_named = |made: &Made, name: &str| match made.kind {
            "MultiKueueCluster" => named.contains(&name),
            "Secret" => secrets.iter().any(|s| s == name),
            _ => false,
        };
        delete_made(manager, "manager", &ON_MANAGER, &serving_named, say).await?;
    } else {
        uncheck_queues(manager, say).await?;
        delete_made(manager, "manager", &ON_MANAGER, &|_, _| true, say).await?;
    }
    for (name, client) in workers {
        delete_made(client, name, &ON_WORKER, &|_, _| true, say).await?;
    }
    Ok(())
}

/// Our objects of `made`'s kind on the manager.
async fn listed(manager: &Client, made: Made) -> Result<Vec<Value>, DisconnectError> {
    let list = made.api(manager, None).list(&labelled()).await;
    let list = list.map_err(failed("manager", format!("listing {}s", made.kind)))?;
    Ok(list.items.into_iter().filter_map(|o| serde_json::to_value(o).ok()).collect())
}

/// Takes `workers` out of the clusters our MultiKueueConfigs list.
async fn unlist_workers(manager: &Client, workers: &[&str], say: &dyn Fn(String)) -> Result<(), DisconnectError> {
    let configs = ON_MANAGER[1].api(manager, None);
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    for config in listed(manager, ON_MANAGER[1]).await? {
        let name = config["metadata"]["name"].as_str().unwrap_or_default();
        let clusters = clusters_of(&config);
        let (gone, kept): (Vec<String>, Vec<String>) =
            clusters.into_iter().partition(|c| workers.contains(&c.as_str()));
        if gone.is_empty() {
            continue;
        }
        let patch = serde_json::json!({"metadata": {"resourceVersion": config["metadata"]["resourceVersion"]},
                                       "spec": {"clusters": kept}});
        let patched = configs.patch(name, &params, &Patch::Merge(&patch)).await;
        patched.map_err(failed("manager", format!("MultiKueueConfig {name}")))?;
        say(format!(
            "manager: {} configured: {} taken out of its clusters",
            ON_MANAGER[1].object_ref(name),
            gone.join(", ")
        ));
    }
    Ok(())
}

/// Takes each AdmissionCheck of ours out of the ClusterQueues our MultiKueueConfigs record.
async fn uncheck_queues(manager: &Client, say: &dyn Fn(String)) -> Result<(), DisconnectError> {
    let configs = listed(manager, ON_MANAGER[1]).await?;
    let checks = listed(manager, ON_MANAGER[0]).await?;
    let queues = kueue_api(manager, "ClusterQueue", "clusterqueues");
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let checks: Vec<&str> = checks.iter().filter_map(|c| c["metadata"]["name"].as_str()).collect();
    for queue_name in configs.iter().flat_map(checked_queues) {
        let taken_out = kube_util::again_on_conflict(|| take_out(&queues, &params, &queue_name, &checks, say)).await;
        taken_out.map_err(failed("manager", format!("ClusterQueue {queue_name}")))?;
    }
    Ok(())
}

/// Reads ClusterQueue `queue_name` and takes each of `checks` out of it, one patch each, every
/// patch pinned to the version it was computed from. Nothing to do once none is left.
async fn take_out(
    queues: &Api<DynamicObject>,
    params: &PatchParams,
    queue_name: &str,
    checks: &[&str],
    say: &dyn Fn(String),
) -> Result<(), kube::Error> {
    let Some(mut queue) = queues.get_opt(queue_name).await?.and_then(|q| serde_json::to_value(q).ok()) else {
        return Ok(());
    };
    for check in checks {
        let Some(patch) = removing_check(&queue, check) else { continue };
        queue =
            serde_json::to_value(queues.patch(queue_name, params, &Patch::Merge(&patch)).await?).unwrap_or_default();
        say(format!("manager: clusterqueue.kueue.x-k8s.io/{queue_name} configured: admission check {check} taken out"));
    }
    Ok(())
}

/// Deletes every object of `kinds` on `client` that carries our label and that `which` picks
/// (by kind and name).
async fn delete_made(
    client: &Client,
    cluster: &str,
    kinds: &[Made],
    which: &dyn Fn(&Made, &str) -> bool,
    say: &dyn Fn(String),
) -> Result<(), DisconnectError> {
    for made in kinds {
        let list = made.api(client, None).list(&labelled()).await;
        let list = match list {
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            other => other.map_err(failed(cluster, format!("listing {}s", made.kind)))?,
        };
        for obj in list.items {
            let name = obj.metadata.name.clone().unwrap_or_default();
            if !which(made, &name) {
                continue;
            }
            let deleted = made.api(client, obj.metadata.namespace.as_deref()).delete(&name, &Default::default()).await;
            match deleted {
                Ok(_) => say(format!("{cluster}: {} deleted", made.object_ref(&name))),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(source) => return Err(failed(cluster, format!("deleting {} {name}", made.kind))(source)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::{JobResource, Names, manager, worker};
    use crate::kube_util;
    use crate::test_api_server::{requested, scripted_client};
    use http::Method;
    use serde_json::json;

    #[test]
    fn disconnect_finds_every_kind_connect_makes() {
        let queue = json!({"metadata": {"name": "cq"}, "spec": {"resourceGroups": []}});
        let local = json!({"metadata": {"name": "lq", "namespace": "team"}});
        let on_worker = worker::worker_rbac(&[JobResource::new("batch", "jobs")])
            .into_iter()
            .chain(worker::worker_queues(&queue, &[json!({"metadata": {"name": "f"}})], &[local]));
        for obj in on_worker {
            let listed = ON_WORKER.iter().find(|m| m.kind == obj["kind"] && m.api_version == obj["apiVersion"]);
            assert!(
                listed.is_some_and(|m| m.object_ref("x")
                    == kube_util::object_ref(
                        &json!({"apiVersion": m.api_version, "kind": m.kind, "metadata": {"name": "x"}})
                    )),
                "{obj}"
            );
        }
        let names = Names::default();
        let on_manager =
            manager::objects_for(&names, "w", "").into_iter().chain(manager::shared_objects(&names, &["w"], &[]));
        for obj in on_manager {
            assert!(ON_MANAGER.iter().any(|m| m.kind == obj["kind"] && m.api_version == obj["apiVersion"]), "{obj}");
        }
    }

    fn selector_of() -> &'static str {
        "labelSelector=kueue-ext.dev%2Fconnected-by%3Dkueue-ext"
    }

    fn list(items: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items})
    }

    #[tokio::test]
    async fn disconnect_takes_out_only_what_connect_made() {
        let (client, requests) = scripted_client(|method, path| {
            let ours = json!({CONNECTED_BY.0: CONNECTED_BY.1});
            match (method.clone(), path) {
                (Method::GET, "/apis/kueue.x-k8s.io/v1beta2/multikueueconfigs") => Ok(list(json!([{
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                    "metadata": {"name": "kueue-ext", "labels": ours,
                                 "annotations": {manager::CHECKED_QUEUES_ANNOTATION: "[\"team\"]"}}}]))),
                (Method::GET, "/apis/kueue.x-k8s.io/v1beta2/admissionchecks") => Ok(list(json!([{
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                    "metadata": {"name": "multikueue", "labels": ours}}]))),
                (Method::GET, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team") => Ok(json!({
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                    "metadata": {"name": "team", "resourceVersion": "9"},
                    "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "provisioning"}, {"name": "multikueue"}]}}})),
                (Method::PATCH, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team") => Ok(json!({
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                    "metadata": {"name": "team", "resourceVersion": "10"},
                    "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "provisioning"}]}}})),
                (Method::GET, "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters") => Ok(list(json!([{
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                    "metadata": {"name": "w1", "labels": ours}}]))),
                (Method::GET, "/api/v1/secrets") => Ok(list(json!([{
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "multikueue-w1", "namespace": "kueue-system", "labels": ours}}]))),
                (Method::DELETE, _) => Ok(json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})),
                _ => Err(404),
            }
        });
        let (worker, worker_requests) = scripted_client(|method, path| match (method.clone(), path) {
            // The API server filters by label: what it lists is ours.
            (Method::GET, "/api/v1/namespaces") => Ok(list(json!([{"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team-a", "labels": {CONNECTED_BY.0: CONNECTED_BY.1}}}]))),
            (Method::GET, _) => Ok(list(json!([]))),
            (Method::DELETE, _) => Ok(json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})),
            _ => Err(404),
        });
        let said = std::sync::Mutex::new(Vec::new());
        disconnect(&client, &[("w1", &worker)], &|line| said.lock().unwrap().push(line)).await.unwrap();
        let on_worker: Vec<String> = requested(&worker_requests).iter().map(|r| r.replace(selector_of(), "")).collect();
        assert_eq!(
            on_worker,
            [
                "GET /apis/rbac.authorization.k8s.io/v1/clusterrolebindings?",
                "GET /apis/rbac.authorization.k8s.io/v1/clusterroles?",
                "GET /api/v1/serviceaccounts?",
                "GET /apis/kueue.x-k8s.io/v1beta2/localqueues?",
                "GET /apis/kueue.x-k8s.io/v1beta2/clusterqueues?",
                "GET /apis/kueue.x-k8s.io/v1beta2/resourceflavors?",
                "GET /api/v1/namespaces?",
                "DELETE /api/v1/namespaces/team-a",
            ]
        );
        let selector = selector_of();
        assert_eq!(
            requested(&requests),
            [
                format!("GET /apis/kueue.x-k8s.io/v1beta2/multikueueclusters?{selector}"),
                format!("GET /apis/kueue.x-k8s.io/v1beta2/multikueueconfigs?{selector}"),
                format!("GET /apis/kueue.x-k8s.io/v1beta2/admissionchecks?{selector}"),
                "GET /apis/kueue.x-k8s.io/v1beta2/clusterqueues/team".into(),
                "PATCH /apis/kueue.x-k8s.io/v1beta2/clusterqueues/team?fieldManager=kueue-ext".into(),
                format!("GET /apis/kueue.x-k8s.io/v1beta2/admissionchecks?{selector}"),
                "DELETE /apis/kueue.x-k8s.io/v1beta2/admissionchecks/multikueue".into(),
                format!("GET /apis/kueue.x-k8s.io/v1beta2/multikueueconfigs?{selector}"),
                "DELETE /apis/kueue.x-k8s.io/v1beta2/multikueueconfigs/kueue-ext".into(),
                format!("GET /apis/kueue.x-k8s.io/v1beta2/multikueueclusters?{selector}"),
                "DELETE /apis/kueue.x-k8s.io/v1beta2/multikueueclusters/w1".into(),
                format!("GET /api/v1/secrets?{selector}"),
                "DELETE /api/v1/namespaces/kueue-system/secrets/multikueue-w1".into(),
            ]
        );
        let patch = &requests.lock().unwrap()[4].1;
        assert_eq!(patch["spec"]["admissionChecksStrategy"]["admissionChecks"], json!([{"name": "provisioning"}]));
        assert_eq!(patch["metadata"]["resourceVersion"], "9");
        assert_eq!(
            *said.lock().unwrap(),
            [
                "manager: clusterqueue.kueue.x-k8s.io/team configured: admission check multikueue taken out",
                "manager: admissioncheck.kueue.x-k8s.io/multikueue deleted",
                "manager: multikueueconfig.kueue.x-k8s.io/kueue-ext deleted",
                "manager: multikueuecluster.kueue.x-k8s.io/w1 deleted",
                "manager: secret/multikueue-w1 deleted",
                "w1: namespace/team-a deleted",
            ]
        );
    }

    #[tokio::test]
    async fn disconnecting_one_of_two_workers_leaves_the_other_connected() {
        let (client, requests) = scripted_client(|method, path| {
            let ours = json!({CONNECTED_BY.0: CONNECTED_BY.1});
            let cluster = |name: &str| {
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                                               "metadata": {"name": name, "labels": ours}})
            };
            let secret = |name: &str| {
                json!({"apiVersion": "v1", "kind": "Secret",
                                              "metadata": {"name": name, "namespace": "kueue-system", "labels": ours}})
            };
            match (method.clone(), path) {
                (Method::GET, "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters") => {
                    Ok(list(json!([cluster("w1"), cluster("w2")])))
                }
                (Method::GET, "/apis/kueue.x-k8s.io/v1beta2/multikueueconfigs") => Ok(list(json!([{
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                    "metadata": {"name": "kueue-ext", "labels": ours, "resourceVersion": "7"},
                    "spec": {"clusters": ["w1", "w2"]}}]))),
                (Method::PATCH, "/apis/kueue.x-k8s.io/v1beta2/multikueueconfigs/kueue-ext") => Ok(json!({
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                    "metadata": {"name": "kueue-ext"}, "spec": {"clusters": ["w2"]}})),
                (Method::GET, "/apis/kueue.x-k8s.io/v1beta2/admissionchecks") => Ok(list(json!([{
                    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                    "metadata": {"name": "multikueue", "labels": ours}}]))),
                (Method::GET, "/api/v1/secrets") => Ok(list(json!([secret("multikueue-w1"), secret("multikueue-w2")]))),
                (Method::DELETE, _) => Ok(json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})),
                _ => Err(404),
            }
        });
        let (worker, _) = scripted_client(|method, _| match *method {
            Method::GET => Ok(list(json!([]))),
            _ => Err(404),
        });
        let said = std::sync::Mutex::new(Vec::new());
        disconnect(&client, &[("w1", &worker)], &|line| said.lock().unwrap().push(line)).await.unwrap();
        let writes: Vec<String> = requested(&requests).into_iter().filter(|r| !r.starts_with("GET ")).collect();
        assert_eq!(
            writes,
            [
                "PATCH /apis/kueue.x-k8s.io/v1beta2/multikueueconfigs/kueue-ext?fieldManager=kueue-ext",
                "DELETE /apis/kueue.x-k8s.io/v1beta2/multikueueclusters/w1",
                "DELETE /api/v1/namespaces/kueue-system/secrets/multikueue-w1",
            ]
        );
        let patch = requests.lock().unwrap().iter().find(|(r, _)| r.starts_with("PATCH")).unwrap().1.clone();
        assert_eq!(patch, json!({"metadata": {"resourceVersion": "7"}, "spec": {"clusters": ["w2"]}}));
        assert_eq!(
            *said.lock().unwrap(),
            [
                "manager: multikueueconfig.kueue.x-k8s.io/kueue-ext configured: w1 taken out of its clusters",
                "manager: multikueuecluster.kueue.x-k8s.io/w1 deleted",
                "manager: secret/multikueue-w1 deleted",
            ]
        );
    }
}
