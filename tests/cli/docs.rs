//! The commands the documentation shows are commands the plugin takes: every `kubectl kueue-ext`
//! line of README.md's and docs/'s code blocks, and of each command's EXAMPLES, parses.

use clap::{CommandFactory, Parser};
use kueue_ext::cli::{Cli, kubectl_verbosity};

/// The `kubectl kueue-ext …` command lines of Markdown code blocks (continued lines joined,
/// trailing `# comments` dropped), with where each was found.
fn markdown_command_lines(file: &str, text: &str) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        pending.push_str(line.trim_end_matches('\\'));
        if line.ends_with('\\') {
            continue;
        }
        let whole = std::mem::take(&mut pending);
        if let Some(command) = our_command(&whole) {
            lines.push((format!("{file}:{}", number + 1), command));
        }
    }
    lines
}

/// The command without its comment, if the line is one of ours.
fn our_command(line: &str) -> Option<String> {
    let line = line.trim();
    let rest = line.strip_prefix("kubectl kueue-ext ").or_else(|| line.strip_prefix("kubectl-kueue_ext "))?;
    let command = rest.split(" # ").next().unwrap_or(rest).trim();
    Some(command.to_string())
}

fn parses(place: &str, command: &str) {
    let words = shlex::split(command).unwrap_or_else(|| panic!("{place}: cannot split {command:?}"));
    let args = std::iter::once("kubectl-kueue_ext".to_string()).chain(words).map(Into::into).collect();
    if let Err(err) = Cli::try_parse_from(kubectl_verbosity(args)) {
        panic!("{place}: `kubectl kueue-ext {command}` does not parse:\n{err}");
    }
}

fn documents() -> Vec<(String, String)> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut files = vec![format!("{root}/README.md")];
    let mut docs: Vec<String> = std::fs::read_dir(format!("{root}/docs"))
        .expect("docs/")
        .map(|entry| entry.unwrap().path().display().to_string())
        .filter(|path| path.ends_with(".md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files.into_iter().map(|file| (file.clone(), std::fs::read_to_string(&file).unwrap())).collect()
}

#[test]
fn every_command_line_of_the_readme_and_docs_parses() {
    let mut checked = 0;
    for (file, text) in documents() {
        for (place, command) in markdown_command_lines(&file, &text) {
            parses(&place, &command);
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} command lines found: is the extraction broken?");
}

#[test]
fn every_example_in_the_help_parses() {
    let cli = Cli::command();
    let mut checked = 0;
    for command in std::iter::once(&cli).chain(cli.get_subcommands()) {
        let Some(examples) = command.get_after_help() else { continue };
        for line in examples.to_string().lines() {
            if let Some(args) = our_command(line) {
                parses(&format!("`{}` --help", command.get_name()), &args);
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} examples found");
}

#[test]
fn the_readme_stays_a_newcomers_page() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines: move the details into docs/");
    for link in readme.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
        if link.starts_with("http") {
            continue;
        }
        let path = link.split('#').next().unwrap();
        assert!(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path).exists(),
            "README.md links to {link}, which does not exist"
        );
    }
}

#[test]
fn a_line_that_is_not_ours_is_left_out_and_a_bad_one_is_caught() {
    let text = "```sh\ncargo install --path .\nkubectl kueue-ext up \\\n  --workers 0   # one cluster\n```\nkubectl kueue-ext outside\n";
    let lines = markdown_command_lines("t.md", text);
    assert_eq!(lines, [("t.md:4".to_string(), "up   --workers 0".to_string())]);
    let refused = std::panic::catch_unwind(|| parses("t.md:1", "up --no-such-flag"));
    assert!(refused.is_err(), "a flag the CLI lacks must fail the check");
}
