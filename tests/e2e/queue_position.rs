//! End-to-end: pending jobs in their queue. Six jobs go into a queue with room for one, on the
//! process runtime, whose Kueue serves no visibility API: `explain` of the third waiting says it
//! is third of five, behind the first two, in creation order (marked as such); `watch --once -o
//! json` agrees and lists the five in order; then Kueue admits them in that order, one each time
//! the running job is deleted.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Sandbox, api, apply_yaml, condition, eventually, text, workloads};
use crate::fixtures::{Queue, external_job, resource_flavor};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A ClusterQueue with room for one job of one CPU, fed by `default/one-at-a-time`.
fn room_for_one() -> String {
    let queue = Queue {
        cluster_queue: "room-for-one",
        local_queue: "one-at-a-time",
        flavor: "default-flavor",
        cpu: "1",
        memory: "4Gi",
        preempts: false,
    };
    [resource_flavor("default-flavor", "{}"), queue.yaml()].join("\n---\n")
}

/// An ExternalJob of one pod of one CPU that runs ten minutes.
fn job(name: &str) -> String {
    external_job(name).queue(Some("one-at-a-time")).runs_for("10m").yaml()
}

/// The Workload of job `name`, once Kueue has set its QuotaReserved condition to `status`; with
/// `None`, once it exists (Kueue 0.19 may set aside a Workload equivalent to one it could not
/// admit without writing a condition on it).
async fn workload(client: &kube::Client, name: &str, status: Option<&str>) -> Value {
    eventually(&format!("{name}'s Workload with QuotaReserved {status:?}"), TIMEOUT, || async {
        let list = workloads(client, "default").list(&Default::default()).await.map_err(|e| e.to_string())?;
        let owned =
            list.items.into_iter().find(|w| w.metadata.owner_references.iter().flatten().any(|o| o.name == name));
        let wl = serde_json::to_value(owned.ok_or("no Workload yet")?).map_err(|e| e.to_string())?;
        match (condition(&wl, "QuotaReserved"), status) {
            (_, None) => Ok(wl),
            (Some(c), Some(status)) if c["status"] == status => Ok(wl),
            (other, _) => Err(format!("QuotaReserved: {other:?}")),
        }
    })
    .await
}

fn created(wl: &Value) -> k8s_openapi::jiff::Timestamp {
    wl["metadata"]["creationTimestamp"].as_str().and_then(|t| t.parse().ok()).expect("a creation time")
}

/// The jobs that wait, in the order they are created.
const WAITING: [&str; 5] = ["wait-1", "wait-2", "wait-3", "wait-4", "wait-5"];

/// The jobs of ours whose Workloads hold quota now.
async fn holding_quota(client: &kube::Client) -> Result<Vec<String>, String> {
    let list = workloads(client, "default").list(&Default::default()).await.map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    for wl in list.items {
        let wl = serde_json::to_value(wl).map_err(|e| e.to_string())?;
        let reserved = condition(&wl, "QuotaReserved").is_some_and(|c| c["status"] == "True");
        let owner = wl["metadata"]["ownerReferences"][0]["name"].as_str().unwrap_or_default().to_string();
        if reserved && wl["metadata"]["deletionTimestamp"].is_null() {
            names.push(owner);
        }
    }
    Ok(names)
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_jobs_are_listed_in_the_order_kueue_admits_them() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let manager = sandbox.client("manager").await;
    apply_yaml(&manager, &room_for_one()).await;
    apply_yaml(&manager, &job("runs-first")).await;
    workload(&manager, "runs-first", Some("True")).await;
    let mut previous: Option<Value> = None;
    for name in WAITING {
        // Creation times have one-second resolution and Kueue breaks a tie by UID: each job is
        // made in a later second than the one before's Workload, so that creation order is certain.
        if let Some(before) = &previous {
            eventually("the clock to pass the previous Workload's creation second", TIMEOUT, || async {
                let now = k8s_openapi::jiff::Timestamp::now();
                if now.as_second() > created(before).as_second() { Ok(()) } else { Err(format!("now {now}")) }
            })
            .await;
        }
        apply_yaml(&manager, &job(name)).await;
        previous = Some(workload(&manager, name, None).await);
    }

    let explained = sandbox.run("explain", &["wait-3"]);
    assert!(explained.status.success(), "{}", text(&explained));
    let lines = String::from_utf8_lossy(&explained.stdout).to_string();
    let queue = lines.lines().find(|l| l.starts_with("queue: ")).unwrap_or_else(|| panic!("no queue line:\n{lines}"));
    assert!(
        queue.starts_with(
            "queue: position 3 of 5 in ClusterQueue room-for-one (3 of 5 in LocalQueue default/one-at-a-time), \
             behind default/wait-1 (priority 0, "
        ) && queue.contains("), default/wait-2 (priority 0, "),
        "{queue}"
    );
    assert!(
        queue.contains("; creation order: positions need the visibility API (manager does not serve it"),
        "{queue}"
    );

    let json = sandbox.run("explain", &["wait-3", "-o", "json"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&json)));
    let place = &json["queue"];
    assert_eq!(
        (place["source"].as_str(), place["in_cluster_queue"]["position"].as_u64()),
        (Some("creation-order"), Some(3))
    );
    let ahead: Vec<&str> = place["ahead"].as_array().expect("ahead").iter().filter_map(|a| a["job"].as_str()).collect();
    assert_eq!(ahead, ["default/wait-1", "default/wait-2"]);

    let watched = sandbox.run("watch", &["--once", "-o", "json"]);
    let watched: Value = serde_json::from_slice(&watched.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&watched)));
    let rows = watched["jobs"].as_array().expect("jobs");
    let place_of = |name: &str| rows.iter().find(|r| r["key"]["name"] == name).map(|r| r["queue_position"].clone());
    // Each read the clusters at its own time: all but the ages agree.
    let third = place_of("wait-3").expect("a row of wait-3");
    for field in ["source", "fallback", "cluster_queue", "local_queue", "in_cluster_queue", "in_local_queue"] {
        assert_eq!(third[field], place[field], "watch and explain agree on {field}");
    }
    assert_eq!(place_of("runs-first"), Some(Value::Null), "the admitted job is in no line");
    let line = watched["pending"]
        .as_array()
        .and_then(|lines| lines.iter().find(|l| l["cluster_queue"] == "room-for-one"))
        .unwrap_or_else(|| panic!("no line of room-for-one: {:#}", watched["pending"]));
    let listed: Vec<&str> =
        line["workloads"].as_array().expect("workloads").iter().filter_map(|w| w["job"]["name"].as_str()).collect();
    assert_eq!(listed, WAITING, "watch lists them in order: {line:#}");
    assert_eq!(line["source"], "creation-order");

    // Kueue admits them in that order: each time the running job goes, the next one takes its place.
    let externals = api(&manager, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    let mut running = "runs-first";
    for next in listed {
        externals.delete(running, &Default::default()).await.expect("delete the running job");
        eventually(&format!("{next} to take {running}'s place"), TIMEOUT, || async {
            match holding_quota(&manager).await?.as_slice() {
                [only] if only == next => Ok(()),
                other => Err(format!("holding quota: {other:?}")),
            }
        })
        .await;
        running = next;
    }
}
