//! Shell completion. Three ways in, one engine (clap_complete's), so each offers the same words:
//!
//! - `completion SHELL`: a static script for `kubectl-kueue_ext` (subcommands, flags, enum
//!   values, paths), sourced from the shell's rc file, as kubectl's and kueuectl's are;
//! - `completion SHELL --dynamic`: a script that asks the binary at each TAB, so it also offers
//!   contexts, namespaces and job names ([`values`]);
//! - `kubectl_complete-kueue_ext WORDS…`: what kubectl (1.26+) runs for `kubectl kueue-ext <TAB>`,
//!   answered in Cobra's `__complete` format, since kubectl relays it to its own Cobra
//!   completion. It is this binary under that name (a symlink), or `kubectl-kueue_ext __complete`.

pub mod values;

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{CompleteEnv, Shells};

use values::Scope;

/// The binary's name: what the shells complete, and what krew links.
pub const BIN: &str = "kubectl-kueue_ext";
/// The name kubectl looks up on PATH for a plugin's completions: `kubectl-` becomes
/// `kubectl_complete-` (kubectl's `lookupCompletionExec`).
pub const KUBECTL_HELPER: &str = "kubectl_complete-kueue_ext";
/// Cobra's own hidden command, for wrapper scripts written as `kubectl kueue-ext __complete "$@"`.
const COBRA_COMPLETE: &str = "__complete";
/// Set by the `--dynamic` scripts: "complete these words for this shell" rather than "run".
/// Not clap's default `COMPLETE`, a name too common to claim.
const ENV_VAR: &str = "KUEUE_EXT_COMPLETE";

/// Cobra's `ShellCompDirective` bits (`ShellCompDirectiveNoSpace`, `…NoFileComp`).
const NO_SPACE: u8 = 2;
const NO_FILE_COMP: u8 = 4;

/// How to install each form; shown by `completion --help`.
pub const INSTALL: &str = "\
Install:
  bash:  source <(kubectl-kueue_ext completion bash)          # in ~/.bashrc
  zsh:   source <(kubectl-kueue_ext completion zsh)           # in ~/.zshrc, after compinit
  fish:  kubectl-kueue_ext completion fish | source           # in ~/.config/fish/config.fish
  Add --dynamic to also complete contexts, namespaces and job names (the script then runs the
  plugin at each TAB).

