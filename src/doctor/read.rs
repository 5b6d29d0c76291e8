//! Reading each cluster once, all clusters at once: discovery, a list per kind, Kueue's
//! Configuration, and one dry-run create to see our webhook answer. What cannot be read is
//! recorded as such (the cluster, or the one kind) and the rest is read all the same.

use crate::api::kueue::untyped_resource as kueue;
use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment as K8sDeployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, ResourceExt, discovery};
use serde_json::Value;

use super::facts::{
    AdmissionCheck, Certificate, ClusterFacts, Configuration, ControllerFacts, Deployment, Facts, Job, KueueApi,
    KueueFacts, MultiKueueCluster, Workload,
};
use crate::api::condition::{self, Condition};
use crate::api::kueue::{ADMITTED, FINISHED, MULTIKUEUE_ORIGIN_LABEL, QUEUE_NAME_LABEL, Role};
use crate::api::wrapped_job::WRAPPED_JOB_LABEL;
use crate::install::cert_manager::CERTIFICATE_NAME_ANNOTATION;
use crate::install::kueue_config::{self, KueueConfigError, KueueDeployment, List, edit};
use crate::install::preflight::{self, PreflightError};
use crate::integrations::registry::{JobKind, KindRegistry, Origin};
use crate::jobframework::api_error::{self, in_words};
use crate::kube_util::{self, wait};
use crate::manifests::{CERT_NOT_AFTER, CERT_NOT_BEFORE, DEPLOYMENT, MUTATING_WEBHOOK, NAMESPACE, WEBHOOK_CERT_SECRET};
use crate::model::source::{Target, Targets};
use crate::{model, quantity};

/// Every cluster of `targets`, read.
pub async fn read(targets: &Targets) -> Facts {
    let clients = targets.clusters.iter().map(|target| async {
        let client =
            kube_util::client_from(targets.kubeconfig.clone(), &target.context).await.map_err(|e| e.to_string())?;
        kube_util::ensure_reachable(&client, &targets.kubeconfig, &target.context).await.map_err(|e| e.to_string())?;
        Ok::<Client, String>(client)
    });
    let clients = futures::future::join_all(clients).await;
    let manager = targets.clusters.iter().zip(&clients).find(|(t, _)| t.role == Role::Manager);
    let (registry, kinds_unread) = match manager {
        Some((_, Ok(client))) => match KindRegistry::discover(client, NAMESPACE).await {
            Ok(registry) => (registry, None),
            Err(e) => (KindRegistry::built_in(), Some(e.to_string())),
        },
        _ => (KindRegistry::built_in(), None),
    };
    // Ours to integrate: the compiled kinds and the configured ones, not those Kueue integrates.
    let ours: Vec<&JobKind> = registry
        .kinds()
        .iter()
        .filter(|k| k.compiled().is_some() || matches!(k.origin(), Origin::Configured(_)))
        .collect();
    let reads = targets.clusters.iter().zip(clients).map(|(target, client)| cluster(target, client, &registry, &ours));
    Facts {
        kubeconfig: targets.file.as_ref().map(|f| f.display().to_string()),
        clusters: futures::future::join_all(reads).await,
        kinds: ours.iter().map(|k| k.qualified().to_string()).collect(),
        kinds_unread,
    }
}

async fn list(client: &Client, resource: &ApiResource) -> Result<Vec<DynamicObject>, kube::Error> {
    Ok(Api::<DynamicObject>::all_with(client.clone(), resource).list(&ListParams::default()).await?.items)
}

async fn cluster(
    target: &Target,
    client: Result<Client, String>,
    registry: &KindRegistry,
    ours: &[&JobKind],
) -> ClusterFacts {
    let mut facts = ClusterFacts::new(&target.name, &target.context, target.role);
    let client = match client {
        Ok(client) => client,
        Err(why) => {
            facts.unreachable = Some(why);
            return facts;
        }
    };
    facts.kueue_api = match preflight::check(&client, &[]).await {
        Ok(()) => Some(KueueApi::Served),
        Err(PreflightError::NoKueue) => Some(KueueApi::Missing),
        Err(PreflightError::OldKueue { served }) => Some(KueueApi::Old { served }),
        Err(e) => {
            facts.unread.insert("Kueue's API".into(), e.to_string());
            None
        }
    };
    match kueue_config::locate(&client).await {
        Ok(deployment) => {
            facts.kueue_namespace = deployment.namespace.clone();
            facts.kueue = Some(kueue_facts(&client, &deployment).await);
        }
        Err(KueueConfigError::NoKueue) => {}
        Err(e) => {
            facts.unread.insert("Deployments".into(), e.to_string());
        }
    }
    for kind in ours {
        let resource = kind.api_resource();
        let gvk = kube::core::GroupVersionKind::gvk(&resource.group, &resource.version, &resource.kind);
        match discovery::pinned_kind(&client, &gvk).await {
            Ok(_) => {}
            Err(e) if matches!(e, kube::Error::Discovery(_)) || api_error::is_unserved(&e) => {
                facts.unserved.insert(kind.qualified().to_string());
            }
            Err(e) => {
                facts.unread.insert(format!("{} (discovery)", kind.name()), in_words(&e));
            }
        }
    }
    facts.controller =
        controller(&client, &mut facts.unread, facts.unserved.iter().any(|k| k.starts_with("ExternalJob."))).await;
    if facts.kueue_api == Some(KueueApi::Served) {
        read_kueue_objects(&client, &mut facts).await;
    }
    read_jobs(&client, registry, &mut facts).await;
    facts
}

