//! End-to-end, on a cluster this project did not create: a plain kind cluster (the kind binary
//! and node image built here, since no registry answers), Kueue's own manifests applied with
//! kubectl as Kueue's documentation says, queues made by hand. Then `install`, every kind of
//! ours run to Finished, the webhook's certificate renewed under admissions, `conformance`, and
//! `uninstall` putting Kueue's Configuration back as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use kube::{Client, ResourceExt};
use kueue_ext::sandbox::progress::Progress;
use serde_json::{Value, json};

use crate::common::{BIN, api, ensure_toolchain, eventually, text};

const CLUSTER: &str = "kueue-ext-e2e-own";
const CONTEXT: &str = "kind-kueue-ext-e2e-own";

/// A kind cluster made with the kind CLI, deleted when dropped.
struct PlainKindCluster {
    kind: PathBuf,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl PlainKindCluster {
    async fn create() -> (PlainKindCluster, PathBuf) {
        ensure_toolchain();
        let progress = Progress::stderr();
        let images = kueue_ext::sandbox::local_kind_images(&progress).await.expect("the local kind images build");
        let kind = kueue_ext::sandbox::ensure_kind_cli(&progress).await.expect("kind builds");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("kind.yaml");
        std::fs::write(&config, kueue_ext::sandbox::kind_config(None, true)).unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        // A cluster of this name left by an earlier, killed run.
        let _ = Command::new(&kind).args(["delete", "cluster", "--name", CLUSTER]).output();
        let created = Command::new(&kind)
            .args(["create", "cluster", "--name", CLUSTER, "--image", &images.node_image, "--config"])
            .arg(&config)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .output()
            .unwrap();
        assert!(created.status.success(), "kind create cluster: {}", text(&created));
        (PlainKindCluster { kind, kubeconfig, _dir: dir }, images.kueue_manifests)
    }

    async fn client(&self) -> Client {
        kueue_ext::kube_util::client_for(&self.kubeconfig, CONTEXT).await.unwrap()
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(kubectl()).arg("--kubeconfig").arg(&self.kubeconfig).args(args).output().unwrap()
    }

    /// The plugin against this cluster, as a user names it.
    fn plugin(&self, command: &str, args: &[&str]) -> Output {
        let kubeconfig = self.kubeconfig.to_str().unwrap();
        Command::new(BIN)
            .arg(command)
            .args(["--kubeconfig", kubeconfig, "--context", CONTEXT])
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for PlainKindCluster {
    fn drop(&mut self) {
        let _ = Command::new(&self.kind).args(["delete", "cluster", "--name", CLUSTER]).output();
    }
}

fn kubectl() -> PathBuf {
    let path = Command::new(BIN).args(["toolchain", "path"]).output().unwrap();
    PathBuf::from(String::from_utf8_lossy(&path.stdout).trim()).join("kubectl")
}

fn ok(output: &Output, what: &str) -> String {
    assert!(output.status.success(), "{what} failed: {}", text(output));
    text(output)
}

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path).display().to_string()
}

/// Queues as Kueue's documentation has a user make them: one flavor, one ClusterQueue, one
/// LocalQueue in `default`.
const QUEUES: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "2"}
      - {name: memory, nominalQuota: 2Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cluster-queue}
"#;

fn probe_job(n: usize) -> Value {
    json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "ExternalJob",
        "metadata": {"name": format!("renewal-probe-{n}"), "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{
            "name": "main", "image": "kueue-ext.local/busybox:1",
            "resources": {"requests": {"cpu": "100m"}}}]}}}]},
    })
}

