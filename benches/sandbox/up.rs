//! `up` of a manager and two workers (Kueue, MultiKueue Active, our controller ready) against
//! `kwokctl create cluster --runtime binary` ×3 in parallel with the same binaries, in wall time
//! and in the CPU seconds the clusters' processes spent getting there (on a shared 2-core
//! machine, CPU is what bounds both).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use kueue_ext::sandbox::ports;

use crate::report::Row;
use crate::sandbox::{Sandbox, cpu_seconds, pids_in, run};

pub fn bench(runs: usize, bin_dir: &Path, kwokctl: &Path) -> Vec<Row> {
    let peer = "kwokctl create cluster ×3, same binaries, no Kueue";
    let mut wall = Row::new("up: manager + 2 workers, MultiKueue Active", "s", peer);
    let mut cpu = Row::new("up: CPU seconds of the clusters' processes", "s", peer);
    for _ in 0..runs {
        let sandbox = Sandbox::up(&[]);
        let ours_cpu: f64 = sandbox.pids().into_iter().map(cpu_seconds).sum();
        let ours = sandbox.up_seconds;
        drop(sandbox);
        let (peer, peer_cpu) = kwokctl_clusters(bin_dir, kwokctl);
        wall.push(ours, peer);
        cpu.push(ours_cpu, peer_cpu);
    }
    vec![wall, cpu]
}

/// Seconds until three kwokctl clusters serve, and the CPU seconds their processes spent.
fn kwokctl_clusters(bin_dir: &Path, kwokctl: &Path) -> (f64, f64) {
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
    let started = Instant::now();
    let children: Vec<_> = names
        .iter()
        .zip(&configs)
        .map(|(name, config)| {
            kwokctl_command(kwokctl, bin_dir, &workdir)
                // An empty kubeconfig: like `up`, leave the user's own alone (kwokctl would
                // also serialise the three on its lock). Without `--wait` kwokctl returns once
                // its API server answers /version, long before it is ready; with it, once
                // /healthz says ok, near the /readyz that `up` waits for on each of its own.
                .args(["create", "cluster", "--kubeconfig=", "--wait", "2m", "--name", name, "-c"])
                .arg(config)
                .spawn()
                .expect("kwokctl starts")
        })
        .collect();
    let outputs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().expect("kwokctl ran")).collect();
    let seconds = started.elapsed().as_secs_f64();
    let mut cpu = 0.0;
    for (name, output) in names.iter().zip(outputs) {
        let log = String::from_utf8_lossy(&output.stderr);
        // kwokctl reports success even when its API server never served: that is no sample.
        assert!(output.status.success() && !log.contains("not served"), "kwokctl {name}:\n{log}");
        cpu += pids_in(&workdir.join("clusters").join(name).join("pids")).into_iter().map(cpu_seconds).sum::<f64>();
        run(kwokctl_command(kwokctl, bin_dir, &workdir).args(["delete", "cluster", "--name", name]));
    }
    (seconds, cpu)
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
