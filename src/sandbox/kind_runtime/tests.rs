//! The kind runtime against a fake kind CLI and a fake Docker: runtime selection, what
//! `prepare` checks and builds, the calls that create clusters and load the image, and what
//! `down` deletes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::*;
use crate::sandbox::record::Role;
use crate::sandbox::runtime::NodePool;

/// Answers and records of a fake kind CLI.
#[derive(Default)]
struct FakeKind {
    version: String,
    existing: Vec<String>,
    fail_load: bool,
    /// Node that never becomes Ready: `create` fails as kind does when its wait runs out.
    never_ready: bool,
    /// How many deletes fail first, as when Docker gave up waiting for a killed node to exit.
    failing_deletes: std::sync::atomic::AtomicUsize,
    calls: Mutex<Vec<String>>,
}

impl FakeKind {
    fn new(version: &str) -> Self {
        FakeKind { version: version.into(), ..Default::default() }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

fn kind_kubeconfig(name: &str) -> String {
    use crate::sandbox::kubeconfig::b64;
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kind-{name}\n  cluster:\n    server: https://127.0.0.1:41000\n    \
         certificate-authority-data: {}\ncontexts:\n- name: kind-{name}\n  context: {{cluster: kind-{name}, user: kind-{name}}}\n\
         users:\n- name: kind-{name}\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
        b64("CA"),
        b64("CERT"),
        b64("KEY")
    )
}

impl KindTool for FakeKind {
    fn program(&self) -> &Path {
        Path::new("/fake/kind")
    }

    async fn version(&self) -> Result<String, KindError> {
        Ok(self.version.clone())
    }

    async fn clusters(&self) -> Result<Vec<String>, KindError> {
        Ok(self.existing.clone())
    }

    async fn create_cluster(&self, name: &str, config: &str, image: &str, kubeconfig: &Path) -> Result<(), KindError> {
        let nodes = config.matches("role:").count();
        self.record(format!("create {name} image={image} nodes={nodes} kubeconfig={}", kubeconfig.display()));
        if self.never_ready {
            return Err(KindError::Command {
                command: format!("kind create cluster --name {name}"),
                status: "exit status: 1".into(),
                output: "ERROR: failed to create cluster: timed out waiting for the condition".into(),
            });
        }
        Ok(())
    }

    async fn kubeconfig(&self, name: &str) -> Result<String, KindError> {
        self.record(format!("kubeconfig {name}"));
        Ok(kind_kubeconfig(name))
    }

    async fn load_image_archive(&self, name: &str, archive: &Path) -> Result<(), KindError> {
        self.record(format!("load {name} {}", archive.display()));
        if self.fail_load {
            return Err(KindError::Command {
                command: "kind load image-archive".into(),
                status: "exit status: 1".into(),
                output: "ERROR: failed to load image: no space left on device".into(),
            });
        }
        Ok(())
    }

    async fn delete_cluster(&self, name: &str, kubeconfig: &Path) -> Result<(), KindError> {
        use std::sync::atomic::Ordering;
        self.record(format!("delete {name} kubeconfig={}", kubeconfig.display()));
        let failing = self.failing_deletes.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        match failing {
            Ok(_) => Err(KindError::Command {
                command: format!("kind delete cluster --name {name}"),
                status: "exit status: 1".into(),
                output: "tried to kill container, but did not receive an exit event".into(),
            }),
            Err(_) => Ok(()),
        }
    }

    async fn export_logs(&self, name: &str, dir: &Path) -> Result<(), KindError> {
        self.record(format!("export logs {name} {}", dir.display()));
        Ok(())
    }
}

/// A fake Docker daemon: answers or not, and records builds and saves.
#[derive(Default)]
struct FakeDocker {
    down: Option<KindError>,
    built: Mutex<Vec<(String, Vec<u8>)>>,
    saved: Mutex<Vec<(String, PathBuf)>>,
    removed: Mutex<Vec<String>>,
    networks: Mutex<Vec<String>>,
}

impl FakeDocker {
    fn answering() -> Self {
        FakeDocker::default()
    }

