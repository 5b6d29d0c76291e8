//! End-to-end: `watch` on a real sandbox (manager and two workers wired by MultiKueue). The real
//! TUI runs in a private tmux server and is driven by keys as a user would: rows appear and
//! move from blocked and suspended to admitted, running on a worker and finished; `/` filters,
//! enter opens the detail view with the same explanation `explain` prints, `:` switches views,
//! `s` and ctrl-d act on a job; `q` quits and leaves the terminal as it was. Then the one-shot
//! forms: `watch --once -o json`, `watch` without a terminal, and a worker that cannot be reached.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{BIN, Sandbox, api, apply_yaml, eventually, text};
use crate::fixtures::external_job;
use kube::Client;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

/// A batch Job Kueue leaves alone (no queue), suspended: the target of `s` and ctrl-d.
const PLAIN_JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: plain, namespace: default}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.invalid/work}]
"#;

/// A tmux server of this test's own (its socket in a temporary directory), with one pane
/// running a command; the server, everything in it and the socket go with the test.
struct Tmux {
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    fn start(command: &str) -> Tmux {
        let dir = tempfile::tempdir().expect("temp dir");
        let tmux = Tmux { socket: dir.path().join("tmux.sock"), _dir: dir };
        tmux.run(&["new-session", "-d", "-s", "watch", "-x", "200", "-y", "50", command]);
        // Escape reaches the program at once instead of after tmux's 500 ms wait for a sequence.
        tmux.run(&["set-option", "-s", "escape-time", "0"]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().expect("tmux runs");
        assert!(output.status.success(), "tmux {args:?}: {}", text(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "watch"])
    }

    /// Named keys (`Enter`, `Escape`, `C-d`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "watch"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "watch", "-l", text]);
    }

    /// The screen once `check` accepts it; panics with the last screen after two minutes.
    async fn wait_for(&self, what: &str, mut check: impl FnMut(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; the screen:\n{screen}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").output();
    }
}

/// The Workload of job `name` once it exists.
async fn workload_of(client: &Client, name: &str) -> Value {
    eventually(&format!("{name}'s Workload"), Duration::from_secs(60), || async {
        let list =
            crate::common::workloads(client, "default").list(&Default::default()).await.map_err(|e| e.to_string())?;
        let owned =
            list.items.into_iter().find(|w| w.metadata.owner_references.iter().flatten().any(|o| o.name == name));
        serde_json::to_value(owned.ok_or("no Workload yet")?).map_err(|e| e.to_string())
    })
    .await
}

fn created(wl: &Value) -> i64 {
    let time =
        wl["metadata"]["creationTimestamp"].as_str().and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok());
    time.expect("a creation time").as_second()
}

/// The cells of the table row of job `name`, as words.
fn row(screen: &str, name: &str) -> Option<Vec<String>> {
    let mut rows = screen.lines().filter(|l| l.starts_with('│'));
    let line = rows.find(|l| l.split(['│', ' ']).any(|w| w == name))?;
    Some(line.split(['│', ' ']).filter(|w| !w.is_empty() && *w != ">").map(String::from).collect())
}

/// STATUS, SUSP, WORKLOAD, CLUSTER and MIRROR of the row, by the jobs table's column order.
fn states(cells: &[String]) -> (String, String, String, String, String) {
    let cell = |i: usize| cells.get(i).cloned().unwrap_or_default();
    (cell(3), cell(5), cell(6), cell(8), cell(9))
}

fn run(sandbox: &Sandbox, command: &str, args: &[&str]) -> Output {
    let output = sandbox.run(command, args);
    assert!(output.status.success(), "{command} {args:?}: {}", text(&output));
    output
}

/// The reasons `explain` prints, without the MultiKueue timeline after them.
fn explain_lines(sandbox: &Sandbox, job: &str) -> Vec<String> {
    let printed = String::from_utf8_lossy(&run(sandbox, "explain", &[job]).stdout).into_owned();
    printed.lines().take_while(|l| *l != "multikueue (UTC):").map(String::from).collect()
}

