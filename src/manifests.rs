//! The install manifests of this project, generated from code: CRDs, the controller's
//! namespace, ServiceAccount and least-privilege RBAC, the RBAC Kueue needs on our kinds, the
//! controller's Deployment and webhook Service, and the webhook configurations. `manifests/`
//! holds the same YAML; a test keeps them in sync.

use kube::api::GroupVersionKind;
use serde_json::{Value, json};

use crate::integrations::declarative::config::{self, Integration};
use crate::integrations::registry;
use crate::jobframework::webhook::Hook;

pub const NAMESPACE: &str = "kueue-ext-system";
/// The label every node that runs a sandbox's pods carries, on either runtime: what the sandbox
/// writes and `conformance` looks for.
pub const SANDBOX_NODE_LABEL: (&str, &str) = ("kueue-ext.dev/sandbox-node", "true");
pub const SERVICE_ACCOUNT: &str = "kueue-ext-controller";
pub use crate::api::CONTROLLER_ROLE;
/// The controller's and Kueue's rights on kinds integrated by configuration.
pub const CONFIGURED_CONTROLLER_ROLE: &str = "kueue-ext-controller-configured";
const CONFIGURED_KUEUE_ROLE: &str = "kueue-ext-kueue-access-configured";
const LEADER_ROLE: &str = "kueue-ext-leader-election";
/// What Kueue's own ServiceAccount needs on our kinds (Kueue checks owners and, on a MultiKueue
/// manager, mirrors the worker copy's status into `/status`).
const KUEUE_ROLE: &str = "kueue-ext-kueue-access";
const KUEUE_SERVICE_ACCOUNT: (&str, &str) = ("kueue-system", "kueue-controller-manager");

/// The in-cluster controller: its Deployment, the Service in front of its webhooks, and the
/// Secret with the webhook's serving certificate, made empty at install and filled (and
/// renewed) by the controller itself.
pub const DEPLOYMENT: &str = "kueue-ext-controller";
pub const WEBHOOK_SERVICE: &str = "kueue-ext-webhook";
pub const WEBHOOK_CERT_SECRET: &str = "kueue-ext-webhook-cert";
/// Annotation of that Secret: when its serving certificate's validity begins (RFC 3339). With
/// [`CERT_NOT_AFTER`], it says when a renewal is due without parsing the certificate (the
/// controller renews two thirds into the validity; `doctor` reads them too).
pub const CERT_NOT_BEFORE: &str = "kueue-ext.dev/not-before";
/// Annotation of that Secret: when its serving certificate expires (RFC 3339).
pub const CERT_NOT_AFTER: &str = "kueue-ext.dev/not-after";
/// Replicas of the Deployment: every one serves the webhooks, so one can roll while the other
/// answers admissions.
pub const REPLICAS: u32 = 2;
const WEBHOOK_PORT: u16 = 9443;
const INTEGRATIONS_DIR: &str = "/config";
const CERT_ROLE: &str = "kueue-ext-webhook-certificate";
const WEBHOOK_CONFIGURATION_ROLE: &str = "kueue-ext-webhook-configurations";
/// The label every object of an install carries, so `uninstall` and users can find them.
pub const PART_OF: (&str, &str) = ("app.kubernetes.io/part-of", "kueue-ext");
/// The image `manifests/` names; an install replaces it with the image it built.
pub const DEFAULT_IMAGE: &str = concat!("kueue-ext/controller:v", env!("CARGO_PKG_VERSION"));

pub const MUTATING_WEBHOOK: &str = "kueue-ext-mutating-webhook-configuration";
pub const CONFIGURED_MUTATING_WEBHOOK: &str = "kueue-ext-configured-mutating-webhook-configuration";
pub const CONFIGURED_VALIDATING_WEBHOOK: &str = "kueue-ext-configured-validating-webhook-configuration";
pub const VALIDATING_WEBHOOK: &str = "kueue-ext-validating-webhook-configuration";
/// Every webhook configuration an install may make, whose `caBundle` the controller keeps.
pub const WEBHOOK_CONFIGURATIONS: [&str; 4] =
    [MUTATING_WEBHOOK, VALIDATING_WEBHOOK, CONFIGURED_MUTATING_WEBHOOK, CONFIGURED_VALIDATING_WEBHOOK];

