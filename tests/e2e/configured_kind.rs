//! End-to-end: a kind no cluster serves until `up --crds` installs it, integrated by
//! configuration alone (`samples/addons/tekton/pipelinerun-integration.yaml`, a PipelineRun-shaped
//! kind). Its CRD is written here; the test plays its controller (it marks a run Succeeded once
//! Kueue has let it start). `submit --wait`, `watch` and `explain` see it like a built-in kind.

use std::time::Duration;

use crate::common::{Sandbox, api, condition_is, eventually, text, workloads_owned_by};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

const INTEGRATIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/addons/tekton/pipelinerun-integration.yaml");

/// The kind as its integrations file describes it: `spec.status: PipelineRunPending` holds it
/// back, the condition `Succeeded` ends it.
const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pipelineruns.tekton.dev
spec:
  group: tekton.dev
  scope: Namespaced
  names: {kind: PipelineRun, plural: pipelineruns, singular: pipelinerun, listKind: PipelineRunList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const RUN: &str = r#"
apiVersion: tekton.dev/v1
kind: PipelineRun
metadata:
  name: build-and-test
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
  annotations:
    kueue-ext.dev/pod-requests: cpu=1,memory=1Gi
    kueue-ext.dev/pod-count: "2"
spec:
  pipelineRef: {name: build-and-test}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_installed_by_up_and_integrated_by_configuration_is_seen_by_every_command() {
    let files = tempfile::tempdir().unwrap();
    let (crd, run) = (files.path().join("crd.yaml"), files.path().join("run.yaml"));
    std::fs::write(&crd, CRD).unwrap();
    std::fs::write(&run, RUN).unwrap();
    let sandbox = Sandbox::up(&["--workers", "0", "--crds", crd.to_str().unwrap(), "--integrations", INTEGRATIONS]);
    let client = sandbox.client("manager").await;
    let runs = api(&client, "tekton.dev/v1", "PipelineRun", "pipelineruns", Some("default"));

    let submitted = sandbox.run("submit", &[run.to_str().unwrap()]);
    assert!(submitted.status.success(), "{}", text(&submitted));
    assert!(text(&submitted).contains("pipelinerun.tekton.dev/build-and-test created"), "{}", text(&submitted));

    // Admitted: our controller removes the pending status; the kind's controller would now run it.
    let started = eventually("the run to be let go", Duration::from_secs(60), || async {
        let value = serde_json::to_value(runs.get("build-and-test").await.map_err(|e| e.to_string())?).unwrap();
        if value["spec"].get("status").is_none() { Ok(value) } else { Err(format!("{:#}", value["spec"])) }
    })
    .await;
    let uid = started["metadata"]["uid"].as_str().unwrap().to_string();
    let status = json!({"status": {"conditions": [
        {"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "Tasks Completed: 3"}]}});
    runs.patch_status("build-and-test", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();

    // Submitted before: left as it is, and waited for by its kind's own rule.
    let waited = sandbox.run("submit", &[run.to_str().unwrap(), "--wait=1m"]);
    let out = text(&waited);
    assert!(waited.status.success(), "{out}");
    assert!(out.contains("pipelinerun.tekton.dev/build-and-test succeeded"), "{out}");

    let wl = eventually("the Workload to be Finished", Duration::from_secs(30), || async {
        match workloads_owned_by(&client, "default", &uid).await?.as_slice() {
            [wl] if condition_is(wl, "Finished", "True") => Ok(wl.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(wl["spec"]["podSets"][0]["count"], 2);

    let watched = sandbox.run("watch", &["--once", "-o", "json"]);
    let json: Value = serde_json::from_slice(&watched.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&watched)));
    let row = json["jobs"].as_array().and_then(|jobs| jobs.iter().find(|j| j["key"]["name"] == "build-and-test"));
    let row = row.unwrap_or_else(|| panic!("build-and-test in {json:#}"));
    assert_eq!((row["key"]["kind"].as_str(), row["status"].as_str()), (Some("PipelineRun"), Some("Succeeded")));
    assert_eq!(row["workload"]["name"], wl["metadata"]["name"]);

    let explained = text(&sandbox.run("explain", &["pipelinerun/build-and-test"]));
    assert_eq!(explained.trim(), "PipelineRun default/build-and-test has finished: Succeeded (Tasks Completed: 3).");
}

#[test]
fn crds_must_be_crds() {
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("not-a-crd.yaml");
    std::fs::write(&path, RUN).unwrap();
    let sandbox = Sandbox::unstarted();
    let refused = sandbox.run("up", &["--crds", path.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let expected = format!(
        "{}:1 (document 1): kind: PipelineRun of tekton.dev/v1 is not a CustomResourceDefinition",
        path.display()
    );
    assert!(text(&refused).contains(&expected), "{}", text(&refused));
    assert!(!sandbox.dir.join("state.json").exists(), "nothing was started");
}
