//! End-to-end: `capture` of a sandbox (a manager and one worker, on the process runtime) with a
//! Secret of random bytes in it, a job that runs on the worker and one that can never be
//! admitted. The archive holds each cluster's queues, flavors and Workloads as the API has them,
//! the nodes' allocatable, Kueue's Configuration and logs, and not a byte of any Secret; the
//! manifest says Secrets were left out, and `--summary` quotes why the big job waits.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;

use crate::common::{Sandbox, api, apply_yaml, condition, eventually, text, workloads};
use crate::fixtures::external_job;

const TIMEOUT: Duration = Duration::from_secs(120);

/// An ExternalJob in `default` on `user-queue`: one pod of `cpu` that runs ten minutes.
fn job(name: &str, cpu: &str) -> String {
    external_job(name).requests(cpu, "1Gi").runs_for("10m").yaml()
}

/// The archive's tar stream, decompressed, and its files by path.
pub fn unpack(path: &std::path::Path) -> (Vec<u8>, BTreeMap<String, Vec<u8>>) {
    let compressed = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(compressed.as_slice()).read_to_end(&mut raw).expect("a gzip stream");
    let mut files = BTreeMap::new();
    for entry in tar::Archive::new(raw.as_slice()).entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        let name = entry.path().expect("a path").display().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("its bytes");
        files.insert(name, bytes);
    }
    (raw, files)
}

pub fn json(files: &BTreeMap<String, Vec<u8>>, path: &str) -> Value {
    let bytes = files.get(path).unwrap_or_else(|| panic!("{path} missing; files: {:?}", files.keys()));
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `name → field` of each item of a `List`, or of objects listed from the API.
fn by_name<'a>(items: impl IntoIterator<Item = &'a Value>, field: &str) -> BTreeMap<String, Value> {
    let pointer = format!("/{}", field.replace('.', "/"));
    items
        .into_iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap_or_default().to_string();
            (name, o.pointer(&pointer).cloned().unwrap_or(Value::Null))
        })
        .collect()
}