/// The path of a webhook for a kind, as Kueue names its own: `/mutate-<group>-<version>-<kind>`
/// with the group's dots as dashes.
pub fn webhook_path(hook: Hook, gvk: &GroupVersionKind) -> String {
    let verb = match hook {
        Hook::Mutate => "mutate",
        Hook::Validate => "validate",
    };
    format!("/{verb}-{}-{}-{}", gvk.group.replace('.', "-"), gvk.version, gvk.kind.to_lowercase())
}

/// Rules of `verbs` on the compiled kinds' jobs, `suffix` added to each resource (`/status`),
/// one per API group.
fn compiled_job_rules(suffix: &str, verbs: &[&str]) -> Vec<Value> {
    let rules = registry::compiled().iter().map(|(description, _)| {
        rule(&[description.gvk().group.as_str()], &[format!("{}{suffix}", description.resource).as_str()], verbs)
    });
    merged(rules.collect())
}

/// `rules` with those of the same groups and verbs made one, in the order they first appear.
fn merged(rules: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for rule in rules {
        let same = out.iter_mut().find(|r| r["apiGroups"] == rule["apiGroups"] && r["verbs"] == rule["verbs"]);
        match (same, rule["resources"].as_array()) {
            (Some(existing), Some(resources)) => {
                let known = existing["resources"].as_array_mut().expect("rules list resources");
                for resource in resources {
                    if !known.contains(resource) {
                        known.push(resource.clone());
                    }
                }
            }
            _ => out.push(rule),
        }
    }
    out
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

const READ: [&str; 3] = ["get", "list", "watch"];

pub fn crds() -> Vec<Value> {
    registry::COMPILED.iter().map(|kind| serde_json::to_value((kind.crd)()).expect("CRD serializes")).collect()
}

/// Exactly what the controller does: its jobs and their status, Workloads, reads of queues
/// and priorities, events, and what each kind's controller and webhook need besides (pods,
/// the components of wrapped jobs, authorization checks, dry runs). No secrets, no wildcards.
pub fn controller_rules() -> Value {
    let mut rules = compiled_job_rules("", &["get", "list", "watch", "update", "patch"]);
    rules.extend(compiled_job_rules("/status", &["get", "update", "patch"]));
    rules.extend([
        rule(&["kueue.x-k8s.io"], &["workloads"], &["get", "list", "watch", "create", "update", "patch", "delete"]),
        rule(&["kueue.x-k8s.io"], &["workloads/status"], &["get", "update", "patch"]),
        rule(
            &["kueue.x-k8s.io"],
            &[
                "localqueues",
                "clusterqueues",
                "admissionchecks",
                "resourceflavors",
                "workloadpriorityclasses",
                "multikueueclusters",
            ],
            &READ,
        ),
        rule(&["scheduling.k8s.io"], &["priorityclasses"], &READ),
        rule(&["events.k8s.io"], &["events"], &["create", "patch"]),
    ]);
    rules.extend(registry::COMPILED.iter().flat_map(|kind| (kind.controller_rules)()));
    Value::Array(merged(rules))
}

pub fn kueue_rules() -> Value {
    let mut rules = compiled_job_rules("", &["get", "list", "watch", "update", "patch"]);
    rules.extend(compiled_job_rules("/status", &["get", "update", "patch"]));
    Value::Array(rules)
}

fn binding(name: &str, role: &str, (namespace, account): (&str, &str)) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    })
}

/// Pod Security `restricted`, enforced on our namespace: the controller needs nothing more.
fn namespace() -> Value {
    let labels: serde_json::Map<String, Value> = ["enforce", "audit", "warn"]
        .iter()
        .flat_map(|mode| {
            [
                (format!("pod-security.kubernetes.io/{mode}"), json!("restricted")),
                (format!("pod-security.kubernetes.io/{mode}-version"), json!("latest")),
            ]
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": labels}})
}

fn namespaced_role(name: &str, rules: Vec<Value>) -> [Value; 2] {
    [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name, "namespace": NAMESPACE}, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name, "namespace": NAMESPACE},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]}),
    ]
}

