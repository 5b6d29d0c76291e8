//! Readiness probes of the sandbox's components.

use std::collections::HashMap;
use std::time::Duration;

use kube::Client;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::sandbox::kubeconfig::{self, ClientError, Credentials, Entry};
use crate::sandbox::record::Probe;

/// Why a component's health endpoint did not answer 200.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Request(#[from] http::Error),
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("timed out")]
    TimedOut,
    /// The status line of any other answer.
    #[error("answered {0:?}")]
    Status(String),
}

/// Probes one cluster's components with its CA and admin certificate.
pub struct Prober {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    clients: HashMap<u16, Client>,
}

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

impl Prober {
    pub fn new(ca_pem: String, cert_pem: String, key_pem: String) -> Self {
        Prober { ca_pem, cert_pem, key_pem, clients: HashMap::new() }
    }

    /// Reads the cluster's PEM files from its `pki/` dir.
    pub fn for_cluster_dir(dir: &std::path::Path) -> std::io::Result<Self> {
        let pki = super::pki::PkiPaths::in_dir(&dir.join("pki"));
        Ok(Prober::new(
            std::fs::read_to_string(&pki.ca_cert)?,
            std::fs::read_to_string(&pki.admin_cert)?,
            std::fs::read_to_string(&pki.admin_key)?,
        ))
    }

    /// `Ok` when the component answers 200; otherwise why not.
    pub async fn check(&mut self, probe: &Probe) -> Result<(), ProbeError> {
        match probe {
            Probe::Https { port, path } => {
                let client = self.client(*port).await?;
                let request = http::Request::get(path.as_str()).body(Vec::new())?;
                let answer = tokio::time::timeout(PROBE_TIMEOUT, client.request_text(request));
                answer.await.map_err(|_| ProbeError::TimedOut)??;
                Ok(())
            }
            Probe::Http { port, path } => {
                tokio::time::timeout(PROBE_TIMEOUT, http_get(*port, path)).await.map_err(|_| ProbeError::TimedOut)?
            }
        }
    }

    async fn client(&mut self, port: u16) -> Result<Client, ClientError> {
        if let Some(client) = self.clients.get(&port) {
            return Ok(client.clone());
        }
        let entry = Entry {
            context: "probe",
            server: format!("https://127.0.0.1:{port}"),
            ca_pem: &self.ca_pem,
            credentials: Credentials::ClientCert { cert_pem: &self.cert_pem, key_pem: &self.key_pem },
        };
        let client = kubeconfig::client(entry).await?;
        self.clients.insert(port, client.clone());
        Ok(client)
    }
}

/// A bare HTTP/1.0 GET on loopback (health endpoints that serve plain HTTP).
async fn http_get(port: u16, path: &str) -> Result<(), ProbeError> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let text = String::from_utf8_lossy(&response);
    let status = text.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) == Some("200") { Ok(()) } else { Err(ProbeError::Status(status.to_string())) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn serve_once(status: &'static str) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 256];
            let _ = socket.read(&mut buf).await;
            socket.write_all(format!("HTTP/1.1 {status}\r\n\r\nok").as_bytes()).await.unwrap();
        });
        port
    }

    #[tokio::test]
    async fn http_probe_reads_the_status_line() {
        assert!(http_get(serve_once("200 OK").await, "/readyz").await.is_ok());
        let err = http_get(serve_once("500 Internal Server Error").await, "/readyz").await.unwrap_err();
        assert!(err.to_string().contains("500"), "{err}");
    }

    #[tokio::test]
    async fn http_probe_of_a_closed_port_fails() {
        let port = crate::sandbox::process_runtime::ports::allocate(1).unwrap()[0];
        assert!(http_get(port, "/readyz").await.is_err());
    }
}