    fn missing() -> Self {
        FakeDocker {
            down: Some(KindError::DockerMissing {
                host: "unix:///var/run/docker.sock".into(),
                detail: "/var/run/docker.sock does not exist".into(),
            }),
            ..Default::default()
        }
    }

    fn not_running() -> Self {
        FakeDocker {
            down: Some(KindError::DockerNotRunning {
                host: "unix:///var/run/docker.sock".into(),
                detail: "connection refused".into(),
            }),
            ..Default::default()
        }
    }
}

fn same_error(err: &KindError) -> KindError {
    match err {
        KindError::DockerMissing { host, detail } => {
            KindError::DockerMissing { host: host.clone(), detail: detail.clone() }
        }
        KindError::DockerNotRunning { host, detail } => {
            KindError::DockerNotRunning { host: host.clone(), detail: detail.clone() }
        }
        other => KindError::ImageBuild { image: String::new(), detail: other.to_string() },
    }
}

impl Docker for FakeDocker {
    async fn ping(&self) -> Result<docker::DockerInfo, KindError> {
        match &self.down {
            Some(err) => Err(same_error(err)),
            None => Ok(docker::DockerInfo { host: "unix:///var/run/docker.sock".into(), version: "28.1.1".into() }),
        }
    }

    async fn build_image(&self, tag: &str, context: Vec<u8>) -> Result<(), KindError> {
        // A build takes a while: another `up` may look at the cache meanwhile.
        tokio::task::yield_now().await;
        self.built.lock().unwrap().push((tag.into(), context));
        Ok(())
    }

    async fn build_image_from_file(&self, tag: &str, context: &Path) -> Result<(), KindError> {
        self.built.lock().unwrap().push((tag.into(), std::fs::read(context).unwrap()));
        Ok(())
    }

    async fn save_images(&self, tags: &[String], to: &Path) -> Result<(), KindError> {
        std::fs::write(to, b"docker save archive").unwrap();
        self.saved.lock().unwrap().push((tags.join(","), to.to_path_buf()));
        Ok(())
    }

    async fn import_rootfs(&self, tag: &str, _archive: &Path) -> Result<(), KindError> {
        self.built.lock().unwrap().push((tag.into(), Vec::new()));
        Ok(())
    }

    async fn tag_image(&self, _from: &str, to: &str) -> Result<(), KindError> {
        self.built.lock().unwrap().push((to.into(), Vec::new()));
        Ok(())
    }

    async fn remove_image(&self, tag: &str) -> Result<(), KindError> {
        self.removed.lock().unwrap().push(tag.into());
        Ok(())
    }

    async fn has_network(&self, name: &str) -> Result<bool, KindError> {
        Ok(self.networks.lock().unwrap().iter().any(|n| n == name))
    }

    async fn remove_network(&self, name: &str) -> Result<bool, KindError> {
        self.networks.lock().unwrap().retain(|n| n != name);
        self.removed.lock().unwrap().push(format!("network {name}"));
        Ok(true)
    }

    async fn has_image(&self, tag: &str) -> Result<bool, KindError> {
        Ok(self.built.lock().unwrap().iter().any(|(built, _)| built == tag))
    }

    async fn cluster_nodes(&self, cluster: &str) -> Result<Vec<docker::NodeContainer>, KindError> {
        Ok(vec![docker::NodeContainer {
            name: format!("{cluster}-control-plane"),
            running: true,
            address: Some("172.18.0.2".into()),
        }])
    }

