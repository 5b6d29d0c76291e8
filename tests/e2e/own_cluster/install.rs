//! `install` on a plain kind cluster with Kueue's own manifests: every kind of ours run to
//! Finished, the webhook's certificate renewed under admissions, an upgrade rolled under
//! admissions, `conformance`, and `uninstall` putting Kueue's Configuration back as it was.

use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};

use super::{KUEUE_AVAILABLE, PlainKindCluster, PlainKindClusters, ok, repo};
use crate::common::{BIN, api, eventually, one_kind_test_at_a_time, text};

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

/// A cluster whose Kueue serves only `v1beta1` (as Kueue did before v0.15): `install` names the
/// versions served and writes nothing. The old API is a CRD of Kueue's group at that version.
async fn refused_by_a_kueue_that_predates_v1beta2(cluster: &PlainKindCluster<'_>) {
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client().await);
    let old: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusterqueues.kueue.x-k8s.io"},
        "spec": {"group": "kueue.x-k8s.io", "scope": "Cluster",
                 "names": {"kind": "ClusterQueue", "plural": "clusterqueues", "singular": "clusterqueue", "listKind": "ClusterQueueList"},
                 "versions": [{"name": "v1beta1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    }))
    .unwrap();
    let name = old.name_any();
    crds.create(&PostParams::default(), &old).await.unwrap();
    await_condition(crds.clone(), &name, conditions::is_crd_established()).await.unwrap();
    let refused = cluster.plugin("install", &["--image", "example.com/kueue-ext:v1"]);
    let said = text(&refused);
    assert!(!refused.status.success() && said.contains("Kueue is too old") && said.contains("v1beta1"), "{said}");
    let namespaces: Api<Namespace> = Api::all(cluster.client().await);
    assert!(namespaces.get_opt(kueue_ext::manifests::NAMESPACE).await.unwrap().is_none(), "nothing half-applied");
    let uid = crds.get(&name).await.unwrap().uid();
    crds.delete(&name, &Default::default()).await.unwrap();
    await_condition(crds, &name, conditions::is_deleted(&uid.unwrap())).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn install_on_a_kind_cluster_with_kueues_own_manifests_runs_every_kind_and_uninstall_puts_kueue_back() {
    let clusters = PlainKindClusters::create(&["kueue-ext-e2e-own"], one_kind_test_at_a_time).await;
    let cluster = clusters.cluster("kueue-ext-e2e-own");
    let client = cluster.client().await;
    // Refused, naming what is missing, on a cluster without Kueue.
    let refused = cluster.plugin("install", &["--image", "example.com/kueue-ext:v1"]);
    assert!(!refused.status.success() && text(&refused).contains("Kueue is not installed"), "{}", text(&refused));
    refused_by_a_kueue_that_predates_v1beta2(&cluster).await;
    cluster.apply_kueue(&clusters.kueue_manifests);
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
    // What would be applied, Kueue's ConfigMap last; a server dry run; neither writes anything.
    let printed =
        ok(&cluster.plugin("install", &[&install[..], &["--dry-run=client", "-o", "yaml"]].concat()), "dry run");
    let documents: Vec<Value> = serde_saphyr::from_multiple(&printed).unwrap();
    assert!(documents.iter().any(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "kueue-ext-controller"));
    let kueue_change = documents.last().unwrap();
    assert_eq!(kueue_change["metadata"]["name"], "kueue-manager-config", "{kueue_change}");
    assert!(kueue_change["data"]["controller_manager_config.yaml"].as_str().unwrap().contains("Job.v1.batch"));
    ok(&cluster.plugin("install", &[&install[..], &["--dry-run=server"]].concat()), "server dry run");
    assert!(namespaces.get_opt(kueue_ext::manifests::NAMESPACE).await.unwrap().is_none(), "a dry run writes nothing");
    assert_eq!(kueue_config().await, before, "a dry run leaves Kueue's Configuration alone");
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

    cluster.make_queues();

    // Admissions across a renewal of the webhook's certificate, while the samples run.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), kueue_ext::manifests::NAMESPACE);
    let first = not_before(&secrets).await.expect("install waits for the certificate");
    let submit = {
        let (kubeconfig, context) = (cluster.kubeconfig.to_path_buf(), cluster.context.clone());
        let files =
            ["samples/externaljob-train-small.yaml", "samples/wrappedjob-job.yaml", "samples/integrations/job.yaml"];
        std::thread::spawn(move || {
            let mut command = Command::new(BIN);
            command.args(["submit", "--kubeconfig", kubeconfig.to_str().unwrap(), "--context", &context, "--wait=6m"]);
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
    eprintln!("certificate renewed ({first} -> {renewed}) under {admitted} admissions, none failed");
    // Admissions go on after the renewal, through an upgrade in place (here: a new certificate
    // validity, so a new pod template) that rolls one replica at a time until it is done.
    let upgrade = {
        let (kubeconfig, context, integrations) =
            (cluster.kubeconfig.to_path_buf(), cluster.context.clone(), integrations.clone());
        std::thread::spawn(move || {
            let kubeconfig = kubeconfig.to_str().unwrap().to_string();
            let args = ["install", "--kubeconfig", &kubeconfig, "--context", &context, "--integrations", &integrations];
            Command::new(BIN).args(args).arg("--cert-validity=100s").output().unwrap()
        })
    };
    let mut during_roll = 0;
    while !upgrade.is_finished() {
        let job: DynamicObject = serde_json::from_value(probe_job(during_roll)).unwrap();
        probes
            .create(&dry_run, &job)
            .await
            .unwrap_or_else(|e| panic!("admission {during_roll} during the roll failed: {e}"));
        during_roll += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rolled = ok(&upgrade.join().unwrap(), "install of a changed controller");
    assert!(rolled.contains("deployment.apps/kueue-ext-controller configured"), "{rolled}");
    eprintln!("{during_roll} admissions during the controller's roll, none failed");
    let submitted = submit.join().unwrap();
    let said = ok(&submitted, "submit --wait");
    assert!(said.contains("succeeded") || said.contains("Finished"), "{said}");

    let conformance = cluster.plugin("conformance", &["--kind", "ExternalJob.v1alpha1.kueue-ext.dev"]);
    ok(&conformance, "conformance on the plain kind cluster");
    // Its namespaces go away in the background, their jobs with them.
    let everywhere = api(&client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", None);
    eventually("conformance's jobs to be gone", Duration::from_secs(180), || async {
        let jobs = everywhere.list(&Default::default()).await.map_err(|e| e.to_string())?;
        let left: Vec<String> = jobs.items.iter().filter_map(|j| j.namespace()).filter(|ns| ns != "default").collect();
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    })
    .await;

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
        let out = cluster.kubectl(&[&KUEUE_AVAILABLE[..], &["--timeout=5s"]].concat());
        if out.status.success() { Ok(()) } else { Err(text(&out)) }
    })
    .await;
}