/// `rule` limited to the objects named `names`: a list or watch is allowed only by a field
/// selector on one of them.
fn named_rule(group: &str, resources: &[&str], names: &[&str], verbs: &[&str]) -> Value {
    let mut rule = rule(&[group], resources, verbs);
    rule["resourceNames"] = json!(names);
    rule
}

/// Who writes the webhook's serving pair into [`WEBHOOK_CERT_SECRET`] and its CA into the
/// `caBundle` of our webhook configurations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CertWriter {
    /// The controller's leader, into the Secret an install makes empty.
    #[default]
    Controller,
    /// cert-manager (`install --cert-manager`): the controller only reads both.
    CertManager,
}

impl CertWriter {
    /// The controller's verbs on the Secret and on our webhook configurations: reading them
    /// tells a replica what to serve and whether the API server trusts it.
    fn verbs(self) -> &'static [&'static str] {
        match self {
            CertWriter::Controller => &["get", "list", "watch", "update", "patch"],
            CertWriter::CertManager => &READ,
        }
    }
}

pub fn rbac() -> Vec<Value> {
    rbac_for_kueue(KUEUE_SERVICE_ACCOUNT, CertWriter::Controller)
}

/// [`rbac`] with Kueue running as `kueue` (namespace, ServiceAccount) and the certificate
/// written by `writer`: what an install finds on the cluster, and what it is asked to do.
pub fn rbac_for_kueue(kueue: (&str, &str), writer: CertWriter) -> Vec<Value> {
    let role = |name: &str, rules: Value| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules});
    let webhook_configurations = named_rule(
        "admissionregistration.k8s.io",
        &["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
        &WEBHOOK_CONFIGURATIONS,
        writer.verbs(),
    );
    let mut objects = vec![
        namespace(),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}),
        role(CONTROLLER_ROLE, controller_rules()),
        binding(CONTROLLER_ROLE, CONTROLLER_ROLE, (NAMESPACE, SERVICE_ACCOUNT)),
        role(KUEUE_ROLE, kueue_rules()),
        binding(KUEUE_ROLE, KUEUE_ROLE, kueue),
        // The caBundle of our own webhook configurations, and nothing else of admission.
        role(WEBHOOK_CONFIGURATION_ROLE, json!([webhook_configurations])),
        binding(WEBHOOK_CONFIGURATION_ROLE, WEBHOOK_CONFIGURATION_ROLE, (NAMESPACE, SERVICE_ACCOUNT)),
    ];
    // Leader election: Leases in our own namespace only.
    objects.extend(namespaced_role(
        LEADER_ROLE,
        vec![rule(&["coordination.k8s.io"], &["leases"], &["get", "list", "watch", "create", "update", "patch"])],
    ));
    // Its own certificate Secret, which the install creates (create cannot be limited by name).
    objects
        .extend(namespaced_role(CERT_ROLE, vec![named_rule("", &["secrets"], &[WEBHOOK_CERT_SECRET], writer.verbs())]));
    objects
}

/// The container's arguments: the `controller` command, serving on every pod address with the
/// certificate it keeps in its Secret, in-cluster credentials (no kubeconfig), leader election on,
/// and a drain at shutdown for the API server's kept-alive connections through the Service.
pub fn controller_args() -> Vec<String> {
    vec![
        "controller".into(),
        format!("--listen=0.0.0.0:{WEBHOOK_PORT}"),
        format!("--cert-secret={WEBHOOK_CERT_SECRET}"),
        "--log-format=json".into(),
        "--leader-elect".into(),
        "--shutdown-drain=5s".into(),
    ]
}

