//! End-to-end: a pending job's place in its queue. Three jobs go into a queue with room for one,
//! on the process runtime, whose Kueue serves no visibility API: `explain` of the third says it
//! is second of the two pending, behind the second job, in creation order (marked as such), and
//! `watch --once -o json` agrees.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Sandbox, apply_yaml, condition, eventually, text, workloads};
use crate::fixtures::external_job;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A ClusterQueue with room for one job of one CPU, fed by `default/one-at-a-time`.
const ROOM_FOR_ONE: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: room-for-one}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "1"}
      - {name: memory, nominalQuota: 4Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: one-at-a-time, namespace: default}
spec: {clusterQueue: room-for-one}
"#;

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

#[tokio::test(flavor = "multi_thread")]
async fn a_pending_job_is_told_its_place_and_who_is_ahead() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let manager = sandbox.client("manager").await;
    apply_yaml(&manager, ROOM_FOR_ONE).await;
    apply_yaml(&manager, &job("queue-first")).await;
    workload(&manager, "queue-first", Some("True")).await;
    apply_yaml(&manager, &job("queue-second")).await;
    let second = workload(&manager, "queue-second", Some("False")).await;
    // Creation times have one-second resolution and Kueue breaks a tie by UID: the third job is
    // made in a later second than the second's Workload, so that creation order is certain.
    eventually("the clock to pass the second Workload's creation second", TIMEOUT, || async {
        let now = k8s_openapi::jiff::Timestamp::now();
        if now.as_second() > created(&second).as_second() { Ok(()) } else { Err(format!("now {now}")) }
    })
    .await;
    apply_yaml(&manager, &job("queue-third")).await;
    workload(&manager, "queue-third", None).await;

    let explained = sandbox.run("explain", &["queue-third"]);
    assert!(explained.status.success(), "{}", text(&explained));
    let lines = String::from_utf8_lossy(&explained.stdout).to_string();
    let queue = lines.lines().find(|l| l.starts_with("queue: ")).unwrap_or_else(|| panic!("no queue line:\n{lines}"));
    assert!(
        queue.starts_with(
            "queue: position 2 of 2 in ClusterQueue room-for-one (2 of 2 in LocalQueue default/one-at-a-time), \
             behind default/queue-second (priority 0, "
        ),
        "{queue}"
    );
    assert!(
        queue.contains("; creation order: positions need the visibility API (manager does not serve it"),
        "{queue}"
    );

    let json = sandbox.run("explain", &["queue-third", "-o", "json"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&json)));
    let place = &json["queue"];
    assert_eq!(
        (place["source"].as_str(), place["in_cluster_queue"]["position"].as_u64()),
        (Some("creation-order"), Some(2))
    );

    let watched = sandbox.run("watch", &["--once", "-o", "json"]);
    let watched: Value = serde_json::from_slice(&watched.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&watched)));
    let rows = watched["jobs"].as_array().expect("jobs");
    let place_of = |name: &str| rows.iter().find(|r| r["key"]["name"] == name).map(|r| r["queue_position"].clone());
    // Each read the clusters at its own time: all but the ages agree.
    let third = place_of("queue-third").expect("a row of queue-third");
    for field in ["source", "fallback", "cluster_queue", "local_queue", "in_cluster_queue", "in_local_queue"] {
        assert_eq!(third[field], place[field], "watch and explain agree on {field}");
    }
    assert_eq!(third["ahead"][0]["workload"], place["ahead"][0]["workload"]);
    assert_eq!(place["ahead"][0]["job"], "default/queue-second");
    assert_eq!(place_of("queue-second").unwrap()["in_cluster_queue"]["position"], 1);
    assert_eq!(place_of("queue-first"), Some(Value::Null), "the admitted job is in no line");
}
