//! Values the shell cannot know: kubeconfig contexts, and the namespaces and jobs of the cluster
//! the words typed so far point at. A TAB must never hang, so a cluster read gives up after
//! [`CLUSTER_TIMEOUT`] and offers nothing.

use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Command;
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};

use crate::cli::targets::{self, Selection};
use crate::integrations::registry::{JobKind, KindRegistry};
use crate::kube_util::{client_from, read_kubeconfig};
use crate::manifests;
use crate::model::snapshot::Role;

/// Long enough for a local or nearby API server, short enough that a TAB on a train is no wait.
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(2);

/// The cluster flags among the words already typed: the cluster the command will talk to is
/// the one whose values are offered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scope {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub namespace: Option<String>,
    pub state_dir: Option<PathBuf>,
    pub sandbox: Option<String>,
}

impl Scope {
    /// Reads `--flag VALUE`, `--flag=VALUE`, `-n VALUE` and `-nVALUE`; the last word is the one
    /// being completed and is not a value yet.
    pub fn from_words(words: &[OsString]) -> Scope {
        let typed: Vec<String> =
            words.iter().take(words.len().saturating_sub(1)).map(|w| w.to_string_lossy().into_owned()).collect();
        let mut scope = Scope::default();
        let mut iter = typed.iter().peekable();
        while let Some(word) = iter.next() {
            let (flag, inline) = match word.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
                _ => match word.strip_prefix("-n") {
                    Some(value) if !value.is_empty() && !word.starts_with("--") => ("-n", Some(value.to_string())),
                    _ => (word.as_str(), None),
                },
            };
            if !matches!(flag, "--kubeconfig" | "--context" | "--namespace" | "-n" | "--state-dir" | "--name") {
                continue;
            }
            let Some(value) = inline.or_else(|| iter.next().cloned()) else { break };
            match flag {
                "--kubeconfig" => scope.kubeconfig = Some(value.into()),
                "--context" => scope.context = Some(value),
                "--state-dir" => scope.state_dir = Some(value.into()),
                "--name" => scope.sandbox = Some(value),
                _ => scope.namespace = Some(value),
            }
        }
        scope
    }

    fn selection(&self) -> Selection {
        let sandbox = crate::cli::SandboxArgs { name: self.sandbox.clone(), state_dir: self.state_dir.clone() };
        Selection {
            state_dir: sandbox.dir(),
            sandbox: sandbox.sandbox_name(),
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            worker_contexts: Vec::new(),
        }
    }
}

/// Puts a completer on every argument, in every subcommand, whose id names a value of
/// [`Scope`]'s cluster: the commands share these flags, so one rule covers them all.
pub fn attach(mut cmd: Command, scope: &Arc<Scope>) -> Command {
    let ids: Vec<String> = cmd.get_arguments().map(|arg| arg.get_id().to_string()).collect();
    for id in ids {
        let scope = scope.clone();
        let completer = match id.as_str() {
            "context" => ArgValueCompleter::new(move |current: &std::ffi::OsStr| contexts(&scope, &lossy(current))),
            "worker_contexts" => {
                ArgValueCompleter::new(move |current: &std::ffi::OsStr| worker_contexts(&scope, &lossy(current)))
            }
            "namespace" => ArgValueCompleter::new(move |current: &std::ffi::OsStr| namespaces(&scope, &lossy(current))),
            "job" => ArgValueCompleter::new(move |current: &std::ffi::OsStr| jobs(&scope, &lossy(current))),
            _ => continue,
        };
        cmd = cmd.mut_arg(id, |arg| arg.add(completer));
    }
    let subcommands: Vec<String> = cmd.get_subcommands().map(|sub| sub.get_name().to_string()).collect();
    for name in subcommands {
        cmd = cmd.mut_subcommand(name, |sub| attach(sub, scope));
    }
    cmd
}

fn lossy(value: &std::ffi::OsStr) -> String {
    value.to_string_lossy().into_owned()
}

