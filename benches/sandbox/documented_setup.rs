//! The peer of `up --runtime kind` that a user would pick: what Kueue's MultiKueue guide has
//! them do by hand, timed step by step. Three kind clusters of the same node image (in parallel,
//! as Kueue's own e2e scripts make them); Kueue's release manifests applied with kubectl on each
//! and waited for; then on each worker a ServiceAccount with the guide's ClusterRole, a token
//! and a kubeconfig made from it, and on the manager that kubeconfig as a Secret, a
//! MultiKueueCluster per worker, a MultiKueueConfig, the AdmissionCheck and queues that use it,
//! until every MultiKueueCluster and the AdmissionCheck are Active. Queues go on every cluster,
//! as the guide asks workers to mirror the manager's.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::kind_up::{Deleting, create};
use crate::sandbox::run;

const MANAGER: &str = "bench-doc-manager";
const WORKERS: [&str; 2] = ["bench-doc-worker1", "bench-doc-worker2"];
const KUEUE_AVAILABLE: [&str; 6] =
    ["-n", "kueue-system", "wait", "--for=condition=Available", "deploy/kueue-controller-manager", "--timeout=300s"];

/// Seconds each step took.
pub struct Steps {
    pub clusters: f64,
    pub kueue: f64,
    pub multikueue: f64,
}

impl Steps {
    pub fn total(&self) -> f64 {
        self.clusters + self.kueue + self.multikueue
    }
}

