//! Thin helpers over kube-rs shared by the commands: clients from kubeconfig contexts and
//! server-side apply of untyped objects.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, Config};
use serde_json::Value;

/// Field manager of every server-side apply this project makes.
pub const FIELD_MANAGER: &str = "kueue-ext";

pub mod kubeconfig;
pub mod wait;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{kind}/{name}: {message}")]
    Invalid { kind: String, name: String, message: String },
    #[error("{kind}/{name}: {source}")]
    Api {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("CRD {name} was not established within {seconds}s")]
    NotEstablished { name: String, seconds: u64 },
}

/// A token for a ServiceAccount from the TokenRequest API, valid for `seconds`.
pub async fn service_account_token(
    client: &Client,
    namespace: &str,
    name: &str,
    seconds: i64,
) -> Result<String, kube::Error> {
    Ok(request_token(client, namespace, name, seconds).await?.token)
}

/// A ServiceAccount token and when it expires, as the API server granted it (it may shorten
/// what was asked for).
pub struct GrantedToken {
    pub token: String,
    pub expires: String,
}

/// A token for a ServiceAccount from the TokenRequest API, asked for `seconds`.
pub async fn request_token(
    client: &Client,
    namespace: &str,
    name: &str,
    seconds: i64,
) -> Result<GrantedToken, kube::Error> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;

    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec { expiration_seconds: Some(seconds), ..Default::default() }),
        ..Default::default()
    };
    let response = api.create_token_request(name, &kube::api::PostParams::default(), &request).await?;
    let status = response.status.unwrap_or_default();
    let expires = status.expiration_timestamp.map(|time| time.0.to_string()).unwrap_or_default();
    Ok(GrantedToken { token: status.token.unwrap_or_default(), expires })
}

/// A kubeconfig that could not be read, or a client that could not be made from it. Says the
/// cause once (kube's error repeats it as its source, which a chain printed with `{:#}` shows
/// twice), and when kubectl's default kubeconfig is missing, what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("cannot read kubeconfig {file}: {cause}{hint}")]
    Unreadable { file: String, cause: std::io::Error, hint: &'static str },
    #[error("kubeconfig {file}: {message}")]
    Invalid { file: String, message: String },
    #[error("default kubeconfig: {message}{hint}")]
    DefaultInvalid { message: String, hint: &'static str },
    #[error("context {context}: {message}")]
    Context { context: String, message: String },
}

/// Reads a kubeconfig file, or kubectl's default ones (`$KUBECONFIG`, else ~/.kube/config) for
/// `None`.
pub fn read_kubeconfig(path: Option<&Path>) -> Result<Kubeconfig, KubeconfigError> {
    match path {
        Some(path) => Kubeconfig::read_from(path).map_err(|e| kubeconfig_error(e, Some(path))),
        None => match std::env::var_os("KUBECONFIG").filter(|list| !list.is_empty()) {
            Some(list) => read_kubeconfig_list(&list),
            None => Kubeconfig::read().map_err(|e| kubeconfig_error(e, None)),
        },
    }
}

/// `$KUBECONFIG` as kubectl reads it: the files of the list that exist, merged (the first to set
/// a value wins); a missing entry is skipped, and only a list with none left is an error.
fn read_kubeconfig_list(list: &std::ffi::OsStr) -> Result<Kubeconfig, KubeconfigError> {
    let mut merged: Option<Kubeconfig> = None;
    for path in std::env::split_paths(list).filter(|p| !p.as_os_str().is_empty() && p.exists()) {
        let config = Kubeconfig::read_from(&path).map_err(|e| kubeconfig_error(e, Some(&path)))?;
        merged = Some(match merged {
            None => config,
            Some(first) => first.merge(config).map_err(|e| kubeconfig_error(e, Some(&path)))?,
        });
    }
    merged.ok_or_else(|| KubeconfigError::DefaultInvalid {
        message: format!("none of the files in KUBECONFIG={} exists", list.to_string_lossy()),
        hint: " (pass --kubeconfig, or start a sandbox with `kubectl kueue-ext up`)",
    })
}

/// The API server a context of `kubeconfig` points at.
pub fn server_of(kubeconfig: &Kubeconfig, context: &str) -> Option<String> {
    let named = kubeconfig.contexts.iter().find(|c| c.name == context)?.context.as_ref()?;
    let cluster = kubeconfig.clusters.iter().find(|c| c.name == named.cluster)?.cluster.as_ref()?;
    cluster.server.clone()
}

/// A cluster whose API server did not answer at all (refused, timed out, TLS failed).
#[derive(Debug, thiserror::Error)]
#[error(
    "the server {server} (context {context}) cannot be reached: {cause}; is the cluster running, and are the host \
     and port right?"
)]
pub struct Unreachable {
    pub server: String,
    pub context: String,
    pub cause: String,
}