    async fn container_pid(&self, _name: &str) -> Result<Option<u32>, KindError> {
        Ok(None)
    }
}

// --- runtime selection ---

#[tokio::test]
async fn automatic_selection_takes_kind_wherever_docker_answers() {
    let chosen = select(None, &FakeDocker::answering()).await.unwrap();
    assert_eq!(chosen.runtime, RuntimeKind::Kind);
    assert_eq!(chosen.reason, "Docker 28.1.1 answers at unix:///var/run/docker.sock");

    let no_docker = select(None, &FakeDocker::missing()).await.unwrap();
    assert_eq!(no_docker.runtime, RuntimeKind::Process);
    assert_eq!(
        no_docker.reason,
        "no Docker daemon answers at unix:///var/run/docker.sock: /var/run/docker.sock does not exist"
    );
    let stopped = select(None, &FakeDocker::not_running()).await.unwrap();
    assert_eq!(stopped.runtime, RuntimeKind::Process);
}

#[tokio::test]
async fn asking_for_a_runtime_forces_it_or_says_what_is_missing() {
    let process = select(Some(RuntimeKind::Process), &FakeDocker::answering()).await.unwrap();
    assert_eq!((process.runtime, process.reason.as_str()), (RuntimeKind::Process, "--runtime process"));
    let forced = select(Some(RuntimeKind::Kind), &FakeDocker::answering()).await.unwrap();
    assert_eq!(forced.runtime, RuntimeKind::Kind);

    let missing = select(Some(RuntimeKind::Kind), &FakeDocker::missing()).await.unwrap_err();
    assert_eq!(
        missing.to_string(),
        "the kind runtime needs Docker, and there is no Docker daemon at unix:///var/run/docker.sock \
         (/var/run/docker.sock does not exist): install and start Docker, or run `kubectl kueue-ext up --runtime process`"
    );
    let stopped = select(Some(RuntimeKind::Kind), &FakeDocker::not_running()).await.unwrap_err();
    assert_eq!(
        stopped.to_string(),
        "the kind runtime needs Docker, but the Docker daemon at unix:///var/run/docker.sock does not answer \
         (connection refused): start it (e.g. `sudo systemctl start docker`), or run `kubectl kueue-ext up --runtime process`"
    );
}

// --- prepare ---

/// The plugin binary (this test executable) and a Kueue release file.
struct Inputs {
    dir: tempfile::TempDir,
    options: KindOptions,
}

fn inputs() -> Inputs {
    let dir = tempfile::tempdir().unwrap();
    // This test executable stands in for the plugin: a real ELF with real libraries.
    let binary = dir.path().join("kubectl-kueue_ext");
    std::os::unix::fs::symlink(std::env::current_exe().unwrap(), &binary).unwrap();
    let release = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\n\
                   data: {controller_manager_config.yaml: 'kind: Configuration'}\n---\n\
                   apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kueue-controller-manager, namespace: kueue-system}\n";
    let manifests = dir.path().join("manifests.yaml");
    std::fs::write(&manifests, release).unwrap();
    let options = KindOptions {
        controller_binary: Some(binary),
        kueue_manifests: manifests.display().to_string(),
        kueue_manifests_sha256: sha256_hex(release.as_bytes()),
        ..KindOptions::default()
    };
    Inputs { dir, options }
}

async fn prepare(
    kind: FakeKind,
    docker: FakeDocker,
    inputs: &Inputs,
) -> Result<KindRuntime<FakeKind, FakeDocker>, KindError> {
    let plans = ClusterPlan::all(crate::sandbox::DEFAULT_NAME, 2, &NodePool::default(), None);
    let cache = inputs.dir.path().join("cache");
    KindRuntime::prepare(kind, docker, &inputs.options, None, &plans, &[], &cache, "test", &Progress::stderr()).await
}