/// The Secret's certificate's not-before, once the controller wrote one.
async fn not_before(secrets: &Api<Secret>) -> Result<String, String> {
    let secret = secrets.get(kueue_ext::manifests::WEBHOOK_CERT_SECRET).await.map_err(|e| e.to_string())?;
    secret.annotations().get("kueue-ext.dev/not-before").cloned().ok_or_else(|| "no certificate yet".to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn install_on_a_kind_cluster_with_kueues_own_manifests_runs_every_kind_and_uninstall_puts_kueue_back() {
    let (cluster, kueue_manifests) = PlainKindCluster::create().await;
    let client = cluster.client().await;
    let manifests = kueue_manifests.to_str().unwrap();
    ok(&cluster.kubectl(&["apply", "--server-side", "-f", manifests]), "kubectl apply Kueue's manifests");
    let available = ["-n", "kueue-system", "wait", "--for=condition=Available", "deploy/kueue-controller-manager"];
    ok(&cluster.kubectl(&[&available[..], &["--timeout=300s"]].concat()), "waiting for Kueue");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "kueue-system");
    let kueue_config = || async {
        let config_map = config_maps.get("kueue-manager-config").await.unwrap();
        config_map.data.unwrap()["controller_manager_config.yaml"].clone()
    };
    let before = kueue_config().await;

    // Refused before anything is written: a configured kind the cluster does not serve.
    let refused =
        cluster.plugin("install", &["--integrations", &repo("samples/addons/jobset/jobset-integration.yaml")]);
    assert!(!refused.status.success() && text(&refused).contains("JobSet"), "{}", text(&refused));
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt(kueue_ext::manifests::NAMESPACE).await.unwrap().is_none(), "nothing half-applied");

    let integrations = repo("samples/integrations/job-integration.yaml");
    let install = ["--integrations", integrations.as_str(), "--cert-validity=90s"];
    let said = ok(&cluster.plugin("install", &install), "install");
    assert!(said.contains("(Kueue's Configuration) configured"), "{said}");
    let namespace = namespaces.get(kueue_ext::manifests::NAMESPACE).await.unwrap();
    assert_eq!(namespace.labels()["pod-security.kubernetes.io/enforce"], "restricted");
    let config: Value = serde_saphyr::from_str(&kueue_config().await).unwrap();
    assert!(config["integrations"]["externalFrameworks"].as_array().unwrap().contains(&json!("Job.v1.batch")));
    assert!(!config["integrations"]["frameworks"].as_array().unwrap().contains(&json!("batch/job")), "one owner");

    let again = ok(&cluster.plugin("install", &install), "install again");
    assert!(!again.contains(" created") && !again.contains(" configured"), "a second install changes nothing: {again}");
    assert!(again.contains("already integrates"), "{again}");

    let queues = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(queues.path(), QUEUES).unwrap();
    ok(&cluster.kubectl(&["apply", "--server-side", "-f", queues.path().to_str().unwrap()]), "queues");

    // Admissions across a renewal of the webhook's certificate, while the samples run.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), kueue_ext::manifests::NAMESPACE);
    let first = not_before(&secrets).await.expect("install waits for the certificate");
    let submit = {
        let kubeconfig = cluster.kubeconfig.clone();
        let files =
            ["samples/externaljob-train-small.yaml", "samples/wrappedjob-job.yaml", "samples/integrations/job.yaml"];
        std::thread::spawn(move || {
            let mut command = Command::new(BIN);
            command.args(["submit", "--kubeconfig", kubeconfig.to_str().unwrap(), "--context", CONTEXT, "--wait=6m"]);
            files.iter().for_each(|file| {
                command.args(["-f", &repo(file)]);
            });
            command.output().unwrap()
        })
    };
    let probes = api(&client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let (mut admitted, started) = (0, Instant::now());
    let renewed = loop {
        let job: DynamicObject = serde_json::from_value(probe_job(admitted)).unwrap();
        probes.create(&dry_run, &job).await.unwrap_or_else(|e| panic!("admission {admitted} failed: {e}"));
        admitted += 1;
        match not_before(&secrets).await {
            Ok(now) if now != first => break now,
            _ if started.elapsed() > Duration::from_secs(180) => panic!("no renewal within 180s of a 90s certificate"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    // The replicas reload the new pair; admissions go on through it.
    for n in admitted..admitted + 25 {
        let job: DynamicObject = serde_json::from_value(probe_job(n)).unwrap();
        probes.create(&dry_run, &job).await.unwrap_or_else(|e| panic!("admission {n} after the renewal failed: {e}"));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("certificate renewed ({first} -> {renewed}) under {admitted} admissions, none failed");
    let submitted = submit.join().unwrap();
    let said = ok(&submitted, "submit --wait");
    assert!(said.contains("succeeded") || said.contains("Finished"), "{said}");

    let conformance = cluster.plugin("conformance", &["--kind", "ExternalJob.v1alpha1.kueue-ext.dev"]);
    ok(&conformance, "conformance on the plain kind cluster");

    let refused = cluster.plugin("uninstall", &[]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(text(&refused).contains("still exist") && text(&refused).contains("in default"), "{}", text(&refused));
    ok(
        &cluster.kubectl(&["delete", "-n", "default", "externaljobs,wrappedjobs,jobs", "--all", "--wait"]),
        "deleting the jobs",
    );
    let said = ok(&cluster.plugin("uninstall", &[]), "uninstall");
    assert!(said.contains("entries taken out"), "{said}");
    assert!(namespaces.get_opt(kueue_ext::manifests::NAMESPACE).await.unwrap().is_none());
    let leftovers = cluster.kubectl(&[
        "get",
        "clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations",
        "-l",
        "app.kubernetes.io/part-of=kueue-ext",
        "-o",
        "name",
    ]);
    assert_eq!(ok(&leftovers, "listing what is left").trim(), "", "uninstall leaves nothing of ours");
    let after = kueue_config().await;
    assert_eq!(after, before, "Kueue's Configuration as it was, line for line");
    let annotations = config_maps.get("kueue-manager-config").await.unwrap().metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key(kueue_ext::install::kueue_config::ADDED_ANNOTATION));
    eventually("Kueue to roll back to its own Configuration", Duration::from_secs(300), || async {
        let out = cluster.kubectl(&[&available[..], &["--timeout=5s"]].concat());
        if out.status.success() { Ok(()) } else { Err(text(&out)) }
    })
    .await;
}
