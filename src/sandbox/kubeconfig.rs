//! Kubeconfig files of the sandbox: the user's (admin, one context per cluster) and the ones
//! the components run with.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::fsutil::write_private;

/// How a kubeconfig user proves who it is.
pub enum Credentials<'a> {
    ClientCert { cert_pem: &'a str, key_pem: &'a str },
    Token(&'a str),
}

/// One context of a kubeconfig.
pub struct Entry<'a> {
    pub context: &'a str,
    pub server: String,
    pub ca_pem: &'a str,
    pub credentials: Credentials<'a>,
}

pub fn b64(text: &str) -> String {
    STANDARD.encode(text)
}

/// A kubeconfig with one cluster, user and context per entry; the first is current.
pub fn render(entries: &[Entry<'_>]) -> Value {
    let clusters: Vec<Value> = entries
        .iter()
        .map(|e| json!({"name": e.context, "cluster": {"server": e.server, "certificate-authority-data": b64(e.ca_pem)}}))
        .collect();
    let users: Vec<Value> = entries
        .iter()
        .map(|e| {
            let user = match &e.credentials {
                Credentials::ClientCert { cert_pem, key_pem } => {
                    json!({"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)})
                }
                Credentials::Token(token) => json!({"token": token}),
            };
            json!({"name": e.context, "user": user})
        })
        .collect();
    let contexts: Vec<Value> = entries
        .iter()
        .map(|e| json!({"name": e.context, "context": {"cluster": e.context, "user": e.context}}))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": entries.first().map(|e| e.context),
        "preferences": {},
    })
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