/// The Secret the controller writes its certificate into: made empty, so that an install owns
/// no key of it and applying it again never takes the certificate away.
pub fn cert_secret() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": WEBHOOK_CERT_SECRET, "namespace": NAMESPACE},
    })
}

/// Keeps one replica answering admissions while nodes drain.
pub fn disruption_budget() -> Value {
    json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {SELECTOR.0: SELECTOR.1}}},
    })
}

const SELECTOR: (&str, &str) = ("app.kubernetes.io/name", DEPLOYMENT);

/// The controller's Deployment, running `image` as its ServiceAccount with no privileges (Pod
/// Security `restricted`), its replicas on different nodes where there are several. Ready once
/// its webhook server answers `/readyz` with a certificate the API server trusts; a roll
/// replaces one replica at a time.
pub fn deployment(image: &str) -> Value {
    // The kubelet's 1 s default timeout fails probes on a node whose CPU is oversubscribed; a
    // replica taken out of the Service for it, or restarted, refuses admissions.
    let probe = |path: &str, failures: u32| {
        json!({"httpGet": {"path": path, "port": "webhook", "scheme": "HTTPS"},
               "periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": failures})
    };
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE, "labels": {SELECTOR.0: SELECTOR.1}},
        "spec": {
            "replicas": REPLICAS,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "selector": {"matchLabels": {SELECTOR.0: SELECTOR.1}},
            "template": {
                "metadata": {"labels": {SELECTOR.0: SELECTOR.1}},
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "terminationGracePeriodSeconds": 45,
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                            "labelSelector": {"matchLabels": {SELECTOR.0: SELECTOR.1}}},
                    }]}},
                    "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "controller",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "args": controller_args(),
                        "ports": [{"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"}],
                        // A replica on its way out answers until the Service has stopped sending it
                        // admissions: endpoints and kube-proxy's rules are updated while this
                        // waits, which on a busy node took longer than 10 s. The server's drain
                        // and shutdown follow, within the pod's grace.
                        "lifecycle": {"preStop": {"sleep": {"seconds": 20}}},
                        // Nothing listens until the first certificate is written.
                        "startupProbe": {"httpGet": {"path": "/healthz", "port": "webhook", "scheme": "HTTPS"},
                                         "periodSeconds": 2, "failureThreshold": 90},
                        "readinessProbe": probe("/readyz", 3),
                        "livenessProbe": probe("/healthz", 6),
                        // Little CPU asked: a roll of Kueue beside it must still fit a small node.
                        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "volumeMounts": [],
                    }],
                    "volumes": [],
                },
            },
        },
    })
}

/// The ConfigMap holding the integrations file of `integrations`: what the controller reads on
/// a cluster, and how every command learns which kinds the cluster runs.
pub fn integrations_config_map(integrations: &[Integration]) -> Result<Value, serde_saphyr::SerializeError> {
    let file_text = serde_saphyr::to_string(&config::IntegrationConfig::new(integrations.to_vec()))?;
    Ok(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": config::CONFIG_MAP, "namespace": NAMESPACE},
        "data": {config::CONFIG_MAP_KEY: file_text},
    }))
}

/// The Deployment changed to read the integrations ConfigMap (`--integrations`), for an install
/// with kinds integrated by configuration.
pub fn read_integrations(deployment: &mut Value) {
    let pod = &mut deployment["spec"]["template"]["spec"];
    let mount = json!({"name": "integrations", "mountPath": INTEGRATIONS_DIR, "readOnly": true});
    let arg = json!(format!("--integrations={INTEGRATIONS_DIR}/{}", config::CONFIG_MAP_KEY));
    if let Some(container) = pod["containers"].get_mut(0) {
        container["args"].as_array_mut().into_iter().for_each(|args| args.push(arg.clone()));
        container["volumeMounts"].as_array_mut().into_iter().for_each(|mounts| mounts.push(mount.clone()));
    }
    let volume = json!({"name": "integrations", "configMap": {"name": config::CONFIG_MAP}});
    pod["volumes"].as_array_mut().into_iter().for_each(|volumes| volumes.push(volume.clone()));
}

