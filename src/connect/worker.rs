//! What the manager's Kueue acts as on a worker: a ServiceAccount bound to the role MultiKueue
//! needs, nothing admin-only, and a token for it; and the queues the manager's Workloads land in
//! there, made only where the worker lacks them.

use std::collections::BTreeSet;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::kinds::JobResource;
use super::manager::secret_name;
use super::{WORKER_NAMESPACE, Wiring, WiringError, connected};
use crate::integrations::registry;
use crate::integrations::wrapped_job::wrappable;
use crate::kube_util::kubeconfig::{self, Credentials, Entry};
use crate::kube_util::{self, ApplyError};

/// The ServiceAccount (in `kueue-system` of each worker) the manager's Kueue acts as.
pub const SERVICE_ACCOUNT: &str = "kueue-ext-multikueue";
const ROLE: &str = "kueue-ext-multikueue";

const ALL_VERBS: [&str; 7] = ["create", "update", "patch", "delete", "get", "list", "watch"];

/// A worker as the manager reaches it.
pub struct Worker<'a> {
    /// Its MultiKueueCluster's name.
    pub name: &'a str,
    pub client: &'a Client,
    /// Its API server as the manager's Kueue reaches it: loopback for local processes,
    /// the control-plane node's address on kind's Docker network.
    pub server: String,
    pub ca_pem: &'a str,
}

