//! Shared harness of the end-to-end tests: a real sandbox started with the real binary, in a
//! private state dir, torn down when the test ends (also when it fails).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::{Value, json};

use crate::fixtures::{Queue, priority_class, resource_flavor};

pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-kueue_ext");

pub fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Builds the toolchain once per test binary, with visible progress (a cold build is long).
pub fn ensure_toolchain() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let status = Command::new(BIN).args(["toolchain", "install"]).status().expect("toolchain install runs");
        assert!(status.success(), "toolchain install failed");
    });
}

/// The kind runtime's images, and those of `addons` (comma-separated), built before a kind test
/// takes its turn: `hack/test.sh` builds them in the background while the process-runtime tests
/// run, and waiting for that build here keeps the turn free for them meanwhile.
pub fn kind_images_built(addons: &str) {
    built_before_the_turn(true, addons);
}

/// The process runtime's `addons` (comma-separated), built before the test takes its turn, for
/// the same reason: a cold suite builds them in the background while other sandboxes run.
pub fn addons_built(addons: &str) {
    built_before_the_turn(false, addons);
}

/// At `nice 15`, as `hack/test.sh` builds the add-ons: in a cold suite whichever asks first
/// builds, and the sandboxes already running should not wait for the CPU behind it.
fn built_before_the_turn(kind: bool, addons: &str) {
    ensure_toolchain();
    let mut args = vec!["-n", "15", BIN, "toolchain", "install"];
    if kind {
        args.push("--kind");
    }
    if !addons.is_empty() {
        args.extend(["--addons", addons]);
    }
    let status = Command::new("nice").args(&args).status().expect("toolchain install runs");
    assert!(status.success(), "{} failed", args[3..].join(" "));
}

/// Process-runtime sandboxes of one test binary run one at a time: two would compete for 2
/// cores, and a port freed by one could be taken by the other before a test checks it.
static PROCESS_LANE: Mutex<()> = Mutex::new(());
/// Tests of kind clusters run one at a time too, but beside a process-runtime sandbox: their
/// clusters live in Docker on ports Docker picks, and they spend most of their time waiting for
/// nodes and pods, which leaves room for the other lane.
static KIND_LANE: Mutex<()> = Mutex::new(());
/// A second lane of kind clusters beside the first, for clusters whose names are their own (the
/// soak's sandbox, plain kind clusters) and so cannot collide with the first lane's: the soak,
/// `connect`'s and cert-manager's plain clusters, so that neither lane is much longer than the other.
/// Most of their time goes to jobs that run for seconds, faults spaced apart and pods starting.
static SECOND_KIND_LANE: Mutex<()> = Mutex::new(());

/// A test's turn to start clusters. When it ends, how long the test held it is added to
/// `target/tmp/e2e-turns.tsv` (test, seconds), so a slow suite shows where its time goes.
pub struct Turn {
    _guards: Vec<MutexGuard<'static, ()>>,
    since: Instant,
}

