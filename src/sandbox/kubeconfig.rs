//! Kubeconfig files of the sandbox: the user's (admin, one context per cluster) and the ones
//! the components run with.

use std::path::Path;

use kube::config::Kubeconfig;
use serde_json::{Value, json};

use super::fsutil::write_private;
pub use crate::kube_util::kubeconfig::{Credentials, Entry, b64, render};
use crate::kube_util::{self, KubeconfigError};

/// Why no client could be made for one entry.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// kube does not read the kubeconfig `render` made.
    #[error(transparent)]
    Decode(#[from] serde_json::Error),
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
}

/// A client for one entry, from memory: no kubeconfig file is written.
pub async fn client(entry: Entry<'_>) -> Result<kube::Client, ClientError> {
    let context = entry.context;
    let config: Kubeconfig = serde_json::from_value(render(&[entry]))?;
    Ok(kube_util::client_from(config, context).await?)
}

/// Writes a kubeconfig with mode 0600: it holds credentials.
pub fn write(path: &Path, kubeconfig: &Value) -> std::io::Result<()> {
    let yaml = serde_saphyr::to_string(kubeconfig).map_err(std::io::Error::other)?;
    write_private(path, yaml.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_one_context_per_entry_and_loads_in_kube() {
        let entries = [
            Entry {
                context: "kueue-ext-manager",
                server: "https://127.0.0.1:6443".into(),
                ca_pem: "CA",
                credentials: Credentials::ClientCert { cert_pem: "C", key_pem: "K" },
            },
            Entry {
                context: "kueue-ext-worker1",
                server: "https://127.0.0.1:6444".into(),
                ca_pem: "CA",
                credentials: Credentials::Token("t0ken"),
            },
        ];
        let value = render(&entries);
        let yaml = serde_saphyr::to_string(&value).unwrap();
        let parsed = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        assert_eq!(parsed.current_context.as_deref(), Some("kueue-ext-manager"));
        let names: Vec<&str> = parsed.contexts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["kueue-ext-manager", "kueue-ext-worker1"]);
        assert_eq!(value["users"][1]["user"]["token"], "t0ken");
    }
}

/// The kubeconfig kubectl uses by default: the first file of `$KUBECONFIG`, else `~/.kube/config`.
pub fn user_default_path() -> std::path::PathBuf {
    if let Some(first) =
        std::env::var("KUBECONFIG").ok().and_then(|v| v.split(':').find(|p| !p.is_empty()).map(String::from))
    {
        return first.into();
    }
    dirs::home_dir().unwrap_or_default().join(".kube").join("config")
}

fn read_or_empty(path: &Path) -> std::io::Result<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => serde_saphyr::from_str(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display()))),
        Ok(_) => Ok(json!({"apiVersion": "v1", "kind": "Config"})),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({"apiVersion": "v1", "kind": "Config"})),
        Err(e) => Err(e),
    }
}

const SECTIONS: [&str; 3] = ["clusters", "users", "contexts"];

/// Drops the named entries from every section; unsets the current context if it was one of them.
fn remove_entries(config: &mut Value, names: &[String]) {
    for section in SECTIONS {
        if let Some(entries) = config[section].as_array_mut() {
            entries.retain(|e| !e["name"].as_str().is_some_and(|n| names.iter().any(|x| x == n)));
        }
    }
    if config["current-context"].as_str().is_some_and(|c| names.iter().any(|x| x == c)) {
        config.as_object_mut().map(|o| o.remove("current-context"));
    }
}

fn entry_names(config: &Value) -> Vec<String> {
    config["contexts"].as_array().into_iter().flatten().filter_map(|e| e["name"].as_str().map(String::from)).collect()
}

/// Merges `ours` into the kubeconfig at `path` the way kind does: same-named entries are
/// replaced, the others kept, and our current context becomes current.
pub fn merge_into(path: &Path, ours: &Value) -> std::io::Result<()> {
    let mut config = read_or_empty(path)?;
    remove_entries(&mut config, &entry_names(ours));
    for section in SECTIONS {
        let mut entries = config[section].as_array().cloned().unwrap_or_default();
        entries.extend(ours[section].as_array().cloned().unwrap_or_default());
        config[section] = Value::Array(entries);
    }
    config["current-context"] = ours["current-context"].clone();
    write(path, &config)
}

/// Removes what [`merge_into`] added for `contexts`.
pub fn unmerge(path: &Path, contexts: &[String]) -> std::io::Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let mut config = read_or_empty(path)?;
    remove_entries(&mut config, contexts);
    write(path, &config)
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    fn ours() -> Value {
        render(&[Entry {
            context: "kueue-ext-manager",
            server: "https://127.0.0.1:1".into(),
            ca_pem: "CA",
            credentials: Credentials::Token("t"),
        }])
    }

    #[test]
    fn merge_keeps_other_entries_and_unmerge_restores_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let theirs = render(&[Entry {
            context: "kind-dev",
            server: "https://127.0.0.1:2".into(),
            ca_pem: "CA2",
            credentials: Credentials::Token("u"),
        }]);
        write(&path, &theirs).unwrap();
        merge_into(&path, &ours()).unwrap();
        merge_into(&path, &ours()).unwrap();
        let merged = read_or_empty(&path).unwrap();
        assert_eq!(entry_names(&merged), ["kind-dev", "kueue-ext-manager"], "merging twice does not duplicate");
        assert_eq!(merged["current-context"], "kueue-ext-manager");

        unmerge(&path, &["kueue-ext-manager".into()]).unwrap();
        let restored = read_or_empty(&path).unwrap();
        assert_eq!(entry_names(&restored), ["kind-dev"]);
        assert_eq!(restored["clusters"].as_array().unwrap().len(), 1);
        assert!(restored.get("current-context").is_none(), "a removed current context is unset");
    }

    #[test]
    fn merge_creates_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".kube/config");
        merge_into(&path, &ours()).unwrap();
        assert_eq!(entry_names(&read_or_empty(&path).unwrap()), ["kueue-ext-manager"]);
    }
}
