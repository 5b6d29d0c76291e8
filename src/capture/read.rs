//! Asking each cluster, once, for what a capture holds. Every cluster must answer (a capture
//! without one of them would mislead); within a cluster, a kind it does not serve or may not be
//! read is recorded in the manifest and the rest is read all the same. Secrets are never asked
//! for, nor any ConfigMap but the one Kueue's Deployment mounts as its Configuration and
//! kueue-ext's integrations ConfigMap (kinds and field paths, never a credential).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, LogParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use super::manifest::{self, ClusterEntry, Manifest};
use super::{
    CONFIGURATION_FILE, Capture, CaptureError, ClusterCapture, INTEGRATIONS_FILE, LOG_BYTES, LOG_LINES, LocalFiles,
    MAX_EVENTS, Options, scrub,
};
use crate::api::kueue::{Role, untyped_resource as kueue};
use crate::install::kueue_config::{self, KueueConfigError};
use crate::integrations::declarative::config::{CONFIG_MAP, CONFIG_MAP_KEY};
use crate::integrations::registry::KindRegistry;
use crate::jobframework::api_error::{self, in_words};
use crate::kube_util;
use crate::manifests;
use crate::model::source::{Target, Targets};

/// Kueue's kinds a capture holds: kind, plural, namespaced. Workloads last: with a selector,
/// which of them are kept depends on the jobs read before.
const KUEUE_KINDS: [(&str, &str, bool); 10] = [
    ("ResourceFlavor", "resourceflavors", false),
    ("Cohort", "cohorts", false),
    ("ClusterQueue", "clusterqueues", false),
    ("LocalQueue", "localqueues", true),
    ("WorkloadPriorityClass", "workloadpriorityclasses", false),
    ("AdmissionCheck", "admissionchecks", false),
    ("MultiKueueConfig", "multikueueconfigs", false),
    ("MultiKueueCluster", "multikueueclusters", false),
    ("Topology", "topologies", false),
    ("Workload", "workloads", true),
];

/// Captures every cluster of `targets`; `local` holds what a sandbox keeps outside the API, by
/// cluster name. Fails when a cluster cannot be reached, naming its context.
pub async fn capture(
    targets: &Targets,
    local: &BTreeMap<String, LocalFiles>,
    options: &Options,
) -> Result<Capture, CaptureError> {
    let clients = targets.clusters.iter().map(|target| async {
        let client = kube_util::client_from(targets.kubeconfig.clone(), &target.context).await?;
        kube_util::ensure_reachable(&client, &targets.kubeconfig, &target.context).await?;
        Ok::<Client, CaptureError>(client)
    });
    let clients: Vec<Client> = futures::future::join_all(clients).await.into_iter().collect::<Result<_, _>>()?;
    let manager = targets.clusters.iter().zip(&clients).find(|(t, _)| t.role == Role::Manager);
    let (registry, kinds_unread) = match manager {
        Some((_, client)) => match KindRegistry::discover(client, manifests::NAMESPACE).await {
            Ok(registry) => (registry, None),
            Err(e) => (KindRegistry::built_in(), Some(e.to_string())),
        },
        None => (KindRegistry::built_in(), None),
    };
    let none = LocalFiles::default();
    let reads = targets.clusters.iter().zip(clients).map(|(target, client)| {
        let local = local.get(&target.name).unwrap_or(&none);
        cluster(target, client, &registry, local, options)
    });
    let mut read: Vec<(ClusterEntry, ClusterCapture)> = futures::future::join_all(reads).await;
    if let (Some(why), Some((entry, _))) = (kinds_unread, read.iter_mut().find(|(e, _)| e.role == Role::Manager)) {
        entry.unread.insert("the integrations file (job kinds beyond the built-in ones)".into(), why);
    }
    let (entries, clusters): (Vec<ClusterEntry>, Vec<ClusterCapture>) = read.into_iter().unzip();
    let (namespace, selector) = (options.namespace.clone(), options.selector.clone());
    let left_out = manifest::left_out(namespace.as_deref(), selector.as_deref(), &entries);
    let manifest = Manifest {
        format: manifest::FORMAT.into(),
        captured_at: crate::api::condition::now(),
        plugin_version: env!("CARGO_PKG_VERSION").into(),
        origin: targets.origin.clone(),
        namespace,
        selector,
        clusters: entries,
        left_out,
    };
    Ok(Capture { manifest, clusters })
}

