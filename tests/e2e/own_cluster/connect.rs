//! MultiKueue between three plain kind clusters: `install` on each, `connect` of one worker,
//! jobs of our kinds dispatched to it and Finished, `doctor` clean, a LocalQueue gone from the
//! worker named by `doctor` and brought back by `connect`; a second worker connected later beside
//! the first, the first disconnected alone while a job runs on the second; then `disconnect` and
//! `uninstall` leaving nothing of ours.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use kueue_ext::sandbox::progress::Progress;
use kueue_ext::sandbox::{Addon, prepare_kind_images};

use super::{PlainKindCluster, PlainKindClusters, ok, repo};
use crate::common::{eventually, kind_images_built, one_beside_the_kind_lane, text, workloads};

const MANAGER: &str = "kueue-ext-e2e-manager";
const WORKER: &str = "kueue-ext-e2e-worker";
const SECOND_WORKER: &str = "kueue-ext-e2e-worker2";

/// The workers the manager's MultiKueueConfig lists.
fn listed_workers(manager: &PlainKindCluster<'_>) -> String {
    let jsonpath = "jsonpath={.spec.clusters}";
    ok(&manager.kubectl(&["get", "multikueueconfig", "kueue-ext", "-o", jsonpath]), "the MultiKueueConfig")
}

