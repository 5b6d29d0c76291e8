//! End-to-end security checks on a real sandbox: what our ServiceAccount may do as the API
//! server itself reports it, credentials on disk readable by their owner only, no credential in
//! any log (even at trace level), webhooks that fail closed and serve TLS only.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{Restarts, Sandbox, controller_process, eventually};
use k8s_openapi::api::authorization::v1::{SelfSubjectRulesReview, SelfSubjectRulesReviewSpec};
use kube::Client;
use kube::api::{Api, PostParams};
use kueue_ext::sandbox::process_runtime::health::Prober;
use kueue_ext::sandbox::record::Probe;
use serde_json::Value;

const SERVICE_ACCOUNT: &str = "system:serviceaccount:kueue-ext-system:kueue-ext-controller";

/// A client that acts as `user` (the sandbox's admin impersonates it).
async fn impersonating(sandbox: &Sandbox, user: &str) -> Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(sandbox.kubeconfig()).unwrap();
    let options = kube::config::KubeConfigOptions { context: Some("kueue-ext-manager".into()), ..Default::default() };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
    config.auth_info.impersonate = Some(user.into());
    Client::try_from(config).unwrap()
}

/// `(apiGroups, resources, verbs)` of every resource rule `user` has in `namespace`, as the API
/// server evaluates its RBAC.
async fn rules_of(client: &Client, namespace: &str) -> Vec<(Vec<String>, Vec<String>, Vec<String>, Vec<String>)> {
    let review = SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec { namespace: Some(namespace.into()) },
        ..Default::default()
    };
    let answered = Api::<SelfSubjectRulesReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("a SelfSubjectRulesReview is answered");
    let status = answered.status.expect("the review has a status");
    assert!(!status.incomplete, "the API server could not list every rule: {:?}", status.evaluation_error);
    status
        .resource_rules
        .into_iter()
        .map(|r| {
            (
                r.api_groups.unwrap_or_default(),
                r.resources.unwrap_or_default(),
                r.verbs,
                r.resource_names.unwrap_or_default(),
            )
        })
        .collect()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The secret strings of a credential file: bearer tokens of a kubeconfig, the key material of
/// a private key (each base64 line of its body, and the base64 of the whole PEM as kubeconfigs
/// embed it).
fn secrets_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(token) = line.strip_prefix("token:") {
            out.push(token.trim().trim_matches('"').to_string());
        }
        if let Some(data) = line.strip_prefix("client-key-data:") {
            out.push(data.trim().chars().take(48).collect());
        }
    }
    if let Some(body) = text.split("PRIVATE KEY-----").nth(1) {
        out.extend(body.lines().map(str::trim).filter(|l| l.len() >= 32 && !l.starts_with("-----")).map(String::from));
    }
    out.retain(|s| s.len() >= 20);
    out
}

fn is_credential(path: &Path, text: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.ends_with(".key") || name.contains("kubeconfig") || !secrets_in(text).is_empty()
}