/// One request before a command's real work, so that a cluster that does not answer is said once,
/// by its server and context, and not as a list of failed reads or an empty result. Any answer
/// of the API server, even a refusal, means it is reachable.
pub async fn ensure_reachable(client: &Client, kubeconfig: &Kubeconfig, context: &str) -> Result<(), Unreachable> {
    match client.apiserver_version().await {
        Err(err @ (kube::Error::HyperError(_) | kube::Error::Service(_))) => Err(Unreachable {
            server: server_of(kubeconfig, context).unwrap_or_else(|| "(none in the kubeconfig)".into()),
            context: context.to_string(),
            cause: innermost_cause(&err),
        }),
        _ => Ok(()),
    }
}

/// The last cause in an error's chain ("Connection refused"): what a user can act on.
pub fn innermost_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

fn kubeconfig_error(error: kube::config::KubeconfigError, path: Option<&Path>) -> KubeconfigError {
    let hint = if path.is_none() { " (pass --kubeconfig, or start a sandbox with `kubectl kueue-ext up`)" } else { "" };
    match (error, path) {
        (kube::config::KubeconfigError::ReadConfig(cause, file), _) => {
            KubeconfigError::Unreadable { file: file.display().to_string(), cause, hint }
        }
        (other, Some(path)) => {
            KubeconfigError::Invalid { file: path.display().to_string(), message: other.to_string() }
        }
        (other, None) => KubeconfigError::DefaultInvalid { message: other.to_string(), hint },
    }
}

/// A client for one context of a kubeconfig file.
pub async fn client_for(kubeconfig: &Path, context: &str) -> Result<Client, KubeconfigError> {
    let config = read_kubeconfig(Some(kubeconfig))?;
    client_from(config, context).await
}

/// A client for requests: a response that stalls for 30 s fails rather than hanging a command.
pub async fn client_from(kubeconfig: Kubeconfig, context: &str) -> Result<Client, KubeconfigError> {
    configured_client(kubeconfig, context, Some(REQUEST_READ_TIMEOUT)).await
}

/// A client for watches (controllers, `watch`): no read timeout. A watch may be quiet for
/// minutes, and a read timeout would break it every time; kube-runtime's `Controller` backs off
/// all its triggers on any watch error, so idle watches erroring every 30 s stall it for good.
/// The API server ends each watch itself (`timeoutSeconds`) and the watcher resumes it.
pub async fn watching_client_from(kubeconfig: Kubeconfig, context: &str) -> Result<Client, KubeconfigError> {
    configured_client(kubeconfig, context, None).await
}

const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(30);

async fn configured_client(
    kubeconfig: Kubeconfig,
    context: &str,
    read_timeout: Option<Duration>,
) -> Result<Client, KubeconfigError> {
    let mut config = watching_config_from(kubeconfig, context).await?;
    config.read_timeout = read_timeout;
    client_of(config, context)
}

/// The client config of `context` without a read timeout (watches stay open for minutes).
pub async fn watching_config_from(kubeconfig: Kubeconfig, context: &str) -> Result<Config, KubeconfigError> {
    let options = KubeConfigOptions { context: Some(context.to_string()), ..Default::default() };
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| KubeconfigError::Context { context: context.to_string(), message: e.to_string() })?;
    config.read_timeout = None;
    Ok(config)
}

/// A client of `config`, which `context` names in an error.
pub fn client_of(config: Config, context: &str) -> Result<Client, KubeconfigError> {
    Client::try_from(config)
        .map_err(|e| KubeconfigError::Context { context: context.to_string(), message: e.to_string() })
}

fn describe(obj: &Value) -> (String, String) {
    let kind = obj["kind"].as_str().unwrap_or("<no kind>").to_string();
    let name = obj["metadata"]["name"].as_str().unwrap_or("<no name>").to_string();
    (kind, name)
}

/// Server-side applies an untyped object, resolving its resource through discovery.
pub async fn apply(client: &Client, obj: &Value) -> Result<DynamicObject, ApplyError> {
    let (api, kind, name) = api_for(client, obj).await?;
    apply_patiently(&api, &name, &PatchParams::apply(FIELD_MANAGER).force(), obj)
        .await
        .map_err(|source| ApplyError::Api { kind, name, source })
}

/// How long a write waits out an API server or webhook that cannot answer for now (a webhook's
/// pods restarting, an API server shedding load) before that answer is the error.
const TRANSIENT_PATIENCE: Duration = Duration::from_secs(90);

/// True for an answer that means "not now" rather than "no": throttled, unavailable, timed out,
/// or an admission webhook that could not be called (no ready endpoint yet, no answer in time).
/// A webhook that answered and denied is a "no".
pub fn is_transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => {
            matches!(status.code, 429 | 503 | 504)
                || (status.code == 500 && status.message.contains("failed calling webhook"))
        }
        _ => false,
    }
}

