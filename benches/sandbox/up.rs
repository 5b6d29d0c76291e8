//! `up` of a manager and two workers (Kueue, MultiKueue Active, our controller ready) against
//! `kwokctl create cluster --runtime binary` ×3 in parallel with the same binaries, in wall time
//! and in the CPU seconds the clusters' processes spent getting there (on a shared 2-core
//! machine, CPU is what bounds both). A second peer also installs the CRDs `up` installs
//! (Kueue's and ours) and waits for them to be established: a profile of `up` puts over a
//! quarter of its API servers' CPU in handling CRDs, which bare kwokctl clusters never pay.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use kueue_ext::sandbox::process_runtime::ports;

use crate::order;
use crate::report::Row;
use crate::sandbox::{Sandbox, cpu_seconds, pids_in, run};

pub fn bench(runs: usize, bin_dir: &Path, kwokctl: &Path) -> Vec<Row> {
    let bare = "`kwokctl create cluster --runtime binary --wait 2m` ×3, same binaries, no Kueue";
    let with_crds = "the same three, then Kueue's CRDs and ours applied (`kubectl apply --server-side`) and \
                     established on each";
    let (wall_name, cpu_name) = (
        "`up`: manager + 2 workers, Kueue, MultiKueue Active, controller ready",
        "`up`: CPU seconds of the clusters' processes",
    );
    let mut wall = Row::new(wall_name, "s", bare);
    let mut cpu = Row::new(cpu_name, "s", bare);
    let mut wall_crds = Row::new(wall_name, "s", with_crds);
    let mut cpu_crds = Row::new(cpu_name, "s", with_crds);
    let crds = crd_manifests(bin_dir);
    for run in 0..runs {
        let ours = || {
            let sandbox = Sandbox::up(&["--runtime", "process"]);
            (sandbox.up_seconds, sandbox.pids().into_iter().map(cpu_seconds).sum())
        };
        let ((ours, ours_cpu), peers) = order::measure(
            run,
            ours,
            vec![
                Box::new(|| kwokctl_clusters(bin_dir, kwokctl, &[])),
                Box::new(|| kwokctl_clusters(bin_dir, kwokctl, &crds)),
            ],
        );
        let [(bare_wall, bare_cpu), (crds_wall, crds_cpu)] = peers[..] else { unreachable!("two peers") };
        wall.push(ours, bare_wall);
        cpu.push(ours_cpu, bare_cpu);
        wall_crds.push(ours, crds_wall);
        cpu_crds.push(ours_cpu, crds_cpu);
    }
    vec![wall, cpu, wall_crds, cpu_crds]
}

/// The CRDs `up` installs on every cluster: Kueue's from the toolchain, and ours.
fn crd_manifests(bin_dir: &Path) -> Vec<PathBuf> {
    let toolchain = bin_dir.parent().expect("bin dir has a parent");
    vec![
        toolchain.join("kueue/config/components/crd/bases"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/crds.yaml"),
    ]
}

/// Seconds until three kwokctl clusters serve, each with `crds` applied and established, and
/// the CPU seconds their processes spent.
fn kwokctl_clusters(bin_dir: &Path, kwokctl: &Path, crds: &[PathBuf]) -> (f64, f64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let workdir = dir.path().join("kwok");
    let names = ["bench1", "bench2", "bench3"];
    let configs: Vec<PathBuf> = names
        .iter()
        .map(|name| {
            let path = dir.path().join(format!("{name}.yaml"));
            std::fs::write(&path, kwokctl_config(bin_dir)).expect("kwokctl config written");
            path
        })
        .collect();
    let clusters = Deleting { kwokctl, bin_dir, workdir: &workdir, names };
    let started = Instant::now();
    std::thread::scope(|scope| {
        let creating: Vec<_> = names
            .iter()
            .zip(&configs)
            .map(|(name, config)| scope.spawn(|| create_cluster(kwokctl, bin_dir, &workdir, name, config, crds)))
            .collect();
        creating.into_iter().for_each(|c| c.join().expect("cluster created"));
    });
    let seconds = started.elapsed().as_secs_f64();
    let cpu = names
        .iter()
        .flat_map(|name| pids_in(&workdir.join("clusters").join(name).join("pids")))
        .map(cpu_seconds)
        .sum::<f64>();
    drop(clusters);
    (seconds, cpu)
}

/// The clusters of one sample, deleted by kwokctl (which stops the processes it recorded) when
/// dropped: a sample that fails leaves none running under the next.
struct Deleting<'a> {
    kwokctl: &'a Path,
    bin_dir: &'a Path,
    workdir: &'a Path,
    names: [&'a str; 3],
}

impl Drop for Deleting<'_> {
    fn drop(&mut self) {
        for name in self.names {
            let deleted = kwokctl_command(self.kwokctl, self.bin_dir, self.workdir)
                .args(["delete", "cluster", "--name", name])
                .output();
            if !deleted.is_ok_and(|o| o.status.success()) {
                eprintln!("kwokctl could not delete cluster {name} under {}", self.workdir.display());
            }
        }
    }
}

