//! `up --runtime kind` of a manager and two workers (Kueue, MultiKueue Active, our controller
//! ready) against what Kueue's guide has a user do by hand for the same (`documented_setup.rs`),
//! against `kind create cluster` ×3 in parallel with the same node image and config (no
//! Kueue), and against `up --runtime process` of the same sandbox, each in wall time. Where
//! the time goes is printed per step for ours (`up`'s own step lines) and for the guide's.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kueue_ext::sandbox::progress::Progress;
use kueue_ext::sandbox::{kind_cli_path, kind_config, local_kind_images};

use crate::documented_setup::{self, Steps};
use crate::order;
use crate::report::{Row, Summary};
use crate::sandbox::{Sandbox, run};

pub fn bench(runs: usize, kubectl: &Path) -> Vec<Row> {
    let what = "`up --runtime kind`: manager + 2 workers, Kueue, MultiKueue Active, controller ready";
    let mut versus_kind =
        Row::new(what, "s", "`kind create cluster` ×3 in parallel, same node image and config, no Kueue");
    let mut versus_process = Row::new(what, "s", "`up --runtime process`, same sandbox");
    let mut versus_guide = Row::new(
        what,
        "s",
        "Kueue's MultiKueue guide by hand: `kind create cluster` ×3 in parallel, Kueue's manifests applied \
         with kubectl and Available on each, the guide's worker ServiceAccounts, tokens, Secrets, \
         MultiKueueClusters, AdmissionCheck and queues until Active",
    );
    let mut guide_steps = Vec::new();
    let kind = kind_cli_path();
    // The node image `up` uses, known once a first `up` (not measured) has built or chosen it.
    let node_image = {
        let first = Sandbox::up(&["--runtime", "kind"]);
        let inspect = ["inspect", "--format", "{{.Config.Image}}", "kueue-ext-manager-control-plane"];
        let image = run(Command::new("docker").args(inspect)).trim().to_string();
        drop(first);
        image
    };
    assert!(node_image.starts_with("kueue-ext.local/"), "the guide's peer applies the locally rendered Kueue");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let images = runtime.block_on(local_kind_images(&Progress::stderr())).expect("the local kind images");
    for round in 0..runs {
        let (ours, peers) = order::measure(
            round,
            || {
                let sandbox = Sandbox::up(&["--runtime", "kind"]);
                let steps: Vec<&str> = sandbox.said.lines().filter(|l| l.starts_with('✓')).collect();
                println!("`up --runtime kind`, run {round}: {}", steps.join("; "));
                sandbox.up_seconds
            },
            vec![
                Box::new(|| {
                    let steps = documented_setup::measure(&kind, &node_image, kubectl, &images.kueue_manifests);
                    let total = steps.total();
                    guide_steps.push(steps);
                    total
                }),
                Box::new(|| kind_clusters(&kind, &node_image)),
                Box::new(|| Sandbox::up(&["--runtime", "process"]).up_seconds),
            ],
        );
        versus_guide.push(ours, peers[0]);
        versus_kind.push(ours, peers[1]);
        versus_process.push(ours, peers[2]);
    }
    print_steps(&guide_steps);
    vec![versus_guide, versus_kind, versus_process]
}

fn print_steps(runs: &[Steps]) {
    let median = |step: fn(&Steps) -> f64| {
        Summary::of(&runs.iter().map(step).collect::<Vec<_>>()).map_or(f64::NAN, |s| s.median)
    };
    println!(
        "Kueue's MultiKueue guide by hand, median of {} runs: kind clusters {:.1} s, Kueue applied and Available {:.1} s, \
         MultiKueue wired and Active {:.1} s",
        runs.len(),
        median(|s| s.clusters),
        median(|s| s.kueue),
        median(|s| s.multikueue)
    );
}

/// Seconds until three kind clusters of `node_image` are created and their nodes Ready.
fn kind_clusters(kind: &Path, node_image: &str) -> f64 {
    let names = ["bench-kind1", "bench-kind2", "bench-kind3"];
    let clusters = Deleting { kind, names };
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    std::thread::scope(|scope| {
        let creating: Vec<_> = names
            .iter()
            .map(|name| {
                let kubeconfig = dir.path().join(format!("{name}.kubeconfig"));
                scope.spawn(move || create(kind, name, node_image, &kubeconfig))
            })
            .collect();
        creating.into_iter().for_each(|c| c.join().expect("kind cluster created"));
    });
    let seconds = started.elapsed().as_secs_f64();
    drop(clusters);
    seconds
}

/// `kind create cluster` with `up`'s node config, its kubeconfig written to `kubeconfig`.
pub fn create(kind: &Path, name: &str, node_image: &str, kubeconfig: &Path) {
    let config = kubeconfig.with_extension("kind.yaml");
    std::fs::write(&config, kind_config(None, node_image.starts_with("kueue-ext.local/")))
        .expect("kind config written");
    run(Command::new(kind)
        .args(["create", "cluster", "--name", name, "--image", node_image, "--wait", "3m", "--config"])
        .arg(&config)
        .arg("--kubeconfig")
        .arg(kubeconfig));
}

/// Deletes a peer's clusters when dropped, also when a create failed.
pub struct Deleting<'a> {
    pub kind: &'a Path,
    pub names: [&'a str; 3],
}

impl Drop for Deleting<'_> {
    fn drop(&mut self) {
        for name in self.names {
            let _ = Command::new(self.kind).args(["delete", "cluster", "--name", name]).output();
        }
    }
}