/// How often a read-modify-write starts over after another writer changed the object.
const CONFLICT_ATTEMPTS: usize = 8;

/// A read-modify-write, started over while the object changed between its read and its write
/// (409 Conflict: a controller wrote its status meanwhile). `attempt` reads the object afresh
/// each time.
pub async fn again_on_conflict<T, F, Fut>(mut attempt: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(kube::Error::Api(status)) if status.code == 409 && tries < CONFLICT_ATTEMPTS => {
                tracing::debug!(message = %status.message, "changed since it was read; reading it again");
                tries += 1;
            }
            answer => return answer,
        }
    }
}

/// A write, tried again while the answer is transient (see [`is_transient`]). For writes that
/// are safe to repeat: an apply states the whole object, a create meets its own first try as a
/// conflict.
pub async fn patiently<T, F, Fut>(mut write: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let deadline = Instant::now() + TRANSIENT_PATIENCE;
    let mut pause = Duration::from_millis(500);
    loop {
        match write().await {
            Err(err) if is_transient(&err) && Instant::now() + pause < deadline => {
                tracing::debug!(error = %err, "transient refusal of a write, trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(8));
            }
            answer => return answer,
        }
    }
}

async fn apply_patiently(
    api: &Api<DynamicObject>,
    name: &str,
    params: &PatchParams,
    obj: &Value,
) -> Result<DynamicObject, kube::Error> {
    let patch = Patch::Apply(obj);
    patiently(|| api.patch(name, params, &patch)).await
}

/// The API of `obj`'s kind, in its namespace if it is namespaced, with its kind and name.
pub async fn api_for(client: &Client, obj: &Value) -> Result<(Api<DynamicObject>, String, String), ApplyError> {
    let (kind, name) = describe(obj);
    let invalid = |message: String| ApplyError::Invalid { kind: kind.clone(), name: name.clone(), message };
    let api_version = obj["apiVersion"].as_str().ok_or_else(|| invalid("apiVersion is missing".into()))?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, &kind);
    let (resource, caps) = discovery::pinned_kind(client, &gvk).await.map_err(|source| ApplyError::Api {
        kind: kind.clone(),
        name: name.clone(),
        source,
    })?;
    let api: Api<DynamicObject> = match (caps.scope, obj["metadata"]["namespace"].as_str()) {
        (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &resource),
    };
    Ok((api, kind, name))
}

/// What a server-side apply did to an object, in kubectl's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    Created,
    Configured,
    Unchanged,
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Applied::Created => "created",
            Applied::Configured => "configured",
            Applied::Unchanged => "unchanged",
        })
    }
}

/// Applies `obj` (only asking the API server when `dry_run`) and says whether that created it,
/// changed it or left it as it was: an apply that changes nothing keeps the resourceVersion.
pub async fn apply_reporting(client: &Client, obj: &Value, dry_run: bool) -> Result<Applied, ApplyError> {
    let (api, kind, name) = api_for(client, obj).await?;
    let failed = |source| ApplyError::Api { kind: kind.clone(), name: name.clone(), source };
    let before = api.get_opt(&name).await.map_err(failed)?;
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = dry_run;
    let after = apply_patiently(&api, &name, &params, obj).await.map_err(failed)?;
    Ok(match before {
        None => Applied::Created,
        Some(before) if before.metadata.resource_version == after.metadata.resource_version => Applied::Unchanged,
        Some(_) => Applied::Configured,
    })
}

/// Deletes the object `obj` names, if it exists: `true` when there was one.
pub async fn delete_if_present(client: &Client, obj: &Value) -> Result<bool, ApplyError> {
    let (api, kind, name) = api_for(client, obj).await?;
    match api.delete(&name, &Default::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(ApplyError::Api { kind, name, source }),
    }
}

/// The kind cluster a node's provider ID names (`kind://docker/CLUSTER/NODE`); `None` off kind.
pub fn kind_cluster_in(provider_id: &str) -> Option<&str> {
    provider_id.strip_prefix("kind://")?.split('/').nth(1)
}

/// The image of a Deployment's container named `preferred`, else of its first container.
pub fn image_of(deployment: &k8s_openapi::api::apps::v1::Deployment, preferred: &str) -> String {
    let containers = deployment.spec.as_ref().map(|s| s.template.spec.clone().unwrap_or_default().containers);
    let containers = containers.unwrap_or_default();
    let container = containers.iter().find(|c| c.name == preferred).or(containers.first());
    container.and_then(|c| c.image.clone()).unwrap_or_default()
}