For `kubectl kueue-ext <TAB>` (kubectl 1.26+, with kubectl's own completion loaded), link the
helper kubectl looks for next to the plugin (with krew, that is krew's bin directory):
  dir=$(dirname \"$(command -v kubectl-kueue_ext)\")
  ln -s \"$dir/kubectl-kueue_ext\" \"$dir/kubectl_complete-kueue_ext\"";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to write the script for.
    pub shell: clap_complete::Shell,
    /// Ask the plugin at each TAB: also completes --context, --namespace and job names.
    #[arg(long)]
    pub dynamic: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    if args.dynamic {
        let shells = Shells::builtins();
        let shell = shells
            .completer(&args.shell.to_string())
            .ok_or_else(|| anyhow::anyhow!("no dynamic completion for {}", args.shell))?;
        shell.write_registration(ENV_VAR, BIN, BIN, BIN, &mut out)?;
    } else {
        clap_complete::generate(args.shell, &mut super::Cli::command(), BIN, &mut out);
        if args.shell == clap_complete::Shell::Bash {
            out = bash_arms_as_the_loop_spells_them(&String::from_utf8_lossy(&out)).into_bytes();
        }
    }
    std::io::stdout().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// clap_complete's bash script (4.6.11) names the `case` arm of each subcommand after the binary
/// with its `-` spelled `__subcmd__` (`kubectl__subcmd__kueue_ext__subcmd__watch`), while the
/// loop over the typed words, which picks the arm, spells it `__` (`kubectl__kueue_ext__subcmd__watch`):
/// no arm matched, so nothing after a subcommand completed (clap-rs/clap#6421). The arms are
/// respelled as the loop spells them; once clap_complete agrees with itself, this replaces nothing.
fn bash_arms_as_the_loop_spells_them(script: &str) -> String {
    script.replace(&BIN.replace('-', "__subcmd__"), &BIN.replace('-', "__"))
}

/// The CLI with the completers of [`values`] on the arguments they know.
pub fn command(scope: Scope) -> clap::Command {
    values::attach(super::Cli::command(), &std::sync::Arc::new(scope))
}

/// Answers a completion request instead of running a command, when this process is one:
/// called as `kubectl_complete-kueue_ext`, as `kubectl-kueue_ext __complete`, or by a
/// `--dynamic` script. `None` for an ordinary run.
pub fn answer(args: Vec<OsString>) -> Option<ExitCode> {
    let called_as = args.first().and_then(|arg0| Path::new(arg0).file_name().map(OsString::from));
    let words = if called_as.as_deref() == Some(KUBECTL_HELPER.as_ref()) {
        Some(&args[1..])
    } else if args.get(1).is_some_and(|arg| arg == COBRA_COMPLETE) {
        Some(&args[2..])
    } else {
        None
    };
    if let Some(words) = words {
        print!("{}", cobra(words));
        return Some(ExitCode::SUCCESS);
    }
    std::env::var_os(ENV_VAR)?;
    // The words follow `--` in what the scripts run.
    let typed: Vec<OsString> = args.iter().skip_while(|arg| *arg != "--").skip(2).cloned().collect();
    let scope = Scope::from_words(&typed);
    let completed = CompleteEnv::with_factory(move || command(scope.clone()))
        .var(ENV_VAR)
        .bin(BIN)
        .completer(BIN)
        .try_complete(args, std::env::current_dir().ok().as_deref());
    match completed {
        Ok(true) => Some(ExitCode::SUCCESS),
        Ok(false) => None,
        Err(err) => {
            let _ = err.print();
            Some(ExitCode::from(2))
        }
    }
}

/// kubectl passes the words after the plugin's name, the last being the one under the cursor
/// (empty after a space); it reads back candidates one per line (`VALUE<TAB>HELP`) and, last, a
/// `:DIRECTIVE` line.
pub fn cobra(words: &[OsString]) -> String {
    let mut args = vec![OsString::from(BIN)];
    args.extend_from_slice(words);
    if words.is_empty() {
        args.push(OsString::new());
    }
    let index = args.len() - 1;
    let mut cmd = command(Scope::from_words(words));
    let current_dir = std::env::current_dir().ok();
    let mut candidates =
        clap_complete::engine::complete(&mut cmd, args, index, current_dir.as_deref()).unwrap_or_default();
    // As Cobra does for kubectl's own commands: flags only once a dash is typed.
    if !words.last().is_some_and(|word| word.to_string_lossy().starts_with('-')) {
        candidates.retain(|c| !c.get_value().to_string_lossy().starts_with('-'));
    }
    cobra_lines(&candidates)
}

fn cobra_lines(candidates: &[CompletionCandidate]) -> String {
    let mut out = String::new();
    // The engine has already listed files where a path is expected: the shell adds none of its
    // own, and leaves the cursor after a directory or `--flag=` for the rest of the word.
    let mut directive = NO_FILE_COMP;
    for candidate in candidates {
        let value = candidate.get_value().to_string_lossy();
        if value.ends_with('/') || value.ends_with('=') {
            directive |= NO_SPACE;
        }
        out.push_str(&value);
        if let Some(help) = candidate.get_help().and_then(|help| help.to_string().lines().next().map(String::from)) {
            out.push('\t');
            out.push_str(&help);
        }
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(words: &[&str]) -> String {
        cobra(&words.iter().map(OsString::from).collect::<Vec<_>>())
    }

    fn values(answer: &str) -> Vec<&str> {
        answer.lines().map(|line| line.split('\t').next().unwrap_or_default()).collect()
    }

    #[test]
    fn an_empty_word_lists_the_subcommands_with_their_help() {
        let answer = complete(&[""]);
        assert!(answer.ends_with("\n:4\n"), "{answer}");
        for command in ["up", "down", "watch", "explain", "submit", "version", "completion"] {
            assert!(values(&answer).contains(&command), "{command} missing in {answer}");
        }
        assert!(answer.contains("watch\tWatch every job"), "{answer}");
        assert!(!values(&answer).contains(&COBRA_COMPLETE));
        assert!(!values(&answer).contains(&"--verbose"), "flags before a dash: {answer}");
    }

    #[test]
    fn no_words_at_all_is_an_empty_word() {
        assert_eq!(complete(&[]), complete(&[""]));
    }

    #[test]
    fn a_prefix_narrows_subcommands_and_enum_values() {
        assert_eq!(values(&complete(&["wa"])), ["watch", ":4"]);
        assert_eq!(
            values(&complete(&["version", "-o", ""])),
            ["json", "yaml", ":4"],
            "the default has no name to offer"
        );
        assert_eq!(values(&complete(&["completion", "fi"])), ["fish", ":4"]);
    }

    #[test]
    fn flags_are_offered_after_a_dash() {
        let answer = complete(&["watch", "--"]);
        for flag in ["--context", "--kubeconfig", "--namespace", "--once", "--output"] {
            assert!(values(&answer).contains(&flag), "{flag} missing in {answer}");
        }
    }

    #[test]
    fn a_directory_keeps_the_cursor_in_the_word() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("samples")).unwrap();
        let prefix = format!("{}/sam", dir.path().display());
        let answer = complete(&["submit", &prefix]);
        assert_eq!(values(&answer), [format!("{}/samples/", dir.path().display()).as_str(), ":6"], "{answer}");
    }
}