/// One kwokctl cluster, ready, then with `crds` applied and established.
fn create_cluster(kwokctl: &Path, bin_dir: &Path, workdir: &Path, name: &str, config: &Path, crds: &[PathBuf]) {
    let output: Output = kwokctl_command(kwokctl, bin_dir, workdir)
        // An empty kubeconfig: like `up`, leave the user's own alone (kwokctl would also
        // serialise the three on its lock). Without `--wait` kwokctl returns once its API
        // server answers /version, long before it is ready; with it, once /healthz says ok,
        // near the /readyz that `up` waits for on each of its own.
        .args(["create", "cluster", "--kubeconfig=", "--wait", "2m", "--name", name, "-c"])
        .arg(config)
        .output()
        .expect("kwokctl ran");
    let log = String::from_utf8_lossy(&output.stderr);
    // kwokctl reports success even when its API server never served: that is no sample.
    assert!(output.status.success() && !log.contains("not served"), "kwokctl {name}:\n{log}");
    if crds.is_empty() {
        return;
    }
    let kubeconfig = workdir.join("clusters").join(name).join("kubeconfig.yaml");
    let kubectl = || {
        let mut command = Command::new(bin_dir.join("kubectl"));
        command.arg("--kubeconfig").arg(&kubeconfig);
        command
    };
    let mut apply = kubectl();
    apply.args(["apply", "--server-side", "--force-conflicts"]);
    for path in crds {
        apply.arg("-f").arg(path);
    }
    run(&mut apply);
    // `kubectl wait` fails at once on a CRD the API server has not given conditions yet.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !kubectl()
        .args(["wait", "--for=condition=Established", "crd", "--all"])
        .output()
        .expect("kubectl ran")
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "CRDs of {name} not established within 2 minutes");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn kwokctl_command(kwokctl: &Path, bin_dir: &Path, workdir: &Path) -> Command {
    let mut command = Command::new(kwokctl);
    // kwokctl runs the first kubectl on PATH to see whether its cluster serves: the toolchain's.
    let path = std::env::join_paths(
        std::iter::once(bin_dir.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH");
    command
        .env("KWOK_WORKDIR", workdir)
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

/// kwokctl's configuration: our binaries, loopback, and ports of its own — kwokctl picks ports
/// by probing from a fixed start, so three started at once would all pick the same ones.
fn kwokctl_config(bin: &Path) -> String {
    let free = ports::allocate(6).expect("free ports");
    let b = bin.display();
    format!(
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  runtime: binary\n  \
         bindAddress: 127.0.0.1\n  kubeBinaryPrefix: {b}\n  kubectlBinary: {b}/kubectl\n  etcdBinary: {b}/etcd\n  \
         kwokControllerBinary: {b}/kwok\n  kubeApiserverPort: {}\n  etcdPort: {}\n  etcdPeerPort: {}\n  \
         kubeControllerManagerPort: {}\n  kubeSchedulerPort: {}\n  kwokControllerPort: {}\n\
         componentsPatches:\n- name: kube-apiserver\n  extraArgs:\n  - key: advertise-address\n    value: 127.0.0.1\n",
        free[0], free[1], free[2], free[3], free[4], free[5]
    )
}

/// Builds kwokctl (the peer) from the toolchain's Go module once.
pub fn kwokctl(toolchain_src: &Path, cache: &Path) -> PathBuf {
    let path = cache.join("kwokctl");
    if !path.exists() {
        eprintln!("building kwokctl (the peer) from the toolchain module");
        run(Command::new("go")
            .current_dir(toolchain_src)
            .env("CGO_ENABLED", "0")
            .args(["build", "-trimpath", "-o"])
            .arg(&path)
            .arg("sigs.k8s.io/kwok/cmd/kwokctl"));
    }
    path
}
