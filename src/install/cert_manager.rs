//! `install --cert-manager`: cert-manager issues the webhook's serving certificate instead of the
//! controller. A chain of Issuers in our namespace (a self-signed Issuer signs a CA Certificate,
//! a CA Issuer signs the serving Certificate with it) keeps the Secret the controller serves
//! from, and cert-manager's CA injector keeps our webhook configurations' `caBundle` from that
//! Certificate. The controller then only reads both, and its RBAC says so.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::{Api, Client};
use serde_json::{Value, json};

use super::preflight::{CERT_MANAGER_GROUP as GROUP, CERT_MANAGER_VERSION as VERSION};
use crate::manifests::{self, CertWriter, NAMESPACE, PART_OF, WEBHOOK_CERT_SECRET};

const SELF_SIGNED_ISSUER: &str = "kueue-ext-selfsigned";
/// The CA's Certificate, its Secret, and the Issuer that signs with it.
const CA: &str = "kueue-ext-ca";
pub const SERVING_CERTIFICATE: &str = "kueue-ext-webhook";
/// What the injector reads: `<namespace>/<Certificate>` whose CA goes into the `caBundle`.
pub const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";
/// What cert-manager annotates every Secret it writes for a Certificate with.
pub const CERTIFICATE_NAME_ANNOTATION: &str = "cert-manager.io/certificate-name";
/// The controller's flag for serving a Secret that cert-manager writes.
pub const CONTROLLER_FLAG: &str = "--cert-manager";
/// Long, because renewing the CA breaks admission for a moment: the injector replaces the bundle
/// with the new CA alone while the replicas still serve a pair the old one signed.
const CA_DURATION: &str = "87600h";
/// cert-manager refuses a Certificate that lasts less.
const SHORTEST: Duration = Duration::from_secs(3600);

/// `--cert-validity` for cert-manager's serving Certificate: a Go duration of an hour or more.
pub fn check_validity(validity: &str) -> Result<(), String> {
    match crate::go_duration::parse_go_duration(validity) {
        Ok(duration) if duration >= SHORTEST => Ok(()),
        Ok(_) => Err(format!("--cert-validity={validity}: cert-manager issues no certificate shorter than 1h")),
        Err(e) => Err(format!("--cert-validity={validity}: {e}")),
    }
}

/// The Issuer chain and the serving Certificate, in the order they are applied: each names only
/// what comes before it. The serving pair lasts `validity` (cert-manager's default, 90 days,
/// without one) and is renewed, like the controller's own, two thirds into it.
pub fn objects(validity: Option<&str>) -> Vec<Value> {
    let issuer = |name: &str, spec: Value| {
        json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Issuer",
               "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})
    };
    let certificate = |name: &str, spec: Value| {
        let mut spec = spec;
        // rustls reads PKCS#8 keys of every algorithm; a new key on each renewal.
        spec["privateKey"] =
            json!({"algorithm": "ECDSA", "size": 256, "encoding": "PKCS8", "rotationPolicy": "Always"});
        // The Secret cert-manager makes is found, like everything of an install, by this label.
        spec["secretTemplate"] = json!({"labels": {PART_OF.0: PART_OF.1}});
        json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Certificate",
               "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})
    };
    let mut serving = certificate(
        SERVING_CERTIFICATE,
        json!({
            "secretName": WEBHOOK_CERT_SECRET,
            "commonName": manifests::WEBHOOK_SERVICE,
            "dnsNames": manifests::webhook_dns_names(),
            "usages": ["server auth", "digital signature"],
            "issuerRef": {"kind": "Issuer", "name": CA},
        }),
    );
    if let Some(validity) = validity {
        serving["spec"]["duration"] = json!(validity);
    }
    vec![
        issuer(SELF_SIGNED_ISSUER, json!({"selfSigned": {}})),
        certificate(
            CA,
            json!({
                "isCA": true, "commonName": CA, "secretName": CA, "duration": CA_DURATION,
                "issuerRef": {"kind": "Issuer", "name": SELF_SIGNED_ISSUER},
            }),
        ),
        issuer(CA, json!({"ca": {"secretName": CA}})),
        serving,
    ]
}

/// `webhook_configuration` with its `caBundle` left to cert-manager's injector.
pub fn injected(mut webhook_configuration: Value) -> Value {
    webhook_configuration["metadata"]["annotations"][INJECT_CA_FROM] =
        json!(format!("{NAMESPACE}/{SERVING_CERTIFICATE}"));
    webhook_configuration
}

/// The controller's Deployment changed to serve what cert-manager writes, and write nothing.
pub fn serving_only(deployment: &mut Value) {
    let args = &mut deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    args.as_array_mut().into_iter().for_each(|args| args.push(CONTROLLER_FLAG.into()));
}

