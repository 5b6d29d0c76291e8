//! MultiKueue wiring as Kueue documents it, nothing admin-only: on each worker a ServiceAccount
//! bound to the role MultiKueue needs and a token for it; on the manager a kubeconfig Secret and a
//! MultiKueueCluster per worker, one MultiKueueConfig, and the AdmissionCheck.

use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::addons::Addon;
use super::kubeconfig::{self, Credentials, Entry};
use super::kueue::manifests::NAMESPACE;
use crate::integrations::declarative::config::Integration;
use crate::integrations::registry;
use crate::integrations::wrapped_job::WRAPPABLE;
use crate::jobframework::api_error::{self, in_words};
use crate::kube_util::{self, ApplyError};

pub const ADMISSION_CHECK: &str = "multikueue";
pub const CONFIG: &str = "kueue-ext";
pub const CONTROLLER_NAME: &str = "kueue.x-k8s.io/multikueue";
/// The ServiceAccount (in `kueue-system` of each worker) the manager's Kueue acts as.
pub const SERVICE_ACCOUNT: &str = "kueue-ext-multikueue";
const ROLE: &str = "kueue-ext-multikueue";
/// A week, as in Kueue's own MultiKueue setup; the sandbox is not meant to live longer.
const TOKEN_SECONDS: i64 = 7 * 24 * 3600;

const ALL_VERBS: [&str; 7] = ["create", "update", "patch", "delete", "get", "list", "watch"];

