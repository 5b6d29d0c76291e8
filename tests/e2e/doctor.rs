//! End-to-end: `doctor` on a sandbox (a manager and two workers, MultiKueue wired, on the
//! process runtime) finds nothing; then things are broken one at a time — a job whose pods ask
//! for nothing, a LocalQueue deleted on a worker, a job no worker can ever admit, a job made by
//! hand on a worker under the name of a job MultiKueue dispatches, our controller stopped on a
//! worker, a worker's token that no longer works — and each is named with its fix, which (where
//! it is a command) the test runs before seeing the report clean again.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams};
use kueue_ext::manifests::MUTATING_WEBHOOK;
use serde_json::Value;

use crate::common::{BIN, Sandbox, api, apply_yaml, eventually, recorded_process, text};
use crate::fixtures::external_job;

const REPORT_TIMEOUT: Duration = Duration::from_secs(120);

/// `doctor -o json`: whether it exited 0, and its report.
fn doctor(sandbox: &Sandbox) -> (bool, Value) {
    let output = sandbox.run("doctor", &["-o", "json"]);
    let report =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("doctor -o json: {e}\n{}", text(&output)));
    (output.status.success(), report)
}

/// The findings that are errors or warnings.
fn problems(report: &Value) -> Vec<Value> {
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    findings.into_iter().filter(|f| f["severity"] != "info").collect()
}

/// Until the report is clean: exit 0, no error or warning.
async fn until_clean(sandbox: &Sandbox, after: &str) {
    eventually(&format!("doctor to find nothing {after}"), REPORT_TIMEOUT, || async {
        match doctor(sandbox) {
            (true, report) if problems(&report).is_empty() => Ok(()),
            (_, report) => Err(format!("{:#}", report["findings"])),
        }
    })
    .await
}

/// Until the report has an error on `object` of `cluster` (exiting 1); that finding.
async fn until_error(sandbox: &Sandbox, cluster: &str, object: &str) -> Value {
    let what = format!("doctor to find an error on {object} of {cluster}");
    eventually(&what, REPORT_TIMEOUT, || async {
        let (passed, report) = doctor(sandbox);
        let found = problems(&report)
            .into_iter()
            .find(|f| f["severity"] == "error" && f["cluster"] == cluster && object_of(f).as_deref() == Some(object));
        match found {
            Some(finding) if !passed => Ok(finding),
            _ => Err(format!("exit 0: {passed}; {:#}", report["findings"])),
        }
    })
    .await
}