/// What the manager's Kueue may do on a worker: its Workloads and queues, and the jobs of each
/// kind it copies there (batch/Job, ours and `kinds`) with read access to their status. It also
/// may create (and only create) the kinds a WrappedJob wraps: the worker's webhook checks that
/// the creator of a WrappedJob copy could create its components, as it checked the submitter on
/// the manager.
pub fn worker_role_rules(kinds: &[JobResource]) -> Value {
    let mut rules = vec![
        json!({"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ALL_VERBS}),
        json!({"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]}),
        json!({"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]}),
    ];
    let batch = JobResource::new("batch", "jobs");
    let compiled = registry::compiled().iter().map(|(description, _)| JobResource::of(description));
    let mut granted = BTreeSet::new();
    for kind in std::iter::once(batch).chain(compiled).chain(kinds.iter().cloned()) {
        if !granted.insert(kind.clone()) {
            continue;
        }
        let JobResource { group, resource } = kind;
        rules.push(json!({"apiGroups": [group], "resources": [resource], "verbs": ALL_VERBS}));
        rules.push(json!({"apiGroups": [group], "resources": [format!("{resource}/status")], "verbs": ["get"]}));
    }
    for (group, resource) in wrappable() {
        rules.push(json!({"apiGroups": [group], "resources": [resource], "verbs": ["create"]}));
    }
    Value::Array(rules)
}

/// The ClusterRole, the ServiceAccount and their binding.
pub fn worker_rbac(kinds: &[JobResource]) -> Vec<Value> {
    [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": ROLE}, "rules": worker_role_rules(kinds)}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": WORKER_NAMESPACE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": ROLE},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
               "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": WORKER_NAMESPACE}]}),
    ]
    .into_iter()
    .map(connected)
    .collect()
}

/// The kubeconfig for a worker's Secret on the manager. The token of the one there is kept
/// while the worker accepts it and it has more than half of `token_seconds` left, so that a
/// second `connect` changes nothing; else a new one is requested.
pub async fn kubeconfig(
    manager: &Client,
    worker: &Worker<'_>,
    wiring: &Wiring<'_>,
    say: &dyn Fn(String),
) -> Result<String, WiringError> {
    let account = format!("{WORKER_NAMESPACE}/{SERVICE_ACCOUNT}");
    let token = match kept_token(manager, worker, wiring).await {
        Some((token, expires)) => {
            say(format!("{}: token of serviceaccount {account} kept: valid until {expires}", worker.name));
            token
        }
        None => {
            let granted =
                kube_util::request_token(worker.client, WORKER_NAMESPACE, SERVICE_ACCOUNT, wiring.token_seconds)
                    .await
                    .map_err(|source| WiringError::Token { worker: worker.name.to_string(), source })?;
            say(format!(
                "{}: token of serviceaccount {account} requested: valid until {}",
                worker.name, granted.expires
            ));
            granted.token
        }
    };
    render_kubeconfig(worker, &token).map_err(|e| WiringError::Apply {
        worker: worker.name.to_string(),
        source: ApplyError::Invalid { kind: "Secret".into(), name: secret_name(worker.name), message: e.to_string() },
    })
}

/// The token of the worker's Secret on the manager, with when it expires, if it may stay.
async fn kept_token(manager: &Client, worker: &Worker<'_>, wiring: &Wiring<'_>) -> Option<(String, String)> {
    let secrets: Api<Secret> = Api::namespaced(manager.clone(), &wiring.names.kueue_namespace);
    let secret = secrets.get_opt(&secret_name(worker.name)).await.ok()??;
    let text = secret.data?.remove("kubeconfig")?;
    let text = String::from_utf8(text.0).ok()?;
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let (token, expires) = token_to_keep(&text, worker, now + wiring.token_seconds / 2)?;
    accepted(worker, &token).await.then_some((token, expires))
}

/// The token of a worker's kubeconfig `text` when it names the same server and CA and expires
/// after `later_than` (Unix seconds), with its expiry.
fn token_to_keep(text: &str, worker: &Worker<'_>, later_than: i64) -> Option<(String, String)> {
    let config: Value = serde_saphyr::from_str(text).ok()?;
    let cluster = &config["clusters"][0]["cluster"];
    let same = cluster["server"] == worker.server.as_str()
        && cluster["certificate-authority-data"] == kubeconfig::b64(worker.ca_pem).as_str();
    let token = config["users"][0]["user"]["token"].as_str().filter(|_| same)?;
    let expires = jwt_expiry(token).filter(|exp| *exp > later_than)?;
    let expires = k8s_openapi::jiff::Timestamp::from_second(expires).ok()?;
    Some((token.to_string(), expires.to_string()))
}

/// A JWT's `exp` claim (Unix seconds), read without checking its signature: the worker's API
/// server checks that.
fn jwt_expiry(token: &str) -> Option<i64> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice::<Value>(&bytes).ok()?["exp"].as_i64()
}

/// Whether the worker's API server takes `token` as our ServiceAccount (a TokenReview).
async fn accepted(worker: &Worker<'_>, token: &str) -> bool {
    let review =
        TokenReview { spec: TokenReviewSpec { token: token.to_string(), ..Default::default() }, ..Default::default() };
    let reviews: Api<TokenReview> = Api::all(worker.client.clone());
    let Ok(answer) = reviews.create(&PostParams::default(), &review).await else { return false };
    let status = answer.status.unwrap_or_default();
    let user = status.user.and_then(|u| u.username).unwrap_or_default();
    status.authenticated == Some(true) && user == format!("system:serviceaccount:{WORKER_NAMESPACE}:{SERVICE_ACCOUNT}")
}

/// The kubeconfig the manager's Kueue uses for a worker: its server, its CA, the token.
pub fn render_kubeconfig(worker: &Worker<'_>, token: &str) -> Result<String, serde_saphyr::SerializeError> {
    let entry = Entry {
        context: worker.name,
        server: worker.server.clone(),
        ca_pem: worker.ca_pem,
        credentials: Credentials::Token(token),
    };
    serde_saphyr::to_string(&kubeconfig::render(&[entry]))
}

/// The manager's queue objects a worker needs for the manager's Workloads of `cluster_queue`:
/// MultiKueue creates each copy in the namespace and LocalQueue of the original, and the
/// worker's Kueue admits it against quota of its own. Each is what the manager has, less its
/// status and admission checks: the ResourceFlavors, the ClusterQueue (its resource groups and
/// namespace selector), the namespaces and the LocalQueues.
pub fn worker_queues(cluster_queue: &Value, flavors: &[Value], local_queues: &[Value]) -> Vec<Value> {
    let name = |obj: &Value| obj["metadata"]["name"].clone();
    let mut objects: Vec<Value> = flavors
        .iter()
        .map(|flavor| {
            let mut copy = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                  "metadata": {"name": name(flavor)}});
            if let Some(spec) = flavor.get("spec") {
                copy["spec"] = spec.clone();
            }
            copy
        })
        .collect();
    let spec = &cluster_queue["spec"];
    let selector = spec.get("namespaceSelector").cloned().unwrap_or_else(|| json!({}));
    objects.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                        "metadata": {"name": name(cluster_queue)},
                        "spec": {"namespaceSelector": selector, "resourceGroups": spec["resourceGroups"]}}));
    let namespaces: BTreeSet<&str> =
        local_queues.iter().filter_map(|queue| queue["metadata"]["namespace"].as_str()).collect();
    objects.extend(
        namespaces.into_iter().map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})),
    );
    objects.extend(local_queues.iter().map(|queue| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": name(queue), "namespace": queue["metadata"]["namespace"]},
               "spec": {"clusterQueue": name(cluster_queue)}})
    }));
    objects.into_iter().map(connected).collect()
}

