//! Completion as the shells and kubectl meet it: the scripts of `completion SHELL`, and the
//! answers of `kubectl_complete-kueue_ext`, the helper kubectl (1.26+) runs for
//! `kubectl kueue-ext <TAB>` and reads in Cobra's `__complete` format.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::completion_support::{plugin_dir, stdout, values};
use crate::{BIN, text};

const SUBCOMMANDS: [&str; 7] = ["up", "down", "watch", "explain", "submit", "version", "completion"];

fn helper(dir: &Path, words: &[&str]) -> String {
    stdout(&Command::new(dir.join("kubectl_complete-kueue_ext")).args(words).output().unwrap())
}

fn kubeconfig(dir: &Path) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\ncurrent-context: kind-a\nclusters: []\nusers: []\ncontexts:\n\
         - name: kind-a\n  context: {cluster: a}\n- name: kind-b\n  context: {cluster: b}\n",
    )
    .unwrap();
    path
}

#[test]
fn every_shell_gets_a_script_naming_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&Command::new(BIN).args(["completion", shell]).output().unwrap());
        assert!(script.contains("kubectl-kueue_ext"), "{shell}: no binary name");
        for subcommand in SUBCOMMANDS {
            assert!(script.contains(subcommand), "{shell}: {subcommand} missing");
        }
        assert!(!script.contains("__complete"), "{shell}: the hidden entry leaked");
    }
}

#[test]
fn the_dynamic_script_asks_the_binary_and_the_binary_answers() {
    let script = stdout(&Command::new(BIN).args(["completion", "fish", "--dynamic"]).output().unwrap());
    assert!(script.contains("KUEUE_EXT_COMPLETE=fish kubectl-kueue_ext --"), "{script}");

    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path());
    let asked = |words: &[&str]| {
        stdout(
            &Command::new(BIN)
                .arg("--")
                .arg("kubectl-kueue_ext")
                .args(words)
                .env("KUEUE_EXT_COMPLETE", "fish")
                .output()
                .unwrap(),
        )
    };
    assert_eq!(values(&asked(&["wat"])), ["watch"]);
    let contexts = asked(&["explain", "--kubeconfig", config.to_str().unwrap(), "--context", "kind-"]);
    assert_eq!(contexts, "kind-a\tcluster a (current)\nkind-b\tcluster b\n");
}

#[test]
fn the_kubectl_helper_answers_in_cobra_format() {
    let dir = plugin_dir();
    let answer = helper(dir.path(), &[""]);
    let lines = values(&answer);
    assert_eq!(lines.last(), Some(&":4"), "{answer}");
    for subcommand in SUBCOMMANDS {
        assert!(lines.contains(&subcommand), "{subcommand} missing in {answer}");
    }
    assert!(answer.contains("version\tPrint the plugin's version"), "{answer}");
    // Cobra's own spelling, for wrapper scripts written as `kubectl kueue-ext __complete "$@"`.
    assert_eq!(stdout(&Command::new(BIN).args(["__complete", ""]).output().unwrap()), answer);

    let formats = helper(dir.path(), &["watch", "-o", ""]);
    assert_eq!(values(&formats), ["wide", "name", "json", "yaml", ":4"], "the default table has no name to offer");
    let config = kubeconfig(dir.path());
    let contexts =
        helper(dir.path(), &["watch", "--kubeconfig", config.to_str().unwrap(), "--worker-context", "w1=kind-b"]);
    assert_eq!(contexts, "w1=kind-b\tcluster b\n:4\n");
}

#[test]
fn a_cluster_that_does_not_answer_offers_nothing_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kubeconfig");
    // A non-routable address: the connection hangs rather than failing at once.
    std::fs::write(
        &config,
        "apiVersion: v1\nkind: Config\ncurrent-context: far\nusers: [{name: u, user: {token: t}}]\n\
         clusters: [{name: far, cluster: {server: 'https://10.255.255.1:6443', insecure-skip-tls-verify: true}}]\n\
         contexts: [{name: far, context: {cluster: far, user: u}}]\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let answer = stdout(
        &Command::new(BIN)
            .args(["__complete", "explain", "--kubeconfig", config.to_str().unwrap(), ""])
            .output()
            .unwrap(),
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(answer, ":4\n");
}

/// The scripts of `completion SHELL` and `completion SHELL --dynamic`, as flags of `completion`.
const FORMS: [&str; 2] = ["", " --dynamic"];