#[tokio::test(flavor = "multi_thread")]
async fn least_privilege_owner_only_credentials_no_secrets_in_logs_fail_closed_tls_only() {
    let sandbox = Sandbox::up(&["--workers", "0"]);
    let admin = sandbox.client("manager").await;

    // What our ServiceAccount may do, as the API server reports it: no wildcard, no Secret, no
    // escalation; and the rights it needs are there.
    let controller = impersonating(&sandbox, SERVICE_ACCOUNT).await;
    for namespace in ["default", "kueue-ext-system", "kube-system"] {
        let rules = rules_of(&controller, namespace).await;
        for (groups, resources, verbs, names) in &rules {
            let rule = format!("{namespace}: {groups:?} {resources:?} {verbs:?}");
            assert!(!verbs.iter().any(|v| v == "*"), "wildcard verb: {rule}");
            assert!(!resources.iter().any(|r| r == "*" || r.starts_with("*/")), "wildcard resource: {rule}");
            assert!(!groups.iter().any(|g| g == "*"), "wildcard API group: {rule}");
            // Its own certificate Secret, by name, and no other.
            let own_certificate = namespace == "kueue-ext-system" && names == &["kueue-ext-webhook-cert"];
            assert!(
                !resources.iter().any(|r| r == "secrets") || own_certificate,
                "access to Secrets: {rule} {names:?}"
            );
            for dangerous in ["escalate", "bind", "impersonate"] {
                assert!(!verbs.iter().any(|v| v == dangerous), "{dangerous}: {rule}");
            }
        }
        let may = |group: &str, resource: &str, verb: &str| {
            rules.iter().any(|(g, r, v, _)| {
                g.iter().any(|g| g == group) && r.iter().any(|r| r == resource) && v.iter().any(|v| v == verb)
            })
        };
        assert!(may("kueue.x-k8s.io", "workloads", "create"), "{namespace}: it keeps Workloads");
        assert!(may("", "pods", "create"), "{namespace}: it runs ExternalJob pods");
        assert!(!may("", "pods", "update"), "{namespace}: it never edits pods");
        assert!(
            may("coordination.k8s.io", "leases", "update") == (namespace == "kueue-ext-system"),
            "{namespace}: Leases in its own namespace only"
        );
    }

    // The webhooks fail closed: with the controller down, no ExternalJob gets in unsuspended.
    let (_, command) = controller_process(&sandbox);
    let mut original = Restarts::controller(&sandbox);
    original.kill();
    let job: Value = serde_saphyr::from_str(
        r#"
apiVersion: kueue-ext.dev/v1alpha1
kind: ExternalJob
metadata: {name: secure, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  podSets:
  - name: main
    count: 1
    template:
      metadata: {annotations: {kueue-ext.dev/run-duration: 1s}}
      spec: {containers: [{name: main, image: registry.invalid/x, resources: {requests: {cpu: 100m}}}]}
"#,
    )
    .unwrap();
    let refused = kueue_ext::kube_util::apply(&admin, &job).await.expect_err("refused while the webhook is down");
    assert!(refused.to_string().contains("failed calling webhook"), "{refused}");

    // A replica at trace level takes over (same port, so the webhooks reach it), runs a job and
    // still writes no credential into its log.
    let trace_log = sandbox.dir.join("manager/logs/trace-replica.log");
    let log = std::fs::File::create(&trace_log).unwrap();
    let mut replica = std::process::Command::new(&command[0])
        .args(&command[1..])
        .arg("-vvv")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    eventually("the webhook to admit again", Duration::from_secs(60), || async {
        kueue_ext::kube_util::apply(&admin, &job).await.map_err(|e| e.to_string())
    })
    .await;
    let jobs = crate::common::api(&admin, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    eventually("the job to complete under the trace replica", Duration::from_secs(120), || async {
        let job = serde_json::to_value(jobs.get("secure").await.map_err(|e| e.to_string())?).unwrap();
        if crate::common::condition_is(&job, "Complete", "True") { Ok(()) } else { Err(format!("{:#}", job["status"])) }
    })
    .await;

    // TLS only: plain HTTP on the webhook port gets no answer, HTTPS does.
    let port: u16 = command
        .iter()
        .find_map(|a| a.strip_prefix("--listen=")?.rsplit_once(':')?.1.parse().ok())
        .expect("the controller's --listen");
    let mut prober = Prober::for_cluster_dir(&sandbox.dir.join("manager")).unwrap();
    prober.check(&Probe::Https { port, path: "/healthz".into() }).await.expect("HTTPS answers");
    let plain = prober.check(&Probe::Http { port, path: "/healthz".into() }).await;
    assert!(plain.is_err(), "plain HTTP must not be served: {plain:?}");
    replica.kill().unwrap();
    replica.wait().unwrap();
    original.start();

    // Every credential on disk is owner-only, and no log holds any of them.
    let files = files_under(&sandbox.dir);
    let mut secrets = Vec::new();
    for path in &files {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).to_string();
        if path.extension().is_some_and(|e| e == "log") || !is_credential(path, &text) {
            continue;
        }
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} holds a credential and is mode {mode:o}", path.display());
        secrets.extend(secrets_in(&text));
    }
    assert!(secrets.len() > 10, "found the tokens and keys to look for: {}", secrets.len());
    let logs: Vec<&PathBuf> = files.iter().filter(|p| p.extension().is_some_and(|e| e == "log")).collect();
    assert!(logs.iter().any(|l| l.ends_with("trace-replica.log")));
    for log in logs {
        let text = String::from_utf8_lossy(&std::fs::read(log).unwrap()).to_string();
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "{} holds a credential ({}…)", log.display(), &secret[..8]);
        }
        assert!(!text.contains("PRIVATE KEY"), "{} holds a private key", log.display());
        assert!(!text.to_lowercase().contains("bearer ey"), "{} holds a bearer token", log.display());
    }
}
