//! kind's kubeconfig of a cluster (context `kind-<name>`) read into the sandbox's own terms:
//! the admin access the sandbox kubeconfig holds under `kueue-ext-<cluster>`, and the API
//! server's host port.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::sandbox::runtime::AdminAccess;

/// Why kind's kubeconfig gives no admin access.
#[derive(Debug, thiserror::Error)]
pub enum NoAdminAccess {
    #[error("not a kubeconfig: {0}")]
    NotAKubeconfig(#[source] serde_saphyr::Error),
    #[error("no {section} entry named {name}")]
    NoEntry { section: &'static str, name: String },
    #[error("{0} is missing")]
    Missing(&'static str),
    #[error("{key} is not base64: {source}")]
    NotBase64 {
        key: &'static str,
        #[source]
        source: base64::DecodeError,
    },
    #[error("{0} is not PEM text")]
    NotPem(&'static str),
    #[error("the cluster has no server")]
    NoServer,
}

/// The admin access in kind's kubeconfig for `kind_cluster` (its `kind-<name>` context).
pub fn admin_access(kubeconfig: &str, kind_cluster: &str) -> Result<AdminAccess, NoAdminAccess> {
    let config: Value = serde_saphyr::from_str(kubeconfig).map_err(NoAdminAccess::NotAKubeconfig)?;
    let context_name = format!("kind-{kind_cluster}");
    let named = |section: &'static str, name: &str| {
        config[section]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["name"] == name)
            .cloned()
            .ok_or_else(|| NoAdminAccess::NoEntry { section, name: name.to_string() })
    };
    let context = named("contexts", &context_name)?;
    let cluster_name = context["context"]["cluster"].as_str().unwrap_or(&context_name).to_string();
    let user_name = context["context"]["user"].as_str().unwrap_or(&context_name).to_string();
    let cluster = named("clusters", &cluster_name)?;
    let user = named("users", &user_name)?;
    let field = |value: &Value, key: &'static str| {
        let text = value[key].as_str().ok_or(NoAdminAccess::Missing(key))?;
        let bytes = STANDARD.decode(text.trim()).map_err(|source| NoAdminAccess::NotBase64 { key, source })?;
        String::from_utf8(bytes).map_err(|_| NoAdminAccess::NotPem(key))
    };
    let server = cluster["cluster"]["server"].as_str().ok_or(NoAdminAccess::NoServer)?.to_string();
    Ok(AdminAccess {
        server,
        ca_pem: field(&cluster["cluster"], "certificate-authority-data")?,
        cert_pem: field(&user["user"], "client-certificate-data")?,
        key_pem: field(&user["user"], "client-key-data")?,
    })
}

/// The port in `https://127.0.0.1:<port>`.
pub fn server_port(server: &str) -> Option<u16> {
    server.rsplit_once(':')?.1.trim_end_matches('/').parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::kubeconfig::{self as sandbox_kubeconfig, Credentials, Entry, b64};

    /// What `kind get kubeconfig --name kueue-ext-worker1` prints, in shape.
    fn kind_kubeconfig() -> String {
        format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://127.0.0.1:38123\n  \
             name: kind-kueue-ext-worker1\ncontexts:\n- context:\n    cluster: kind-kueue-ext-worker1\n    \
             user: kind-kueue-ext-worker1\n  name: kind-kueue-ext-worker1\ncurrent-context: kind-kueue-ext-worker1\n\
             kind: Config\npreferences: {{}}\nusers:\n- name: kind-kueue-ext-worker1\n  user:\n    \
             client-certificate-data: {}\n    client-key-data: {}\n",
            b64("CA PEM"),
            b64("CERT PEM"),
            b64("KEY PEM")
        )
    }

    #[test]
    fn kind_context_becomes_the_sandbox_context() {
        let admin = admin_access(&kind_kubeconfig(), "kueue-ext-worker1").unwrap();
        assert_eq!(
            admin,
            AdminAccess {
                server: "https://127.0.0.1:38123".into(),
                ca_pem: "CA PEM".into(),
                cert_pem: "CERT PEM".into(),
                key_pem: "KEY PEM".into(),
            }
        );
        assert_eq!(server_port(&admin.server), Some(38123));
        let context = crate::sandbox::context_name(crate::sandbox::DEFAULT_NAME, "worker1");
        let rendered = sandbox_kubeconfig::render(&[Entry {
            context: &context,
            server: admin.server.clone(),
            ca_pem: &admin.ca_pem,
            credentials: Credentials::ClientCert { cert_pem: &admin.cert_pem, key_pem: &admin.key_pem },
        }]);
        assert_eq!(rendered["contexts"][0]["name"], "kueue-ext-worker1");
        assert_eq!(rendered["clusters"][0]["cluster"]["server"], "https://127.0.0.1:38123");
        assert!(!serde_json::to_string(&rendered).unwrap().contains("kind-"), "no kind- name is left");
    }

    #[test]
    fn a_kubeconfig_of_another_cluster_is_an_error() {
        let err = admin_access(&kind_kubeconfig(), "kueue-ext-manager").unwrap_err();
        assert!(err.to_string().contains("kind-kueue-ext-manager"), "{err}");
        assert!(admin_access("{", "x").unwrap_err().to_string().contains("not a kubeconfig"));
    }
}