impl Drop for Turn {
    fn drop(&mut self) {
        use std::io::Write;

        let test = std::thread::current().name().unwrap_or("unnamed").to_string();
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-turns.tsv");
        let line = format!("{test}\t{:.0}\n", self.since.elapsed().as_secs_f64());
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// Waits for the turn of a test that starts a process-runtime sandbox.
pub fn one_at_a_time() -> Turn {
    take_turn(&PROCESS_LANE)
}

/// Waits for the turn of a test that starts kind clusters: a kind sandbox, or clusters of its own.
pub fn one_kind_test_at_a_time() -> Turn {
    take_turn(&KIND_LANE)
}

/// Waits for a turn in the second lane of kind clusters.
pub fn one_beside_the_kind_lane() -> Turn {
    take_turn(&SECOND_KIND_LANE)
}

/// Waits until both kind lanes are free and holds them, for the kind test that starts the most:
/// beside another test's clusters on 2 cores, its worker's webhooks and pods starved past their
/// timeouts. The lanes are taken in one order, so two such tests cannot hold one each.
pub fn no_other_kind_test() -> Turn {
    let guards =
        [&KIND_LANE, &SECOND_KIND_LANE].map(|lane| lane.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    Turn { _guards: guards.into(), since: Instant::now() }
}

fn take_turn(lane: &'static Mutex<()>) -> Turn {
    let guard = lane.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    Turn { _guards: vec![guard], since: Instant::now() }
}

/// A sandbox owned by one test.
pub struct Sandbox {
    pub dir: PathBuf,
    _tmp: tempfile::TempDir,
    /// `None` for a second sandbox that runs beside the first on purpose.
    _serial: Option<Turn>,
    /// Components a test started again in place of recorded ones ([`Restarts`]), stopped once
    /// the logs and objects of a failed test are kept: a killed API server has nothing to show.
    replacements: Arc<Mutex<Vec<Child>>>,
    /// The runtime `up` asks for; `None`: `$KUEUE_EXT_RUNTIME`, else the process runtime.
    runtime: Option<&'static str>,
    /// The sandbox's name, which prefixes its contexts and kind clusters.
    name: &'static str,
}

impl Sandbox {
    /// `up` with the given extra arguments; panics with the command's output if it fails.
    pub fn up(extra: &[&str]) -> Sandbox {
        Sandbox::up_with_env(extra, &[])
    }

    /// `up` with extra environment variables for the plugin.
    pub fn up_with_env(extra: &[&str], env: &[(&str, &str)]) -> Sandbox {
        let sandbox = Sandbox::unstarted();
        let output = sandbox.run_with_env("up", extra, env);
        assert!(output.status.success(), "up failed:\n{}", text(&output));
        sandbox
    }

    /// A private state dir with nothing started yet.
    pub fn unstarted() -> Sandbox {
        // hack/e2e-kind.sh runs the whole suite on kind: one lane for all.
        let on_kind = std::env::var("KUEUE_EXT_RUNTIME").is_ok_and(|runtime| runtime == "kind");
        Sandbox::unstarted_in(if on_kind { one_kind_test_at_a_time() } else { one_at_a_time() })
    }

    fn unstarted_in(serial: Turn) -> Sandbox {
        ensure_toolchain();
        let tmp = tempfile::tempdir().expect("temp dir");
        Sandbox {
            dir: tmp.path().join("state"),
            _tmp: tmp,
            _serial: Some(serial),
            replacements: Arc::default(),
            runtime: None,
            name: kueue_ext::sandbox::DEFAULT_NAME,
        }
    }

    /// A private state dir whose `up` runs on the kind runtime, whatever `$KUEUE_EXT_RUNTIME` says.
    pub fn unstarted_on_kind() -> Sandbox {
        let mut sandbox = Sandbox::unstarted_in(one_kind_test_at_a_time());
        sandbox.runtime = Some("kind");
        sandbox
    }

    /// Like [`Sandbox::unstarted_on_kind`], with no other kind test's clusters beside it.
    pub fn unstarted_on_kind_alone() -> Sandbox {
        let mut sandbox = Sandbox::unstarted_in(no_other_kind_test());
        sandbox.runtime = Some("kind");
        sandbox
    }

    /// `up` on the kind runtime.
    pub fn up_on_kind(extra: &[&str]) -> Sandbox {
        Sandbox::unstarted_on_kind().started(extra)
    }

    /// `up` on the kind runtime of a sandbox named `name`, in the second kind lane.
    pub fn soak_on_kind(name: &'static str, extra: &[&str]) -> Sandbox {
        let mut sandbox = Sandbox::unstarted_in(one_beside_the_kind_lane());
        (sandbox.runtime, sandbox.name) = (Some("kind"), name);
        sandbox.started(extra)
    }

    fn started(self, extra: &[&str]) -> Sandbox {
        let output = self.run("up", extra);
        assert!(output.status.success(), "up failed:\n{}", text(&output));
        self
    }

    /// The kubeconfig context of one of the sandbox's clusters, which names its kind cluster too.
    pub fn context(&self, cluster: &str) -> String {
        kueue_ext::sandbox::context_name(self.name, cluster)
    }

    /// A second private state dir, for a sandbox that runs beside this one.
    pub fn beside(&self) -> Sandbox {
        let tmp = tempfile::tempdir().expect("temp dir");
        Sandbox {
            dir: tmp.path().join("state"),
            _tmp: tmp,
            _serial: None,
            replacements: Arc::default(),
            runtime: None,
            name: kueue_ext::sandbox::DEFAULT_NAME,
        }
    }

    pub fn run(&self, command: &str, extra: &[&str]) -> Output {
        self.run_with_env(command, extra, &[])
    }

    pub fn run_with_env(&self, command: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let dir = self.dir.to_str().expect("utf-8 path");
        let mut args = vec![command, "--state-dir", dir];
        args.extend_from_slice(extra);
        // The suite runs on the process runtime unless KUEUE_EXT_RUNTIME says (hack/e2e-kind.sh).
        let runtime = match self.runtime {
            Some(runtime) => runtime.to_string(),
            None => std::env::var("KUEUE_EXT_RUNTIME").unwrap_or_else(|_| "process".into()),
        };
        args.extend(if command == "up" { vec!["--runtime", runtime.as_str()] } else { vec![] });
        let mut command = Command::new(BIN);
        if self.name != kueue_ext::sandbox::DEFAULT_NAME {
            command.env("KUEUE_EXT_SANDBOX", self.name);
        }
        command.args(&args).envs(env.iter().copied()).output().expect("the plugin binary runs")
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// kubectl on one of the sandbox's clusters, `stdin` fed to it.
    pub fn kubectl(&self, cluster: &str, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;

        let kubectl = toolchain_kubectl().expect("the toolchain's kubectl");
        let context = self.context(cluster);
        let mut child = Command::new(kubectl)
            .args(["--kubeconfig", path_str(&self.kubeconfig()), "--context", &context])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl starts");
        child.stdin.take().expect("its stdin").write_all(stdin.as_bytes()).expect("kubectl reads its input");
        child.wait_with_output().expect("kubectl ends")
    }

    pub async fn client(&self, cluster: &str) -> Client {
        kueue_ext::kube_util::client_for(&self.kubeconfig(), &self.context(cluster))
            .await
            .expect("client for the sandbox context")
    }

    pub fn status_json(&self) -> Value {
        let output = self.run("status", &["-o", "json"]);
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("status -o json: {e}\n{}", text(&output)))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if self.dir.exists() {
            // KUEUE_EXT_KEEP_LOGS keeps them after a passing run too (hack/soak.sh sets it).
            if std::thread::panicking() || std::env::var_os("KUEUE_EXT_KEEP_LOGS").is_some() {
                self.keep_logs();
            }
            if std::thread::panicking() {
                self.say_what_ran();
            }
            for mut replacement in self.replacements.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
                let _ = replacement.kill();
                let _ = replacement.wait();
            }
            let _ = self.run("down", &[]);
        }
    }
}

impl Sandbox {
    /// Copies every cluster's component logs to target/e2e-logs/<test>/ before `down` removes
    /// the state dir: a failed run is diagnosed from them.
    fn keep_logs(&self) {
        let test = std::thread::current().name().unwrap_or("test").replace("::", "-");
        let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-logs").join(test);
        let entries: Vec<PathBuf> =
            std::fs::read_dir(&self.dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
        // Logs of components a test restarted itself sit beside the clusters.
        let _ = std::fs::create_dir_all(&kept);
        for log in entries.iter().filter(|e| e.extension().is_some_and(|x| x == "log")) {
            let _ = std::fs::copy(log, kept.join(log.file_name().unwrap_or_default()));
        }
        for logs in entries.iter().map(|c| c.join("logs")).filter(|l| l.is_dir()) {
            let cluster = logs.parent().and_then(|c| c.file_name()).unwrap_or_default().to_owned();
            let into = kept.join(cluster);
            let _ = std::fs::create_dir_all(&into);
            for log in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
                let _ = std::fs::copy(log.path(), into.join(log.file_name()));
            }
        }
        for cluster in self.clusters() {
            let into = kept.join(&cluster);
            let _ = std::fs::create_dir_all(&into);
            self.dump_objects(&cluster, &into.join("objects.yaml"));
            if self.on_kind() {
                // The kubelet's, containerd's and every pod's logs: a pod that never started is
                // explained there, not in the API.
                let name = self.context(&cluster);
                let dir = into.join("kind-logs");
                let _ = Command::new(kueue_ext::sandbox::kind_cli_path())
                    .args(["export", "logs", path_str(&dir), "--name", &name])
                    .output();
            }
        }
        eprintln!("component logs kept in {}", kept.display());
    }

    /// What a failed test's output carries beside its panic, for a run whose kept logs are gone
    /// with its checkout (CI's): `status` (which components still run) and our controllers'
    /// last warnings and errors.
    fn say_what_ran(&self) {
        eprintln!("status at the failure:\n{}", text(&self.run("status", &[])));
        let logs = std::fs::read_dir(&self.dir).into_iter().flatten().flatten().map(|c| c.path().join("logs"));
        for log in logs.map(|l| l.join("kueue-ext-controller.log")).filter(|l| l.is_file()) {
            let written = std::fs::read_to_string(&log).unwrap_or_default();
            let troubles: Vec<&str> = written
                .lines()
                .filter(|l| l.contains(r#""level":"WARN""#) || l.contains(r#""level":"ERROR""#))
                .collect();
            let last = &troubles[troubles.len().saturating_sub(12)..];
            match troubles.len() {
                0 => eprintln!("{}: no warning or error", log.display()),
                n => eprintln!("{}: {n} warnings and errors, the last:\n{}", log.display(), last.join("\n")),
            }
        }
    }

    fn on_kind(&self) -> bool {
        self.runtime == Some("kind") || std::env::var("KUEUE_EXT_RUNTIME").is_ok_and(|runtime| runtime == "kind")
    }

    /// The clusters the sandbox's kubeconfig names (contexts `<sandbox>-<cluster>`).
    fn clusters(&self) -> Vec<String> {
        let Some(kubectl) = toolchain_kubectl() else { return Vec::new() };
        let kubeconfig = self.kubeconfig();
        let args = ["--kubeconfig", path_str(&kubeconfig), "config", "get-contexts", "-o", "name"];
        let Ok(out) = Command::new(kubectl).args(args).output() else { return Vec::new() };
        let contexts = String::from_utf8_lossy(&out.stdout).into_owned();
        let prefix = format!("{}-", self.name);
        contexts.lines().filter_map(|context| context.strip_prefix(&prefix)).map(str::to_string).collect()
    }

    /// What the cluster held when the test failed: jobs, their parts, Workloads and events.
    fn dump_objects(&self, cluster: &str, into: &Path) {
        let Some(kubectl) = toolchain_kubectl() else { return };
        let kinds = "externaljobs,wrappedjobs,workloads,jobs,deployments,pods,nodes,localqueues,clusterqueues,events";
        let context = self.context(cluster);
        let kubeconfig = self.kubeconfig();
        let args = ["--kubeconfig", path_str(&kubeconfig), "--context", &context, "get", kinds, "-A", "-o", "yaml"];
        if let Ok(out) = Command::new(kubectl).args(args).output() {
            let _ = std::fs::write(into, [out.stdout, out.stderr].concat());
        }
    }
}

/// The toolchain's kubectl, once the toolchain is built.
pub fn toolchain_kubectl() -> Option<PathBuf> {
    let path = Command::new(BIN).args(["toolchain", "path"]).output().ok().filter(|o| o.status.success())?;
    Some(PathBuf::from(String::from_utf8_lossy(&path.stdout).trim()).join("kubectl"))
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Polls `check` until it returns `Some`, or panics after `timeout` with `what` and the last
/// observation.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) if Instant::now() >= deadline => {
                panic!("timed out after {timeout:?} waiting for {what}; last: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// The status of condition `kind` of an object, if present.
pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

pub fn condition_is(obj: &Value, kind: &str, status: &str) -> bool {
    condition(obj, kind).is_some_and(|c| c["status"] == status)
}

/// True while `/proc/<pid>` shows a live process, or a zombie leader whose threads still run.
pub fn pid_alive(pid: i64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let Some((_, rest)) = stat.rsplit_once(')') else { return false };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let zombie = matches!(fields.first(), Some(&"Z") | Some(&"X"));
    let threads: u64 = fields.get(17).and_then(|t| t.parse().ok()).unwrap_or(0);
    !(zombie && threads <= 1)
}

pub fn port_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Untyped API of a kind in the given namespace (or cluster-wide when `None`).
pub fn api(
    client: &Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

pub fn workloads(client: &Client, namespace: &str) -> Api<DynamicObject> {
    api(client, "kueue.x-k8s.io/v1beta2", "Workload", "workloads", Some(namespace))
}

/// The Workloads whose controller owner has `uid`.
pub async fn workloads_owned_by(client: &Client, namespace: &str, uid: &str) -> Result<Vec<Value>, String> {
    let list = workloads(client, namespace).list(&Default::default()).await.map_err(|e| e.to_string())?;
    Ok(list
        .items
        .into_iter()
        .filter(|w| w.metadata.owner_references.iter().flatten().any(|o| o.uid == uid))
        .map(|w| serde_json::to_value(w).expect("object serializes"))
        .collect())
}

/// The one Workload of the job `uid` in `default`, once `condition` is True on it.
pub async fn workload_with(client: &Client, uid: &str, condition: &str) -> Value {
    eventually(&format!("the job's Workload to be {condition}"), Duration::from_secs(180), || async {
        match workloads_owned_by(client, "default", uid).await?.as_slice() {
            [wl] if condition_is(wl, condition, "True") => Ok(wl.clone()),
            [wl] => Err(format!("{:#}", wl["status"])),
            other => Err(format!("{} workloads", other.len())),
        }
    })
    .await
}

/// What Kueue's built-in integration of a kind and ours by configuration must agree on: each pod
/// set's name, count and template (Kueue's also carries topology hints, which a sandbox without
/// TAS does not use).
pub fn pod_sets(workload: &Value) -> Value {
    let sets = workload["spec"]["podSets"].as_array().cloned().unwrap_or_default();
    json!(
        sets.iter()
            .map(|s| json!({"name": s["name"], "count": s["count"], "template": s["template"]}))
            .collect::<Vec<_>>()
    )
}

/// Applies a YAML stream of objects with server-side apply.
pub async fn apply_yaml(client: &Client, yaml: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("test YAML parses");
    let mut out = Vec::new();
    for doc in docs.iter().filter(|d| d.is_object()) {
        let applied = kueue_ext::kube_util::apply(client, doc).await.unwrap_or_else(|e| panic!("apply: {e}"));
        out.push(serde_json::to_value(applied).expect("object serializes"));
    }
    out
}

/// Ports and pids the sandbox recorded in its state file, to check that `down` released them.
pub fn recorded_processes_and_ports(sandbox: &Sandbox) -> (Vec<i64>, Vec<u16>) {
    let state: Value = serde_json::from_slice(&std::fs::read(sandbox.dir.join("state.json")).unwrap()).unwrap();
    let mut pids = Vec::new();
    let mut ports = Vec::new();
    for cluster in state["clusters"].as_array().unwrap() {
        ports.push(cluster["api_server_port"].as_u64().unwrap() as u16);
        for component in cluster["components"].as_array().unwrap() {
            pids.push(component["process"]["pid"].as_i64().unwrap());
            ports.push(component["probe"]["port"].as_u64().unwrap() as u16);
        }
    }
    (pids, ports)
}

/// Runs `down` and checks that no recorded process or port is left.
pub fn down_leaves_nothing(sandbox: &Sandbox) {
    let (pids, ports) = recorded_processes_and_ports(sandbox);
    assert!(pids.iter().all(|p| pid_alive(*p)), "every recorded process runs before down");
    let down = sandbox.run("down", &[]);
    assert!(down.status.success(), "down: {}", text(&down));
    assert!(!sandbox.dir.exists(), "down removes the state dir");
    for pid in pids {
        assert!(!pid_alive(pid), "process {pid} still runs after down");
    }
    for port in ports {
        assert!(port_free(port), "port {port} still bound after down");
    }
}

/// Queues as Kueue's documentation has a user make them: the flavor `default-flavor`, the
/// ClusterQueue `cluster-queue` with `cpu` and `memory` of quota, the LocalQueue `default/user-queue`.
pub fn plain_queues(cpu: &str, memory: &str) -> String {
    let queue = Queue {
        cluster_queue: "cluster-queue",
        local_queue: "user-queue",
        flavor: "default-flavor",
        cpu,
        memory,
        preempts: false,
    };
    [resource_flavor("default-flavor", "{}"), queue.yaml()].join("\n---\n")
}

/// A flavor whose node label the kwok nodes carry, queues with 4 CPU of quota that preempt by
/// priority, and two priority classes.
pub fn small_queues() -> String {
    let queue = Queue {
        cluster_queue: "small-cq",
        local_queue: "small",
        flavor: "kwok-flavor",
        cpu: "4",
        memory: "16Gi",
        preempts: true,
    };
    [
        resource_flavor("kwok-flavor", "{type: kwok}"),
        queue.yaml(),
        priority_class("low", 10),
        priority_class("high", 1000),
    ]
    .join("\n---\n")
}

/// The pid and command line `up` recorded for `component` of cluster `cluster` (0: the manager).
pub fn recorded_process(sandbox: &Sandbox, cluster: usize, component: &str) -> (i32, Vec<String>) {
    let state: Value = serde_json::from_slice(&std::fs::read(sandbox.dir.join("state.json")).unwrap()).unwrap();
    let components = state["clusters"][cluster]["components"].as_array().unwrap();
    let found = components.iter().find(|c| c["name"] == component).unwrap_or_else(|| panic!("no {component}"));
    let command = found["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    (found["process"]["pid"].as_i64().unwrap() as i32, command)
}

/// The recorded controller process of the manager: its pid and the command it was started with.
pub fn controller_process(sandbox: &Sandbox) -> (i32, Vec<String>) {
    recorded_process(sandbox, 0, "kueue-ext-controller")
}

/// A component of the sandbox killed with SIGKILL and started again from the command `up`
/// recorded, as a crash and a restart by a supervisor would. The last replacement goes to the
/// sandbox, which stops it when the test ends (`down` knows only the processes `up` started).
pub struct Restarts {
    command: Vec<String>,
    pid: i32,
    replacement: Option<Child>,
    log: std::fs::File,
    handed_over: Arc<Mutex<Vec<Child>>>,
}

impl Restarts {
    pub fn of(sandbox: &Sandbox, cluster: usize, component: &str) -> Self {
        let (pid, command) = recorded_process(sandbox, cluster, component);
        let log = sandbox.dir.join(format!("{component}-{cluster}-restarted.log"));
        let log = std::fs::File::create(log).unwrap();
        Restarts { command, pid, replacement: None, log, handed_over: sandbox.replacements.clone() }
    }

    /// The manager's controller.
    pub fn controller(sandbox: &Sandbox) -> Self {
        Restarts::of(sandbox, 0, "kueue-ext-controller")
    }

    pub fn kill(&mut self) {
        // ESRCH: it already exited by itself, which a crash test must survive too.
        match nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), nix::sys::signal::Signal::SIGKILL) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => panic!("killing pid {}: {e}", self.pid),
        }
        if let Some(mut old) = self.replacement.take() {
            let _ = old.wait();
        }
    }

    pub fn start(&mut self) {
        let child = Command::new(&self.command[0])
            .args(&self.command[1..])
            .stdout(self.log.try_clone().unwrap())
            .stderr(self.log.try_clone().unwrap())
            .spawn()
            .unwrap();
        self.pid = child.id() as i32;
        self.replacement = Some(child);
    }

    pub fn kill_and_restart(&mut self) {
        self.kill();
        std::thread::sleep(Duration::from_secs(1));
        self.start();
    }
}

impl Drop for Restarts {
    fn drop(&mut self) {
        if let Some(child) = self.replacement.take() {
            self.handed_over.lock().unwrap_or_else(|p| p.into_inner()).push(child);
        }
    }
}