async fn set_stop_policy(manager: &Client, policy: Value) {
    let queues = api(manager, "kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", Some("default"));
    let patch = Patch::Merge(json!({"spec": {"stopPolicy": policy}}));
    queues.patch("user-queue", &PatchParams::default(), &patch).await.expect("patch the LocalQueue");
}

/// The sandbox kubeconfig plus a context `dead` whose server refuses connections.
fn kubeconfig_with_a_dead_worker(sandbox: &Sandbox, path: &Path) {
    let mut config: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(sandbox.kubeconfig()).expect("kubeconfig")).expect("yaml");
    let user = config["contexts"][0]["context"]["user"].clone();
    config["clusters"]
        .as_array_mut()
        .expect("clusters")
        .push(json!({"name": "dead", "cluster": {"server": "https://127.0.0.1:1"}}));
    config["contexts"]
        .as_array_mut()
        .expect("contexts")
        .push(json!({"name": "dead", "context": {"cluster": "dead", "user": user}}));
    std::fs::write(path, serde_json::to_string(&config).expect("json is yaml")).expect("write kubeconfig");
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_follows_jobs_across_clusters_and_restores_the_terminal() {
    assert!(
        Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success()),
        "tmux is needed (hack/test.sh installs it)"
    );
    let sandbox = Sandbox::up(&[]);
    let manager = sandbox.client("manager").await;
    // A stopped LocalQueue keeps the job suspended and blocked until the test lets it go.
    set_stop_policy(&manager, json!("Hold")).await;

    let state_dir = sandbox.dir.to_str().expect("utf-8 path");
    let tmux = Tmux::start(&format!(
        "sh -c '{BIN} watch --state-dir {state_dir}; echo EXIT=$?; stty -a; echo STTY-END; sleep 3600'"
    ));
    tmux.wait_for("the header with every cluster", |s| {
        s.contains("kueue-ext watch") && ["manager ●", "worker1 ●", "worker2 ●"].iter().all(|c| s.contains(c))
    })
    .await;

    apply_yaml(&manager, &external_job("watch-ext").pods(2).runs_for("20s").yaml()).await;
    apply_yaml(&manager, PLAIN_JOB).await;
    let screen = tmux
        .wait_for("watch-ext suspended and blocked", |s| {
            row(s, "watch-ext").is_some_and(|r| {
                let (status, suspended, ..) = states(&r);
                status == "Blocked" && suspended == "yes"
            })
        })
        .await;
    assert!(row(&screen, "plain").is_some_and(|r| states(&r).0 == "Unmanaged"), "{screen}");

    // `/` filters while typing; enter keeps the filter; enter again opens the job.
    tmux.type_text("/watch-ext");
    tmux.wait_for("the filter to leave one job", |s| s.contains("Jobs (1/2) /watch-ext") && row(s, "plain").is_none())
        .await;
    tmux.keys(&["Enter"]);
    tmux.keys(&["Enter"]);
    let detail = tmux
        .wait_for("the detail view", |s| s.contains("ExternalJob default/watch-ext on manager") && s.contains("Why"))
        .await;
    let explained = explain_lines(&sandbox, "externaljob/watch-ext");
    assert!(explained[0].starts_with("LocalQueue user-queue is stopped (stopPolicy Hold)"), "{explained:?}");
    assert!(detail.contains(&format!("• {}", explained[0])), "the detail view says what explain says:\n{detail}");
    let as_json: Value =
        serde_json::from_slice(&run(&sandbox, "explain", &["externaljob/watch-ext", "-o", "json"]).stdout).unwrap();
    assert_eq!((as_json["kind"].as_str(), as_json["name"].as_str()), (Some("ExternalJob"), Some("watch-ext")));
    assert_eq!(as_json["reasons"][0].as_str(), Some(explained[0].as_str()), "the same reasons as JSON");
    tmux.keys(&["Escape"]);

    // The queue view: two more jobs wait behind watch-ext, each created in a later second than
    // the one before's Workload, so that creation order is certain; `p` jumps to their queue
    // with watch-ext selected, esc comes back.
    let mut previous = workload_of(&manager, "watch-ext").await;
    for name in ["queued-2", "queued-3"] {
        eventually("the clock to pass the previous Workload's creation second", Duration::from_secs(30), || async {
            let now = k8s_openapi::jiff::Timestamp::now().as_second();
            if now > created(&previous) { Ok(()) } else { Err(format!("now {now}")) }
        })
        .await;
        apply_yaml(&manager, &external_job(name).yaml()).await;
        previous = workload_of(&manager, name).await;
    }
    tmux.type_text("p");
    let pending = tmux
        .wait_for("the pending view of watch-ext's queue", |s| {
            s.contains("Pending in ClusterQueue cluster-queue on manager (3/3)") && s.contains("externaljob/queued-3")
        })
        .await;
    let line_of = |name: &str| {
        pending.lines().position(|l| l.contains(&format!("externaljob/{name} "))).unwrap_or_else(|| panic!("{pending}"))
    };
    assert!(line_of("watch-ext") < line_of("queued-2") && line_of("queued-2") < line_of("queued-3"), "{pending}");
    assert!(pending.lines().any(|l| l.contains("> 1 ") && l.contains("externaljob/watch-ext")), "selected: {pending}");
    assert!(pending.contains("creation order: positions need the visibility API"), "{pending}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the jobs table again", |s| s.contains("Jobs (1/4) /watch-ext")).await;
    let externals = api(&manager, "kueue-ext.dev/v1alpha1", "ExternalJob", "externaljobs", Some("default"));
    for name in ["queued-2", "queued-3"] {
        externals.delete(name, &Default::default()).await.expect("delete a queued job");
    }

    set_stop_policy(&manager, Value::Null).await;
    // Every STATUS the row shows on its way, each once, from the Blocked seen above.
    let mut seen = vec!["Blocked".to_string()];
    let mut note = |screen: &str| {
        let state = row(screen, "watch-ext").map(|r| states(&r));
        if let Some(status) = state.as_ref().map(|s| s.0.clone())
            && seen.last() != Some(&status)
        {
            seen.push(status);
        }
        state
    };
    let screen = tmux
        .wait_for("watch-ext to run on a worker", |s| note(s).is_some_and(|(status, ..)| status == "Running"))
        .await;
    let running = row(&screen, "watch-ext").map(|r| states(&r)).unwrap_or_default();
    let (_, suspended, workload, worker, mirror) = running;
    assert_eq!((suspended.as_str(), workload.as_str(), mirror.as_str()), ("no", "ADMITTED", "Running"));
    assert!(worker == "worker1" || worker == "worker2", "the CLUSTER column names the worker: {worker}");
    tmux.keys(&["Enter"]);
    let detail =
        tmux.wait_for("the copy in the detail view", |s| s.contains(&format!("Copy on {worker}: Running"))).await;
    assert!(detail.contains(&format!("Admitted; MultiKueue runs it on worker cluster {worker}.")), "{detail}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("watch-ext to finish", |s| {
        note(s).is_some_and(|(status, _, workload, ..)| status == "Succeeded" && workload == "FINISHED")
    })
    .await;
    let path: Vec<&str> =
        seen.iter().map(String::as_str).filter(|s| ["Blocked", "Running", "Succeeded"].contains(s)).collect();
    assert_eq!(path, ["Blocked", "Running", "Succeeded"], "every status seen: {seen:?}");

    // Views.
    tmux.keys(&["Escape"]);
    tmux.type_text(":queues");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the queues view", |s| s.contains("ClusterQueues (3/3)") && s.contains("default-flavor cpu")).await;
    tmux.type_text(":clusters");
    tmux.keys(&["Enter"]);
    let clusters = tmux
        .wait_for("the clusters view", |s| {
            s.contains("Clusters (3/3)") && row(s, "worker1").is_some_and(|r| r.contains(&"Active".to_string()))
        })
        .await;
    assert!(clusters.contains("FREE/QUOTA") && clusters.contains("COPIES D/W/R/X"), "{clusters}");
    let worker1 = row(&clusters, "worker1").unwrap_or_default();
    assert!(worker1.contains(&"cpu".to_string()) && worker1.iter().any(|c| c.ends_with("/32,")), "{worker1:?}");
    tmux.type_text(":jobs");
    tmux.keys(&["Enter"]);

    // `s` resumes the plain Job; ctrl-d deletes it after the confirmation.
    tmux.type_text("/plain");
    tmux.keys(&["Enter"]);
    tmux.wait_for("plain alone", |s| s.contains("Jobs (1/2) /plain")).await;
    tmux.type_text("s");
    tmux.wait_for("the resume to be reported", |s| s.contains("Job default/plain resumed on manager")).await;
    let jobs = api(&manager, "batch/v1", "Job", "jobs", Some("default"));
    let plain = jobs.get("plain").await.expect("plain exists");
    assert_eq!(plain.data["spec"]["suspend"], false);
    tmux.keys(&["C-d"]);
    tmux.wait_for("the confirmation", |s| s.contains("Delete Job default/plain on manager?")).await;
    tmux.type_text("y");
    tmux.wait_for("the row to go", |s| s.contains("Job default/plain deleted on manager") && row(s, "plain").is_none())
        .await;
    eventually("plain to be gone", Duration::from_secs(30), || async {
        match jobs.get_opt("plain").await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(_) => Err("still there".to_string()),
        }
    })
    .await;

    // `q` quits and gives the terminal back: main screen, line discipline and echo restored.
    tmux.type_text("q");
    // Read once stty has printed all of its settings, not just the exit code.
    let after = tmux.wait_for("watch to exit", |s| s.contains("EXIT=") && s.contains("STTY-END")).await;
    assert!(after.contains("EXIT=0"), "{after}");
    assert_eq!(tmux.run(&["display-message", "-p", "-t", "watch", "#{alternate_on}"]).trim(), "0");
    let stty: Vec<&str> = after.split_whitespace().collect();
    assert!(stty.contains(&"icanon") && stty.contains(&"echo"), "cooked mode again: {after}");

    // The one-shot forms print the same join, with the same explanations.
    let json: Value = serde_json::from_slice(&run(&sandbox, "watch", &["--once", "-o", "json"]).stdout).expect("json");
    let job = json["jobs"].as_array().and_then(|jobs| jobs.iter().find(|j| j["key"]["name"] == "watch-ext")).cloned();
    let job = job.unwrap_or_else(|| panic!("watch-ext in {json:#}"));
    assert_eq!(
        (job["status"].as_str(), job["workload"]["cluster_name"].as_str()),
        (Some("Succeeded"), Some(worker.as_str()))
    );
    let why: Vec<String> = serde_json::from_value(job["why"].clone()).expect("why");
    assert_eq!(why, explain_lines(&sandbox, "externaljob/watch-ext"));
    assert_eq!(json["clusters"].as_array().map(Vec::len), Some(3), "{json:#}");
    let piped = String::from_utf8_lossy(&run(&sandbox, "watch", &[]).stdout).into_owned();
    assert!(piped.starts_with("NAMESPACE") && piped.contains("watch-ext") && piped.contains("CLUSTERQUEUE"), "{piped}");

    // A worker that refuses connections is reported, not fatal.
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("config");
    kubeconfig_with_a_dead_worker(&sandbox, &kubeconfig);
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path");
    let args = [
        "--once",
        "-o",
        "json",
        "--kubeconfig",
        kubeconfig,
        "--context",
        "kueue-ext-manager",
        "--worker-context",
        "dead",
    ];
    let json: Value = serde_json::from_slice(&run(&sandbox, "watch", &args).stdout).expect("json");
    let dead =
        json["clusters"].as_array().and_then(|c| c.iter().find(|c| c["name"] == "dead")).cloned().unwrap_or_default();
    assert_eq!(dead["reachable"], false, "{json:#}");
    assert!(dead["problems"].to_string().contains("refused"), "{dead:#}");
}
