//! End-to-end: batch/v1 Job integrated by configuration alone
//! (`samples/integrations/job-integration.yaml`), with Kueue's built-in Job integration off, on
//! one cluster and through MultiKueue. kube-controller-manager's Job controller runs the pods.

use std::time::Duration;

use crate::common::{Sandbox, api, apply_yaml, condition_is, eventually, text, workloads_owned_by};
use crate::fixtures::batch_job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Client;
use kube::api::{Api, ListParams};
use kueue_ext::jobframework::naming::workload_name;
use serde_json::Value;

const INTEGRATIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/integrations/job-integration.yaml");

async fn get_job(client: &Client, name: &str) -> Result<Value, String> {
    let jobs = api(client, "batch/v1", "Job", "jobs", Some("default"));
    Ok(serde_json::to_value(jobs.get(name).await.map_err(|e| e.to_string())?).unwrap())
}

async fn wait_complete(client: &Client, name: &str, timeout: Duration) -> Value {
    eventually(&format!("Job {name} to complete"), timeout, || async {
        let job = get_job(client, name).await?;
        if condition_is(&job, "Complete", "True") { Ok(job) } else { Err(format!("{:#}", job["status"])) }
    })
    .await
}

async fn only_workload(client: &Client, uid: &str) -> Result<Value, String> {
    match workloads_owned_by(client, "default", uid).await?.as_slice() {
        [w] => Ok(w.clone()),
        other => Err(format!("{} workloads: {other:?}", other.len())),
    }
}