/// The Service the webhook configurations call (port 443 to the container's webhook port).
pub fn service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE},
        "spec": {
            "selector": {SELECTOR.0: SELECTOR.1},
            "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}],
        },
    })
}

/// DNS names the webhook's serving certificate must carry for the API server to call it.
pub fn webhook_dns_names() -> Vec<String> {
    vec![
        WEBHOOK_SERVICE.to_string(),
        format!("{WEBHOOK_SERVICE}.{NAMESPACE}"),
        format!("{WEBHOOK_SERVICE}.{NAMESPACE}.svc"),
        format!("{WEBHOOK_SERVICE}.{NAMESPACE}.svc.cluster.local"),
    ]
}

/// Where the API server reaches the webhooks.
pub enum Endpoint<'a> {
    /// A local process: `https://127.0.0.1:<port>` with the CA that signed its certificate.
    Url { base: String, ca_bundle_b64: &'a str },
    /// The in-cluster [`service`], with the CA that signed its certificate once installed
    /// (`None` in `manifests/`, which leaves it to the installer).
    Service { ca_bundle_b64: Option<&'a str> },
}

fn client_config(endpoint: &Endpoint<'_>, path: &str) -> Value {
    match endpoint {
        Endpoint::Url { base, ca_bundle_b64 } => json!({"url": format!("{base}{path}"), "caBundle": ca_bundle_b64}),
        Endpoint::Service { ca_bundle_b64 } => {
            let mut config =
                json!({"service": {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE, "path": path, "port": 443}});
            if let Some(ca) = ca_bundle_b64 {
                config["caBundle"] = json!(ca);
            }
            config
        }
    }
}

/// The webhooks. failurePolicy is Fail on purpose: a job admitted while the webhook is down
/// would not be suspended and would run without Kueue's admission.
pub fn webhooks(endpoint: &Endpoint<'_>) -> Vec<Value> {
    let compiled = registry::compiled();
    let entries = |hook: Hook, prefix: &str, operations: &[&str]| -> Vec<Value> {
        let entry = |(description, _): &(Integration, _)| {
            let gvk = description.gvk();
            let name = format!("{prefix}{}.{}", gvk.kind.to_lowercase(), gvk.group);
            let path = webhook_path(hook, &gvk);
            let resource = (gvk.group.as_str(), gvk.version.as_str(), description.resource.as_str());
            webhook_entry(endpoint, &name, &path, resource, operations)
        };
        compiled.iter().map(entry).collect()
    };
    vec![
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": MUTATING_WEBHOOK},
            "webhooks": entries(Hook::Mutate, "m", &["CREATE"]),
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": VALIDATING_WEBHOOK},
            "webhooks": entries(Hook::Validate, "v", &["CREATE", "UPDATE"]),
        }),
    ]
}

/// ClusterRoles with what the controller and Kueue need on the kinds integrated by
/// configuration: the controller reads and updates their jobs (never their status: the kind's
/// own controller writes that), Kueue reads them and mirrors MultiKueue status into `/status`.
/// Separate from [`rbac`], so an install without configured kinds grants nothing more.
pub fn configured_rbac(integrations: &[Integration]) -> Vec<Value> {
    if integrations.is_empty() {
        return Vec::new();
    }
    let role = |name: &str, rules: Vec<Value>| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules});
    let jobs = |verbs: &[&str]| -> Vec<Value> {
        integrations.iter().map(|i| rule(&[i.gvk().group.as_str()], &[i.resource.as_str()], verbs)).collect()
    };
    let statuses: Vec<Value> = integrations
        .iter()
        .map(|i| {
            rule(&[i.gvk().group.as_str()], &[format!("{}/status", i.resource).as_str()], &["get", "update", "patch"])
        })
        .collect();
    let jobs_rw = ["get", "list", "watch", "update", "patch"];
    vec![
        role(CONFIGURED_CONTROLLER_ROLE, jobs(&jobs_rw)),
        binding(CONFIGURED_CONTROLLER_ROLE, CONFIGURED_CONTROLLER_ROLE, (NAMESPACE, SERVICE_ACCOUNT)),
        role(CONFIGURED_KUEUE_ROLE, jobs(&jobs_rw).into_iter().chain(statuses).collect()),
        binding(CONFIGURED_KUEUE_ROLE, CONFIGURED_KUEUE_ROLE, KUEUE_SERVICE_ACCOUNT),
    ]
}