/// Who writes the certificate of the install on the cluster, read from its Deployment; `None`
/// where there is none.
pub async fn installed_writer(client: &Client) -> Result<Option<CertWriter>, kube::Error> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let Some(deployment) = deployments.get_opt(manifests::DEPLOYMENT).await? else { return Ok(None) };
    let spec = deployment.spec.and_then(|spec| spec.template.spec).unwrap_or_default();
    let mut args = spec.containers.into_iter().flat_map(|c| c.args.unwrap_or_default());
    let reads_only = args.any(|arg| arg == CONTROLLER_FLAG);
    Ok(Some(if reads_only { CertWriter::CertManager } else { CertWriter::Controller }))
}

/// How an install says who writes the certificate.
pub fn describe(writer: CertWriter) -> &'static str {
    match writer {
        CertWriter::Controller => "the controller's own certificate management",
        CertWriter::CertManager => "cert-manager's certificate (--cert-manager)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_names_only_what_comes_before_it_and_ends_in_the_secret_the_controller_serves() {
        let objects = objects(Some("2160h"));
        let kinds: Vec<(&str, &str)> =
            objects.iter().map(|o| (o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap())).collect();
        assert_eq!(
            kinds,
            [("Issuer", SELF_SIGNED_ISSUER), ("Certificate", CA), ("Issuer", CA), ("Certificate", SERVING_CERTIFICATE)]
        );
        assert_eq!(objects[1]["spec"]["isCA"], true);
        assert_eq!(objects[1]["spec"]["issuerRef"]["name"], SELF_SIGNED_ISSUER);
        assert_eq!(objects[2]["spec"]["ca"]["secretName"], objects[1]["spec"]["secretName"]);
        let serving = &objects[3]["spec"];
        assert_eq!(serving["issuerRef"]["name"], CA);
        assert_eq!(serving["secretName"], WEBHOOK_CERT_SECRET);
        assert_eq!(serving["duration"], "2160h");
        assert_eq!(serving["dnsNames"], json!(manifests::webhook_dns_names()));
        assert!(serving["dnsNames"].as_array().unwrap().contains(&json!("kueue-ext-webhook.kueue-ext-system.svc")));
        assert_eq!(serving["privateKey"]["encoding"], "PKCS8");
        assert_eq!(serving["secretTemplate"]["labels"][PART_OF.0], PART_OF.1);
        assert!(objects.iter().all(|o| o["metadata"]["namespace"] == NAMESPACE));
        assert!(super::objects(None)[3]["spec"].get("duration").is_none(), "cert-manager's default");
    }

    #[test]
    fn the_injector_reads_the_serving_certificate() {
        let hooks = manifests::webhooks(&manifests::Endpoint::Service { ca_bundle_b64: None });
        let injected = injected(hooks[0].clone());
        assert_eq!(injected["metadata"]["annotations"][INJECT_CA_FROM], "kueue-ext-system/kueue-ext-webhook");
        assert!(injected["webhooks"][0]["clientConfig"].get("caBundle").is_none(), "left to the injector");
    }

    #[test]
    fn cert_manager_issues_for_an_hour_at_least() {
        assert!(check_validity("1h").is_ok());
        assert!(check_validity("2160h").is_ok());
        assert!(check_validity("90s").unwrap_err().contains("shorter than 1h"));
        assert!(check_validity("soon").is_err());
    }

    #[test]
    fn an_install_with_cert_manager_makes_no_secret_and_leaves_every_bundle_to_the_injector() {
        let kueue = super::super::KueueDeployment {
            namespace: "kueue-system".into(),
            name: "kueue-controller-manager".into(),
            service_account: "kueue-controller-manager".into(),
            config: None,
        };
        let options = super::super::Options {
            image: "example/controller:v1".into(),
            integrations: Vec::new(),
            cert_validity: Some("2160h".into()),
            cert_writer: CertWriter::CertManager,
            kueue_config: true,
            dry_run: false,
        };
        let objects = super::super::objects(&options, &kueue).unwrap();
        assert!(!objects.iter().any(|o| o["kind"] == "Secret"), "cert-manager makes it");
        let position = |kind: &str| objects.iter().position(|o| o["kind"] == kind).unwrap();
        assert!(position("Namespace") < position("Issuer"), "our namespace first");
        let hooks: Vec<&Value> =
            objects.iter().filter(|o| o["kind"].as_str().unwrap().ends_with("WebhookConfiguration")).collect();
        assert!(hooks.iter().all(|h| h["metadata"]["annotations"][INJECT_CA_FROM].is_string()));
        assert!(objects.iter().all(|o| o["metadata"]["labels"][PART_OF.0] == PART_OF.1), "found by uninstall");
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].as_array().unwrap();
        assert!(args.contains(&json!(CONTROLLER_FLAG)));
        assert!(!args.iter().any(|a| a.as_str().unwrap().starts_with("--cert-validity")), "the Certificate's duration");
    }

    #[test]
    fn the_deployment_serves_only() {
        let mut deployment = manifests::deployment("example/controller:v1");
        serving_only(&mut deployment);
        let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].as_array().unwrap();
        assert_eq!(args.last().unwrap(), CONTROLLER_FLAG);
        assert!(args.contains(&json!(format!("--cert-secret={WEBHOOK_CERT_SECRET}"))));
    }
}