/// Kueue's Deployment: its image, availability and Configuration.
async fn kueue_facts(client: &Client, deployment: &KueueDeployment) -> KueueFacts {
    let (namespace, name) = (&deployment.namespace, &deployment.name);
    let found = Api::<K8sDeployment>::namespaced(client.clone(), namespace).get_opt(name).await;
    let image = found.ok().flatten().map(|d| kube_util::image_of(&d, "manager")).unwrap_or_default();
    let configuration = match &deployment.config {
        None => Configuration::NoFile,
        Some((config_map, key)) => configuration(client, namespace, config_map, key).await,
    };
    KueueFacts {
        namespace: namespace.clone(),
        name: name.clone(),
        image,
        unavailable: wait::deployment_available(client, namespace, name).await.err().map(|e| unavailable(&e)),
        configuration,
    }
}

fn unavailable(error: &wait::Unavailable) -> String {
    match error {
        wait::Unavailable::NotReady { reason, .. } => reason.trim().to_string(),
        other => other.to_string(),
    }
}

async fn configuration(client: &Client, namespace: &str, config_map: &str, key: &str) -> Configuration {
    let found = match Api::<ConfigMap>::namespaced(client.clone(), namespace).get(config_map).await {
        Ok(found) => found,
        Err(e) => return Configuration::Unreadable(format!("ConfigMap {namespace}/{config_map}: {}", in_words(&e))),
    };
    let Some(text) = found.data.as_ref().and_then(|d| d.get(key)) else {
        return Configuration::Unreadable(format!("ConfigMap {namespace}/{config_map} has no key {key}"));
    };
    let listed = |list| edit::listed(text, list);
    match (listed(List::Integrations), listed(List::MultiKueue)) {
        (Ok(integrations), Ok(multikueue)) => {
            Configuration::Read { config_map: format!("{namespace}/{config_map}"), integrations, multikueue }
        }
        (Err(e), _) | (_, Err(e)) => {
            Configuration::Unreadable(format!("ConfigMap {namespace}/{config_map}, {key}: {e}"))
        }
    }
}

/// Our controller: its Deployment if any, whether the API server calls our webhook and gets an
/// answer, and the certificate Secret's dates.
async fn controller(
    client: &Client,
    unread: &mut BTreeMap<String, String>,
    external_job_unserved: bool,
) -> ControllerFacts {
    let mut facts = ControllerFacts::default();
    match Api::<K8sDeployment>::namespaced(client.clone(), NAMESPACE).get_opt(DEPLOYMENT).await {
        Ok(Some(deployment)) => {
            let why = wait::deployment_available(client, NAMESPACE, DEPLOYMENT).await.err();
            let image = kube_util::image_of(&deployment, "controller");
            facts.deployment = Some(Deployment { image, unavailable: why.map(|e| unavailable(&e)) });
        }
        Ok(None) => {}
        Err(e) => {
            unread.insert(format!("Deployment {NAMESPACE}/{DEPLOYMENT}"), in_words(&e));
        }
    }
    match Api::<MutatingWebhookConfiguration>::all(client.clone()).get_opt(MUTATING_WEBHOOK).await {
        Ok(found) => facts.webhook_configured = found.is_some(),
        Err(e) => {
            unread.insert("MutatingWebhookConfigurations".into(), in_words(&e));
        }
    }
    if facts.webhook_configured && !external_job_unserved {
        let probe = crate::install::webhook_probe();
        facts.webhook_refusal = kube_util::webhooks_answer(client, &probe).await.err().map(|e| in_words(&e));
    }
    match Api::<Secret>::namespaced(client.clone(), NAMESPACE).get_opt(WEBHOOK_CERT_SECRET).await {
        // cert-manager's Secret (`install --cert-manager`) has no dates of ours: its Certificate
        // says when it renews, and cert-manager renews it, not our leader.
        Ok(Some(secret)) if secret.annotations().contains_key(CERTIFICATE_NAME_ANNOTATION) => {}
        Ok(Some(secret)) => {
            let annotation = |key: &str| secret.annotations().get(key).cloned();
            facts.certificate =
                Some(Certificate { not_before: annotation(CERT_NOT_BEFORE), not_after: annotation(CERT_NOT_AFTER) });
        }
        Ok(None) => {}
        // A process sandbox's controller keeps its certificate in files: no Secret, nothing to read.
        Err(e) if api_error::is_forbidden(&e) => {}
        Err(e) => {
            unread.insert(format!("Secret {NAMESPACE}/{WEBHOOK_CERT_SECRET}"), in_words(&e));
        }
    }
    facts
}