async fn listed(client: &kube::Client, kind: &str, plural: &str, namespaced: bool) -> Vec<Value> {
    let namespace = namespaced.then_some("default");
    let list = api(client, "kueue.x-k8s.io/v1beta2", kind, plural, namespace).list(&ListParams::default()).await;
    list.expect("a list").items.into_iter().map(|o| serde_json::to_value(o).expect("serializes")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_capture_holds_each_clusters_setup_as_the_api_has_it_and_no_secret() {
    let sandbox = Sandbox::up(&["--workers", "1"]);
    let (manager, worker) = (sandbox.client("manager").await, sandbox.client("worker1").await);

    let mut random = [0u8; 24];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut random)).expect("random bytes");
    let secret_text: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "capture-me-not", "namespace": "default"},
        "stringData": {"password": format!("capture-secret-{secret_text}")},
    }))
    .expect("a Secret");
    Api::<Secret>::namespaced(manager.clone(), "default")
        .create(&PostParams::default(), &secret)
        .await
        .expect("create");

    apply_yaml(&manager, &job("small", "1")).await;
    apply_yaml(&manager, &job("huge", "100000")).await;
    // The small job's copy runs on the worker; the huge one waits on the manager for quota.
    eventually("the small job's Workload on the worker", TIMEOUT, || async {
        let list = workloads(&worker, "default").list(&ListParams::default()).await.map_err(|e| e.to_string())?;
        list.items
            .iter()
            .any(|w| w.metadata.name.as_deref().is_some_and(|n| n.contains("small")))
            .then_some(())
            .ok_or("none yet".to_string())
    })
    .await;
    let (huge, waits) = eventually("the huge job's Workload to wait for quota", TIMEOUT, || async {
        let list = workloads(&manager, "default").list(&ListParams::default()).await.map_err(|e| e.to_string())?;
        let huge = list.items.into_iter().find(|w| w.metadata.name.as_deref().is_some_and(|n| n.contains("huge")));
        let huge = serde_json::to_value(huge.ok_or("no Workload yet")?).map_err(|e| e.to_string())?;
        match condition(&huge, "QuotaReserved") {
            Some(c) if c["status"] == "False" && c["message"].as_str().is_some_and(|m| !m.is_empty()) => {
                let c = c.clone();
                Ok((huge, c))
            }
            _ => Err(format!("{:#}", huge["status"])),
        }
    })
    .await;

    let archive = sandbox.dir.parent().expect("the test's temp dir").join("capture.tgz");
    let started = std::time::Instant::now();
    let output = sandbox.run("capture", &["-o", archive.to_str().expect("utf-8"), "--summary"]);
    let took = started.elapsed();
    assert!(output.status.success(), "capture failed:\n{}", text(&output));
    let size = std::fs::metadata(&archive).expect("the archive").len();
    eprintln!("capture of 2 clusters: {size} bytes in {:.1}s\n{}", took.as_secs_f64(), text(&output));

    let (raw, files) = unpack(&archive);
    // Not a byte of the Secret, as stored or as base64; nor of MultiKueue's kubeconfig Secrets.
    let secret_bytes = format!("capture-secret-{secret_text}");
    let forbidden =
        [secret_text.clone(), base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &secret_bytes)];
    let mut leaked: Vec<String> = forbidden.into_iter().collect();
    for secret in Api::<Secret>::namespaced(manager.clone(), "kueue-system")
        .list(&ListParams::default())
        .await
        .expect("Secrets")
        .items
    {
        for value in secret.data.unwrap_or_default().values() {
            let text = String::from_utf8_lossy(&value.0).into_owned();
            leaked.extend(text.split_whitespace().filter(|word| word.len() >= 40).map(String::from));
        }
    }
    assert!(leaked.len() > 2, "MultiKueue's kubeconfig Secret has a token to look for");
    for needle in &leaked {
        let found = raw.windows(needle.len()).any(|w| w == needle.as_bytes());
        assert!(!found, "secret bytes {}… are in the archive", &needle[..12]);
    }

    let manifest = json(&files, "capture.json");
    let left_out: Vec<&str> =
        manifest["leftOut"].as_array().expect("leftOut").iter().filter_map(|l| l["what"].as_str()).collect();
    assert!(left_out.contains(&"Secrets"), "{left_out:#?}");
    let clusters = manifest["clusters"].as_array().expect("clusters");
    assert_eq!(
        clusters.iter().map(|c| c["name"].as_str().unwrap_or_default()).collect::<Vec<_>>(),
        ["manager", "worker1"]
    );

    for (name, client) in [("manager", &manager), ("worker1", &worker)] {
        let entry = clusters.iter().find(|c| c["name"] == name).expect("its entry");
        assert_eq!(entry["kueueVersion"], "v0.19.2", "{entry:#}");
        let config = String::from_utf8_lossy(&files[&format!("{name}/kueue/configuration.yaml")]).into_owned();
        assert!(config.contains("kind: Configuration"), "{config}");
        assert!(files.contains_key(&format!("{name}/logs/kueue.log")), "{:?}", files.keys());
        for (kind, plural, namespaced, field) in [
            ("ClusterQueue", "clusterqueues", false, "spec.resourceGroups"),
            ("LocalQueue", "localqueues", true, "spec.clusterQueue"),
            ("ResourceFlavor", "resourceflavors", false, "metadata.uid"),
            ("Workload", "workloads", true, "spec.podSets.0.count"),
        ] {
            let captured = json(&files, &format!("{name}/{plural}.json"));
            let captured = by_name(captured["items"].as_array().expect("items"), field);
            let live = by_name(&listed(client, kind, plural, namespaced).await, field);
            assert!(!live.is_empty(), "{kind} on {name}: none to compare");
            assert_eq!(captured, live, "{kind}.{field} on {name}");
            assert_eq!(entry["counts"][kind], live.len(), "{kind} count on {name}");
        }
        let nodes = json(&files, &format!("{name}/nodes.json"));
        let captured = by_name(nodes["items"].as_array().expect("items"), "status.allocatable");
        let live: Vec<Value> = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .expect("nodes")
            .items
            .iter()
            .map(|n| serde_json::to_value(n).expect("serializes"))
            .collect();
        assert_eq!(captured, by_name(&live, "status.allocatable"), "nodes' allocatable on {name}");
        assert!(
            !String::from_utf8_lossy(&files[&format!("{name}/nodes.json")]).contains("addresses"),
            "only what a node's capacity needs"
        );
    }
    let jobs = json(&files, "manager/jobs/externaljobs.kueue-ext.dev.json");
    let jobs = by_name(jobs["items"].as_array().expect("items"), "metadata.uid");
    assert_eq!(jobs.keys().collect::<Vec<_>>(), ["huge", "small"]);

    let summary = String::from_utf8_lossy(&output.stdout).into_owned();
    let reason = waits["reason"].as_str().expect("a reason");
    let message = waits["message"].as_str().expect("a message");
    let line = summary.lines().find(|l| l.contains(huge["metadata"]["name"].as_str().expect("a name")));
    let line = line.unwrap_or_else(|| panic!("the huge job's Workload is not in the summary:\n{summary}"));
    assert!(line.contains("QuotaReserved=False") && line.contains(reason) && line.contains(message), "{line}");
}