#[tokio::test]
async fn prepare_builds_the_image_from_an_in_memory_context_once_per_binary() {
    let inputs = inputs();
    let runtime =
        prepare(FakeKind::new("kind v0.32.0 go1.25.1 linux/amd64"), FakeDocker::answering(), &inputs).await.unwrap();
    let built = runtime.docker.built.lock().unwrap().clone();
    assert_eq!(built.len(), 1);
    let (tag, context) = &built[0];
    assert!(tag.starts_with("kueue-ext/controller:v"), "{tag}");
    let names: Vec<String> = tar::Archive::new(context.as_slice())
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names[..2], ["Dockerfile", "kubectl-kueue_ext"]);
    // A plain `cargo install` links glibc dynamically: its loader and libraries come along.
    assert!(names.iter().any(|n| n.ends_with("libc.so.6")), "{names:?}");
    let saved = runtime.docker.saved.lock().unwrap().clone();
    assert_eq!(saved[0].0, *tag);
    let prepared = runtime.prepared.as_ref().unwrap();
    assert_eq!(prepared.archive, saved[0].1);
    assert_eq!(prepared.node_image, NODE_IMAGE);

    // kind loads the archive: the daemon keeps no copy of the image.
    assert_eq!(*runtime.docker.removed.lock().unwrap(), std::slice::from_ref(tag));

    // The archive of this binary exists now: a second `up` neither builds nor saves.
    let again = prepare(FakeKind::new("0.32.0"), FakeDocker::answering(), &inputs).await.unwrap();
    assert!(again.docker.built.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn two_ups_at_once_build_the_controller_image_once_and_load_the_same_archive() {
    let inputs = inputs();
    let (first, second) = tokio::join!(
        prepare(FakeKind::new("0.32.0"), FakeDocker::answering(), &inputs),
        prepare(FakeKind::new("0.32.0"), FakeDocker::answering(), &inputs),
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    let builds = first.docker.built.lock().unwrap().len() + second.docker.built.lock().unwrap().len();
    assert_eq!(builds, 1, "one build for both");
    let (first, second) = (first.prepared.unwrap().archive, second.prepared.unwrap().archive);
    assert_eq!(first, second);
    assert!(first.exists());
}

#[tokio::test]
async fn a_new_binary_s_archive_replaces_the_older_ones() {
    let inputs = inputs();
    let images = inputs.dir.path().join("cache/images");
    std::fs::create_dir_all(&images).unwrap();
    let older = images.join("kueue-ext_controller_v0.0.9-0123456789ab.tar");
    let unrelated = images.join("notes.txt");
    std::fs::write(&older, b"older archive").unwrap();
    std::fs::write(&unrelated, b"kept").unwrap();

    let runtime = prepare(FakeKind::new("0.32.0"), FakeDocker::answering(), &inputs).await.unwrap();

    assert!(runtime.prepared.as_ref().unwrap().archive.exists());
    assert!(!older.exists(), "the older binary's archive is removed");
    assert!(unrelated.exists(), "files that are no controller archive stay");
}

#[tokio::test]
async fn prepare_refuses_another_kind_release() {
    let inputs = inputs();
    let err = prepare(FakeKind::new("kind v0.27.0 go1.24 linux/amd64"), FakeDocker::answering(), &inputs)
        .await
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "kind v0.27.0 is on PATH, but the kind runtime needs kind v0.32.0 (node image {NODE_IMAGE}): install kind \
             v0.32.0, or pass --kind-version v0.27.0 (or set KUEUE_EXT_KIND_VERSION) if you know this kind works with \
             that image"
        )
    );
    let unreadable = prepare(FakeKind::new("oops"), FakeDocker::answering(), &inputs).await.err().unwrap();
    assert!(unreadable.to_string().contains("\"oops\""), "{unreadable}");
}

#[tokio::test]
async fn prepare_refuses_a_cluster_of_our_name_made_by_someone_else() {
    let inputs = inputs();
    let kind = FakeKind { existing: vec!["dev".into(), "kueue-ext-worker2".into()], ..FakeKind::new("v0.32.0") };
    let err = prepare(kind, FakeDocker::answering(), &inputs).await.err().unwrap();
    assert!(matches!(&err, KindError::ClusterExists { name } if name == "kueue-ext-worker2"), "{err:?}");
    assert!(err.to_string().contains("`kind delete cluster --name kueue-ext-worker2`"), "{err}");
}

// --- boot: create, kubeconfig, image load ---

#[tokio::test]
async fn boot_creates_the_cluster_reads_its_kubeconfig_and_loads_the_image() {
    let inputs = inputs();
    let runtime = prepare(FakeKind::new("v0.32.0"), FakeDocker::answering(), &inputs).await.unwrap();
    let prepared = runtime.prepared.as_ref().unwrap();
    let dir = inputs.dir.path().join("state/worker1");
    let plan = &ClusterPlan::all(crate::sandbox::DEFAULT_NAME, 1, &NodePool::default(), None)[1];
    assert_eq!(plan.role, Role::Worker);
    let admin = runtime.boot(plan, &dir, prepared).await.unwrap();
    assert_eq!(admin.server, "https://127.0.0.1:41000");
    assert_eq!(admin.ca_pem, "CA");
    assert_eq!(
        runtime.kind.calls(),
        [
            format!(
                "create kueue-ext-worker1 image={NODE_IMAGE} nodes=1 kubeconfig={}",
                dir.join("kind.kubeconfig").display()
            ),
            "kubeconfig kueue-ext-worker1".to_string(),
            format!("load kueue-ext-worker1 {}", prepared.archive.display()),
        ]
    );
}