/// The contexts of the kubeconfig the command will read (`--kubeconfig`, else kubectl's).
fn contexts(scope: &Scope, current: &str) -> Vec<CompletionCandidate> {
    let Ok(config) = read_kubeconfig(scope.kubeconfig.as_deref()) else { return Vec::new() };
    config
        .contexts
        .iter()
        .filter(|named| named.name.starts_with(current))
        .map(|named| {
            let cluster = named.context.as_ref().map(|c| c.cluster.as_str()).unwrap_or_default();
            let mark = if config.current_context.as_deref() == Some(named.name.as_str()) { " (current)" } else { "" };
            CompletionCandidate::new(&named.name).help(Some(format!("cluster {cluster}{mark}").into()))
        })
        .collect()
}

/// `--worker-context [NAME=]CONTEXT`: contexts, after the `NAME=` if one is typed.
fn worker_contexts(scope: &Scope, current: &str) -> Vec<CompletionCandidate> {
    match current.split_once('=') {
        Some((name, context)) => {
            contexts(scope, context).into_iter().map(|candidate| candidate.add_prefix(format!("{name}="))).collect()
        }
        None => contexts(scope, current),
    }
}

fn namespaces(scope: &Scope, current: &str) -> Vec<CompletionCandidate> {
    let names = on_manager(scope, |client, _| async move {
        let list = Api::<Namespace>::all(client).list_metadata(&ListParams::default()).await.ok()?;
        Some(list.items.into_iter().filter_map(|ns| ns.metadata.name).map(|name| (name, None)).collect())
    });
    candidates(names, current)
}

/// `explain`'s job: `kind/NAME` for every job of the namespace, and a bare `NAME` (an
/// ExternalJob, as `explain` reads it) once the user has started typing one.
fn jobs(scope: &Scope, current: &str) -> Vec<CompletionCandidate> {
    let found = on_manager(scope, |client, namespace| async move {
        let registry = KindRegistry::discover(&client, manifests::NAMESPACE).await.unwrap_or_default();
        let lists = futures::future::join_all(registry.kinds().iter().map(|kind| {
            let api = Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &kind.api_resource());
            async move { (kind, api.list_metadata(&ListParams::default()).await) }
        }))
        .await;
        let mut names = Vec::new();
        // A kind whose CRD is not installed answers 404: the others are still worth offering.
        for (kind, list) in lists {
            let Ok(list) = list else { continue };
            for name in list.items.into_iter().filter_map(|job| job.metadata.name) {
                names.push((job_reference(kind, &name, current), Some(format!("{} in {namespace}", kind.name()))));
            }
        }
        Some(names)
    });
    candidates(found, current)
}

/// How `explain` would be given the job, given what the user typed so far.
fn job_reference(kind: &JobKind, name: &str, current: &str) -> String {
    let bare = kind.name() == "ExternalJob" && !current.is_empty() && !current.contains('/');
    if bare && name.starts_with(current) { name.to_string() } else { format!("{}/{name}", kind.name().to_lowercase()) }
}

fn candidates(values: Vec<(String, Option<String>)>, current: &str) -> Vec<CompletionCandidate> {
    let mut values: Vec<_> = values.into_iter().filter(|(value, _)| value.starts_with(current)).collect();
    values.sort();
    values.dedup_by(|a, b| a.0 == b.0);
    values.into_iter().map(|(value, help)| CompletionCandidate::new(value).help(help.map(Into::into))).collect()
}

