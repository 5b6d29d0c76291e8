//! Which controller asked the API server for what: the kind node's kube-apiserver, restarted
//! with an audit policy that records the requests of the controllers compared (metadata only) on
//! its standard output, read back as its mirror pod's log. Per controller, per verb and
//! resource; watches are left out, as they are held open rather than repeated.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use crate::sandbox::run;

/// The controllers counted: a short name and the ServiceAccount whose requests are theirs.
pub const CONTROLLERS: [(&str, &str); 3] = [
    ("kueue-ext", "system:serviceaccount:kueue-ext-system:kueue-ext-controller"),
    ("appwrapper", "system:serviceaccount:appwrapper-system:appwrapper-controller-manager"),
    ("kueue", "system:serviceaccount:kueue-system:kueue-controller-manager"),
];

/// Inside the node, where kubeadm's static pod already mounts a host directory (read-only).
const POLICY_PATH: &str = "/etc/kubernetes/pki/kueue-ext-bench-audit.yaml";
const MANIFEST: &str = "/etc/kubernetes/manifests/kube-apiserver.yaml";
const RESTART_TIMEOUT: Duration = Duration::from_secs(180);

/// The audit log of one kind node's API server.
pub struct Audit {
    pods: Api<Pod>,
    mirror_pod: String,
}

/// Requests per controller, each as (verb resource[/subresource]) → count.
#[derive(Default)]
pub struct Requests(pub BTreeMap<&'static str, BTreeMap<String, usize>>);

impl Audit {
    /// Restarts the API server of kind node `node` with the audit policy, and waits until its
    /// log has the first request of a controller (their Leases are renewed every few seconds).
    pub async fn enable(node: &str, client: &kube::Client) -> Audit {
        let users: Vec<String> = CONTROLLERS.iter().map(|(_, user)| format!("\"{user}\"")).collect();
        let policy = format!(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived, ResponseStarted]\n\
             rules:\n- level: Metadata\n  users: [{}]\n- level: None\n",
            users.join(", ")
        );
        let mut write = Command::new("docker")
            .args(["exec", "-i", node, "sh", "-c", &format!("cat > {POLICY_PATH}")])
            .stdin(Stdio::piped())
            .spawn()
            .expect("docker exec runs");
        write.stdin.take().expect("stdin").write_all(policy.as_bytes()).expect("policy written");
        assert!(write.wait().expect("docker exec ends").success(), "writing the audit policy into {node}");
        let flags = format!(r"\1- --audit-policy-file={POLICY_PATH}\n\1- --audit-log-path=-");
        // Written beside the manifests and renamed into place: the kubelet reads every file there.
        let audited = "/etc/kubernetes/kube-apiserver.audited";
        let edit = format!(
            r"grep -q audit-policy-file {MANIFEST} || {{ sed 's#^\( *\)- kube-apiserver$#&\n{flags}#' {MANIFEST} > {audited} && mv {audited} {MANIFEST}; }}"
        );
        run(Command::new("docker").args(["exec", node, "sh", "-c", &edit]));
        let audit = Audit {
            pods: Api::namespaced(client.clone(), "kube-system"),
            mirror_pod: format!("kube-apiserver-{node}"),
        };
        let deadline = Instant::now() + RESTART_TIMEOUT;
        while audit.lines().await.is_empty() {
            assert!(Instant::now() < deadline, "{node}'s API server did not come back with its audit log");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        audit
    }

    /// Every audit line logged so far: a mark to count from.
    pub async fn mark(&self) -> usize {
        self.lines().await.len()
    }

    /// The requests of each controller logged since `mark`.
    pub async fn since(&self, mark: usize) -> Requests {
        let mut requests = Requests::default();
        for line in self.lines().await.iter().skip(mark) {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let verb = event["verb"].as_str().unwrap_or("?");
            let user = event["user"]["username"].as_str().unwrap_or_default();
            let Some((controller, _)) = CONTROLLERS.iter().find(|(_, u)| *u == user) else { continue };
            if verb == "watch" {
                continue;
            }
            let object = &event["objectRef"];
            let subresource = object["subresource"].as_str().map(|s| format!("/{s}")).unwrap_or_default();
            let resource = object["resource"].as_str().unwrap_or("(non-resource)");
            let key = format!("{verb} {resource}{subresource}");
            *requests.0.entry(controller).or_default().entry(key).or_default() += 1;
        }
        requests
    }

    /// The audit events in the API server's log, in order: its standard output holds them one
    /// JSON object a line, beside klog's lines on standard error. None while it restarts.
    async fn lines(&self) -> Vec<String> {
        let log = self.pods.logs(&self.mirror_pod, &LogParams::default()).await.unwrap_or_default();
        log.lines().filter(|l| l.starts_with('{') && l.contains("\"audit.k8s.io/v1\"")).map(String::from).collect()
    }
}

impl Requests {
    pub fn total(&self, controller: &str) -> usize {
        self.0.get(controller).map_or(0, |r| r.values().sum())
    }

    /// "name N: verb resource n, …" for each controller, most asked first.
    pub fn lines(&self) -> Vec<String> {
        CONTROLLERS
            .iter()
            .map(|(name, _)| {
                let mut asked: Vec<(&String, &usize)> =
                    self.0.get(name).map(|r| r.iter().collect()).unwrap_or_default();
                asked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                let each: Vec<String> = asked.iter().map(|(what, n)| format!("{what} {n}")).collect();
                format!("{name} {}: {}", self.total(name), each.join(", "))
            })
            .collect()
    }
}
