//! End-to-end: `simulate` answers from Kueue's own scheduler in a throwaway sandbox, and the
//! answers hold when the same jobs are really submitted. One sandbox: a manager and two workers
//! of 4 CPU each, worker1 nearly full with a job of its own; on the manager, besides
//! MultiKueue's queue, a single-cluster queue of 2 CPU that preempts by priority, full with a
//! low-priority job. Three jobs are simulated in one run: one that fits worker2 only, a
//! high-priority one that preempts the low one, and one that fits nowhere.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kube::api::ListParams;
use serde_json::Value;

use crate::common::{Sandbox, apply_yaml, condition, condition_is, eventually, text, workloads};
use crate::fixtures::{Queue, external_job, priority_class};

const TIMEOUT: Duration = Duration::from_secs(180);

fn local_queue() -> String {
    let queue = Queue {
        cluster_queue: "local-cq",
        local_queue: "local",
        flavor: "default-flavor",
        cpu: "2",
        memory: "8Gi",
        preempts: true,
    };
    [queue.yaml(), priority_class("low", 10), priority_class("high", 1000)].join("\n---\n")
}

/// `(cluster, namespace/name, uid)` of every Workload of the sandbox's three clusters.
async fn all_workloads(sandbox: &Sandbox) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for cluster in ["manager", "worker1", "worker2"] {
        let client = sandbox.client(cluster).await;
        let list = workloads(&client, "default").list(&ListParams::default()).await.expect("workloads");
        for w in list.items {
            let (name, uid) = (w.metadata.name.unwrap_or_default(), w.metadata.uid.unwrap_or_default());
            out.insert((cluster.to_string(), name, uid));
        }
    }
    out
}

/// The manager's Workload of the ExternalJob `job`, once `ready` holds for it.
async fn workload_of(client: &kube::Client, job: &str, ready: impl Fn(&Value) -> bool) -> Value {
    eventually(&format!("{job}'s Workload"), TIMEOUT, || async {
        let list = workloads(client, "default").list(&ListParams::default()).await.map_err(|e| e.to_string())?;
        let values: Vec<Value> = list.items.iter().map(|w| serde_json::to_value(w).expect("serializes")).collect();
        let found = values.into_iter().find(|w| {
            w["metadata"]["ownerReferences"][0]["name"] == job
                && w["metadata"]["ownerReferences"][0]["kind"] == "ExternalJob"
        });
        match found {
            Some(w) if ready(&w) => Ok(w),
            Some(w) => Err(format!("{:#}", w["status"])),
            None => Err("none yet".into()),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn simulate_answers_as_kueue_does_and_writes_nothing() {
    let started = Instant::now();
    let original = Sandbox::up(&["--workers", "2", "--nodes", "1", "--node-cpu", "4"]);
    let (manager, worker1) = (original.client("manager").await, original.client("worker1").await);
    apply_yaml(&worker1, &external_job("filler").requests("3", "1Gi").runs_for("10m").yaml()).await;
    workload_of(&worker1, "filler", |w| condition_is(w, "Admitted", "True")).await;
    apply_yaml(&manager, &local_queue()).await;
    let low = external_job("low").queue(Some("local")).label("kueue.x-k8s.io/priority-class", "low");
    apply_yaml(&manager, &low.requests("2", "1Gi").runs_for("10m").yaml()).await;
    workload_of(&manager, "low", |w| condition_is(w, "Admitted", "True")).await;

    let files = original.dir.parent().expect("the test's temp dir").to_path_buf();
    let write = |name: &str, yaml: String| {
        let path = files.join(format!("{name}.yaml"));
        std::fs::write(&path, yaml).expect("job file");
        path.to_str().expect("utf-8").to_string()
    };
    let spread = write("spread", external_job("spread").requests("2", "1Gi").runs_for("10m").yaml());
    let urgent = external_job("urgent").queue(Some("local")).label("kueue.x-k8s.io/priority-class", "high");
    let urgent = write("urgent", urgent.requests("2", "1Gi").runs_for("10m").yaml());
    let huge = write("huge", external_job("huge").requests("100", "1Gi").yaml());
    let set_up = started.elapsed();

    let before = all_workloads(&original).await;
    let simulated_at = Instant::now();
    let simulated = original.run("simulate", &[&spread, &urgent, &huge, "-o", "json"]);
    let took = simulated_at.elapsed();
    eprintln!("{}", String::from_utf8_lossy(&simulated.stderr));
    assert_eq!(simulated.status.code(), Some(1), "one job fits nowhere:\n{}", text(&simulated));
    let report: Value =
        serde_json::from_slice(&simulated.stdout).unwrap_or_else(|e| panic!("{e}\n{}", text(&simulated)));
    eprintln!("{report:#}");
    assert_eq!(all_workloads(&original).await, before, "simulate wrote no Workload to the original sandbox");

    let jobs = report["jobs"].as_array().expect("jobs");
    let answer = |name: &str| {
        jobs.iter()
            .find(|j| j["job"] == format!("externaljob.kueue-ext.dev/{name}"))
            .unwrap_or_else(|| panic!("{name}: {report:#}"))
    };
    let (spread_said, urgent_said, huge_said) = (answer("spread"), answer("urgent"), answer("huge"));
    assert_eq!(
        (spread_said["admitted"].as_bool(), spread_said["worker"].as_str()),
        (Some(true), Some("worker2")),
        "{report:#}"
    );
    assert_eq!(spread_said["flavors"]["main"], serde_json::json!(["default-flavor"]), "{report:#}");
    assert_eq!(urgent_said["admitted"], true, "{report:#}");
    assert_eq!(urgent_said["preempts"], serde_json::json!(["externaljob.kueue-ext.dev/default/low"]), "{report:#}");
    assert_eq!(huge_said["admitted"], false, "{report:#}");
    let shortfall = huge_said["message"].as_str().unwrap_or_default();
    assert!(shortfall.contains("insufficient quota for cpu in flavor default-flavor"), "{report:#}");
    let caveats = report["notAsCaptured"].as_array().expect("caveats");
    assert!(caveats.iter().any(|c| c.as_str().is_some_and(|c| c.contains("placeholders"))), "{report:#}");

    // The same jobs, really submitted: Kueue does what the simulation said.
    let submitted = original.run("submit", &["-f", &spread, "-f", &urgent, "-f", &huge]);
    assert!(submitted.status.success(), "submit:\n{}", text(&submitted));
    let real = workload_of(&manager, "spread", |w| condition_is(w, "Admitted", "True")).await;
    assert_eq!(real["status"]["clusterName"], "worker2");
    workload_of(&manager, "urgent", |w| condition_is(w, "Admitted", "True")).await;
    workload_of(&manager, "low", |w| condition(w, "Evicted").is_some_and(|c| c["reason"] == "Preempted")).await;
    let real = workload_of(&manager, "huge", |w| condition_is(w, "QuotaReserved", "False")).await;
    assert_eq!(condition(&real, "QuotaReserved").expect("held")["message"], shortfall);
    eprintln!(
        "set up in {:.0}s; simulate took {:.1}s; checked against the real submission in {:.0}s",
        set_up.as_secs_f64(),
        took.as_secs_f64(),
        (simulated_at.elapsed() - took).as_secs_f64()
    );
}
