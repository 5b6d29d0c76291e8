//! End-to-end: a manager and two workers, each a real control plane with Kueue, wired with
//! MultiKueue by `up`. Kueue dispatches batch Jobs from the manager to the workers, where kwok
//! runs them; results flow back to the manager.

use std::time::Duration;

use crate::common::{
    Restarts, Sandbox, api, apply_yaml, condition_is, down_leaves_nothing, eventually, text, workloads_owned_by,
};
use crate::fixtures::{batch_job, deployment_component, external_job, job_component};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::Value;

/// Five pods of 4 CPU for 20 s: 20 of a worker's 32 CPU, so two such Jobs never fit on one.
fn job(name: &str) -> String {
    batch_job(name, 5, "4", "20s")
}

fn contexts_in(kubeconfig: &std::path::Path) -> Vec<String> {
    let config: Value = serde_saphyr::from_str(&std::fs::read_to_string(kubeconfig).unwrap()).unwrap();
    config["contexts"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn multikueue_dispatches_jobs_to_workers_and_reports_back() {
    let home = tempfile::tempdir().unwrap();
    let user_kubeconfig = home.path().join("config");
    std::fs::write(
        &user_kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts:\n- name: kind-dev\n  context: {cluster: x, user: y}\n",
    )
    .unwrap();
    let kubeconfig_env = user_kubeconfig.to_str().unwrap();
    let sandbox = Sandbox::up_with_env(&["--merge-kubeconfig"], &[("KUBECONFIG", kubeconfig_env)]);
    assert_eq!(
        contexts_in(&user_kubeconfig),
        ["kind-dev", "kueue-ext-manager", "kueue-ext-worker1", "kueue-ext-worker2"]
    );

    let mismatch = sandbox.run("up", &["--workers", "3"]);
    assert!(!mismatch.status.success() && text(&mismatch).contains("runs 2 worker(s), not 3"), "{}", text(&mismatch));

    let status = sandbox.status_json();
    assert_eq!(status["ready"], true, "{status:#}");
    let multikueue = &status["clusters"][0]["multikueue"];
    assert_eq!(multikueue["admission_check_active"], true, "{status:#}");
    let workers: Vec<(&str, bool)> = multikueue["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["active"].as_bool().unwrap()))
        .collect();
    assert_eq!(workers, [("worker1", true), ("worker2", true)]);

    let manager = sandbox.client("manager").await;
    let mut dispatched = Vec::new();
    for name in ["train-a", "train-b"] {
        let created = apply_yaml(&manager, &job(name)).await.remove(0);
        assert_eq!(created["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "Kueue's webhook hands it to MultiKueue");
        let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
        let worker = eventually(&format!("{name} to be dispatched to a worker"), Duration::from_secs(60), || async {
            let found = workloads_owned_by(&manager, "default", &uid).await?;
            match found.as_slice() {
                [w] if condition_is(w, "Admitted", "True") && w["status"]["clusterName"].is_string() => {
                    Ok(w["status"]["clusterName"].as_str().unwrap().to_string())
                }
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        dispatched.push(worker);
    }
    assert_ne!(dispatched[0], dispatched[1], "two Jobs that cannot share a worker land on different workers");
    let placed = sandbox.status_json()["clusters"][0]["multikueue"]["jobs"].clone();
    let worker_of = |job: &str| {
        placed
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job"] == job)
            .map(|j| j["worker"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(
        worker_of("Job/default/train-a").as_deref(),
        Some(dispatched[0].as_str()),
        "status names the worker: {placed:#}"
    );

    for (name, worker) in ["train-a", "train-b"].iter().zip(&dispatched) {
        let remote: Api<Job> = Api::namespaced(sandbox.client(worker).await, "default");
        let mirror = remote.get(name).await.unwrap_or_else(|e| panic!("{name} mirrored on {worker}: {e}"));
        assert_eq!(mirror.spec.as_ref().and_then(|s| s.managed_by.clone()), None, "the mirror is run by the worker");
    }

    let jobs: Api<Job> = Api::namespaced(manager.clone(), "default");
    for name in ["train-a", "train-b"] {
        eventually(&format!("{name} to complete on the manager"), Duration::from_secs(120), || async {
            let job = jobs.get(name).await.map_err(|e| e.to_string())?;
            let status = job.status.unwrap_or_default();
            let complete = status.conditions.iter().flatten().any(|c| c.type_ == "Complete" && c.status == "True");
            if complete && status.succeeded == Some(5) { Ok(()) } else { Err(format!("{status:?}")) }
        })
        .await;
        let uid = jobs.get(name).await.unwrap().metadata.uid.unwrap();
        eventually(&format!("{name}'s manager Workload to be Finished"), Duration::from_secs(30), || async {
            let found = workloads_owned_by(&manager, "default", &uid).await?;
            match found.as_slice() {
                [w] if condition_is(w, "Finished", "True") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }

    // The timeline of a finished job: the worker that ran it got a copy and won, at the times
    // its manager Workload's conditions and MultiKueue check say.
    let uid = jobs.get("train-a").await.unwrap().metadata.uid.unwrap();
    let wl = workloads_owned_by(&manager, "default", &uid).await.unwrap().remove(0);
    let seconds =
        |t: &Value| t.as_str().and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok()).map(|t| t.as_second());
    let condition_time = |type_: &str| {
        let found = wl["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == type_).cloned();
        found.and_then(|c| seconds(&c["lastTransitionTime"])).unwrap_or_else(|| panic!("{type_} in {wl:#}"))
    };
    let explained = sandbox.run("explain", &["job/train-a", "-o", "json"]);
    let explained: Value =
        serde_json::from_slice(&explained.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&explained)));
    let timeline = &explained["multikueue"];
    let moments = timeline["moments"].as_array().unwrap_or_else(|| panic!("no timeline: {explained:#}"));
    let time_of = |step: &str, cluster: &str| {
        let found = moments.iter().find(|m| m["step"] == step && m["cluster"] == cluster);
        found.and_then(|m| m["time"].as_i64()).unwrap_or_else(|| panic!("no {step} on {cluster}: {timeline:#}"))
    };
    let winner = dispatched[0].as_str();
    let (quota, copied, won) =
        (time_of("quota-reserved", "manager"), time_of("copied", winner), time_of("won", winner));
    let check_ready = seconds(&wl["status"]["admissionChecks"][0]["lastTransitionTime"]).unwrap();
    assert!((won - check_ready).abs() <= 1, "won at {won}, the check Ready at {check_ready}: {timeline:#}");
    assert!(quota <= copied && copied <= won, "quota, copy, win in order: {timeline:#}");
    assert_eq!(time_of("finished", "manager"), condition_time("Finished"), "{timeline:#}");
    assert!((time_of("removed", winner) - condition_time("Finished")).abs() <= 1, "{timeline:#}");
    let ran: Vec<&str> = timeline["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["won"] == true)
        .filter_map(|w| w["worker"].as_str())
        .collect();
    assert_eq!(ran, [winner], "{timeline:#}");
    let printed = text(&sandbox.run("explain", &["job/train-a"]));
    assert!(
        printed.contains("multikueue (UTC):")
            && printed.contains(&format!("{winner}: admitted first; MultiKueue runs the job there.")),
        "{printed}"
    );

    // An ExternalJob takes the same path through Kueue's generic adapter for external kinds.
    let external = apply_yaml(&manager, &training_job("ext-train", "10s")).await.remove(0);
    assert_eq!(external["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "our webhook hands it to MultiKueue");
    let uid = external["metadata"]["uid"].as_str().unwrap().to_string();
    let (workload, worker) = eventually("the ExternalJob to be dispatched", Duration::from_secs(60), || async {
        let found = workloads_owned_by(&manager, "default", &uid).await?;
        match found.as_slice() {
            [w] if w["status"]["clusterName"].is_string() => Ok((
                w["metadata"]["name"].as_str().unwrap().to_string(),
                w["status"]["clusterName"].as_str().unwrap().to_string(),
            )),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let remote = sandbox.client(&worker).await;
    let mirror = eventually("the mirror on the worker", Duration::from_secs(30), || async {
        let jobs = api(&remote, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
        jobs.get_opt("ext-train").await.map_err(|e| e.to_string())?.ok_or_else(|| "not yet".to_string())
    })
    .await;
    let mirror = serde_json::to_value(mirror).unwrap();
    assert!(mirror["spec"].get("managedBy").is_none(), "the worker copy is run by the worker");
    assert_eq!(mirror["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"], workload.as_str());
    let remote_workloads = crate::common::workloads(&remote, "default").list(&Default::default()).await.unwrap();
    let adopted: Vec<_> =
        remote_workloads.items.iter().filter(|w| w.metadata.name.as_deref() == Some(&workload)).collect();
    assert_eq!(adopted.len(), 1, "the worker adopts the prebuilt Workload instead of creating its own");
    let externals = api(&manager, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    eventually("the manager's ExternalJob to report completion", Duration::from_secs(90), || async {
        let job = serde_json::to_value(externals.get("ext-train").await.map_err(|e| e.to_string())?).unwrap();
        if condition_is(&job, "Complete", "True") { Ok(()) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;

    // A WrappedJob too: the worker copy creates its components there and its phase comes back.
    let wrapped = apply_yaml(&manager, &wrapped_job("wrapped-train", "4s")).await.remove(0);
    assert_eq!(wrapped["spec"]["managedBy"], "kueue.x-k8s.io/multikueue", "our webhook hands it to MultiKueue");
    let uid = wrapped["metadata"]["uid"].as_str().unwrap().to_string();
    let wrappeds = api(&manager, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", Some("default"));
    let succeeded = eventually("the manager's WrappedJob to report Succeeded", Duration::from_secs(90), || async {
        let job = serde_json::to_value(wrappeds.get("wrapped-train").await.map_err(|e| e.to_string())?).unwrap();
        if job["status"]["phase"] == "Succeeded" { Ok(job) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;
    // The worker's status, copied back: its components were created there.
    let components = succeeded["status"]["componentStatus"].as_array().unwrap();
    let deployed: Vec<(&str, &str)> = components
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["conditions"][0]["reason"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        deployed,
        [
            ("wrapped-train-work", "ComponentCreatedSuccessfully"),
            ("wrapped-train-server", "ComponentCreatedSuccessfully")
        ]
    );
    eventually("its manager Workload to be Finished on a worker", Duration::from_secs(30), || async {
        match workloads_owned_by(&manager, "default", &uid).await?.as_slice() {
            [w] if condition_is(w, "Finished", "True") && w["status"]["clusterName"].is_string() => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let on_manager = api(&manager, "batch/v1", "Job", "jobs", Some("default"));
    assert!(on_manager.get_opt("wrapped-train-work").await.unwrap().is_none(), "nothing runs on the manager");

    // Deleting a manager job mid-run deletes the worker copy, its Workload and its pods.
    apply_yaml(&manager, &wrapped_job("doomed", "120s")).await;
    let worker = eventually("doomed to run on a worker", Duration::from_secs(120), || async {
        let job = serde_json::to_value(wrappeds.get("doomed").await.map_err(|e| e.to_string())?).unwrap();
        let uid = job["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let found = workloads_owned_by(&manager, "default", &uid).await?;
        let placed = match found.as_slice() {
            [w] => w["status"]["clusterName"].as_str().map(String::from),
            _ => None,
        };
        match placed {
            Some(worker) if job["status"]["phase"] == "Running" => Ok(worker),
            _ => Err(format!("job status {:#}; workloads {found:#?}", job["status"])),
        }
    })
    .await;
    let remote = sandbox.client(&worker).await;
    let pods: Api<Pod> = Api::namespaced(remote.clone(), "default");
    let selector = ListParams::default().labels("kueue-ext.dev/wrapped-job=doomed");
    assert!(!pods.list(&selector).await.unwrap().items.is_empty(), "its pods run on {worker}");
    wrappeds.delete("doomed", &Default::default()).await.unwrap();
    let copies = api(&remote, "kueue-ext.dev/v1alpha1", "WrappedJob", "wrappedjobs", Some("default"));
    eventually("the worker copy, its Workload and its pods to be gone", Duration::from_secs(90), || async {
        let copy = copies.get_opt("doomed").await.map_err(|e| e.to_string())?;
        let left = pods.list(&selector).await.map_err(|e| e.to_string())?.items.len();
        let workloads =
            crate::common::workloads(&remote, "default").list(&Default::default()).await.map_err(|e| e.to_string())?;
        let workload = workloads.items.iter().any(|w| w.metadata.name.as_deref().is_some_and(|n| n.contains("doomed")));
        if copy.is_none() && left == 0 && !workload {
            Ok(())
        } else {
            Err(format!("copy: {}, pods: {left}, workload: {workload}", copy.is_some()))
        }
    })
    .await;

    // A job that waits is told which worker could take it, from the workers' quota: worker1
    // full of a job of its own, worker2 free. One that no worker's quota can ever hold is
    // admitted on the manager all the same (its 64 CPU are the workers' sum) and named so.
    let worker1 = sandbox.client("worker1").await;
    let local = apply_yaml(&worker1, &external_job("local-filler").requests("30", "1Gi").runs_for("10m").yaml()).await;
    let uid = local[0]["metadata"]["uid"].as_str().unwrap().to_string();
    eventually("worker1's own job to hold 30 of its 32 CPU", Duration::from_secs(60), || async {
        match workloads_owned_by(&worker1, "default", &uid).await?.as_slice() {
            [w] if condition_is(w, "QuotaReserved", "True") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let never = apply_yaml(&manager, &external_job("never-fits").requests("50", "1Gi").yaml()).await.remove(0);
    let uid = never["metadata"]["uid"].as_str().unwrap().to_string();
    eventually("never-fits to hold 50 of the manager's 64 CPU", Duration::from_secs(60), || async {
        match workloads_owned_by(&manager, "default", &uid).await?.as_slice() {
            [w] if condition_is(w, "QuotaReserved", "True") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let waits = apply_yaml(&manager, &external_job("waits").requests("16", "1Gi").yaml()).await.remove(0);
    let uid = waits["metadata"]["uid"].as_str().unwrap().to_string();
    eventually("waits to wait for the manager's quota", Duration::from_secs(60), || async {
        match workloads_owned_by(&manager, "default", &uid).await?.as_slice() {
            [w] if condition_is(w, "QuotaReserved", "False") && w["status"]["resourceRequests"].is_array() => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let explained = text(&sandbox.run("explain", &["externaljob/waits"]));
    assert!(
        explained.contains(
            "Workers: worker1 cannot now (16 cpu asked, 2 free in ClusterQueue cluster-queue); worker2 can fit it now \
             (ClusterQueue cluster-queue)."
        ),
        "{explained}"
    );
    let explained = text(&sandbox.run("explain", &["externaljob/never-fits"]));
    assert!(
        explained.contains(
            "No worker can ever admit it: it asks 50 cpu, more than any worker's ClusterQueue can give (the most: \
             worker1's ClusterQueue cluster-queue 32, worker2's ClusterQueue cluster-queue 32)"
        ),
        "{explained}"
    );
    let watched = sandbox.run("watch", &["--once", "-o", "json"]);
    let watched: Value = serde_json::from_slice(&watched.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&watched)));
    let free_cpu = |cluster: &str| {
        let row = watched["clusters"].as_array().unwrap().iter().find(|c| c["name"] == cluster).cloned().unwrap();
        let cpu = row["quota"].as_array().unwrap().iter().find(|q| q["resource"] == "cpu").cloned().unwrap();
        cpu["nominal"].as_f64().unwrap() - cpu["reserved"].as_f64().unwrap()
    };
    assert_eq!(
        (free_cpu("worker1"), free_cpu("worker2")),
        (2.0, 32.0),
        "watch --once -o json has each worker's free quota"
    );
    // train-a and train-b ran on different workers: each won one at least.
    for worker in ["worker1", "worker2"] {
        let row = watched["clusters"].as_array().unwrap().iter().find(|c| c["name"] == worker).cloned().unwrap();
        assert!(row["dispatch"]["won"].as_u64() >= Some(1), "{worker} won a copy: {row:#}");
    }

    // A worker that loses one of our CRDs is named, with what it lacks.
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(sandbox.client("worker2").await);
    crds.delete("externaljobs.kueue-ext.dev", &Default::default()).await.unwrap();
    let status = sandbox.run("status", &[]);
    let out = text(&status);
    assert!(!status.status.success(), "{out}");
    assert!(out.contains("worker2: CustomResourceDefinition externaljobs.kueue-ext.dev is missing"), "{out}");

    down_leaves_nothing(&sandbox);
    assert_eq!(contexts_in(&user_kubeconfig), ["kind-dev"], "down removes the merged contexts");
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_of_a_lost_worker_run_elsewhere_once_and_its_copies_are_collected() {
    // Given up on after 30s, so the test sees the job move.
    let sandbox = Sandbox::up(&["--worker-lost-timeout", "30s"]);
    let manager = sandbox.client("manager").await;
    let externals = api(&manager, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    let job = training_job("survivor", "20s");
    let uid = apply_yaml(&manager, &job).await.remove(0)["metadata"]["uid"].as_str().unwrap().to_string();
    let placed = |uid: String| {
        let manager = manager.clone();
        async move {
            match workloads_owned_by(&manager, "default", &uid).await?.as_slice() {
                [w] => w["status"]["clusterName"].as_str().map(String::from).ok_or_else(|| "not placed".to_string()),
                other => Err(format!("{} workloads", other.len())),
            }
        }
    };
    let lost = eventually("survivor to run on a worker", Duration::from_secs(60), || placed(uid.clone())).await;
    let lost_index = if lost == "worker1" { 1 } else { 2 };
    let copies =
        |worker: Client| api(&worker, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    let lost_client = sandbox.client(&lost).await;
    eventually("its copy to run on the worker", Duration::from_secs(30), || async {
        let copy = copies(lost_client.clone()).get_opt("survivor").await.map_err(|e| e.to_string())?;
        let suspended = copy.as_ref().map(|c| c.data["spec"]["suspend"] == true);
        if suspended == Some(false) { Ok(()) } else { Err(format!("suspended: {suspended:?}")) }
    })
    .await;

    // The worker's API server goes away mid-run.
    let mut api_server = Restarts::of(&sandbox, lost_index, "kube-apiserver");
    api_server.kill();
    // 30 s until the worker is given up on, then eviction, a new reservation and dispatch: the
    // rest is room for a loaded machine (CI once took longer than 150 s beside a benchmark).
    let moved = eventually("survivor to be dispatched to the other worker", Duration::from_secs(240), || async {
        let now = placed(uid.clone()).await?;
        if now != lost { Ok(now) } else { Err(format!("still on {now}")) }
    })
    .await;
    eventually("survivor to complete on the manager", Duration::from_secs(120), || async {
        let job = serde_json::to_value(externals.get("survivor").await.map_err(|e| e.to_string())?).unwrap();
        if condition_is(&job, "Complete", "True") { Ok(job) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;
    let done = serde_json::to_value(externals.get("survivor").await.unwrap()).unwrap();
    let succeeded: i64 =
        done["status"]["podSets"].as_array().unwrap().iter().map(|p| p["succeeded"].as_i64().unwrap()).sum();
    assert_eq!(succeeded, 3, "run to completion once, on {moved}: {:#}", done["status"]);

    // When the worker returns, MultiKueue collects the copy it left there.
    api_server.start();
    let returned = sandbox.client(&lost).await;
    eventually("the stale copy on the returned worker to be deleted", Duration::from_secs(150), || async {
        match copies(returned.clone()).get_opt("survivor").await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err("still there".to_string()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
}

/// An ExternalJob of three pods of 1 CPU for `run` each.
fn training_job(name: &str, run: &str) -> String {
    external_job(name).pod_set("workers").pods(3).runs_for(run).yaml()
}

/// A WrappedJob of a 2-pod Job running for `run` and a Deployment serving it.
fn wrapped_job(name: &str, run: &str) -> String {
    let components = [
        job_component(&format!("{name}-work"), 2, "1", run, ""),
        deployment_component(&format!("{name}-server"), 1, "500m"),
    ];
    crate::fixtures::wrapped_job(name, "user-queue", "", "", &components)
}