/// One run of the guide's set-up; the clusters are deleted afterwards.
pub fn measure(kind: &Path, node_image: &str, kubectl: &Path, kueue_manifests: &Path) -> Steps {
    let names = [MANAGER, WORKERS[0], WORKERS[1]];
    let _deleting = Deleting { kind, names };
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = |name: &str| dir.path().join(format!("{name}.kubeconfig"));
    let kubectl_on = |name: &str| {
        let mut command = Command::new(kubectl);
        command.arg("--kubeconfig").arg(kubeconfig(name));
        command
    };

    let release = dir.path().join("kueue-release.yaml");
    std::fs::write(&release, with_batch_jobs_only(kueue_manifests)).expect("written");

    let started = Instant::now();
    in_parallel(&names, |name| create(kind, name, node_image, &kubeconfig(name)));
    let clusters = started.elapsed().as_secs_f64();

    let started = Instant::now();
    in_parallel(&names, |name| {
        run(kubectl_on(name).args(["apply", "--server-side", "-f"]).arg(&release));
        run(kubectl_on(name).args(KUEUE_AVAILABLE));
    });
    let kueue = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let file = |name: &str, what: &str| dir.path().join(format!("{name}-{what}.yaml"));
    in_parallel(&names, |name| until_applied(kubectl_on(name), &file(name, "queues"), &queues(name == MANAGER)));
    for worker in WORKERS {
        until_applied(kubectl_on(worker), &file(worker, "access"), WORKER_ACCESS);
        let token =
            run(kubectl_on(worker).args(["-n", "kueue-system", "create", "token", "multikueue-sa", "--duration=24h"]));
        let ca = run(kubectl_on(worker).args([
            "config",
            "view",
            "--raw",
            "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ]));
        let file = dir.path().join(format!("{worker}.multikueue"));
        std::fs::write(&file, worker_kubeconfig(&node_address(worker), ca.trim(), token.trim())).expect("written");
        let from_file = format!("--from-file=kubeconfig={}", file.display());
        run(kubectl_on(MANAGER).args(["-n", "kueue-system", "create", "secret", "generic", worker, &from_file]));
    }
    until_applied(kubectl_on(MANAGER), &file(MANAGER, "multikueue"), &multikueue());
    for what in ["multikueuecluster", "admissioncheck"] {
        run(kubectl_on(MANAGER).args(["wait", "--for=condition=Active", what, "--all", "--timeout=300s"]));
    }
    let multikueue = started.elapsed().as_secs_f64();
    Steps { clusters, kueue, multikueue }
}

/// Kueue's release with only batch Jobs integrated, as a user edits it before applying: the
/// release enables every framework Kueue knows, and MultiKueue keeps a worker inactive while it
/// lacks the CRD of any of them (the sandbox integrates only the kinds its clusters serve).
fn with_batch_jobs_only(release: &Path) -> String {
    let text = std::fs::read_to_string(release).expect("Kueue's release");
    let mut docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).expect("Kueue's release parses");
    let config_map = docs
        .iter_mut()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == "kueue-manager-config")
        .expect("Kueue's ConfigMap");
    let key = "controller_manager_config.yaml";
    let mut config: serde_json::Value =
        serde_saphyr::from_str(config_map["data"][key].as_str().expect("Kueue's Configuration")).expect("it parses");
    config["integrations"]["frameworks"] = serde_json::json!(["batch/job"]);
    config_map["data"][key] = serde_saphyr::to_string(&config).expect("YAML").into();
    docs.iter().map(|d| format!("---\n{}", serde_saphyr::to_string(d).expect("YAML"))).collect()
}

fn in_parallel(names: &[&str; 3], step: impl Fn(&str) + Sync) {
    std::thread::scope(|scope| {
        let running: Vec<_> = names.iter().map(|name| scope.spawn(|| step(name))).collect();
        running.into_iter().for_each(|r| r.join().expect("a step of the documented set-up"));
    });
}

/// Applies `yaml` (written to `file`), again while Kueue's webhook does not answer yet, as a
/// user runs the command again: Kueue's Deployment is Available a little before its webhook
/// serves.
fn until_applied(mut kubectl: Command, file: &Path, yaml: &str) {
    std::fs::write(file, yaml).expect("written");
    kubectl.args(["apply", "--server-side", "-f"]).arg(file);
    let deadline = Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let output = kubectl.output().expect("kubectl runs");
        if output.status.success() {
            return;
        }
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(Instant::now() < deadline && said.contains("webhook"), "{kubectl:?}: {said}");
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// The worker's node address on kind's network: the manager's Kueue reaches the worker's API
/// server there (the node's name resolves only through Docker's DNS, which pods do not use).
fn node_address(cluster: &str) -> String {
    let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
    run(Command::new("docker").args(["inspect", "--format", format, &format!("{cluster}-control-plane")]))
        .trim()
        .to_string()
}

fn worker_kubeconfig(address: &str, ca: &str, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: worker\n  cluster:\n    server: https://{address}:6443\n    \
         certificate-authority-data: {ca}\nusers:\n- name: multikueue-sa\n  user:\n    token: {token}\ncontexts:\n\
         - name: worker\n  context:\n    cluster: worker\n    user: multikueue-sa\ncurrent-context: worker\n"
    )
}

/// The guide's ServiceAccount and ClusterRole for MultiKueue on a worker: Jobs, JobSets and
/// Workloads, created, watched and deleted by the manager.
const WORKER_ACCESS: &str = "\
apiVersion: v1
kind: ServiceAccount
metadata: {name: multikueue-sa, namespace: kueue-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: multikueue-sa-role}
rules:
- {apiGroups: [batch], resources: [jobs], verbs: [create, delete, get, list, watch]}
- {apiGroups: [batch], resources: [jobs/status], verbs: [get]}
- {apiGroups: [jobset.x-k8s.io], resources: [jobsets], verbs: [create, delete, get, list, watch]}
- {apiGroups: [jobset.x-k8s.io], resources: [jobsets/status], verbs: [get]}
- {apiGroups: [kueue.x-k8s.io], resources: [workloads], verbs: [create, delete, get, list, watch]}
- {apiGroups: [kueue.x-k8s.io], resources: [workloads/status], verbs: [get, patch, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: multikueue-sa-crb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: multikueue-sa-role}
subjects:
- {kind: ServiceAccount, name: multikueue-sa, namespace: kueue-system}
";

/// A flavor, a ClusterQueue and a LocalQueue, the manager's checked by MultiKueue.
fn queues(manager: bool) -> String {
    let checks = if manager { "\n  admissionChecksStrategy: {admissionChecks: [{name: multikueue}]}" } else { "" };
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: default-flavor}}\n---\n\
         apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: cluster-queue}}\nspec:\n  \
         namespaceSelector: {{}}\n  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n    \
         - name: default-flavor\n      resources:\n      - {{name: cpu, nominalQuota: 2}}\n      \
         - {{name: memory, nominalQuota: 2Gi}}{checks}\n---\n\
         apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: user-queue, namespace: default}}\n\
         spec: {{clusterQueue: cluster-queue}}\n"
    )
}

/// The manager's MultiKueue objects, each worker's kubeconfig in the Secret named after it.
fn multikueue() -> String {
    let clusters: String = WORKERS
        .iter()
        .map(|worker| {
            format!(
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueCluster\nmetadata: {{name: {worker}}}\n\
                 spec:\n  clusterSource:\n    kubeConfig: {{locationType: Secret, location: {worker}}}\n"
            )
        })
        .collect();
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {{name: multikueue}}\nspec:\n  \
         controllerName: kueue.x-k8s.io/multikueue\n  parameters:\n    apiGroup: kueue.x-k8s.io\n    \
         kind: MultiKueueConfig\n    name: multikueue\n---\n\
         apiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueConfig\nmetadata: {{name: multikueue}}\n\
         spec:\n  clusters: [{}]\n{clusters}",
        WORKERS.join(", ")
    )
}
