//! Which controller asked the API server for what: the kind node's kube-apiserver, restarted
//! with an audit policy that records the requests of the controllers compared (metadata only)
//! into a file on the node, read back with `docker exec`. Per controller, per verb and resource;
//! watches are left out, as they are held open rather than repeated. A file, not the API server's
//! standard output: the kubelet rotates a container's log at 10 MiB, and a run of 200 jobs logs
//! more than that.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The controllers counted: a short name and the ServiceAccount whose requests are theirs.
pub const CONTROLLERS: [(&str, &str); 3] = [
    ("kueue-ext", "system:serviceaccount:kueue-ext-system:kueue-ext-controller"),
    ("appwrapper", "system:serviceaccount:appwrapper-system:appwrapper-controller-manager"),
    ("kueue", "system:serviceaccount:kueue-system:kueue-controller-manager"),
];

/// A directory of the node, mounted into the API server's static pod: the policy and the log.
const AUDIT_DIR: &str = "/var/log/kueue-ext-bench-audit";
const MANIFEST: &str = "/etc/kubernetes/manifests/kube-apiserver.yaml";
/// The API server's restart, and every controller's return to its Lease after it (a controller
/// that lost its Lease meanwhile exits, and its pod is restarted).
const RESTART_TIMEOUT: Duration = Duration::from_secs(300);

/// The audit log of one kind node's API server.
pub struct Audit {
    node: String,
}

/// Requests per controller, each as (verb resource[/subresource]) → count.
#[derive(Default)]
pub struct Requests(pub BTreeMap<&'static str, BTreeMap<String, usize>>);

impl Audit {
    /// Restarts the API server of kind node `node` with the audit policy, and waits until every
    /// controller counted has renewed its Lease since.
    pub async fn enable(node: &str) -> Audit {
        let users: Vec<String> = CONTROLLERS.iter().map(|(_, user)| format!("\"{user}\"")).collect();
        let policy = format!(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived, ResponseStarted]\n\
             rules:\n- level: Metadata\n  users: [{}]\n- level: None\n",
            users.join(", ")
        );
        exec_in(node, &["mkdir", "-p", AUDIT_DIR]);
        write_into(node, &format!("{AUDIT_DIR}/policy.yaml"), &policy);
        let manifest = exec_in(node, &["cat", MANIFEST]);
        if !manifest.contains("--audit-policy-file") {
            // Written beside the manifests and renamed into place: the kubelet reads every file there.
            let audited = "/etc/kubernetes/kube-apiserver.audited";
            write_into(node, audited, &audited_manifest(&manifest));
            exec_in(node, &["mv", audited, MANIFEST]);
        }
        let audit = Audit { node: node.to_string() };
        let deadline = Instant::now() + RESTART_TIMEOUT;
        while !audit.every_controller_leads() {
            assert!(
                Instant::now() < deadline,
                "not every controller renewed its Lease once {node}'s API server restarted"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        audit
    }

    /// Whether each controller has written its Lease since the audit began: it is back.
    fn every_controller_leads(&self) -> bool {
        let requests = self.since(0);
        CONTROLLERS.iter().all(|(name, _)| {
            let asked = requests.0.get(name);
            asked.is_some_and(|r| r.keys().any(|k| k == "update leases" || k == "patch leases"))
        })
    }

    /// Every audit line logged so far: a mark to count from.
    pub fn mark(&self) -> usize {
        self.lines().len()
    }

    /// The requests of each controller logged since `mark`.
    pub fn since(&self, mark: usize) -> Requests {
        let mut requests = Requests::default();
        for line in self.lines().iter().skip(mark) {
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

    /// The audit events logged so far, in order, one JSON object a line; none before the API
    /// server has restarted with the policy.
    fn lines(&self) -> Vec<String> {
        let log = Command::new("docker").args(["exec", &self.node, "cat", &format!("{AUDIT_DIR}/audit.log")]).output();
        let log = log.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        log.lines().filter(|l| l.starts_with('{')).map(String::from).collect()
    }
}

/// kubeadm's static pod of the API server with the audit flags and `AUDIT_DIR` mounted.
fn audited_manifest(manifest: &str) -> String {
    let mut pod: Value = serde_saphyr::from_str(manifest).expect("the API server's static pod manifest");
    let container = &mut pod["spec"]["containers"][0];
    let command = container["command"].as_array_mut().expect("the API server's command");
    command.push(json!(format!("--audit-policy-file={AUDIT_DIR}/policy.yaml")));
    command.push(json!(format!("--audit-log-path={AUDIT_DIR}/audit.log")));
    // In megabytes; the default of 100 could rotate the file in a long run.
    command.push(json!("--audit-log-maxsize=4000"));
    let mounts = container["volumeMounts"].as_array_mut().expect("the API server's mounts");
    mounts.push(json!({"name": "kueue-ext-bench-audit", "mountPath": AUDIT_DIR}));
    let volumes = pod["spec"]["volumes"].as_array_mut().expect("the API server's volumes");
    volumes
        .push(json!({"name": "kueue-ext-bench-audit", "hostPath": {"path": AUDIT_DIR, "type": "DirectoryOrCreate"}}));
    serde_saphyr::to_string(&pod).expect("the manifest serializes")
}

/// What `command` printed on kind node `node`'s standard output; it must succeed.
fn exec_in(node: &str, command: &[&str]) -> String {
    let output = Command::new("docker").args(["exec", node]).args(command).output().expect("docker exec runs");
    assert!(output.status.success(), "{command:?} on {node}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Writes `text` into the file `path` of kind node `node`.
fn write_into(node: &str, path: &str, text: &str) {
    let mut write = Command::new("docker")
        .args(["exec", "-i", node, "sh", "-c", &format!("cat > {path}")])
        .stdin(Stdio::piped())
        .spawn()
        .expect("docker exec runs");
    write.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("written");
    assert!(write.wait().expect("docker exec ends").success(), "writing {path} into {node}");
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