/// The ResourceFlavors a ClusterQueue's resource groups name.
pub fn flavors_of(cluster_queue: &Value) -> Vec<String> {
    let groups = cluster_queue["spec"]["resourceGroups"].as_array().into_iter().flatten();
    let flavors = groups.flat_map(|group| group["flavors"].as_array().into_iter().flatten());
    let names: BTreeSet<String> = flavors.filter_map(|flavor| flavor["name"].as_str().map(String::from)).collect();
    names.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::{CONNECTED_BY, is_connected};

    #[test]
    fn worker_role_is_least_privilege() {
        let rules = worker_role_rules(&[JobResource::new("jobset.x-k8s.io", "jobsets")]);
        for rule in rules.as_array().unwrap() {
            for field in ["apiGroups", "resources", "verbs"] {
                assert!(!rule[field].as_array().unwrap().contains(&json!("*")), "no wildcard {field}: {rule}");
            }
            assert!(!rule["resources"].as_array().unwrap().contains(&json!("secrets")));
        }
    }

    #[test]
    fn a_kind_of_the_managers_is_copied_to_the_workers_once() {
        let jobsets = json!({"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ALL_VERBS});
        let kinds = [JobResource::new("jobset.x-k8s.io", "jobsets"), JobResource::new("batch", "jobs")];
        let rules = worker_role_rules(&kinds);
        let rules = rules.as_array().unwrap();
        assert_eq!(rules.iter().filter(|rule| **rule == jobsets).count(), 1, "{rules:?}");
        let jobs = json!({"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ALL_VERBS});
        assert_eq!(rules.iter().filter(|rule| **rule == jobs).count(), 1, "batch/Job always, once");
        assert!(!worker_role_rules(&[]).as_array().unwrap().contains(&jobsets));
        let ours = json!({"apiGroups": ["kueue-ext.dev"], "resources": ["externaljobs"], "verbs": ALL_VERBS});
        assert!(rules.contains(&ours));
    }

    #[test]
    fn the_rbac_is_labelled_for_disconnect() {
        for obj in worker_rbac(&[]) {
            assert!(is_connected(&obj), "{obj}");
            assert_eq!(obj["metadata"]["labels"][CONNECTED_BY.0], CONNECTED_BY.1);
        }
    }

    #[test]
    fn the_worker_gets_the_managers_queues_without_their_checks() {
        let cluster_queue = json!({"metadata": {"name": "team", "resourceVersion": "7"}, "spec": {
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "admissionChecksStrategy": {"admissionChecks": [{"name": "multikueue"}]},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]}],
        }, "status": {"pendingWorkloads": 3}});
        assert_eq!(flavors_of(&cluster_queue), ["on-demand"]);
        let flavor = json!({"metadata": {"name": "on-demand", "uid": "x"}, "spec": {"nodeLabels": {"pool": "a"}}});
        let queue = |ns: &str, name: &str| json!({"metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": "team"}});
        let objects = worker_queues(&cluster_queue, &[flavor], &[queue("a", "q1"), queue("b", "q2"), queue("a", "q3")]);
        let refs: Vec<String> = objects.iter().map(kube_util::object_ref).collect();
        assert_eq!(
            refs,
            [
                "resourceflavor.kueue.x-k8s.io/on-demand",
                "clusterqueue.kueue.x-k8s.io/team",
                "namespace/a",
                "namespace/b",
                "localqueue.kueue.x-k8s.io/q1",
                "localqueue.kueue.x-k8s.io/q2",
                "localqueue.kueue.x-k8s.io/q3"
            ]
        );
        assert_eq!(objects[0]["spec"]["nodeLabels"]["pool"], "a");
        assert!(objects[0]["metadata"].get("uid").is_none());
        assert_eq!(
            objects[1]["spec"],
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}, "resourceGroups": cluster_queue["spec"]["resourceGroups"]})
        );
        assert_eq!(objects[5]["metadata"]["namespace"], "b");
        assert!(objects.iter().all(is_connected));
    }

    fn jwt(exp: i64) -> String {
        use base64::Engine;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json!({"exp": exp}).to_string());
        format!("eyJhbGciOiJSUzI1NiJ9.{payload}.c2ln")
    }

    #[tokio::test]
    async fn a_token_is_kept_only_for_the_same_server_and_ca_while_it_has_long_to_live() {
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let worker = Worker { name: "w1", client: &client, server: "https://172.18.0.3:6443".into(), ca_pem: "CA" };
        let token = jwt(2_000_000_000);
        let written = render_kubeconfig(&worker, &token).unwrap();
        assert_eq!(jwt_expiry(&token), Some(2_000_000_000));
        let kept = token_to_keep(&written, &worker, 1_999_999_999).unwrap();
        assert_eq!(kept, (token.clone(), "2033-05-18T03:33:20Z".into()));
        assert_eq!(token_to_keep(&written, &worker, 2_000_000_000), None, "too close to its expiry");
        let moved = Worker { server: "https://10.0.0.1:6443".into(), ..worker };
        assert_eq!(token_to_keep(&written, &moved, 0), None, "another server");
        let rekeyed = Worker { ca_pem: "CA2", ..moved };
        let written = render_kubeconfig(&rekeyed, &token).unwrap();
        assert_eq!(token_to_keep(&written, &Worker { ca_pem: "CA", ..rekeyed }, 0), None, "another CA");
        assert_eq!(jwt_expiry("not-a-jwt"), None);
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
        let yaml = render_kubeconfig(&worker, "t0ken").unwrap();
        let parsed = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://kueue-ext-worker1-control-plane:6443"));
        assert_eq!(parsed.contexts[0].name, "worker1");
        let user = parsed.auth_infos[0].auth_info.as_ref().unwrap();
        assert!(user.client_certificate_data.is_none(), "a ServiceAccount token, never admin certificates");
        assert!(yaml.contains("token: t0ken"));
    }
}
