//! Which LocalQueues go through MultiKueue, answered from watch caches; only an object the
//! caches have not seen yet costs an API call.

use std::fmt::Debug;
use std::sync::Arc;

use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, MULTIKUEUE_CONTROLLER};

#[derive(Clone)]
pub struct QueueCache {
    pub local_queues: Store<LocalQueue>,
    pub cluster_queues: Store<ClusterQueue>,
    pub admission_checks: Store<AdmissionCheck>,
    pub client: Client,
}

impl QueueCache {
    /// Whether LocalQueue `namespace/local_queue` leads to a ClusterQueue with a MultiKueue
    /// admission check. A queue created a moment before its first job may not have reached the
    /// caches yet; it is read from the API server then, so that job is handed to MultiKueue too.
    pub async fn uses_multikueue(&self, namespace: &str, local_queue: &str) -> Result<bool, Unread> {
        let lq_api = Api::<LocalQueue>::namespaced(self.client.clone(), namespace);
        let lq_key = ObjectRef::new(local_queue).within(namespace);
        let Some(lq) = cached_or_read(&self.local_queues, &lq_api, lq_key).await? else { return Ok(false) };
        let cq_api = Api::<ClusterQueue>::all(self.client.clone());
        let cq_key = ObjectRef::new(&lq.spec.cluster_queue);
        let Some(cq) = cached_or_read(&self.cluster_queues, &cq_api, cq_key).await? else { return Ok(false) };
        let ac_api = Api::<AdmissionCheck>::all(self.client.clone());
        for check in cq.spec.admission_checks_strategy.iter().flat_map(|s| &s.admission_checks) {
            let found = cached_or_read(&self.admission_checks, &ac_api, ObjectRef::new(&check.name)).await?;
            if found.is_some_and(|ac| ac.spec.controller_name == MULTIKUEUE_CONTROLLER) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The cached object, else the API server's (none when it does not exist).
async fn cached_or_read<K>(store: &Store<K>, api: &Api<K>, key: ObjectRef<K>) -> Result<Option<Arc<K>>, Unread>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    if let Some(cached) = store.get(&key) {
        return Ok(Some(cached));
    }
    match api.get_opt(&key.name).await {
        Ok(read) => Ok(read.map(Arc::new)),
        Err(source) => {
            let name = key.namespace.as_ref().map_or(key.name.clone(), |ns| format!("{ns}/{}", key.name));
            Err(Unread { kind: K::kind(&()).to_string(), name, source })
        }
    }
}

/// A queue object neither cached nor readable from the API server.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {kind} {name}: {source}")]
pub struct Unread {
    kind: String,
    name: String,
    source: kube::Error,
}

#[cfg(test)]
pub(crate) mod tests {
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher;
    use serde_json::{Value, json};

    use super::*;
    use crate::test_api_server::{self, Requests, requested};

    /// A client whose API server answers GET `path` with the object `objects` holds for it, a 404
    /// for any other path, and a 500 for `broken`.
    fn api_server(objects: Vec<(String, Value)>, broken: Option<String>) -> (Client, Requests) {
        test_api_server::scripted_client(move |_, path| match objects.iter().find(|(p, _)| p == path) {
            _ if broken.as_deref() == Some(path) => Err(500),
            Some((_, object)) => Ok(object.clone()),
            None => Err(404),
        })
    }

    fn store_of<K: Resource<DynamicType = ()> + Clone>(objects: Vec<K>) -> Store<K> {
        let mut writer = Writer::<K>::default();
        for object in objects {
            writer.apply_watcher_event(&watcher::Event::Apply(object));
        }
        writer.as_reader()
    }

    const KUEUE: &str = "/apis/kueue.x-k8s.io/v1beta2";
    const CQ_PATH: &str = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/shared";
    const AC_PATH: &str = "/apis/kueue.x-k8s.io/v1beta2/admissionchecks/to-workers";

    fn lq_path(namespace: &str, name: &str) -> String {
        format!("{KUEUE}/namespaces/{namespace}/localqueues/{name}")
    }

    fn local_queue(namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": "shared"}})
    }

    fn cluster_queue() -> Value {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "shared"},
               "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "to-workers"}]}}})
    }

    fn multikueue_check() -> Value {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "to-workers"},
               "spec": {"controllerName": MULTIKUEUE_CONTROLLER}})
    }

    fn caches(
        client: Client,
        local_queues: Vec<LocalQueue>,
        cluster_queues: Vec<ClusterQueue>,
        checks: Vec<AdmissionCheck>,
    ) -> QueueCache {
        QueueCache {
            local_queues: store_of(local_queues),
            cluster_queues: store_of(cluster_queues),
            admission_checks: store_of(checks),
            client,
        }
    }

    fn decoded<K: DeserializeOwned>(value: Value) -> K {
        serde_json::from_value(value).unwrap()
    }

    /// Empty caches over an API server that serves LocalQueue `namespace/name` going through
    /// MultiKueue, as right after the queue was created; with `broken`, its ClusterQueue cannot
    /// be read.
    pub(crate) fn unseen_multikueue_queue(namespace: &str, name: &str, broken: bool) -> QueueCache {
        let objects = vec![
            (lq_path(namespace, name), local_queue(namespace, name)),
            (CQ_PATH.to_string(), cluster_queue()),
            (AC_PATH.to_string(), multikueue_check()),
        ];
        let (client, _) = api_server(objects, broken.then(|| CQ_PATH.to_string()));
        caches(client, Vec::new(), Vec::new(), Vec::new())
    }

    #[tokio::test]
    async fn a_queue_the_caches_hold_is_answered_without_an_api_call() {
        let (client, asked) = api_server(Vec::new(), None);
        let queues = caches(
            client,
            vec![decoded(local_queue("team", "main"))],
            vec![decoded(cluster_queue())],
            vec![decoded(multikueue_check())],
        );
        assert!(queues.uses_multikueue("team", "main").await.unwrap());
        assert!(requested(&asked).is_empty());
    }

    #[tokio::test]
    async fn a_queue_the_caches_have_not_seen_yet_is_read_from_the_api_server() {
        let objects = vec![
            (lq_path("team", "main"), local_queue("team", "main")),
            (CQ_PATH.to_string(), cluster_queue()),
            (AC_PATH.to_string(), multikueue_check()),
        ];
        let (client, asked) = api_server(objects, None);
        let queues = caches(client, Vec::new(), Vec::new(), Vec::new());
        assert!(queues.uses_multikueue("team", "main").await.unwrap());
        assert_eq!(
            requested(&asked),
            [format!("GET {}", lq_path("team", "main")), format!("GET {CQ_PATH}"), format!("GET {AC_PATH}")]
        );
    }

    #[tokio::test]
    async fn a_queue_that_does_not_exist_or_has_no_multikueue_check_is_not_multikueue() {
        let (client, _) = api_server(Vec::new(), None);
        let queues = caches(client, Vec::new(), Vec::new(), Vec::new());
        assert!(!queues.uses_multikueue("team", "main").await.unwrap());

        let mut provisioning = multikueue_check();
        provisioning["spec"]["controllerName"] = json!("kueue.x-k8s.io/provisioning-request");
        let (client, asked) = api_server(vec![(AC_PATH.to_string(), provisioning)], None);
        let queues =
            caches(client, vec![decoded(local_queue("team", "main"))], vec![decoded(cluster_queue())], Vec::new());
        assert!(!queues.uses_multikueue("team", "main").await.unwrap());
        assert_eq!(requested(&asked), [format!("GET {AC_PATH}")], "the check was read, and is not MultiKueue's");
    }

    #[tokio::test]
    async fn an_api_failure_is_an_error_naming_the_object_not_a_guess() {
        let err = unseen_multikueue_queue("team", "main", true).uses_multikueue("team", "main").await.unwrap_err();
        assert!(err.to_string().starts_with("cannot read ClusterQueue shared: "), "{err}");

        let (client, _) = api_server(Vec::new(), Some(lq_path("team", "main")));
        let queues = caches(client, Vec::new(), Vec::new(), Vec::new());
        let err = queues.uses_multikueue("team", "main").await.unwrap_err();
        assert!(err.to_string().starts_with("cannot read LocalQueue team/main: "), "{err}");
    }
}
