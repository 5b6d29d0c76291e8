use super::*;
use crate::integrations::registry::KindRegistry;

#[test]
fn manifests_dir_matches_the_code() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    for (name, text) in files() {
        let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(on_disk == text, "manifests/{name} is stale: run `cargo run -- manifests --write manifests`");
    }
}

#[test]
fn controller_rbac_is_least_privilege() {
    for rules in [controller_rules(), kueue_rules()] {
        for rule in rules.as_array().unwrap() {
            for field in ["apiGroups", "resources", "verbs"] {
                assert!(!rule[field].as_array().unwrap().contains(&json!("*")), "wildcard {field} in {rule}");
            }
            assert!(!rule["resources"].as_array().unwrap().contains(&json!("secrets")), "{rule}");
        }
    }
}

#[test]
fn webhooks_fail_closed_and_point_at_the_endpoint() {
    let hooks = webhooks(&Endpoint::Url { base: "https://127.0.0.1:9".into(), ca_bundle_b64: "Q0E=" });
    let mutating = &hooks[0]["webhooks"][0];
    assert_eq!(mutating["failurePolicy"], "Fail");
    assert_eq!(mutating["clientConfig"]["url"], "https://127.0.0.1:9/mutate-kueue-ext-dev-v1alpha1-externaljob");
    assert_eq!(hooks[1]["webhooks"][0]["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
    let in_cluster = webhooks(&Endpoint::Service { ca_bundle_b64: Some("Q0E=") });
    let config = &in_cluster[1]["webhooks"][1]["clientConfig"];
    assert_eq!(config["caBundle"], "Q0E=");
    assert_eq!(config["service"]["name"], WEBHOOK_SERVICE);
    assert_eq!(service()["spec"]["ports"][0]["port"], config["service"]["port"]);
}

#[test]
fn a_deployment_with_integrations_mounts_and_reads_the_file() {
    let mut deployment = deployment("example/controller:v1");
    read_integrations(&mut deployment);
    let pod = &deployment["spec"]["template"]["spec"];
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert_eq!(args.last().unwrap(), "--integrations=/config/integrations.yaml");
    assert_eq!(pod["containers"][0]["volumeMounts"][0]["mountPath"], "/config");
    let integrations: Vec<Integration> =
        KindRegistry::built_in().kinds().iter().map(|k| k.description().as_ref().clone()).collect();
    let config_map = integrations_config_map(&integrations).unwrap();
    assert_eq!(pod["volumes"][0]["configMap"]["name"], config_map["metadata"]["name"]);
    let file = config_map["data"]["integrations.yaml"].as_str().unwrap();
    let read = config::IntegrationConfig::parse("integrations.yaml", file).unwrap();
    assert_eq!(read.integrations, integrations, "the ConfigMap holds the file the controller reads");
}

#[test]
fn the_deployment_runs_unprivileged_behind_its_service() {
    let deployment = deployment("example/controller:v1");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "example/controller:v1");
    assert_eq!(pod["serviceAccountName"], SERVICE_ACCOUNT);
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(container["resources"]["requests"]["cpu"].is_string());
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert!(container["args"].as_array().unwrap().contains(&json!("--cert-secret=kueue-ext-webhook-cert")));
    assert_eq!(service()["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"]);
    assert_eq!(deployment["spec"]["template"]["metadata"]["labels"], deployment["spec"]["selector"]["matchLabels"]);
}

/// The rules of every Role and ClusterRole of `objects` on `resource`.
fn rules_on(objects: &[Value], resource: &str) -> Vec<Value> {
    let roles = objects.iter().filter(|o| o["kind"] == "Role" || o["kind"] == "ClusterRole");
    let rules = roles.flat_map(|role| role["rules"].as_array().cloned().unwrap_or_default());
    rules.filter(|rule| rule["resources"].as_array().unwrap().contains(&json!(resource))).collect()
}

#[test]
fn under_cert_manager_the_controller_reads_its_certificate_and_the_bundles_and_writes_neither() {
    let own = rbac_for_kueue(KUEUE_SERVICE_ACCOUNT, CertWriter::Controller);
    let cert_manager = rbac_for_kueue(KUEUE_SERVICE_ACCOUNT, CertWriter::CertManager);
    for resource in ["secrets", "mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
        let reads = rules_on(&cert_manager, resource);
        assert_eq!(reads.len(), 1, "{resource}");
        assert_eq!(reads[0]["verbs"], json!(READ), "{resource}");
        assert!(reads[0]["resourceNames"].is_array(), "only ours: {resource}");
        let writes = rules_on(&own, resource);
        assert!(writes[0]["verbs"].as_array().unwrap().contains(&json!("patch")), "{resource}");
        assert_eq!(writes[0]["resourceNames"], reads[0]["resourceNames"]);
    }
    let other = |objects: &[Value]| -> Vec<Value> {
        objects
            .iter()
            .filter(|o| o["metadata"]["name"] != CERT_ROLE && o["metadata"]["name"] != WEBHOOK_CONFIGURATION_ROLE)
            .cloned()
            .collect()
    };
    assert_eq!(other(&own), other(&cert_manager), "nothing else differs");
}
