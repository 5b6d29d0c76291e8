//! `install --cert-manager` on a plain kind cluster with Kueue's own manifests and a real
//! cert-manager: refused while cert-manager is absent; then cert-manager's certificate and CA
//! injection serve our webhook, an ExternalJob runs to the end, a forced renewal goes by under
//! admissions, and `uninstall` leaves nothing of ours.
//!
//! cert-manager is v1.11.5, the last release whose programs lie in its main module: the module
//! proxy serves no later one's (their `cmd/*` are modules of their own).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use kueue_ext::install::cert_manager::{CERTIFICATE_NAME_ANNOTATION, INJECT_CA_FROM, SERVING_CERTIFICATE};
use kueue_ext::manifests::{MUTATING_WEBHOOK, NAMESPACE, VALIDATING_WEBHOOK, WEBHOOK_CERT_SECRET};
use serde_json::{Value, json};

use super::{PlainKindCluster, PlainKindClusters, ok, repo};
use crate::common::{api, eventually, one_beside_the_kind_lane, text};

const MODULE: &str = "github.com/cert-manager/cert-manager";
const VERSION: &str = "v1.11.5";
/// Where the node holds the programs, which the pods mount.
const IN_NODE: &str = "/opt/cert-manager";
const CLUSTER: &str = "kueue-ext-e2e-cm";

/// cert-manager's controller and CA injector built from its module with its own go.mod (kept
/// between runs), and the module's directory.
fn build_cert_manager() -> (PathBuf, PathBuf) {
    let download = Command::new("go")
        .args(["mod", "download", "-json", &format!("{MODULE}@{VERSION}")])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let module: Value = serde_json::from_slice(&download.stdout).unwrap_or_else(|_| panic!("{}", text(&download)));
    let dir = PathBuf::from(module["Dir"].as_str().unwrap_or_else(|| panic!("go mod download: {module}")));
    let bin = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cert-manager-{VERSION}"));
    if !(bin.join("controller").exists() && bin.join("cainjector").exists()) {
        let started = Instant::now();
        // Before the test's turn, niced as the suite's other builds: sandboxes run meanwhile.
        let built = Command::new("nice")
            .args(["-n", "15", "go", "build", "-mod=readonly", "-trimpath", "-ldflags=-s -w", "-o"])
            .arg(format!("{}/", bin.display()))
            .args(["./cmd/controller", "./cmd/cainjector"])
            .env("CGO_ENABLED", "0")
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(built.status.success(), "go build cert-manager: {}", text(&built));
        eprintln!("cert-manager {VERSION} built in {:.0?}", started.elapsed());
    }
    (bin, dir)
}

/// Runs cert-manager on `cluster`: its CRDs from the module (their only Helm templating is in
/// labels), our manifests for the rest, the programs copied into the node.
fn install_cert_manager(cluster: &PlainKindCluster<'_>, (bin, module): (&Path, &Path)) {
    let node = format!("{CLUSTER}-control-plane");
    ok(&Command::new("docker").args(["exec", &node, "mkdir", "-p", IN_NODE]).output().unwrap(), "mkdir in node");
    for program in ["controller", "cainjector"] {
        let copied = Command::new("docker")
            .arg("cp")
            .arg(bin.join(program))
            .arg(format!("{node}:{IN_NODE}/{program}"))
            .output()
            .unwrap();
        ok(&copied, "docker cp");
    }
    let crds = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(module.join("deploy/crds")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let rendered = text
                .replace(r#"{{ template "cert-manager.name" . }}"#, "cert-manager")
                .replace("{{ .Release.Name }}", "cert-manager");
            std::fs::write(crds.path().join(path.file_name().unwrap()), rendered).unwrap();
        }
    }
    ok(&cluster.kubectl(&["apply", "--server-side", "-f", crds.path().to_str().unwrap()]), "cert-manager's CRDs");
    let ours = repo("tests/e2e/own_cluster/cert_manager.yaml");
    ok(&cluster.kubectl(&["apply", "--server-side", "-f", &ours]), "cert-manager");
    let wait = ["-n", "cert-manager", "wait", "--for=condition=Available", "deploy", "--all", "--timeout=180s"];
    ok(&cluster.kubectl(&wait), "waiting for cert-manager");
}