/// Runs `read` against the manager cluster of the scope (the sandbox's when one is up and no
/// flag says otherwise, as the commands themselves choose), in the namespace the command would
/// use; nothing when the cluster cannot be reached in time.
fn on_manager<F, Fut>(scope: &Scope, read: F) -> Vec<(String, Option<String>)>
where
    F: FnOnce(Client, String) -> Fut,
    Fut: Future<Output = Option<Vec<(String, Option<String>)>>>,
{
    let Ok(targets) = targets::resolve(&scope.selection()) else { return Vec::new() };
    let Some(manager) = targets.clusters.iter().find(|c| c.role == Role::Manager) else { return Vec::new() };
    let namespace = scope.namespace.clone().or_else(|| targets.manager_namespace()).unwrap_or_else(|| "default".into());
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return Vec::new() };
    runtime.block_on(async {
        let attempt = async {
            let client = client_from(targets.kubeconfig.clone(), &manager.context).await.ok()?;
            read(client, namespace).await
        };
        tokio::time::timeout(CLUSTER_TIMEOUT, attempt).await.ok().flatten().unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::registry::built_in_kind;
    use clap::CommandFactory;

    fn words(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn scope_reads_the_cluster_flags_typed_so_far() {
        let scope = Scope::from_words(&words(&[
            "explain",
            "--kubeconfig",
            "/k",
            "--context=ctx",
            "-nteam",
            "--state-dir",
            "/s",
            "--name=dev",
            "",
        ]));
        assert_eq!(
            scope,
            Scope {
                kubeconfig: Some("/k".into()),
                context: Some("ctx".into()),
                namespace: Some("team".into()),
                state_dir: Some("/s".into()),
                sandbox: Some("dev".into()),
            }
        );
        assert_eq!(
            Scope::from_words(&words(&["watch", "-n", "a", "--namespace", "b", "x"])).namespace.as_deref(),
            Some("b")
        );
    }

    #[test]
    fn the_word_under_the_cursor_is_not_a_value() {
        assert_eq!(Scope::from_words(&words(&["watch", "--context", "kin"])), Scope::default());
        assert_eq!(Scope::from_words(&words(&["watch", "--context"])), Scope::default());
    }

    #[test]
    fn bare_names_only_once_typed_and_only_for_external_jobs() {
        assert_eq!(job_reference(&built_in_kind("ExternalJob"), "train", ""), "externaljob/train");
        assert_eq!(job_reference(&built_in_kind("ExternalJob"), "train", "tr"), "train");
        assert_eq!(job_reference(&built_in_kind("WrappedJob"), "train", "tr"), "wrappedjob/train");
        assert_eq!(job_reference(&built_in_kind("ExternalJob"), "train", "ext"), "externaljob/train");
    }

    fn kubeconfig() -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            file.path(),
            "apiVersion: v1\nkind: Config\ncurrent-context: kind-a\nclusters: []\nusers: []\ncontexts:\n\
             - name: kind-a\n  context: {cluster: a}\n- name: kind-b\n  context: {cluster: b}\n\
             - name: prod\n  context: {cluster: p}\n",
        )
        .unwrap();
        file
    }

    fn values(candidates: &[CompletionCandidate]) -> Vec<String> {
        candidates.iter().map(|c| c.get_value().to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn contexts_come_from_the_kubeconfig_typed() {
        let file = kubeconfig();
        let scope = Scope { kubeconfig: Some(file.path().into()), ..Scope::default() };
        let found = contexts(&scope, "kind");
        assert_eq!(values(&found), ["kind-a", "kind-b"]);
        assert_eq!(found[0].get_help().map(|h| h.to_string()).as_deref(), Some("cluster a (current)"));
        assert_eq!(values(&worker_contexts(&scope, "worker1=kind-b")), ["worker1=kind-b"]);
    }

    #[test]
    fn an_unreadable_kubeconfig_offers_nothing() {
        let scope = Scope { kubeconfig: Some("/nonexistent/kubeconfig".into()), ..Scope::default() };
        assert!(contexts(&scope, "").is_empty());
        assert!(jobs(&scope, "").is_empty());
    }

    #[test]
    fn every_context_and_namespace_flag_gets_a_completer() {
        let cmd = attach(crate::cli::Cli::command(), &Arc::new(Scope::default()));
        let explain = cmd.find_subcommand("explain").unwrap();
        for id in ["job", "context", "worker_contexts", "namespace"] {
            let arg = explain.get_arguments().find(|a| a.get_id() == id).unwrap();
            assert!(arg.get::<ArgValueCompleter>().is_some(), "{id}");
        }
    }
}