/// One cluster being read: its manifest entry and files as they grow.
struct Reader<'a> {
    client: Client,
    options: &'a Options,
    entry: ClusterEntry,
    out: ClusterCapture,
    /// `(kind, namespace, name)` of every object kept: the events kept are theirs.
    kept: BTreeSet<(String, String, String)>,
}

pub(super) async fn cluster(
    target: &Target,
    client: Client,
    registry: &KindRegistry,
    local: &LocalFiles,
    options: &Options,
) -> (ClusterEntry, ClusterCapture) {
    let entry = ClusterEntry::new(&target.name, &target.context, target.role);
    let out = ClusterCapture { name: target.name.clone(), ..Default::default() };
    let mut reader = Reader { client, options, entry, out, kept: BTreeSet::new() };
    reader.kueue(local).await;
    reader.integrations().await;
    let job_uids = reader.jobs(registry).await;
    reader.kueue_objects(&job_uids).await;
    reader.nodes().await;
    reader.events().await;
    reader.local_logs(local);
    (reader.entry, reader.out)
}

impl Reader<'_> {
    fn put(&mut self, file: &str, what: String, bytes: Vec<u8>) {
        self.entry.files.insert(file.into(), what);
        self.out.files.push((file.into(), bytes));
    }

    /// Objects of one kind, as a kubectl `List`.
    fn put_list(&mut self, kind: &str, file: &str, items: &[Value]) {
        self.entry.counts.insert(kind.into(), items.len());
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        let bytes = serde_json::to_vec_pretty(&list).unwrap_or_default();
        self.put(file, format!("{kind} objects"), bytes);
    }

    fn keep(&mut self, kind: &str, items: &[Value]) {
        for item in items {
            let metadata = &item["metadata"];
            let (namespace, name) = (metadata["namespace"].as_str(), metadata["name"].as_str());
            let key = (kind.to_string(), namespace.unwrap_or_default().to_string(), name.unwrap_or_default().into());
            self.kept.insert(key);
        }
    }

    fn unread(&mut self, what: impl Into<String>, error: &kube::Error) {
        self.entry.unread.insert(what.into(), in_words(error));
    }

    /// A kind's objects, scrubbed; `None` (and the reason recorded) where it cannot be listed.
    async fn list(
        &mut self,
        resource: &ApiResource,
        label: &str,
        namespaced: bool,
        select: bool,
    ) -> Option<Vec<Value>> {
        let api: Api<DynamicObject> = match (&self.options.namespace, namespaced) {
            (Some(namespace), true) => Api::namespaced_with(self.client.clone(), namespace, resource),
            _ => Api::all_with(self.client.clone(), resource),
        };
        let mut params = ListParams::default();
        if let (Some(selector), true) = (&self.options.selector, select) {
            params = params.labels(selector);
        }
        match api.list(&params).await {
            Ok(list) => Some(list.items.into_iter().map(|o| typed(o, resource)).map(scrub::object).collect()),
            Err(e) if api_error::is_unserved(&e) => {
                self.entry.not_served.push(label.to_string());
                None
            }
            Err(e) => {
                self.unread(label, &e);
                None
            }
        }
    }

    /// Kueue's version and Configuration: from its Deployment and the ConfigMap it mounts, else
    /// from what the sandbox keeps; then the logs of its pods and of our controller's.
    async fn kueue(&mut self, local: &LocalFiles) {
        let mut pods_of = Vec::new();
        match kueue_config::locate(&self.client).await {
            Ok(found) => {
                let api: Api<Deployment> = Api::namespaced(self.client.clone(), &found.namespace);
                match api.get_opt(&found.name).await {
                    Ok(Some(deployment)) => {
                        let image = kube_util::image_of(&deployment, "manager");
                        self.entry.kueue_version = Some(scrub::image_tag(&image)).filter(|t| !t.is_empty());
                        pods_of.push(deployment);
                    }
                    Ok(None) => {}
                    Err(e) => self.unread("Kueue's Deployment", &e),
                }
                if let Some((config_map, key)) = &found.config {
                    self.config_map(&found.namespace, config_map, key).await;
                }
            }
            Err(KueueConfigError::NoKueue) => {}
            Err(KueueConfigError::List(e)) => self.unread("Kueue's Deployment", &e),
            Err(e) => {
                self.entry.unread.insert("Kueue's Deployment".into(), e.to_string());
            }
        }
        if self.entry.kueue_version.is_none() {
            self.entry.kueue_version = local.kueue_version.clone();
        }
        if self.entry.kueue_configuration.is_none()
            && let Some(path) = &local.kueue_config
        {
            match std::fs::read(path) {
                Ok(bytes) => {
                    self.entry.kueue_configuration = Some(format!("file {}", path.display()));
                    self.put(CONFIGURATION_FILE, "Kueue's Configuration".into(), bytes);
                }
                Err(e) => {
                    self.entry.unread.insert(format!("Kueue's Configuration ({})", path.display()), e.to_string());
                }
            }
        }
        let ours = Api::<Deployment>::namespaced(self.client.clone(), manifests::NAMESPACE);
        match ours.get_opt(manifests::DEPLOYMENT).await {
            Ok(Some(deployment)) => pods_of.push(deployment),
            Ok(None) => {}
            Err(e) => self.unread("kueue-ext's Deployment", &e),
        }
        for deployment in pods_of {
            self.pod_logs(&deployment).await;
        }
    }

    /// kueue-ext's integrations file: which kinds our controller runs, which `up --from` gives
    /// the replaying sandbox's controller.
    async fn integrations(&mut self) {
        let what = format!("ConfigMap {}/{CONFIG_MAP}", manifests::NAMESPACE);
        match Api::<ConfigMap>::namespaced(self.client.clone(), manifests::NAMESPACE).get_opt(CONFIG_MAP).await {
            Ok(Some(found)) => {
                if let Some(text) = found.data.and_then(|mut data| data.remove(CONFIG_MAP_KEY)) {
                    self.put(INTEGRATIONS_FILE, format!("kueue-ext's integrations ({what})"), text.into_bytes());
                }
            }
            Ok(None) => {}
            Err(e) => self.unread(format!("kueue-ext's integrations ({what})"), &e),
        }
    }

    async fn config_map(&mut self, namespace: &str, name: &str, key: &str) {
        let what = format!("ConfigMap {namespace}/{name}");
        match Api::<ConfigMap>::namespaced(self.client.clone(), namespace).get(name).await {
            Ok(found) => match found.data.and_then(|mut data| data.remove(key)) {
                Some(text) => {
                    self.entry.kueue_configuration = Some(format!("{what}, key {key}"));
                    self.put(CONFIGURATION_FILE, "Kueue's Configuration".into(), text.into_bytes());
                }
                None => {
                    self.entry.unread.insert("Kueue's Configuration".into(), format!("{what} has no key {key}"));
                }
            },
            Err(e) => self.unread(format!("Kueue's Configuration ({what})"), &e),
        }
    }

    /// The last lines of each container of each pod of `deployment`.
    async fn pod_logs(&mut self, deployment: &Deployment) {
        let namespace = deployment.namespace().unwrap_or_default();
        let labels = deployment.spec.as_ref().and_then(|s| s.selector.match_labels.clone()).unwrap_or_default();
        let selector: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        let listed = match pods.list(&ListParams::default().labels(&selector.join(","))).await {
            Ok(list) => list.items,
            Err(e) => return self.unread(format!("pods of Deployment {namespace}/{}", deployment.name_any()), &e),
        };
        for pod in listed {
            let containers = pod.spec.as_ref().map(|s| s.containers.clone()).unwrap_or_default();
            for container in containers {
                let params = LogParams {
                    container: Some(container.name.clone()),
                    tail_lines: Some(LOG_LINES as i64),
                    limit_bytes: Some(LOG_BYTES as i64),
                    ..Default::default()
                };
                let file = format!("logs/{namespace}.{}.{}.log", pod.name_any(), container.name);
                match pods.logs(&pod.name_any(), &params).await {
                    Ok(text) => {
                        let (kept, cut) = scrub::tail(text.as_bytes(), LOG_LINES, LOG_BYTES);
                        if cut || text.len() >= LOG_BYTES || text.lines().count() >= LOG_LINES {
                            self.entry.truncated_logs.push(file.clone());
                        }
                        let what = format!("log of container {} of pod {namespace}/{}", container.name, pod.name_any());
                        self.put(&file, what, kept.to_vec());
                    }
                    Err(e) => self.unread(file, &e),
                }
            }
        }
    }

    /// The logs a sandbox keeps in files, each cut to its last lines.
    fn local_logs(&mut self, local: &LocalFiles) {
        for path in &local.logs {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let file = format!("logs/{name}");
            match last_bytes(path, LOG_BYTES as u64 + 1) {
                Ok((bytes, skipped)) => {
                    let (kept, cut) = scrub::tail(&bytes, LOG_LINES, LOG_BYTES);
                    if cut || skipped {
                        self.entry.truncated_logs.push(file.clone());
                    }
                    self.put(&file, format!("log file {}", path.display()), kept.to_vec());
                }
                Err(e) => {
                    self.entry.unread.insert(file, format!("{}: {e}", path.display()));
                }
            }
        }
    }

    /// Jobs of every kind the registry lists; the UIDs of those kept.
    async fn jobs(&mut self, registry: &KindRegistry) -> BTreeSet<String> {
        let mut uids = BTreeSet::new();
        for kind in registry.kinds() {
            let resource = kind.api_resource();
            let Some(items) = self.list(&resource, kind.qualified(), true, true).await else { continue };
            uids.extend(items.iter().filter_map(|i| i["metadata"]["uid"].as_str().map(String::from)));
            let file = match resource.group.as_str() {
                "" => format!("jobs/{}.json", resource.plural),
                group => format!("jobs/{}.{group}.json", resource.plural),
            };
            self.keep(&resource.kind, &items);
            self.put_list(kind.qualified(), &file, &items);
        }
        uids
    }

    async fn kueue_objects(&mut self, job_uids: &BTreeSet<String>) {
        for (kind, plural, namespaced) in KUEUE_KINDS {
            let resource = kueue(kind, plural);
            let Some(mut items) = self.list(&resource, kind, namespaced, false).await else { continue };
            if kind == "Workload" && self.options.selector.is_some() {
                let selected = self.list(&resource, kind, namespaced, true).await.unwrap_or_default();
                items = owned_or_selected(items, &selected, job_uids);
            }
            if kind == "Workload" {
                self.out.workloads = items.clone();
            }
            self.keep(kind, &items);
            self.put_list(kind, &format!("{plural}.json"), &items);
        }
    }

    async fn nodes(&mut self) {
        match Api::<Node>::all(self.client.clone()).list(&ListParams::default()).await {
            Ok(list) => {
                let nodes: Vec<Value> =
                    list.items.iter().filter_map(|n| serde_json::to_value(n).ok()).map(|n| scrub::node(&n)).collect();
                self.put_list("Node", "nodes.json", &nodes);
            }
            Err(e) => self.unread("Nodes", &e),
        }
    }

    /// The newest events of the objects kept.
    async fn events(&mut self) {
        let api: Api<Event> = match &self.options.namespace {
            Some(namespace) => Api::namespaced(self.client.clone(), namespace),
            None => Api::all(self.client.clone()),
        };
        let listed = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(e) => return self.unread("Events", &e),
        };
        let about_kept = |event: &Event| {
            let object = &event.involved_object;
            let (kind, name) = (object.kind.clone().unwrap_or_default(), object.name.clone().unwrap_or_default());
            let namespace = object.namespace.clone().unwrap_or_default();
            self.kept.contains(&(kind.clone(), namespace, name.clone()))
                || self.kept.contains(&(kind, String::new(), name))
        };
        let mut events: Vec<Event> = listed.into_iter().filter(about_kept).collect();
        events.sort_by_key(|e| crate::model::snapshot::event_line(e).and_then(|line| line.time));
        self.entry.events_dropped = events.len().saturating_sub(MAX_EVENTS);
        let newest = events.split_off(self.entry.events_dropped);
        let items: Vec<Value> = newest.iter().filter_map(|e| serde_json::to_value(e).ok()).map(scrub::object).collect();
        self.put_list("Event", "events.json", &items);
    }
}

/// A listed object with its `apiVersion` and `kind` (a list's items come without).
fn typed(object: DynamicObject, resource: &ApiResource) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), resource.api_version.clone().into());
        map.insert("kind".into(), resource.kind.clone().into());
    }
    value
}

/// With a selector: the Workloads owned by a job kept, and those the selector matches.
pub(super) fn owned_or_selected(all: Vec<Value>, selected: &[Value], job_uids: &BTreeSet<String>) -> Vec<Value> {
    let uid = |w: &Value| w["metadata"]["uid"].as_str().map(String::from);
    let selected: BTreeSet<String> = selected.iter().filter_map(uid).collect();
    let owned = |w: &Value| {
        let owners = w["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
        owners.iter().any(|o| o["uid"].as_str().is_some_and(|u| job_uids.contains(u)))
    };
    all.into_iter().filter(|w| owned(w) || uid(w).is_some_and(|u| selected.contains(&u))).collect()
}

/// The last `limit` bytes of a file, and whether its start was skipped.
fn last_bytes(path: &Path, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::{Read, Seek, SeekFrom};

    let mut file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    let start = length.saturating_sub(limit);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok((bytes, start > 0))
}
