//! End-to-end: the in-cluster install of `manifests/` (what the kind runtime deploys) is
//! accepted by a real API server — CRDs, RBAC, the controller's Deployment and Service, and the
//! webhook configurations, applied with server-side dry-run to a process-runtime cluster — and
//! the Deployment runs a command line our binary accepts.

use crate::common::Sandbox;
use clap::Parser;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use kueue_ext::cli::{Cli, Command};
use serde_json::Value;

/// The documents of one file of `manifests/`.
fn documents(file: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    docs.into_iter().filter(Value::is_object).collect()
}

/// Server-side apply with `dryRun=All`: the API server validates and admits the object, and
/// stores nothing.
async fn dry_run_apply(client: &kube::Client, obj: &Value) -> Result<(), String> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (resource, caps) = discovery::pinned_kind(client, &GroupVersionKind::gvk(group, version, kind))
        .await
        .map_err(|e| format!("{kind}/{name}: {e}"))?;
    let api: Api<DynamicObject> = match (caps.scope, obj["metadata"]["namespace"].as_str()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &resource),
        (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    };
    let params = PatchParams { dry_run: true, ..PatchParams::apply("kueue-ext-e2e-dry-run").force() };
    api.patch(name, &params, &Patch::Apply(obj)).await.map(drop).map_err(|e| format!("{kind}/{name}: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_in_cluster_manifests_are_accepted_by_a_real_api_server() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;

    let files = ["crds.yaml", "rbac.yaml", "deployment.yaml", "webhooks.yaml"];
    let mut kinds = Vec::new();
    for file in files {
        for mut obj in documents(file) {
            if obj["kind"].as_str().is_some_and(|k| k.ends_with("WebhookConfiguration")) {
                // `up` registered these by URL; checked under a fresh name, as on a cluster
                // without them, rather than merged into the sandbox's own.
                let name = format!("{}-in-cluster", obj["metadata"]["name"].as_str().unwrap_or_default());
                obj["metadata"]["name"] = serde_json::json!(name);
            }
            dry_run_apply(&client, &obj).await.unwrap_or_else(|e| panic!("manifests/{file}: {e}"));
            kinds.push(obj["kind"].as_str().unwrap_or_default().to_string());
        }
    }
    for expected in [
        "CustomResourceDefinition",
        "ClusterRole",
        "Deployment",
        "Service",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        assert!(kinds.iter().any(|k| k == expected), "manifests/ has no {expected}: {kinds:?}");
    }

    // The dry run does validate: a Deployment the API server must refuse is refused.
    let mut broken = documents("deployment.yaml").into_iter().find(|d| d["kind"] == "Deployment").unwrap();
    broken["spec"]["replicas"] = serde_json::json!(-1);
    let err = dry_run_apply(&client, &broken).await.unwrap_err();
    assert!(err.contains("replicas"), "{err}");
}

#[test]
fn the_deployment_runs_a_command_line_the_controller_accepts() {
    let deployment = documents("deployment.yaml").into_iter().find(|d| d["kind"] == "Deployment").unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> =
        container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let cli = Cli::try_parse_from(std::iter::once("kubectl-kueue_ext".to_string()).chain(args.iter().cloned()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(matches!(cli.command, Some(Command::Controller(_))), "{args:?} is not the controller command");
    // The controller keeps its certificate in the (empty) Secret the install makes beside it.
    let secret = documents("deployment.yaml").into_iter().find(|d| d["kind"] == "Secret").unwrap();
    let name = secret["metadata"]["name"].as_str().unwrap();
    assert!(args.contains(&format!("--cert-secret={name}")), "{args:?} vs Secret {name}");
    assert!(secret.get("data").is_none(), "an install owns no key of the Secret the controller writes");
}