/// A shell run with the binary under test on PATH, first, as `kubectl-kueue_ext` (what the
/// dynamic scripts run at each TAB) and as `$KUEUE_EXT_BIN`.
fn shell(program: &str, args: &[&str]) -> Output {
    let dir = Path::new(BIN).parent().unwrap();
    let search = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let home = tempfile::tempdir().unwrap();
    Command::new(program)
        .args(args)
        .env("PATH", search)
        .env("KUEUE_EXT_BIN", BIN)
        .env("HOME", home.path())
        .env("ZDOTDIR", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("XDG_DATA_HOME", home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The shell's path, or why its test is skipped.
fn installed(program: &str) -> Option<String> {
    let found = Command::new("sh").args(["-c", &format!("command -v {program}")]).output().unwrap();
    if found.status.success() {
        Some(String::from_utf8_lossy(&found.stdout).trim().to_string())
    } else {
        eprintln!("skipped: no {program} on PATH, so its script is not loaded here");
        None
    }
}

/// The script sourced without a word on stderr, and what the commands after it printed.
fn loaded(output: &Output) -> String {
    assert!(output.status.success() && output.stderr.is_empty(), "{}", text(output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A TAB at the end of `line` in a real, non-interactive bash that sourced the script: the
/// function `complete -p` says the script registered is called as bash calls it (COMP_WORDS,
/// COMP_CWORD, COMP_LINE, COMP_POINT, COMP_TYPE set; the command, the word under the cursor and
/// the one before as arguments). The registration, then COMPREPLY, one per line.
fn bash_tab(form: &str, line: &str) -> (String, Vec<String>) {
    let script = format!(
        r#"set -u
source <("$KUEUE_EXT_BIN" completion bash{form}) || exit 3
spec=$(complete -p kubectl-kueue_ext) || exit 4
echo "$spec"
read -ra words <<<"$spec"
func=
for i in "${{!words[@]}}"; do [[ ${{words[i]}} == -F ]] && func=${{words[i+1]}}; done
[[ -n $func ]] || exit 5
COMP_LINE=$1
COMP_POINT=${{#COMP_LINE}}
COMP_TYPE=9
COMP_KEY=9
read -ra COMP_WORDS <<<"$COMP_LINE"
[[ $COMP_LINE == *' ' ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMPREPLY=()
"$func" "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
if [[ -v COMPREPLY ]] && (( ${{#COMPREPLY[@]}} )); then printf '%s\n' "${{COMPREPLY[@]}}"; fi
"#
    );
    let printed = loaded(&shell("bash", &["--norc", "--noprofile", "-c", &script, "bash", line]));
    let mut lines = printed.lines().map(String::from);
    (lines.next().unwrap_or_default(), lines.collect())
}

#[test]
fn bash_completes_from_the_sourced_script() {
    for form in FORMS {
        let (registered, _) = bash_tab(form, "kubectl-kueue_ext ");
        assert!(registered.starts_with("complete ") && registered.ends_with(" kubectl-kueue_ext"), "{registered}");
        assert_eq!(bash_tab(form, "kubectl-kueue_ext wa").1, ["watch"], "completion bash{form}");
        assert_eq!(bash_tab(form, "kubectl-kueue_ext su").1, ["submit"], "completion bash{form}");
        // Past the subcommand: the static script's arms once never matched (clap-rs/clap#6421).
        assert_eq!(bash_tab(form, "kubectl-kueue_ext version -o ").1, ["json", "yaml"], "completion bash{form}");
        assert_eq!(bash_tab(form, "kubectl-kueue_ext completion fi").1, ["fish"], "completion bash{form}");
        assert_eq!(bash_tab(form, "kubectl-kueue_ext watch --cont").1, ["--context"], "completion bash{form}");
    }
}

#[test]
fn zsh_loads_the_script_after_compinit() {
    let Some(zsh) = installed("zsh") else { return };
    for form in FORMS {
        let script = format!(
            r#"autoload -U compinit && compinit -u -D && source <("$KUEUE_EXT_BIN" completion zsh{form}) && print -r -- "${{_comps[kubectl-kueue_ext]}}""#
        );
        let registered = loaded(&shell(&zsh, &["-f", "-c", &script]));
        assert!(registered.trim().starts_with('_'), "completion zsh{form}: no completer registered: {registered:?}");
    }
}

#[test]
fn fish_loads_the_script_and_completes() {
    let Some(fish) = installed("fish") else { return };
    for form in FORMS {
        let script =
            format!(r#""$KUEUE_EXT_BIN" completion fish{form} | source; and complete -C 'kubectl-kueue_ext wa'"#);
        let completed = loaded(&shell(&fish, &["-c", &script]));
        assert_eq!(values(&completed), ["watch"], "completion fish{form}: {completed}");
    }
}
