//! End-to-end: WrappedJob on one process-runtime cluster with the real Kueue, its components
//! created and deleted by this project's controller, and its webhook checking who may wrap what.

/// Priorities of the small queue's WorkloadPriorityClasses.
const LOW: &str = ", kueue.x-k8s.io/priority-class: low";
const HIGH: &str = ", kueue.x-k8s.io/priority-class: high";

use std::time::Duration;

use crate::common::{Restarts, Sandbox, api, apply_yaml, condition_is, eventually, small_queues, workloads_owned_by};
use crate::fixtures::{deployment_component, job_component, wrapped_job};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use kueue_ext::jobframework::naming::workload_name;
use serde_json::{Value, json};

fn wrapped_jobs(client: &Client) -> Api<DynamicObject> {
    api(client, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", Some("default"))
}

async fn get(client: &Client, name: &str) -> Result<Value, String> {
    Ok(serde_json::to_value(wrapped_jobs(client).get(name).await.map_err(|e| e.to_string())?).unwrap())
}

/// Waits until the job is in `phase` and returns it.
async fn wait_phase(client: &Client, name: &str, phase: &str, timeout: Duration) -> Value {
    eventually(&format!("WrappedJob {name} to be {phase}"), timeout, || async {
        let job = get(client, name).await?;
        if job["status"]["phase"] == phase { Ok(job) } else { Err(format!("{:#}", job["status"])) }
    })
    .await
}

async fn only_workload(client: &Client, uid: &str) -> Result<Value, String> {
    match workloads_owned_by(client, "default", uid).await?.as_slice() {
        [w] => Ok(w.clone()),
        other => Err(format!("{} workloads", other.len())),
    }
}

async fn pods_of(client: &Client, job: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.list(&ListParams::default().labels(&format!("kueue-ext.dev/wrapped-job={job}"))).await.unwrap().items
}

fn batch_jobs(client: &Client) -> Api<DynamicObject> {
    api(client, "batch/v1", "Job", "jobs", Some("default"))
}

fn deployments(client: &Client) -> Api<DynamicObject> {
    api(client, "apps/v1", "Deployment", "deployments", Some("default"))
}

fn uid(job: &Value) -> String {
    job["metadata"]["uid"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_and_a_deployment_run_as_one_workload() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    apply_yaml(&client, &small_queues()).await;

    let components =
        [job_component("pipeline-work", 2, "500m", "4s", ""), deployment_component("pipeline-server", 1, "500m")];
    let created = apply_yaml(&client, &wrapped_job("pipeline", "small", LOW, "", &components)).await.remove(0);
    assert_eq!(created["spec"]["suspend"], true, "the webhook suspends a queued WrappedJob");
    let uid = uid(&created);

    let wl = eventually("one admitted Workload", Duration::from_secs(60), || async {
        let wl = only_workload(&client, &uid).await?;
        if condition_is(&wl, "Admitted", "True") { Ok(wl) } else { Err(format!("{:#}", wl["status"])) }
    })
    .await;
    assert_eq!(wl["metadata"]["name"], workload_name("WrappedJob", "kueue-ext.dev", "pipeline", &uid));
    let pod_sets: Vec<(Value, Value)> =
        wl["spec"]["podSets"].as_array().unwrap().iter().map(|p| (p["name"].clone(), p["count"].clone())).collect();
    assert_eq!(pod_sets, [(json!("pipeline-0"), json!(2)), (json!("pipeline-1"), json!(1))], "both pod sets");

    // Both components exist, owned and labelled, with the flavor's node selector injected.
    for (api, name) in [(batch_jobs(&client), "pipeline-work"), (deployments(&client), "pipeline-server")] {
        let object = eventually(&format!("component {name}"), Duration::from_secs(30), || async {
            api.get(name).await.map_err(|e| e.to_string())
        })
        .await;
        let owner = &object.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("WrappedJob", uid.as_str(), Some(true))
        );
        assert_eq!(object.labels().get("kueue-ext.dev/wrapped-job").map(String::as_str), Some("pipeline"));
        let template = &object.data["spec"]["template"];
        assert_eq!(template["spec"]["nodeSelector"]["type"], "kwok", "{name}: flavor node labels injected");
        assert_eq!(template["metadata"]["labels"]["kueue-ext.dev/wrapped-job"], "pipeline");
    }

    let done = wait_phase(&client, "pipeline", "Succeeded", Duration::from_secs(90)).await;
    assert_eq!(done["status"]["retries"], 0);
    eventually("the Workload to be Finished", Duration::from_secs(30), || async {
        let wl = only_workload(&client, &uid).await?;
        if condition_is(&wl, "Finished", "True") { Ok(()) } else { Err(format!("{:#}", wl["status"])) }
    })
    .await;
    assert!(deployments(&client).get_opt("pipeline-server").await.unwrap().is_none(), "the server stops with the job");
    let running = pods_of(&client, "pipeline")
        .await
        .into_iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Succeeded"));
    assert_eq!(running.count(), 0, "no pod of a succeeded job still runs");
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_reset_then_fail_and_release_quota_only_when_pods_are_gone() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    apply_yaml(&client, &small_queues()).await;
    let fast = r#"kueue-ext.dev/failureGracePeriodDuration: 1s, kueue-ext.dev/retryPausePeriodDuration: 2s, kueue-ext.dev/retryLimit: "1""#;

    let flaky = [job_component("flaky-work", 1, "500m", "2s", r#", kueue-ext.dev/exit-code: "1""#)];
    let flaky_uid = uid(&apply_yaml(&client, &wrapped_job("flaky", "small", LOW, fast, &flaky)).await.remove(0));
    let terminal = format!(r#"{fast}, kueue-ext.dev/terminalExitCodes: "42""#);
    let doomed = [job_component("doomed-work", 1, "500m", "2s", r#", kueue-ext.dev/exit-code: "42""#)];
    apply_yaml(&client, &wrapped_job("doomed", "small", LOW, &terminal, &doomed)).await;
    let long = [job_component("orphaned-work", 1, "500m", "60s", "")];
    apply_yaml(&client, &wrapped_job("orphaned", "small", LOW, fast, &long)).await;

    // A failed pod resets the job; the reset keeps the quota.
    eventually("flaky to be reset once", Duration::from_secs(60), || async {
        let job = get(&client, "flaky").await?;
        let wl = only_workload(&client, &flaky_uid).await?;
        if job["status"]["retries"] != 1 {
            return Err(format!("{:#}", job["status"]));
        }
        assert!(condition_is(&wl, "QuotaReserved", "True"), "quota held through the reset: {:#}", wl["status"]);
        assert!(!condition_is(&wl, "Finished", "True"));
        Ok(())
    })
    .await;
    // After the retry limit it fails, and Kueue learns it only once its pods are gone.
    let failed = wait_phase(&client, "flaky", "Failed", Duration::from_secs(90)).await;
    assert_eq!(failed["status"]["retries"], 1);
    eventually("flaky's Workload to be Finished", Duration::from_secs(60), || async {
        let wl = only_workload(&client, &flaky_uid).await?;
        if !condition_is(&wl, "Finished", "True") {
            return Err(format!("{:#}", wl["status"]));
        }
        assert!(pods_of(&client, "flaky").await.is_empty(), "Finished (quota released) only once no pod is left");
        Ok(())
    })
    .await;

    // A terminal exit code fails at once.
    let doomed = wait_phase(&client, "doomed", "Failed", Duration::from_secs(60)).await;
    assert_eq!(doomed["status"]["retries"], 0, "no retry after a terminal exit code");

    // A component deleted by hand fails the job.
    wait_phase(&client, "orphaned", "Running", Duration::from_secs(60)).await;
    batch_jobs(&client).delete("orphaned-work", &DeleteParams::background()).await.unwrap();
    let orphaned = wait_phase(&client, "orphaned", "Failed", Duration::from_secs(30)).await;
    let unhealthy = crate::common::condition(&orphaned, "Unhealthy").unwrap();
    assert_eq!(unhealthy["reason"], "MissingComponent", "{unhealthy}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preempted_job_is_suspended_and_later_completes() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    apply_yaml(&client, &small_queues()).await;

    let low =
        apply_yaml(&client, &wrapped_job("low", "small", LOW, "", &[job_component("low-work", 4, "1", "15s", "")]))
            .await;
    let low_uid = uid(&low[0]);
    wait_phase(&client, "low", "Running", Duration::from_secs(60)).await;
    apply_yaml(&client, &wrapped_job("high", "small", HIGH, "", &[job_component("high-work", 2, "1", "3s", "")])).await;

    wait_phase(&client, "low", "Suspended", Duration::from_secs(60)).await;
    assert!(batch_jobs(&client).get_opt("low-work").await.unwrap().is_none(), "the evicted job's components are gone");
    wait_phase(&client, "high", "Succeeded", Duration::from_secs(60)).await;
    wait_phase(&client, "low", "Succeeded", Duration::from_secs(120)).await;
    // The phase is written first; the Workload learns of the end in the next reconcile.
    eventually("low's one Workload to be Finished", Duration::from_secs(30), || async {
        let wl = only_workload(&client, &low_uid).await.map_err(|e| format!("one Workload through eviction: {e}"))?;
        if !condition_is(&wl, "Finished", "True") {
            return Err(format!("{:#}", wl["status"]));
        }
        Ok(())
    })
    .await;
}

/// A client that acts as `user` (the sandbox's admin impersonates it).
async fn impersonating(sandbox: &Sandbox, user: &str) -> Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(sandbox.kubeconfig()).unwrap();
    let options = kube::config::KubeConfigOptions { context: Some("kueue-ext-manager".into()), ..Default::default() };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
    config.auth_info.impersonate = Some(user.into());
    Client::try_from(config).unwrap()
}

const ALICE_MAY_WRAP_JOBS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: wrap-jobs, namespace: default}
rules:
- {apiGroups: [kueue-ext.dev], resources: [wrappedjobs], verbs: [create, get, update, patch]}
- {apiGroups: [batch], resources: [jobs], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-wraps-jobs, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: wrap-jobs}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#;

async fn create_as(client: &Client, yaml: &str) -> Result<Value, String> {
    let object: Value = serde_saphyr::from_str(yaml).unwrap();
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    match wrapped_jobs(client).create(&Default::default(), &object).await {
        Ok(created) => Ok(serde_json::to_value(created).unwrap()),
        Err(err) => Err(err.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn nobody_wraps_what_they_could_not_create() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let admin = sandbox.client("manager").await;
    apply_yaml(&admin, &small_queues()).await;
    apply_yaml(&admin, ALICE_MAY_WRAP_JOBS).await;
    let alice = impersonating(&sandbox, "alice").await;

    let server = wrapped_job("alice-server", "small", LOW, "", &[deployment_component("alice-server", 1, "100m")]);
    let denied = create_as(&alice, &server).await.expect_err("alice may not create Deployments");
    assert!(denied.contains("alice") && denied.contains("deployments"), "{denied}");
    assert!(denied.contains("spec.components[0].template"), "{denied}");

    // Parked on a queue that does not exist, the job stays suspended and its template editable.
    let work = wrapped_job("alice-work", "small", LOW, "", &[job_component("alice-work", 1, "100m", "1s", "")])
        .replace("queue-name: small", "queue-name: parked");
    create_as(&alice, &work).await.expect("alice may wrap a Job");
    // Editing the template later is checked again, for the user who edits.
    let sneaky = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sneaky"},
        "spec": {"selector": {"matchLabels": {"app": "sneaky"}}, "template": {
            "metadata": {"labels": {"app": "sneaky"}},
            "spec": {"containers": [{"name": "main", "image": "registry.invalid/x"}]}}},
    });
    let patch = json!({"spec": {"components": [{"template": sneaky}]}});
    let edited = wrapped_jobs(&alice).patch("alice-work", &PatchParams::default(), &Patch::Merge(patch)).await;
    let edited = edited.expect_err("swapping the Job for a Deployment is checked too").to_string();
    assert!(edited.contains("alice") && edited.contains("deployments"), "{edited}");

    let nested = r#"
  - template:
      apiVersion: kueue-ext.dev/v1alpha1
      kind: WrappedJob
      metadata: {name: inner}
      spec: {components: []}"#;
    let err = create_as(&admin, &wrapped_job("outer", "small", LOW, "", &[nested.to_string()])).await.unwrap_err();
    assert!(err.contains("spec.components[0].template") && err.contains("Forbidden"), "{err}");

    let elsewhere = job_component("elsewhere", 1, "100m", "1s", "")
        .replace("metadata: {name: elsewhere}", "metadata: {name: elsewhere, namespace: kube-system}");
    let err = create_as(&admin, &wrapped_job("elsewhere", "small", LOW, "", &[elsewhere])).await.unwrap_err();
    assert!(err.contains("spec.components[0].template.metadata.namespace"), "{err}");

    // The controller itself may not create Roles: refused at admission, not stuck later.
    let role = r#"
  - template:
      apiVersion: rbac.authorization.k8s.io/v1
      kind: Role
      metadata: {name: sneaky}
      rules: []
    podSets: []"#;
    let both = [job_component("with-role", 1, "100m", "1s", ""), role.to_string()];
    let err = create_as(&admin, &wrapped_job("with-role", "small", LOW, "", &both)).await.unwrap_err();
    assert!(err.contains("spec.components[1].template") && err.contains("no RBAC"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn restarting_the_controller_in_every_phase_loses_and_leaks_nothing() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let client = sandbox.client("manager").await;
    apply_yaml(&client, &small_queues()).await;
    let fast = r#"kueue-ext.dev/failureGracePeriodDuration: 1s, kueue-ext.dev/retryPausePeriodDuration: 1s, kueue-ext.dev/retryLimit: "1""#;
    let mut uids = Vec::new();
    for i in 0..6 {
        let name = format!("crash-{i}");
        let components = [
            job_component(&format!("{name}-work"), 1, "500m", "3s", ""),
            deployment_component(&format!("{name}-server"), 1, "250m"),
        ];
        uids.push(uid(&apply_yaml(&client, &wrapped_job(&name, "small", LOW, "", &components)).await.remove(0)));
    }
    let flaky = [job_component("crash-flaky-work", 1, "250m", "1s", r#", kueue-ext.dev/exit-code: "1""#)];
    let flaky_uid = uid(&apply_yaml(&client, &wrapped_job("crash-flaky", "small", LOW, fast, &flaky)).await.remove(0));

    let mut controller = Restarts::controller(&sandbox);
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        controller.kill_and_restart();
    }
    for i in 0..6 {
        wait_phase(&client, &format!("crash-{i}"), "Succeeded", Duration::from_secs(180)).await;
    }
    wait_phase(&client, "crash-flaky", "Failed", Duration::from_secs(120)).await;
    for uid in uids.iter().chain([&flaky_uid]) {
        let wl = eventually("a Finished Workload", Duration::from_secs(60), || async {
            let wl = only_workload(&client, uid).await?;
            if condition_is(&wl, "Finished", "True") { Ok(wl) } else { Err(format!("{:#}", wl["status"])) }
        })
        .await;
        assert_eq!(wl["metadata"]["ownerReferences"][0]["uid"], json!(uid));
    }
    let left = deployments(&client).list(&ListParams::default().labels("kueue-ext.dev/wrapped-job")).await.unwrap();
    assert!(
        left.items.is_empty(),
        "no Deployment outlives its job: {:?}",
        left.items.iter().map(|d| d.name_any()).collect::<Vec<_>>()
    );
    for i in 0..6 {
        let ran = pods_of(&client, &format!("crash-{i}")).await;
        let succeeded = ran.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"));
        assert_eq!(succeeded.count(), 1, "crash-{i} ran its Job's pod exactly once");
    }
}