/// Where MultiKueue ran each Workload in `default`.
async fn places(manager: &PlainKindCluster<'_>) -> Vec<(String, Value)> {
    let dispatched = workloads(&manager.client().await, "default").list(&Default::default()).await.unwrap();
    dispatched.items.iter().map(|w| (w.name_any(), w.data["status"]["clusterName"].clone())).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn connect_wires_multikueue_between_plain_kind_clusters_and_disconnect_takes_it_out() {
    kind_images_built("jobset");
    let (_, addons) = prepare_kind_images(&[Addon::Jobset], &Progress::stderr()).await.expect("JobSet's image");
    let clusters = PlainKindClusters::create(&[MANAGER, WORKER, SECOND_WORKER], one_beside_the_kind_lane).await;
    let (manager, worker, second) =
        (clusters.cluster(MANAGER), clusters.cluster(WORKER), clusters.cluster(SECOND_WORKER));
    // JobSet first, so that Kueue's built-in integration finds its CRD: its controller on the
    // workers, which run the JobSets; on the manager, which only hands them to MultiKueue, its
    // CRDs alone (a 2-core node has no room left to roll Kueue beside a third controller).
    for (name, cluster) in [(MANAGER, &manager), (WORKER, &worker), (SECOND_WORKER, &second)] {
        if name == MANAGER {
            clusters.install_addon_crds(name, &addons[0]);
        } else {
            clusters.install_addon(name, &addons[0]);
        }
        cluster.apply_kueue(&clusters.kueue_manifests);
        ok(&cluster.plugin("install", &[]), "install");
    }
    manager.make_queues();
    let workers = format!("worker1={}", worker.context);
    let connect = ["--worker-context", workers.as_str()];
    // Kueue's release enables MPIJob, Ray… and MultiKueue keeps a worker inactive while it lacks
    // any of their CRDs: refused before anything is written, naming them.
    let refused = manager.plugin("connect", &connect);
    let said = text(&refused);
    assert!(
        !refused.status.success() && said.contains("does not serve") && said.contains("mpijobs.kubeflow.org"),
        "{said}"
    );
    assert!(!said.contains("jobsets.jobset.x-k8s.io"), "JobSet is served everywhere: {said}");
    let made = ok(
        &worker.kubectl(&[
            "get",
            "serviceaccounts,clusterroles",
            "-A",
            "-l",
            "kueue-ext.dev/connected-by=kueue-ext",
            "-o",
            "name",
        ]),
        "listing",
    );
    assert_eq!(made.trim(), "", "a refused connect writes nothing");
    // What a user of batch Jobs and JobSets only does: tell the manager's Kueue so (connect's
    // restart of Kueue reads it).
    let config_maps: Api<ConfigMap> = Api::namespaced(manager.client().await, "kueue-system");
    let mut config_map = config_maps.get("kueue-manager-config").await.unwrap();
    let data = config_map.data.as_mut().unwrap();
    let mut config: Value = serde_saphyr::from_str(&data["controller_manager_config.yaml"]).unwrap();
    config["integrations"]["frameworks"] = json!(["batch/job", "jobset.x-k8s.io/jobset"]);
    data.insert("controller_manager_config.yaml".into(), serde_saphyr::to_string(&config).unwrap());
    config_maps.replace("kueue-manager-config", &Default::default(), &config_map).await.unwrap();
    let said = ok(&manager.plugin("connect", &connect), "connect");
    assert!(said.contains("every worker is connected"), "connect waits until the worker is Active: {said}");
    let again = ok(&manager.plugin("connect", &connect), "connect again");
    assert!(!again.contains(" created"), "a second connect creates nothing: {again}");

    let submitted = manager.plugin(
        "submit",
        &[
            "-f",
            &repo("samples/externaljob-train-small.yaml"),
            "-f",
            &repo("samples/wrappedjob-job.yaml"),
            "-f",
            &repo("samples/addons/jobset/jobset.yaml"),
            "--wait=6m",
        ],
    );
    ok(&submitted, "jobs through MultiKueue");
    let ran = places(&manager).await;
    assert!(ran.len() >= 3 && ran.iter().all(|(_, place)| place == "worker1"), "ran on the worker: {ran:?}");
    // Its copy on the worker is gone once finished; its status came back to the manager.
    let completed = "jsonpath={.status.conditions[?(@.type=='Completed')].status}";
    let jobset = ok(&manager.kubectl(&["get", "jobset", "training-jobset", "-o", completed]), "the JobSet");
    assert_eq!(jobset.trim(), "True", "the JobSet completed on the worker, as the manager sees it");

    let doctor = ["--worker-context", workers.as_str()];
    ok(&manager.plugin("doctor", &doctor), "doctor on connected clusters");
    // A worker that lost one of our CRDs, and a manager whose Kueue no longer lists one of our
    // kinds for MultiKueue: each named with `install` as its fix, and clean once it ran.
    ok(&worker.kubectl(&["delete", "crd", "wrappedjobs.kueue-ext.dev"]), "deleting a CRD on the worker");
    let found = manager.plugin("doctor", &doctor);
    let said = text(&found);
    assert_eq!(found.status.code(), Some(1), "{said}");
    assert!(
        said.contains("WrappedJob.v1alpha1.kueue-ext.dev is integrated, but this cluster does not serve it"),
        "{said}"
    );
    ok(&worker.plugin("install", &[]), "install on the worker again");
    let mut config_map = config_maps.get("kueue-manager-config").await.unwrap();
    let data = config_map.data.as_mut().unwrap();
    let mut config: Value = serde_saphyr::from_str(&data["controller_manager_config.yaml"]).unwrap();
    let listed = config["multiKueue"]["externalFrameworks"].as_array_mut().expect("MultiKueue's external kinds");
    listed.retain(|kind| kind["name"] != "WrappedJob.v1alpha1.kueue-ext.dev");
    data.insert("controller_manager_config.yaml".into(), serde_saphyr::to_string(&config).unwrap());
    config_maps.replace("kueue-manager-config", &Default::default(), &config_map).await.unwrap();
    let found = manager.plugin("doctor", &doctor);
    let said = text(&found);
    assert!(
        said.contains("lacks WrappedJob.v1alpha1.kueue-ext.dev in multiKueue.externalFrameworks"),
        "doctor reads Kueue's Configuration: {said}"
    );
    ok(&manager.plugin("install", &[]), "install on the manager again");
    eventually("doctor to be clean once install ran", Duration::from_secs(180), || async {
        let out = manager.plugin("doctor", &doctor);
        if out.status.success() { Ok(()) } else { Err(text(&out)) }
    })
    .await;
    ok(&worker.kubectl(&["-n", "default", "delete", "localqueue", "user-queue"]), "deleting a LocalQueue");
    let found = manager.plugin("doctor", &doctor);
    assert_eq!(found.status.code(), Some(1), "{}", text(&found));
    assert!(text(&found).contains("user-queue"), "doctor names the missing LocalQueue: {}", text(&found));
    ok(&manager.plugin("connect", &connect), "connect brings it back");
    eventually("doctor to be clean again", Duration::from_secs(60), || async {
        let out = manager.plugin("doctor", &doctor);
        if out.status.success() { Ok(()) } else { Err(text(&out)) }
    })
    .await;

    ok(
        &manager.kubectl(&["delete", "-n", "default", "externaljobs,wrappedjobs,jobsets", "--all", "--wait"]),
        "deleting jobs",
    );

    // A second worker, connected later, joins the first; disconnecting the first alone leaves
    // the second to run what comes next.
    eventually("the deleted jobs' Workloads to be collected", Duration::from_secs(120), || async {
        let left = places(&manager).await;
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    })
    .await;
    let workers2 = format!("worker2={}", second.context);
    let said = ok(&manager.plugin("connect", &["--worker-context", &workers2]), "connect a second worker");
    assert!(said.contains("worker1") && said.contains("worker2"), "names every connected worker: {said}");
    assert_eq!(listed_workers(&manager).trim(), r#"["worker1","worker2"]"#);
    let both = ["--worker-context", workers.as_str(), "--worker-context", workers2.as_str()];
    ok(&manager.plugin("doctor", &both), "doctor on both workers");
    let said = ok(&manager.plugin("disconnect", &connect), "disconnect of worker1 alone");
    assert!(said.contains("for worker1") && said.contains("other workers stay connected"), "{said}");
    assert_eq!(listed_workers(&manager).trim(), r#"["worker2"]"#);
    let left = ok(&manager.kubectl(&["get", "multikueueclusters", "-o", "name"]), "the MultiKueueClusters");
    assert_eq!(left.trim(), "multikueuecluster.kueue.x-k8s.io/worker2");
    let submitted = manager.plugin("submit", &["-f", &repo("samples/externaljob-train-small.yaml"), "--wait=6m"]);
    ok(&submitted, "a job once worker1 has left");
    let ran = places(&manager).await;
    assert!(!ran.is_empty() && ran.iter().all(|(_, place)| place == "worker2"), "ran on worker2: {ran:?}");
    ok(&manager.kubectl(&["delete", "-n", "default", "externaljobs", "--all", "--wait"]), "deleting the job");

    ok(&manager.plugin("disconnect", &["--worker-context", &workers2]), "disconnect of the last worker");
    let worker_kinds = "serviceaccounts,clusterroles,clusterrolebindings,localqueues,clusterqueues -A";
    for (cluster, kinds) in [
        (&manager, "multikueueclusters,multikueueconfigs,admissionchecks,secrets -A"),
        (&worker, worker_kinds),
        (&second, worker_kinds),
    ] {
        let mut args = vec!["get"];
        args.extend(kinds.split(' '));
        args.extend(["-l", "kueue-ext.dev/connected-by=kueue-ext", "-o", "name"]);
        let left = ok(&cluster.kubectl(&args), "listing what connect made");
        assert_eq!(left.trim(), "", "disconnect leaves nothing connect made on {}", cluster.context);
    }
    let queue = ok(
        &manager.kubectl(&[
            "get",
            "clusterqueue",
            "cluster-queue",
            "-o",
            "jsonpath={.spec.admissionChecksStrategy}{.spec.admissionChecks}",
        ]),
        "the ClusterQueue",
    );
    assert!(!queue.contains("multikueue"), "the admission check is off the user's ClusterQueue: {queue}");
    for cluster in [&manager, &worker, &second] {
        ok(&cluster.plugin("uninstall", &[]), "uninstall");
    }
}
