//! `up --runtime kind` of a manager and two workers (Kueue, MultiKueue Active, our controller
//! ready) against `kind create cluster` ×3 in parallel with the same node image and config (no
//! Kueue), and against `up --runtime process` of the same sandbox, each in wall time.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kueue_ext::sandbox::{kind_cli_path, kind_config};

use crate::order;
use crate::report::Row;
use crate::sandbox::{Sandbox, run};

pub fn bench(runs: usize) -> Vec<Row> {
    let what = "`up --runtime kind`: manager + 2 workers, Kueue, MultiKueue Active, controller ready";
    let mut versus_kind =
        Row::new(what, "s", "`kind create cluster` ×3 in parallel, same node image and config, no Kueue");
    let mut versus_process = Row::new(what, "s", "`up --runtime process`, same sandbox");
    let kind = kind_cli_path();
    // The node image `up` uses, known once a first `up` has built or chosen it.
    // The node image `up` uses, known once a first `up` (not measured) has built or chosen it.
    let node_image = {
        let first = Sandbox::up(&["--runtime", "kind"]);
        let inspect = ["inspect", "--format", "{{.Config.Image}}", "kueue-ext-manager-control-plane"];
        let image = run(Command::new("docker").args(inspect)).trim().to_string();
        drop(first);
        image
    };
    for round in 0..runs {
        let (ours, peers) = order::measure(
            round,
            || Sandbox::up(&["--runtime", "kind"]).up_seconds,
            vec![
                Box::new(|| kind_clusters(&kind, &node_image)),
                Box::new(|| Sandbox::up(&["--runtime", "process"]).up_seconds),
            ],
        );
        versus_kind.push(ours, peers[0]);
        versus_process.push(ours, peers[1]);
    }
    vec![versus_kind, versus_process]
}

/// Seconds until three kind clusters of `node_image` are created and their nodes Ready.
fn kind_clusters(kind: &Path, node_image: &str) -> f64 {
    let names = ["bench-kind1", "bench-kind2", "bench-kind3"];
    let clusters = Deleting { kind, names };
    let config = kind_config(None, node_image.starts_with("kueue-ext.local/"));
    let started = Instant::now();
    std::thread::scope(|scope| {
        let creating: Vec<_> = names
            .iter()
            .map(|name| {
                let config = config.clone();
                scope.spawn(move || create(kind, name, node_image, &config))
            })
            .collect();
        creating.into_iter().for_each(|c| c.join().expect("kind cluster created"));
    });
    let seconds = started.elapsed().as_secs_f64();
    drop(clusters);
    seconds
}

fn create(kind: &Path, name: &str, node_image: &str, config: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kind.yaml");
    std::fs::write(&path, config).expect("kind config written");
    let kubeconfig = dir.path().join("kubeconfig");
    run(Command::new(kind)
        .args(["create", "cluster", "--name", name, "--image", node_image, "--wait", "3m", "--config"])
        .arg(&path)
        .arg("--kubeconfig")
        .arg(&kubeconfig));
}

/// Deletes the peer's clusters when dropped, also when a create failed.
struct Deleting<'a> {
    kind: &'a Path,
    names: [&'a str; 3],
}

impl Drop for Deleting<'_> {
    fn drop(&mut self) {
        for name in self.names {
            let _ = Command::new(self.kind).args(["delete", "cluster", "--name", name]).output();
        }
    }
}
