//! Kubeconfigs written from credentials in memory: the sandbox's, and the one MultiKueue's
//! manager reaches a worker with.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

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