fn conditions(object: &DynamicObject) -> Vec<Condition> {
    serde_json::from_value(object.data["status"]["conditions"].clone()).unwrap_or_default()
}

fn active(object: &DynamicObject) -> Option<Condition> {
    condition::find(&conditions(object), "Active").cloned()
}

/// Namespaces, queues, admission checks, MultiKueue's objects; the Secrets of Kueue's namespace
/// on a manager with workers; the manager's Workloads.
async fn read_kueue_objects(client: &Client, facts: &mut ClusterFacts) {
    let name = facts.name.clone();
    match Api::<Namespace>::all(client.clone()).list_metadata(&ListParams::default()).await {
        Ok(list) => facts.namespaces = list.items.iter().map(|n| n.name_any()).collect(),
        Err(e) => {
            facts.unread.insert("Namespaces".into(), in_words(&e));
        }
    }
    let kinds = [
        ("LocalQueues", kueue("LocalQueue", "localqueues")),
        ("ClusterQueues", kueue("ClusterQueue", "clusterqueues")),
        ("AdmissionChecks", kueue("AdmissionCheck", "admissionchecks")),
        ("MultiKueueConfigs", kueue("MultiKueueConfig", "multikueueconfigs")),
        ("MultiKueueClusters", kueue("MultiKueueCluster", "multikueueclusters")),
    ];
    for (what, resource) in kinds {
        let objects = match list(client, &resource).await {
            Ok(objects) => objects,
            Err(e) => {
                facts.unread.insert(what.into(), in_words(&e));
                continue;
            }
        };
        for object in &objects {
            match what {
                "LocalQueues" => facts.local_queues.push(model::read::local_queue(&name, object)),
                "ClusterQueues" => facts.cluster_queues.push(model::read::cluster_queue(&name, object)),
                "AdmissionChecks" => facts.admission_checks.push(admission_check(object)),
                "MultiKueueConfigs" => {
                    let clusters = object.data["spec"]["clusters"].as_array().into_iter().flatten();
                    let clusters = clusters.filter_map(Value::as_str).map(String::from).collect();
                    facts.multikueue_configs.insert(object.name_any(), clusters);
                }
                _ => facts.multikueue_clusters.push(multikueue_cluster(object)),
            }
        }
    }
    if facts.role != Role::Manager {
        return;
    }
    if !facts.multikueue_clusters.is_empty() {
        match Api::<Secret>::namespaced(client.clone(), &facts.kueue_namespace)
            .list_metadata(&ListParams::default())
            .await
        {
            Ok(list) => facts.kueue_secrets = list.items.iter().map(|s| s.name_any()).collect(),
            Err(e) => {
                facts.unread.insert("Secrets".into(), in_words(&e));
            }
        }
    }
    match list(client, &kueue("Workload", "workloads")).await {
        Ok(objects) => facts.workloads = objects.iter().map(workload).collect(),
        Err(e) => {
            facts.unread.insert("Workloads".into(), in_words(&e));
        }
    }
}

fn admission_check(object: &DynamicObject) -> AdmissionCheck {
    let spec = &object.data["spec"];
    let parameters = &spec["parameters"];
    AdmissionCheck {
        name: object.name_any(),
        controller: spec["controllerName"].as_str().unwrap_or_default().to_string(),
        active: active(object),
        multikueue_config: (parameters["kind"] == "MultiKueueConfig")
            .then(|| parameters["name"].as_str().map(String::from))
            .flatten(),
    }
}

fn multikueue_cluster(object: &DynamicObject) -> MultiKueueCluster {
    let spec = &object.data["spec"];
    let source =
        if spec["clusterSource"].is_object() { &spec["clusterSource"]["kubeConfig"] } else { &spec["kubeConfig"] };
    let in_secret = source["locationType"].as_str().is_none_or(|t| t == "Secret");
    MultiKueueCluster {
        name: object.name_any(),
        secret: source["location"].as_str().filter(|_| in_secret).map(String::from),
        active: active(object),
    }
}