/// `kind/name` of an object, lowercase as kubectl prints it (`deployment.apps/name`).
pub fn object_ref(obj: &Value) -> String {
    let (kind, name) = describe(obj);
    let group = obj["apiVersion"].as_str().and_then(|v| v.split_once('/')).map(|(group, _)| group);
    match group {
        Some(group) => format!("{}.{group}/{name}", kind.to_lowercase()),
        None => format!("{}/{name}", kind.to_lowercase()),
    }
}

/// Whether the webhooks on `probe`'s kind answer: a dry-run create of it (in `default` if the
/// kind is namespaced) refused by validation or let through, but not failed because a webhook
/// could not be called (a Service without ready endpoints yet, a server not listening).
pub async fn webhooks_answer(client: &Client, probe: &Value) -> Result<(), kube::Error> {
    let (kind, _) = describe(probe);
    let api_version = probe["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (resource, caps) = discovery::pinned_kind(client, &GroupVersionKind::gvk(group, version, &kind)).await?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => Api::namespaced_with(client.clone(), "default", &resource),
    };
    let object: DynamicObject = serde_json::from_value(probe.clone()).map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams { dry_run: true, ..Default::default() }, &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if !status.message.contains("failed calling webhook") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Applies CRDs and waits until the API server serves each of them.
pub async fn apply_crds(client: &Client, crds: &[Value]) -> Result<(), ApplyError> {
    for crd in crds {
        apply(client, crd).await?;
    }
    wait_established(client, crds).await
}

/// Waits until the API server serves every CRD of `crds`.
pub async fn wait_established(client: &Client, crds: &[Value]) -> Result<(), ApplyError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let timeout = Duration::from_secs(60);
    for crd in crds {
        let (_, name) = describe(crd);
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        match tokio::time::timeout(timeout, established).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return Err(ApplyError::Invalid {
                    kind: "CustomResourceDefinition".into(),
                    name,
                    message: e.to_string(),
                });
            }
            Err(_) => {
                return Err(ApplyError::NotEstablished { name, seconds: timeout.as_secs() });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn answer(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, "").with_code(code).boxed())
    }

    #[test]
    fn only_not_now_answers_are_transient() {
        let timed_out = r#"Internal error occurred: failed calling webhook "vclusterqueue.kb.io": failed to call webhook: Post "https://kueue-webhook-service.kueue-system.svc:443/validate": context deadline exceeded"#;
        for not_now in [answer(500, timed_out), answer(429, ""), answer(503, ""), answer(504, "")] {
            assert!(is_transient(&not_now), "{not_now}");
        }
        let denied = r#"admission webhook "vexternaljob.kb.io" denied the request: spec.queueName: Invalid value"#;
        for no in [
            answer(400, denied),
            answer(403, "forbidden"),
            answer(500, "etcdserver: request too large"),
            answer(422, ""),
        ] {
            assert!(!is_transient(&no), "{no}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_apply_waits_out_an_api_server_that_cannot_answer_yet() {
        use std::sync::atomic::{AtomicUsize, Ordering};

        let calls = std::sync::Arc::new(AtomicUsize::new(0));
        let (client, requests) =
            crate::test_api_server::scripted_client(move |_, _| match calls.fetch_add(1, Ordering::SeqCst) {
                0..3 => Err(503),
                _ => Ok(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "c", "namespace": "default"}})),
            });
        let resource = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
        let obj = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let applied = apply_patiently(&api, "c", &PatchParams::apply(FIELD_MANAGER), &obj).await;
        assert!(applied.is_ok(), "{applied:?}");
        assert_eq!(crate::test_api_server::requested(&requests).len(), 4, "three refusals, then the apply");
    }

    #[test]
    fn a_missing_kubeconfig_is_named_with_its_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none");
        let message = format!("{:#}", read_kubeconfig(Some(&missing)).unwrap_err());
        assert_eq!(
            message,
            format!("cannot read kubeconfig {}: No such file or directory (os error 2)", missing.display())
        );
    }

    #[test]
    fn a_missing_default_kubeconfig_says_what_to_do() {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let error =
            kubeconfig_error(kube::config::KubeconfigError::ReadConfig(missing, "/home/u/.kube/config".into()), None);
        assert_eq!(
            format!("{error:#}"),
            "cannot read kubeconfig /home/u/.kube/config: entity not found \
             (pass --kubeconfig, or start a sandbox with `kubectl kueue-ext up`)"
        );
    }

    #[test]
    fn a_kubeconfig_that_is_not_yaml_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        std::fs::write(&file, "clusters: [").unwrap();
        let message = format!("{:#}", read_kubeconfig(Some(&file)).unwrap_err());
        assert!(
            message.starts_with(&format!("kubeconfig {}: failed to parse kubeconfig YAML", file.display())),
            "{message}"
        );
    }
}
