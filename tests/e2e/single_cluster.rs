//! End-to-end: one process-runtime cluster with the real kube-apiserver, etcd, controller
//! manager, scheduler, kwok and Kueue. Kueue's own batch/Job integration admits a Job, runs it
//! on kwok nodes and finishes it; a Job over quota waits; `down` leaves nothing behind.

use std::time::Duration;

use crate::common::{
    Sandbox, apply_yaml, condition_is, down_leaves_nothing, eventually, plain_queues, text, workloads_owned_by,
};
use crate::fixtures::batch_job;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

#[tokio::test(flavor = "multi_thread")]
async fn kueue_admits_runs_and_finishes_a_batch_job_then_down_leaves_nothing() {
    let sandbox = Sandbox::up(&["--workers", "0"]);

    let again = sandbox.run("up", &["--workers", "0"]);
    assert!(again.status.success() && text(&again).contains("already up"), "second up: {}", text(&again));

    let status = sandbox.status_json();
    assert_eq!(status["runtime"], "process");
    assert_eq!(status["ready"], true, "{status:#}");
    let manager = &status["clusters"][0];
    assert_eq!((manager["name"].as_str(), manager["role"].as_str()), (Some("manager"), Some("manager")));
    assert_eq!(manager["context"], "kueue-ext-manager");
    let components: Vec<&str> =
        manager["components"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(components, kueue_ext::sandbox::COMPONENTS);

    // Credentials are owner-only, and no log carries a token or a private key.
    let manager_dir = sandbox.dir.join("manager");
    let secrets = [
        sandbox.dir.join("kubeconfig"),
        manager_dir.join("admin.kubeconfig"),
        manager_dir.join("pki/ca.key"),
        manager_dir.join("pki/admin.key"),
        manager_dir.join("pki/serving.key"),
        manager_dir.join("pki/sa.key"),
        manager_dir.join("kueue/kubeconfig"),
        manager_dir.join("kueue-ext/kubeconfig"),
    ];
    for path in &secrets {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is mode {mode:o}", path.display());
    }
    let kubeconfig: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(manager_dir.join("kueue-ext/kubeconfig")).unwrap()).unwrap();
    let token = kubeconfig["users"][0]["user"]["token"].as_str().unwrap().to_string();
    for log in std::fs::read_dir(manager_dir.join("logs")).unwrap().flatten() {
        let text = std::fs::read_to_string(log.path()).unwrap_or_default();
        assert!(!text.contains(&token) && !text.contains("PRIVATE KEY"), "{} leaks a credential", log.path().display());
    }

    let client = sandbox.client("manager").await;
    apply_yaml(&client, &plain_queues("4", "8Gi")).await;
    let small = apply_yaml(&client, &batch_job("small", 2, "1", "1s")).await.remove(0);
    assert_eq!(small["spec"]["suspend"], true, "Kueue's webhook suspends a queued Job on creation");
    let small_uid = small["metadata"]["uid"].as_str().unwrap().to_string();

    let workload = eventually("the small Job's Workload to be admitted", Duration::from_secs(60), || async {
        let found = workloads_owned_by(&client, "default", &small_uid).await?;
        match found.as_slice() {
            [w] if condition_is(w, "Admitted", "True") => Ok(w.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(workload["metadata"]["name"].as_str().unwrap().starts_with("job-small-"));

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    eventually("the small Job to complete", Duration::from_secs(60), || async {
        let job = jobs.get("small").await.map_err(|e| e.to_string())?;
        let complete = job.status.as_ref().and_then(|s| s.conditions.as_ref()).into_iter().flatten();
        let complete = complete.clone().any(|c| c.type_ == "Complete" && c.status == "True");
        if complete { Ok(()) } else { Err(format!("{:?}", job.status)) }
    })
    .await;
    let ran = pods.list(&ListParams::default().labels("job-name=small")).await.unwrap();
    assert_eq!(ran.items.len(), 2);
    for pod in &ran.items {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
        assert!(node.starts_with("kwok-node-"), "pod bound by the scheduler to a kwok node, got {node:?}");
        assert_eq!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded"));
    }
    eventually("the small Job's Workload to be Finished", Duration::from_secs(30), || async {
        let found = workloads_owned_by(&client, "default", &small_uid).await?;
        match found.as_slice() {
            [w] if condition_is(w, "Finished", "True") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    let big = apply_yaml(&client, &batch_job("too-big", 1, "8", "1s")).await.remove(0);
    let big_uid = big["metadata"]["uid"].as_str().unwrap().to_string();
    let pending = eventually("the over-quota Workload to be evaluated", Duration::from_secs(30), || async {
        let found = workloads_owned_by(&client, "default", &big_uid).await?;
        match found.as_slice() {
            [w] if condition_is(w, "QuotaReserved", "False") => Ok(w.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(!condition_is(&pending, "Admitted", "True"));
    // Kueue has decided (no quota): from then on the Job is held, and no pod of it exists.
    let still = jobs.get("too-big").await.unwrap();
    assert_eq!(still.spec.and_then(|s| s.suspend), Some(true), "an over-quota Job stays suspended");
    let started = pods.list(&ListParams::default().labels("job-name=too-big")).await.unwrap();
    assert!(started.items.is_empty(), "an over-quota Job starts no pod");

    down_leaves_nothing(&sandbox);
    let status = sandbox.run("status", &[]);
    assert!(!status.status.success(), "status after down exits non-zero");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_api_server_port_is_refused_by_name() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let sandbox = Sandbox::unstarted();
    let output = sandbox.run("up", &["--workers", "0", "--api-server-port", &port]);
    assert!(!output.status.success());
    let message = text(&output);
    assert!(message.contains(&format!("port {port}")) && message.contains("kube-apiserver"), "{message}");
    assert!(!sandbox.dir.join("state.json").exists(), "nothing was started");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_that_dies_at_start_is_named_with_its_log_and_the_rest_is_stopped() {
    let sandbox = Sandbox::unstarted();
    let output = sandbox.run("up", &["--workers", "0", "--component-arg", "kueue=--no-such-flag"]);
    assert!(!output.status.success());
    let message = text(&output);
    assert!(message.contains("kueue of cluster manager exited during start-up"), "{message}");
    let log = sandbox.dir.join("manager/logs/kueue.log");
    assert!(message.contains(log.to_str().unwrap()), "{message}");
    assert!(log.exists(), "the failed component's log is kept");
    assert!(!sandbox.dir.join("manager/pki").exists(), "everything but the logs is removed");

    let status = sandbox.status_json();
    assert_eq!(status["ready"], false);
    assert!(status["clusters"][0]["components"].as_array().unwrap().is_empty(), "no process is left recorded");

    let retry = sandbox.run("up", &["--workers", "0"]);
    assert!(retry.status.success(), "up after a failed start cleans up and starts: {}", text(&retry));
}