fn workload(object: &DynamicObject) -> Workload {
    let conditions = conditions(object);
    let owner = object.owner_references().iter().find(|o| o.controller == Some(true));
    Workload {
        namespace: object.namespace().unwrap_or_default(),
        name: object.name_any(),
        queue: object.data["spec"]["queueName"].as_str().map(String::from),
        owner: owner.map(|o| (o.kind.clone(), o.name.clone())),
        done_waiting: condition::is_true(&conditions, ADMITTED) || condition::is_true(&conditions, FINISHED),
        running: condition::is_true(&conditions, ADMITTED) && !condition::is_true(&conditions, FINISHED),
        placed_on: object.data["status"]["clusterName"].as_str().map(String::from),
        check_states: object.data["status"]["admissionChecks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(String::from))
            .collect(),
        requests: pod_set_requests(&object.data["spec"]),
    }
}

/// What a Workload's pod sets ask in all, by resource: each pod's requests times the pod set's
/// count.
pub fn pod_set_requests(spec: &Value) -> BTreeMap<String, f64> {
    let mut total = BTreeMap::new();
    for pod_set in spec["podSets"].as_array().into_iter().flatten() {
        let count = pod_set["count"].as_f64().unwrap_or(1.0);
        for (resource, amount) in quantity::pod_requests(&pod_set["template"]["spec"]) {
            *total.entry(resource).or_default() += amount * count;
        }
    }
    total
}

/// Every job of every kind the manager runs (a kind not served here has none).
async fn read_jobs(client: &Client, registry: &KindRegistry, facts: &mut ClusterFacts) {
    for kind in registry.kinds() {
        let resource = kind.api_resource();
        let objects = match list(client, &resource).await {
            Ok(objects) => objects,
            Err(e) if api_error::is_unserved(&e) => continue,
            Err(e) => {
                facts.unread.insert("jobs".into(), format!("{}: {}", kind.name(), in_words(&e)));
                continue;
            }
        };
        let plural = match resource.group.as_str() {
            "" => resource.plural.clone(),
            group => format!("{}.{group}", resource.plural),
        };
        for object in objects.iter().filter(|o| !o.labels().contains_key(WRAPPED_JOB_LABEL)) {
            let reading = serde_json::to_value(object).ok().and_then(|value| kind.read(&value)).unwrap_or_default();
            facts.jobs.push(Job {
                kind: kind.name().to_string(),
                resource: plural.clone(),
                namespace: object.namespace().unwrap_or_default(),
                name: object.name_any(),
                queue: object.labels().get(QUEUE_NAME_LABEL).cloned(),
                managed_by: reading.managed_by,
                from_multikueue: object.labels().contains_key(MULTIKUEUE_ORIGIN_LABEL),
                finished: reading.finished.is_some(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pod_sets_ask_for_each_pod_times_their_count() {
        let spec = json!({"podSets": [
            {"name": "driver", "count": 1, "template": {"spec": {
                "initContainers": [{"name": "fetch", "resources": {"requests": {"cpu": "2"}}}],
                "containers": [
                    {"name": "main", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                    {"name": "side", "resources": {"limits": {"cpu": "250m"}}},
                ]}}},
            {"name": "workers", "count": 4, "template": {"spec": {
                "containers": [{"name": "main", "resources": {"requests": {"cpu": "500"}}}]}}},
        ]});
        let requests = pod_set_requests(&spec);
        assert_eq!(requests["cpu"], 2.0 + 2000.0, "the init container's 2 beats 750m; 4 × 500");
        assert_eq!(requests["memory"], 1024.0 * 1024.0 * 1024.0);
    }

    #[test]
    fn a_multikueue_cluster_names_its_secret_and_an_admission_check_its_config() {
        let cluster: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": "worker1"},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "multikueue-worker1"}}},
            "status": {"conditions": [{"type": "Active", "status": "False", "reason": "BadConfig", "message": "no"}]},
        }))
        .unwrap();
        let read = multikueue_cluster(&cluster);
        assert_eq!(read.secret.as_deref(), Some("multikueue-worker1"));
        assert_eq!(read.active.unwrap().reason, "BadConfig");
        let check: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "multikueue"},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "kueue-ext"}},
        }))
        .unwrap();
        let read = admission_check(&check);
        assert!(read.is_multikueue());
        assert_eq!(read.multikueue_config.as_deref(), Some("kueue-ext"));
    }
}