#[tokio::test]
async fn a_failed_image_load_names_the_image_and_the_cluster() {
    let inputs = inputs();
    let kind = FakeKind { fail_load: true, ..FakeKind::new("v0.32.0") };
    let runtime = prepare(kind, FakeDocker::answering(), &inputs).await.unwrap();
    let prepared = runtime.prepared.as_ref().unwrap();
    let plan = &ClusterPlan::all(crate::sandbox::DEFAULT_NAME, 0, &NodePool::default(), None)[0];
    let err = runtime.boot(plan, inputs.dir.path(), prepared).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "loading the controller image {} into kind cluster kueue-ext-manager failed",
            prepared.image
        )),
        "{message}"
    );
    assert!(message.contains("no space left on device"), "{message}");
}

#[tokio::test]
async fn a_node_that_never_becomes_ready_leaves_its_logs_and_says_where() {
    let inputs = inputs();
    let kind = FakeKind { never_ready: true, ..FakeKind::new("v0.32.0") };
    let runtime = prepare(kind, FakeDocker::answering(), &inputs).await.unwrap();
    let prepared = runtime.prepared.as_ref().unwrap();
    let plan = &ClusterPlan::all(crate::sandbox::DEFAULT_NAME, 0, &NodePool::default(), None)[0];
    let dir = inputs.dir.path().join("state/manager");
    let err = runtime.boot(plan, &dir, prepared).await.unwrap_err();
    let logs = dir.join("kind-logs");
    assert_eq!(runtime.kind.calls()[1..], [format!("export logs kueue-ext-manager {}", logs.display())]);
    let message = err.to_string();
    assert!(message.starts_with("kind could not create cluster kueue-ext-manager"), "{message}");
    assert!(message.contains("timed out waiting for the condition"), "{message}");
    assert!(message.ends_with(&format!("control-plane pods) are in {}", logs.display())), "{message}");
}

// --- down ---

#[tokio::test]
async fn teardown_deletes_exactly_the_recorded_clusters() {
    use crate::sandbox::record::{Cluster, SandboxPhase};
    let cluster = |name: &str, kind_cluster: Option<&str>| Cluster {
        name: name.into(),
        role: Role::Worker,
        context: format!("kueue-ext-{name}"),
        dir: PathBuf::from(format!("/state/{name}")),
        api_server_port: 0,
        components: Vec::new(),
        kind_cluster: kind_cluster.map(String::from),
    };
    let state = SandboxState {
        name: "kueue-ext".into(),
        runtime: RuntimeKind::Kind,
        phase: SandboxPhase::Up,
        workers: 2,
        kubeconfig: PathBuf::from("/state/kubeconfig"),
        // worker2 never got as far as kind: nothing of it to delete.
        clusters: vec![cluster("manager", Some("kueue-ext-manager")), cluster("worker2", None)],
        merged_kubeconfig: None,
        integrations: vec![],
        crds: vec![],
        addons: vec![],
        kind_network: None,
    };
    let kind = FakeKind { existing: vec!["dev".into(), "kueue-ext-manager".into()], ..FakeKind::new("v0.32.0") };
    let runtime = KindRuntime::recorded(kind, FakeDocker::answering());
    assert_eq!(runtime.teardown(&state).await.unwrap(), 1);
    assert_eq!(runtime.kind.calls(), ["delete kueue-ext-manager kubeconfig=/state/manager/kind.kubeconfig"]);
    assert!(runtime.docker.removed.lock().unwrap().is_empty(), "a network it found is not this sandbox's");

    // The network its first cluster created goes with its clusters.
    let created = SandboxState { kind_network: Some("kind".into()), ..state };
    runtime.teardown(&created).await.unwrap();
    assert_eq!(*runtime.docker.removed.lock().unwrap(), ["network kind"]);

    // Docker gave up waiting for the killed node to exit, which it did a moment later: with
    // nothing frozen to thaw, the delete is asked once more, and only once.
    let once_refused = FakeKind { failing_deletes: 1.into(), ..FakeKind::new("v0.32.0") };
    let runtime = KindRuntime::recorded(once_refused, FakeDocker::answering());
    assert_eq!(runtime.teardown(&created).await.unwrap(), 1);
    assert_eq!(runtime.kind.calls().len(), 2, "{:?}", runtime.kind.calls());
    let twice_refused = FakeKind { failing_deletes: 2.into(), ..FakeKind::new("v0.32.0") };
    let runtime = KindRuntime::recorded(twice_refused, FakeDocker::answering());
    let error = runtime.teardown(&created).await.unwrap_err().to_string();
    assert!(error.contains("did not receive an exit event"), "{error}");
    assert_eq!(runtime.kind.calls().len(), 2, "{:?}", runtime.kind.calls());
}