/// Who wrote the job's events: ours are reported by our controller.
async fn event_reporters(client: &Client, job: &str) -> Vec<(String, String)> {
    let events = api(client, "events.k8s.io/v1", "Event", "events", Some("default"));
    let list = events.list(&ListParams::default()).await.unwrap();
    list.items
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e["regarding"]["name"] == job && e["regarding"]["kind"] == "Job")
        .map(|e| {
            (
                e["reportingController"].as_str().unwrap_or_default().into(),
                e["reason"].as_str().unwrap_or_default().into(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_kind_integrated_by_configuration_runs_through_kueue_on_one_cluster() {
    let sandbox = Sandbox::up(&["--workers", "0", "--integrations", INTEGRATIONS]);
    let client = sandbox.client("manager").await;

    let created = apply_yaml(&client, &batch_job("configured", 2, "1", "3s")).await.remove(0);
    assert_eq!(created["spec"]["suspend"], true, "our webhook suspends a queued Job");
    let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
    let wl = eventually("the Workload to be admitted", Duration::from_secs(60), || async {
        let wl = only_workload(&client, &uid).await?;
        if condition_is(&wl, "Admitted", "True") { Ok(wl) } else { Err(format!("{:#}", wl["status"])) }
    })
    .await;
    assert_eq!(wl["metadata"]["name"], workload_name("Job", "batch", "configured", &uid));
    assert_eq!(wl["spec"]["podSets"][0]["name"], "main");
    assert_eq!(wl["spec"]["podSets"][0]["count"], 2);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let ran = eventually("the Job's pods", Duration::from_secs(60), || async {
        let list = pods.list(&ListParams::default().labels(&format!("batch.kubernetes.io/controller-uid={uid}"))).await;
        let list = list.map_err(|e| e.to_string())?;
        if list.items.len() == 2 { Ok(list.items) } else { Err(format!("{} pods", list.items.len())) }
    })
    .await;
    for pod in &ran {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("kueue.x-k8s.io/podset").map(String::as_str), Some("main"), "admission labels injected");
    }
    wait_complete(&client, "configured", Duration::from_secs(90)).await;
    eventually("the Workload to be Finished", Duration::from_secs(30), || async {
        let wl = only_workload(&client, &uid).await?;
        if condition_is(&wl, "Finished", "True") { Ok(()) } else { Err(format!("{:#}", wl["status"])) }
    })
    .await;
    let reporters = event_reporters(&client, "configured").await;
    for reason in ["CreatedWorkload", "Started"] {
        assert!(
            reporters.iter().any(|(by, why)| by == "kueue-ext-controller" && why == reason),
            "our controller, not Kueue's built-in Job integration, drove the job: {reporters:?}"
        );
    }

    // The configured kind's webhook checks what the reconciler relies on, naming the field.
    let bad: Value =
        serde_saphyr::from_str(&batch_job("no-pods", 1, "1", "1s").replace("parallelism: 1", "parallelism: 0"))
            .unwrap();
    let err = kueue_ext::kube_util::apply(&client, &bad).await.expect_err("rejected");
    assert!(
        err.to_string().contains("spec.parallelism: Invalid value: \"0\": must be a whole number, at least 1"),
        "{err}"
    );
    let status = sandbox.run("status", &[]);
    assert!(status.status.success(), "{}", text(&status));

    every_command_sees_the_configured_kind(&sandbox, &client).await;

    // `up` again: the same settings are fine; other integrations are refused, never ignored.
    let again = sandbox.run("up", &["--workers", "0", "--integrations", INTEGRATIONS]);
    assert!(again.status.success() && text(&again).contains("nothing changed"), "{}", text(&again));
    let without = sandbox.run("up", &["--workers", "0"]);
    assert_eq!(without.status.code(), Some(1), "{}", text(&without));
    assert!(
        text(&without).contains(
            "was started with --integrations for Job.v1.batch; this `up` asks for no --integrations; run \
             `kubectl kueue-ext down` first"
        ),
        "{}",
        text(&without)
    );
}

/// The commands learn the kinds a cluster runs from the controller's integrations ConfigMap:
/// `submit --wait`, `watch` and `explain` read a configured kind by its description.
async fn every_command_sees_the_configured_kind(sandbox: &Sandbox, client: &Client) {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "kueue-ext-system");
    let map = maps.get("kueue-ext-integrations").await.expect("the integrations ConfigMap");
    let file = map.data.unwrap_or_default().remove("integrations.yaml").unwrap_or_default();
    assert!(file.contains("kind: Job.v1.batch"), "{file}");

    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("waited.yaml");
    std::fs::write(&path, batch_job("waited", 1, "1", "2s")).unwrap();
    let submitted = sandbox.run("submit", &[path.to_str().unwrap(), "--wait=2m"]);
    let out = text(&submitted);
    assert!(submitted.status.success(), "{out}");
    assert!(out.contains("job.batch/waited created") && out.contains("job.batch/waited succeeded"), "{out}");

    let watched = sandbox.run("watch", &["--once", "-o", "json"]);
    let json: Value = serde_json::from_slice(&watched.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&watched)));
    let row = json["jobs"].as_array().and_then(|jobs| jobs.iter().find(|j| j["key"]["name"] == "waited")).cloned();
    let row = row.unwrap_or_else(|| panic!("waited in {json:#}"));
    assert_eq!((row["key"]["kind"].as_str(), row["status"].as_str()), (Some("Job"), Some("Succeeded")), "{row:#}");
    assert!(row["workload"]["name"].as_str().is_some_and(|n| n.starts_with("job-waited-")), "{row:#}");

    let explained = text(&sandbox.run("explain", &["jobs.batch/waited"]));
    assert!(explained.starts_with("Job default/waited has finished: Succeeded"), "{explained}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_kind_integrated_by_configuration_runs_on_a_worker_through_multikueue() {
    let sandbox = Sandbox::up(&["--workers", "2", "--integrations", INTEGRATIONS]);
    let manager = sandbox.client("manager").await;

    let created = apply_yaml(&manager, &batch_job("dispatched", 2, "1", "3s")).await.remove(0);
    assert_eq!(created["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "handed to MultiKueue at admission");
    let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
    let done = wait_complete(&manager, "dispatched", Duration::from_secs(120)).await;
    assert_eq!(done["status"]["succeeded"], 2, "the worker's status is copied back to the manager");
    let wl = eventually("the manager's Workload to be Finished", Duration::from_secs(60), || async {
        let wl = only_workload(&manager, &uid).await?;
        if condition_is(&wl, "Finished", "True") { Ok(wl) } else { Err(format!("{:#}", wl["status"])) }
    })
    .await;
    let ran_on = wl["status"]["clusterName"].as_str().unwrap_or_default().to_string();
    assert!(ran_on.starts_with("worker"), "{:#}", wl["status"]);
    let pods: Api<Pod> = Api::namespaced(manager.clone(), "default");
    let on_manager =
        pods.list(&ListParams::default().labels(&format!("batch.kubernetes.io/controller-uid={uid}"))).await;
    assert!(on_manager.unwrap().items.is_empty(), "no pod runs on the manager");
}