/// The name of the Workload of ExternalJob `job` in `default`, once it exists.
async fn workload_of(client: &kube::Client, job: &str) -> String {
    let external_jobs = api(client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    eventually(&format!("the Workload of {job}"), REPORT_TIMEOUT, || async {
        let list =
            crate::common::workloads(client, "default").list(&Default::default()).await.map_err(|e| e.to_string())?;
        let mut names = list.items.into_iter().filter_map(|w| w.metadata.name).filter(|n| n.contains(job));
        match names.next() {
            Some(name) => Ok(name),
            // What the controller left on the job says how far it got.
            None => Err(match external_jobs.get_opt(job).await {
                Ok(Some(found)) => format!(
                    "none yet; the job: {:#}",
                    serde_json::json!({
                        "metadata": {"finalizers": found.metadata.finalizers, "uid": found.metadata.uid},
                        "spec": {"suspend": found.data["spec"]["suspend"]},
                        "status": found.data["status"],
                    })
                ),
                other => format!("none yet; the job: {other:?}"),
            }),
        }
    })
    .await
}

fn object_of(finding: &Value) -> Option<String> {
    let object = &finding["object"];
    let (kind, name) = (object["kind"].as_str()?, object["name"].as_str()?);
    Some(match object["namespace"].as_str() {
        Some(namespace) => format!("{kind}/{namespace}/{name}"),
        None => format!("{kind}/{name}"),
    })
}

/// Runs a fix as a user would paste it, with the toolchain's kubectl.
fn run_fix(finding: &Value) {
    let fix = finding["fix"].as_str().unwrap_or_else(|| panic!("no fix: {finding:#}"));
    let toolchain = Command::new(BIN).args(["toolchain", "path"]).output().expect("toolchain path");
    let bin = PathBuf::from(String::from_utf8_lossy(&toolchain.stdout).trim());
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("bash").args(["-c", fix]).env("PATH", path).output().expect("bash runs");
    assert!(output.status.success(), "the fix {fix:?} failed: {}", text(&output));
}

/// An ExternalJob that runs ten minutes, queued or not.
fn long_job(name: &str, queue: Option<&str>) -> String {
    external_job(name).queue(queue).runs_for("10m").yaml()
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_names_each_break_with_its_fix_and_nothing_once_repaired() {
    let sandbox = Sandbox::up(&[]);
    let output = sandbox.run("doctor", &[]);
    assert!(output.status.success(), "a fresh sandbox is healthy:\n{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("checked: no problems found"), "{}", text(&output));
    let (manager, worker1, worker2) =
        (sandbox.client("manager").await, sandbox.client("worker1").await, sandbox.client("worker2").await);
    let external_jobs = |client| api(client, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));

    // Pods that request nothing, in a MultiKueue queue: Kueue would admit the job on the manager
    // and never dispatch it, so the webhook warns at create.
    let asks_nothing = r#"
apiVersion: kueue-ext.dev/v1alpha1
kind: ExternalJob
metadata: {name: asks-nothing, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: main, image: kueue-ext.local/busybox:1}]}}
"#;
    let created = sandbox.kubectl("manager", &["create", "--dry-run=server", "-f", "-"], asks_nothing);
    assert!(
        created.status.success() && text(&created).contains("Warning: no container requests resources"),
        "{}",
        text(&created)
    );
    // Created anyway: admitted on the manager around the check, never dispatched; doctor and
    // explain both say it will never run.
    apply_yaml(&manager, asks_nothing).await;
    let workload = workload_of(&manager, "asks-nothing").await;
    let never = until_error(&sandbox, "manager", &format!("Workload/default/{workload}")).await;
    assert!(never["problem"].as_str().unwrap().contains("never dispatches it"), "{never:#}");
    assert!(never["fix"].as_str().unwrap().contains("resource requests"), "{never:#}");
    let explained = text(&sandbox.run("explain", &["externaljob/asks-nothing"]));
    assert!(
        explained.contains("will never run on a worker") && explained.contains("next: give every container"),
        "{explained}"
    );
    // explain adds what doctor finds on the job's way: here the same verdict, on its Workload.
    let setup = format!("setup (what doctor finds on the way):\n  error on manager: Workload/default/{workload}:");
    assert!(explained.contains(&setup), "{explained}");
    external_jobs(&manager).delete("asks-nothing", &DeleteParams::foreground()).await.expect("delete asks-nothing");
    until_clean(&sandbox, "once the job that asks nothing is gone").await;

    // A worker without the LocalQueue: MultiKueue's copies would never be admitted there.
    let local_queues = api(&worker2, "kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", Some("default"));
    local_queues.delete("user-queue", &DeleteParams::default()).await.expect("delete the LocalQueue");
    let missing = until_error(&sandbox, "worker2", "LocalQueue/default/user-queue").await;
    assert!(missing["fix"].as_str().unwrap().contains("--context kueue-ext-worker2 create -f -"), "{missing:#}");
    run_fix(&missing);
    until_clean(&sandbox, "once the LocalQueue is back").await;

    // A job that fits the manager's queue but no worker's (kubernetes-sigs/kueue#8602).
    let too_big = std::fs::read_to_string("samples/externaljob-too-big.yaml").expect("the sample");
    apply_yaml(&manager, &too_big).await;
    let workload = workload_of(&manager, "too-big").await;
    let never = until_error(&sandbox, "manager", &format!("Workload/default/{workload}")).await;
    let problem = never["problem"].as_str().unwrap();
    assert!(problem.starts_with("asks for 2000 cpu in all") && problem.contains("kueue#8602"), "{never:#}");
    assert!(never["fix"].as_str().unwrap().contains("delete externaljob/too-big"), "{never:#}");
    external_jobs(&manager).delete("too-big", &DeleteParams::foreground()).await.expect("delete too-big");
    until_clean(&sandbox, "once the too-big job is gone").await;

    // A job made on a worker by hand under the name of one MultiKueue dispatches (kueue#11849).
    apply_yaml(&worker1, &long_job("twin", None)).await;
    apply_yaml(&manager, &long_job("twin", Some("user-queue"))).await;
    let stranger = until_error(&sandbox, "worker1", "ExternalJob/default/twin").await;
    assert!(stranger["problem"].as_str().unwrap().contains("kueue.x-k8s.io/multikueue-origin"), "{stranger:#}");
    run_fix(&stranger);
    external_jobs(&manager).delete("twin", &DeleteParams::foreground()).await.expect("delete the manager's twin");
    until_clean(&sandbox, "once the worker's own twin is gone").await;

    // Our controller stopped on a worker: its webhook does not answer, and `up` starts it again.
    let (pid, _) = recorded_process(&sandbox, 2, "kueue-ext-controller");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).expect("kill");
    let stopped = until_error(&sandbox, "worker2", &format!("MutatingWebhookConfiguration/{MUTATING_WEBHOOK}")).await;
    assert!(stopped["fix"].as_str().unwrap().contains("kubectl kueue-ext up"), "{stopped:#}");
    let revived = sandbox.run("up", &[]);
    assert!(revived.status.success(), "{}", text(&revived));
    until_clean(&sandbox, "once up started the controller again").await;

    // A worker's token that no longer works: doctor quotes Kueue on the MultiKueueCluster.
    let secrets: Api<Secret> = Api::namespaced(manager.clone(), "kueue-system");
    let good = secrets.get("multikueue-worker1").await.expect("the worker's kubeconfig Secret");
    let kubeconfig = |secret: &Secret| -> Value {
        let text = std::str::from_utf8(&secret.data.as_ref().unwrap()["kubeconfig"].0).expect("UTF-8");
        serde_saphyr::from_str(text).expect("a kubeconfig")
    };
    let mut expired = kubeconfig(&good);
    expired["users"][0]["user"]["token"] = Value::from("expired");
    let mut broken = good.clone();
    broken
        .data
        .as_mut()
        .unwrap()
        .insert("kubeconfig".into(), k8s_openapi::ByteString(serde_saphyr::to_string(&expired).unwrap().into_bytes()));
    secrets.replace("multikueue-worker1", &Default::default(), &broken).await.expect("break the token");
    let refused = until_error(&sandbox, "manager", "MultiKueueCluster/worker1").await;
    assert!(refused["problem"].as_str().unwrap().starts_with("not connected: "), "{refused:#}");
    let mut restored = secrets.get("multikueue-worker1").await.expect("the Secret");
    restored.data = good.data.clone();
    secrets.replace("multikueue-worker1", &Default::default(), &restored).await.expect("restore the token");
    until_clean(&sandbox, "once the token works again").await;
}