#[tokio::test]
async fn prepare_knows_whether_kinds_network_is_there_already() {
    let inputs = inputs();
    let fresh = prepare(FakeKind::new("0.32.0"), FakeDocker::answering(), &inputs).await.unwrap();
    assert!(fresh.prepared.as_ref().unwrap().creates_network);
    let docker = FakeDocker { networks: Mutex::new(vec!["kind".into()]), ..FakeDocker::answering() };
    let shared = prepare(FakeKind::new("0.32.0"), docker, &inputs).await.unwrap();
    assert!(!shared.prepared.as_ref().unwrap().creates_network, "someone else's network stays theirs");
}

#[tokio::test]
async fn status_checks_node_containers_and_in_cluster_deployments() {
    use crate::sandbox::record::{Cluster, SandboxPhase};
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster {
        name: "manager".into(),
        role: Role::Manager,
        context: "kueue-ext-manager".into(),
        dir: dir.path().join("manager"),
        api_server_port: 41000,
        components: Vec::new(),
        kind_cluster: Some("kueue-ext-manager".into()),
    };
    let state = SandboxState {
        name: "kueue-ext".into(),
        runtime: RuntimeKind::Kind,
        phase: SandboxPhase::Up,
        workers: 0,
        // No kubeconfig: the API server cannot be reached.
        kubeconfig: dir.path().join("kubeconfig"),
        clusters: vec![cluster.clone()],
        merged_kubeconfig: None,
        integrations: vec![],
        crds: vec![],
        addons: vec![Addon::Tekton],
        kind_network: None,
    };
    let runtime = KindRuntime::recorded(FakeKind::new("v0.32.0"), FakeDocker::answering());
    let components = runtime.components(&state, &cluster).await;
    let summary: Vec<(&str, bool)> = components.iter().map(|c| (c.name.as_str(), c.ready)).collect();
    assert_eq!(
        summary,
        [
            ("kueue-ext-manager-control-plane", true),
            ("coredns", false),
            ("kueue", false),
            ("kueue-ext-controller", false),
            ("tekton", false),
            ("tekton-pipelines-webhook", false),
        ]
    );
    assert_eq!(components[0].log, "docker logs kueue-ext-manager-control-plane");
    assert!(components[1].log.ends_with("-n kube-system logs deploy/coredns"), "{}", components[1].log);
    assert!(components[2].reason.as_deref().unwrap_or_default().contains("unreachable"));
    assert!(
        components[3].log.ends_with("-n kueue-ext-system logs deploy/kueue-ext-controller"),
        "{}",
        components[3].log
    );
    assert!(components.iter().all(|c| c.pid.is_none()));
}

#[test]
fn down_without_kind_names_the_clusters_left() {
    let err = KindError::KindMissingForDown { clusters: "kueue-ext-manager, kueue-ext-worker1".into() };
    assert!(err.to_string().contains("kind clusters kueue-ext-manager, kueue-ext-worker1"), "{err}");
}

#[test]
fn sha256_is_lowercase_hex() {
    assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