/// What the manager's Kueue may do on a worker: its Workloads and queues, and the jobs of each
/// enabled integration (batch/Job, our kinds, the add-ons' kinds and the configured ones) with
/// read access to their status. It also may
/// create (and only create) the kinds a WrappedJob wraps: the worker's webhook checks that the
/// creator of a WrappedJob copy could create its components, as it checked the submitter on the
/// manager.
pub fn worker_role_rules(integrations: &[Integration], addons: &[Addon]) -> Value {
    let mut rules = vec![
        json!({"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ALL_VERBS}),
        json!({"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]}),
        json!({"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]}),
        json!({"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ALL_VERBS}),
        json!({"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]}),
    ];
    let compiled =
        registry::compiled().into_iter().map(|(description, _)| (description.gvk().group, description.resource));
    let configured = integrations.iter().map(|i| (i.gvk().group, i.resource.clone()));
    let added = addons.iter().map(|a| (a.spec().job_kind.group.to_string(), a.spec().job_kind.plural.to_string()));
    for (group, resource) in compiled.chain(configured).chain(added) {
        rules.push(json!({"apiGroups": [group], "resources": [resource], "verbs": ALL_VERBS}));
        rules.push(json!({"apiGroups": [group], "resources": [format!("{resource}/status")], "verbs": ["get"]}));
    }
    for (group, resource) in WRAPPABLE {
        rules.push(json!({"apiGroups": [group], "resources": [resource], "verbs": ["create"]}));
    }
    Value::Array(rules)
}

fn worker_rbac(integrations: &[Integration], addons: &[Addon]) -> Vec<Value> {
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": ROLE}, "rules": worker_role_rules(integrations, addons)}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": ROLE},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
               "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]}),
    ]
}

/// A worker as the manager reaches it.
pub struct Worker<'a> {
    pub name: &'a str,
    pub client: &'a Client,
    /// Its API server as the manager's Kueue reaches it: loopback for local processes,
    /// `https://<node>-control-plane:6443` on kind's Docker network.
    pub server: String,
    pub ca_pem: &'a str,
}

#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    #[error("worker {worker}: {source}")]
    Apply {
        worker: String,
        #[source]
        source: ApplyError,
    },
    #[error("worker {worker}: requesting a token for {NAMESPACE}/{SERVICE_ACCOUNT}: {source}")]
    Token {
        worker: String,
        #[source]
        source: kube::Error,
    },
    #[error("manager: {0}")]
    Manager(#[source] ApplyError),
}

/// Secret on the manager holding a worker's kubeconfig.
pub fn secret_name(worker: &str) -> String {
    format!("multikueue-{worker}")
}

/// Creates the worker credentials and the manager objects that use them.
pub async fn wire(
    manager: &Client,
    workers: &[Worker<'_>],
    integrations: &[Integration],
    addons: &[Addon],
) -> Result<(), WiringError> {
    for worker in workers {
        let kubeconfig = worker_kubeconfig(worker, integrations, addons).await?;
        for obj in manager_objects_for(worker.name, &kubeconfig) {
            kube_util::apply(manager, &obj).await.map_err(WiringError::Manager)?;
        }
    }
    let names: Vec<&str> = workers.iter().map(|w| w.name).collect();
    for obj in shared_manager_objects(&names) {
        kube_util::apply(manager, &obj).await.map_err(WiringError::Manager)?;
    }
    Ok(())
}

async fn worker_kubeconfig(
    worker: &Worker<'_>,
    integrations: &[Integration],
    addons: &[Addon],
) -> Result<String, WiringError> {
    for obj in worker_rbac(integrations, addons) {
        kube_util::apply(worker.client, &obj)
            .await
            .map_err(|source| WiringError::Apply { worker: worker.name.to_string(), source })?;
    }
    let token = kube_util::service_account_token(worker.client, NAMESPACE, SERVICE_ACCOUNT, TOKEN_SECONDS)
        .await
        .map_err(|source| WiringError::Token { worker: worker.name.to_string(), source })?;
    render_worker_kubeconfig(worker, &token).map_err(|e| WiringError::Apply {
        worker: worker.name.to_string(),
        source: ApplyError::Invalid { kind: "Secret".into(), name: secret_name(worker.name), message: e.to_string() },
    })
}

/// The kubeconfig the manager's Kueue uses for a worker: its server, its CA, the token.
fn render_worker_kubeconfig(worker: &Worker<'_>, token: &str) -> Result<String, serde_saphyr::SerializeError> {
    let entry = Entry {
        context: worker.name,
        server: worker.server.clone(),
        ca_pem: worker.ca_pem,
        credentials: Credentials::Token(token),
    };
    serde_saphyr::to_string(&kubeconfig::render(&[entry]))
}

fn manager_objects_for(worker: &str, kubeconfig: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": secret_name(worker), "namespace": NAMESPACE},
               "stringData": {"kubeconfig": kubeconfig}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
               "metadata": {"name": worker},
               "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name(worker)}}}}),
    ]
}

fn shared_manager_objects(workers: &[&str]) -> Vec<Value> {
    vec![
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
               "metadata": {"name": CONFIG}, "spec": {"clusters": workers}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": ADMISSION_CHECK},
               "spec": {"controllerName": CONTROLLER_NAME,
                        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CONFIG}}}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_role_is_least_privilege() {
        let rules = worker_role_rules(&[], &[Addon::Jobset]);
        for rule in rules.as_array().unwrap() {
            for field in ["apiGroups", "resources", "verbs"] {
                assert!(!rule[field].as_array().unwrap().contains(&json!("*")), "no wildcard {field}: {rule}");
            }
            assert!(!rule["resources"].as_array().unwrap().contains(&json!("secrets")));
        }
    }

    #[test]
    fn an_add_ons_kind_is_copied_to_the_workers_like_an_integrated_one() {
        let rules = worker_role_rules(&[], &[Addon::Jobset]);
        let rules = rules.as_array().unwrap();
        let jobsets = json!({"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ALL_VERBS});
        assert!(rules.contains(&jobsets), "Kueue's JobSet adapter watches them: {rules:?}");
        assert!(!worker_role_rules(&[], &[]).as_array().unwrap().contains(&jobsets));
    }

    #[test]
    fn connections_not_yet_active_are_said_in_words() {
        let connections = Connections {
            admission_check_active: false,
            clusters: vec![ClusterConnection {
                name: "worker1".into(),
                active: false,
                reason: "ClientConnectionFailed".into(),
                message: "jobsets.jobset.x-k8s.io is forbidden".into(),
            }],
        };
        assert_eq!(
            connections.in_words(2),
            "worker worker1 is not connected (ClientConnectionFailed: jobsets.jobset.x-k8s.io is forbidden); \
             1 of 2 MultiKueueClusters exist; the AdmissionCheck multikueue is not active"
        );
    }

    #[tokio::test]
    async fn worker_kubeconfig_names_the_server_the_manager_reaches() {
        // A client is needed only to build a Worker; it is never called.
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let worker = Worker {
            name: "worker1",
            client: &client,
            server: "https://kueue-ext-worker1-control-plane:6443".into(),
            ca_pem: "CA",
        };
        let yaml = render_worker_kubeconfig(&worker, "t0ken").unwrap();
        let parsed = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://kueue-ext-worker1-control-plane:6443"));
        assert_eq!(parsed.contexts[0].name, "worker1");
        let user = parsed.auth_infos[0].auth_info.as_ref().unwrap();
        assert!(user.client_certificate_data.is_none(), "a ServiceAccount token, never admin certificates");
        assert!(yaml.contains("token: t0ken"));
    }

    #[test]
    fn manager_objects_reference_the_worker_secret() {
        let objects = manager_objects_for("worker1", "apiVersion: v1");
        assert_eq!(objects[0]["metadata"]["name"], "multikueue-worker1");
        assert_eq!(objects[1]["spec"]["clusterSource"]["kubeConfig"]["location"], "multikueue-worker1");
        let shared = shared_manager_objects(&["worker1", "worker2"]);
        assert_eq!(shared[0]["spec"]["clusters"], json!(["worker1", "worker2"]));
        assert_eq!(shared[1]["spec"]["controllerName"], CONTROLLER_NAME);
        assert_eq!(shared[1]["spec"]["parameters"]["name"], CONFIG);
    }
}

/// A MultiKueueCluster as the manager's Kueue sees it.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct ClusterConnection {
    pub name: String,
    pub active: bool,
    pub reason: String,
    pub message: String,
}

/// MultiKueue's view on the manager: each worker connection and the AdmissionCheck.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct Connections {
    pub admission_check_active: bool,
    pub clusters: Vec<ClusterConnection>,
}

impl Connections {
    pub fn all_active(&self, expected: usize) -> bool {
        self.admission_check_active && self.clusters.len() == expected && self.clusters.iter().all(|c| c.active)
    }

    /// What is not connected yet, in words: each inactive worker with Kueue's reason and message.
    pub fn in_words(&self, expected: usize) -> String {
        let mut parts: Vec<String> = self
            .clusters
            .iter()
            .filter(|c| !c.active)
            .map(|c| format!("worker {} is not connected ({}: {})", c.name, c.reason, c.message))
            .collect();
        if self.clusters.len() != expected {
            parts.push(format!("{} of {expected} MultiKueueClusters exist", self.clusters.len()));
        }
        if !self.admission_check_active {
            parts.push(format!("the AdmissionCheck {ADMISSION_CHECK} is not active"));
        }
        parts.join("; ")
    }
}

fn active_condition(obj: &Value) -> (bool, String, String) {
    let found = obj["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Active");
    match found {
        Some(c) => (
            c["status"] == "True",
            c["reason"].as_str().unwrap_or_default().to_string(),
            c["message"].as_str().unwrap_or_default().to_string(),
        ),
        None => (false, "Pending".into(), "no Active condition yet".into()),
    }
}

/// Reads the MultiKueueClusters and the AdmissionCheck from the manager.
pub async fn connections(manager: &Client) -> Result<Connections, kube::Error> {
    let clusters = untyped(manager, "MultiKueueCluster", "multikueueclusters").list(&Default::default()).await?;
    let check = untyped(manager, "AdmissionCheck", "admissionchecks").get_opt(ADMISSION_CHECK).await?;
    let check_active = check.map(|c| active_condition(&serde_json::to_value(c).unwrap_or_default()).0).unwrap_or(false);
    let mut out: Vec<ClusterConnection> = clusters
        .items
        .into_iter()
        .map(|c| {
            let value = serde_json::to_value(&c).unwrap_or_default();
            let (active, reason, message) = active_condition(&value);
            ClusterConnection { name: c.metadata.name.unwrap_or_default(), active, reason, message }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Connections { admission_check_active: check_active, clusters: out })
}

fn untyped(client: &Client, kind: &str, plural: &str) -> Api<kube::api::DynamicObject> {
    let resource = kube::api::ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "kueue.x-k8s.io/v1beta2".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::all_with(client.clone(), &resource)
}

/// What a worker must have for MultiKueue to mirror every integrated kind there: the CRDs, and
/// each rule of the MultiKueue role granted to its ServiceAccount. Kueue itself only reports an
/// inactive cluster; this names what is missing.
pub async fn preflight(worker: &str, client: &Client, integrations: &[Integration], addons: &[Addon]) -> Vec<String> {
    use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let mut problems = Vec::new();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::manifests::crds() {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        match crds.get_opt(name).await {
            Ok(Some(_)) => {}
            Ok(None) => problems.push(format!("{worker}: CustomResourceDefinition {name} is missing")),
            Err(e) => problems.push(format!("{worker}: cannot read CustomResourceDefinition {name}: {}", in_words(&e))),
        }
    }
    for integration in integrations {
        let jobs: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &integration.api_resource());
        match jobs.list_metadata(&kube::api::ListParams::default().limit(1)).await {
            Ok(_) => {}
            Err(e) if api_error::is_unserved(&e) => problems.push(format!(
                "{worker}: {} is not served there: install its CRD on every cluster (`up --crds FILE`)",
                integration.kind
            )),
            Err(e) => problems.push(format!("{worker}: cannot list {}: {}", integration.kind, in_words(&e))),
        }
    }
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let user = format!("system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}");
    let rules = worker_role_rules(integrations, addons);
    let checks = rules.as_array().into_iter().flatten().flat_map(|rule| {
        let group = rule["apiGroups"][0].as_str().unwrap_or_default().to_string();
        let resources: Vec<String> =
            rule["resources"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
        let verbs: Vec<String> =
            rule["verbs"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
        resources.into_iter().flat_map(move |full| {
            let group = group.clone();
            verbs.clone().into_iter().map(move |verb| (group.clone(), full.clone(), verb))
        })
    });
    for (group, full, verb) in checks {
        let (resource, subresource) = match full.split_once('/') {
            Some((r, s)) => (r.to_string(), Some(s.to_string())),
            None => (full.clone(), None),
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.clone()),
                resource_attributes: Some(ResourceAttributes {
                    group: Some(group.clone()),
                    resource: Some(resource),
                    subresource,
                    verb: Some(verb.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let allowed = reviews
            .create(&PostParams::default(), &review)
            .await
            .map(|r| r.status.is_some_and(|s| s.allowed))
            .unwrap_or(false);
        if !allowed {
            problems.push(format!("{worker}: {NAMESPACE}/{SERVICE_ACCOUNT} may not {verb} {full}.{group}"));
        }
    }
    problems
}