/// The CA in each webhook of our two configurations' `caBundle`.
async fn ca_bundles(client: &kube::Client) -> Vec<Vec<u8>> {
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone()).get(MUTATING_WEBHOOK).await.unwrap();
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone()).get(VALIDATING_WEBHOOK).await.unwrap();
    let annotated = [&mutating.metadata, &validating.metadata].map(|m| m.annotations.clone().unwrap_or_default());
    for annotations in annotated {
        assert_eq!(annotations[INJECT_CA_FROM], format!("{NAMESPACE}/{SERVING_CERTIFICATE}"));
    }
    let bundles = mutating.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config.ca_bundle);
    let validating = validating.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config.ca_bundle);
    bundles.chain(validating).map(|b| b.map(|b| b.0).unwrap_or_default()).collect()
}

fn secret_data(secret: &Secret, key: &str) -> Vec<u8> {
    secret.data.as_ref().and_then(|d| d.get(key)).map(|b| b.0.clone()).unwrap_or_default()
}

fn probe_job(n: usize) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
        "metadata": {"name": format!("cm-probe-{n}"), "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{
            "name": "main", "image": "kueue-ext.local/busybox:1", "resources": {"requests": {"cpu": "100m"}}}]}}}]},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn install_with_cert_manager_serves_its_certificate_through_a_renewal_and_uninstall_removes_it() {
    let built = build_cert_manager();
    let clusters = PlainKindClusters::create(&[CLUSTER], one_beside_the_kind_lane).await;
    let cluster = clusters.cluster(CLUSTER);
    let client = cluster.client().await;
    cluster.apply_kueue(&clusters.kueue_manifests);
    let namespaces: Api<Namespace> = Api::all(client.clone());

    // Refused, naming the cluster and what is missing, before anything is written.
    let refused = cluster.plugin("install", &["--cert-manager"]);
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("cert-manager is not installed") && said.contains("Certificate or Issuer"), "{said}");
    assert!(said.contains(&format!("kind-{CLUSTER}")), "names the cluster: {said}");
    assert!(namespaces.get_opt(NAMESPACE).await.unwrap().is_none(), "nothing half-applied");

    let started = Instant::now();
    install_cert_manager(&cluster, (&built.0, &built.1));
    eprintln!("cert-manager up in {:.0?}", started.elapsed());

    let printed = ok(&cluster.plugin("install", &["--cert-manager", "--dry-run=client", "-o", "yaml"]), "dry run");
    let documents: Vec<Value> = serde_saphyr::from_multiple(&printed).unwrap();
    let kinds: Vec<&str> = documents.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "Issuer").count(), 2, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "Certificate").count(), 2, "{kinds:?}");
    assert!(!kinds.contains(&"Secret"), "cert-manager makes the Secret: {kinds:?}");

    let started = Instant::now();
    let said = ok(&cluster.plugin("install", &["--cert-manager"]), "install --cert-manager");
    eprintln!("install --cert-manager answered in {:.0?}", started.elapsed());
    assert!(said.contains("certificate.cert-manager.io/kueue-ext-webhook created"), "{said}");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let secret = secrets.get(WEBHOOK_CERT_SECRET).await.unwrap();
    assert!(secret.metadata.annotations.unwrap_or_default().contains_key(CERTIFICATE_NAME_ANNOTATION));
    let ca = secret_data(&secrets.get(WEBHOOK_CERT_SECRET).await.unwrap(), "ca.crt");
    let bundles = ca_bundles(&client).await;
    assert!(!ca.is_empty() && bundles.iter().all(|b| *b == ca), "every webhook trusts cert-manager's CA");

    let again = ok(&cluster.plugin("install", &["--cert-manager"]), "install --cert-manager again");
    assert!(!again.contains(" created") && !again.contains(" configured"), "a second install changes nothing: {again}");
    let switch = cluster.plugin("install", &[]);
    assert!(!switch.status.success() && text(&switch).contains("switching in place"), "{}", text(&switch));

    // Least privilege: the controller reads its certificate and the caBundles, and writes neither.
    let controller = format!("--as=system:serviceaccount:{NAMESPACE}:kueue-ext-controller");
    for (verb, object) in [
        ("patch", format!("mutatingwebhookconfigurations/{MUTATING_WEBHOOK}")),
        ("update", format!("secrets/{WEBHOOK_CERT_SECRET}")),
    ] {
        let asked = cluster.kubectl(&["auth", "can-i", verb, &object, "-n", NAMESPACE, &controller]);
        // stdout alone: kubectl warns on stderr that a cluster-scoped resource took `-n`.
        assert_eq!(String::from_utf8_lossy(&asked.stdout).trim(), "no", "{verb} {object}");
    }

    cluster.make_queues();
    let submitted = cluster.plugin("submit", &["-f", &repo("samples/externaljob-train-small.yaml"), "--wait=4m"]);
    let said = ok(&submitted, "submit --wait");
    assert!(said.contains("succeeded") || said.contains("Finished"), "{said}");

    // A renewal as `cmctl renew` asks for one: the Certificate's Issuing condition set.
    let before = secret_data(&secrets.get(WEBHOOK_CERT_SECRET).await.unwrap(), "tls.crt");
    let issuing = json!({"status": {"conditions": [{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
        "message": "renewal forced by the e2e test", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}});
    let renew = [
        "patch",
        "certificate.cert-manager.io",
        SERVING_CERTIFICATE,
        "-n",
        NAMESPACE,
        "--subresource=status",
        "--type=merge",
        "-p",
        &issuing.to_string(),
    ];
    ok(&cluster.kubectl(&renew), "forcing a renewal");
    let probes = api(&client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let (mut admitted, mut renewed_at) = (0, None);
    let started = Instant::now();
    // Back to back through the renewal and 20 s beyond it, while the replicas take the new pair
    // up: each admission is the next probe, no pause between them.
    while renewed_at.is_none_or(|at: Instant| at.elapsed() < Duration::from_secs(20)) {
        let job = probe_job(admitted);
        probes.create(&dry_run, &job).await.unwrap_or_else(|e| panic!("admission {admitted} failed: {e}"));
        admitted += 1;
        if renewed_at.is_none() && secret_data(&secrets.get(WEBHOOK_CERT_SECRET).await.unwrap(), "tls.crt") != before {
            renewed_at = Some(Instant::now());
            eprintln!("cert-manager renewed the serving certificate {:.0?} after it was asked", started.elapsed());
        }
        assert!(started.elapsed() < Duration::from_secs(180), "no renewal within 180s");
    }
    eprintln!("{admitted} admissions through the renewal, none failed");
    assert!(ca_bundles(&client).await.iter().all(|b| *b == ca), "the CA stays: only the serving pair is renewed");

    ok(&cluster.kubectl(&["delete", "-n", "default", "externaljobs", "--all", "--wait"]), "deleting the jobs");
    let said = ok(&cluster.plugin("uninstall", &[]), "uninstall");
    assert!(said.contains("certificate.cert-manager.io/kueue-ext-webhook deleted"), "{said}");
    assert!(said.contains("issuer.cert-manager.io/kueue-ext-selfsigned deleted"), "{said}");
    eventually("our namespace to be gone", Duration::from_secs(60), || async {
        match namespaces.get_opt(NAMESPACE).await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let leftovers = cluster.kubectl(&[
        "get",
        "clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations,certificates,issuers",
        "-A",
        "-l",
        "app.kubernetes.io/part-of=kueue-ext",
        "-o",
        "name",
    ]);
    assert_eq!(ok(&leftovers, "listing what is left").trim(), "", "uninstall leaves nothing of ours");
}