/// The webhooks of the kinds integrated by configuration, in configurations of their own (so
/// the ones of [`webhooks`] stay as `manifests/` has them). Fail closed, like ours.
pub fn configured_webhooks(endpoint: &Endpoint<'_>, integrations: &[Integration]) -> Vec<Value> {
    if integrations.is_empty() {
        return Vec::new();
    }
    let hooks = |hook: Hook, operations: &[&str]| -> Vec<Value> {
        integrations
            .iter()
            .map(|integration| {
                let gvk = integration.gvk();
                let prefix = if hook == Hook::Mutate { "m" } else { "v" };
                webhook_entry(
                    endpoint,
                    &format!("{prefix}{}.{}.configured.kueue-ext.dev", gvk.kind.to_lowercase(), gvk.group),
                    &webhook_path(hook, &gvk),
                    (&gvk.group, &gvk.version, &integration.resource),
                    operations,
                )
            })
            .collect()
    };
    vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
               "metadata": {"name": CONFIGURED_MUTATING_WEBHOOK}, "webhooks": hooks(Hook::Mutate, &["CREATE"])}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
               "metadata": {"name": CONFIGURED_VALIDATING_WEBHOOK}, "webhooks": hooks(Hook::Validate, &["CREATE", "UPDATE"])}),
    ]
}

/// How Kueue's Configuration names every kind this install integrates.
pub fn external_frameworks(integrations: &[Integration]) -> Vec<String> {
    let compiled = registry::compiled().iter().map(|(description, _)| description.kind.clone());
    compiled.chain(integrations.iter().map(|i| i.kind.clone())).collect()
}

/// One webhook of a configuration: `(group, version, resource)` it admits, on `operations`.
fn webhook_entry(
    endpoint: &Endpoint<'_>,
    name: &str,
    path: &str,
    (group, version, resource): (&str, &str, &str),
    operations: &[&str],
) -> Value {
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "clientConfig": client_config(endpoint, path),
        "rules": [{"apiGroups": [group], "apiVersions": [version], "operations": operations, "resources": [resource]}],
        "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]},
    })
}

/// Files of `manifests/` and their contents.
pub fn files() -> Vec<(&'static str, String)> {
    let yaml = |objects: Vec<Value>| {
        let mut out = String::from("# Generated by `kubectl kueue-ext manifests --write manifests`; do not edit.\n");
        for obj in objects {
            out.push_str("---\n");
            out.push_str(&serde_saphyr::to_string(&obj).expect("manifest serializes"));
        }
        out
    };
    parts().into_iter().map(|(name, objects)| (name, yaml(objects))).collect()
}

/// Every object of the install, in the order `files` writes them.
pub fn objects() -> Vec<Value> {
    parts().into_iter().flat_map(|(_, objects)| objects).collect()
}

/// `obj` labelled as part of this project's install, which is how `uninstall` and users find it.
pub fn labelled(mut obj: Value) -> Value {
    obj["metadata"]["labels"][PART_OF.0] = json!(PART_OF.1);
    obj
}

fn parts() -> Vec<(&'static str, Vec<Value>)> {
    let parts = [
        ("crds.yaml", crds()),
        ("rbac.yaml", rbac()),
        ("deployment.yaml", vec![cert_secret(), deployment(DEFAULT_IMAGE), service(), disruption_budget()]),
        ("webhooks.yaml", webhooks(&Endpoint::Service { ca_bundle_b64: None })),
    ];
    parts.into_iter().map(|(name, objects)| (name, objects.into_iter().map(labelled).collect())).collect()
}

#[cfg(test)]
#[path = "manifests_tests.rs"]
mod tests;
