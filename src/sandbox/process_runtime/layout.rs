//! What runs in one process-runtime cluster and with which flags: pure data, derived from the
//! cluster's directory, PKI and ports. Every server binds to 127.0.0.1 and speaks TLS.

use std::path::{Path, PathBuf};

use super::pki::PkiPaths;
use crate::sandbox::record::Probe;
use crate::sandbox::toolchain::Toolchain;

/// Loopback ports of one cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ports {
    pub etcd: u16,
    pub etcd_peer: u16,
    pub api_server: u16,
    pub controller_manager: u16,
    pub scheduler: u16,
    pub kwok: u16,
    pub kueue_webhook: u16,
    pub kueue_health: u16,
    pub controller: u16,
}

impl Ports {
    pub const COUNT: usize = 9;

    pub fn from_slice(p: &[u16; Self::COUNT]) -> Ports {
        Ports {
            etcd: p[0],
            etcd_peer: p[1],
            api_server: p[2],
            controller_manager: p[3],
            scheduler: p[4],
            kwok: p[5],
            kueue_webhook: p[6],
            kueue_health: p[7],
            controller: p[8],
        }
    }
}

/// One process to start.
#[derive(Clone, Debug)]
pub struct ComponentSpec {
    pub name: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub probe: Probe,
}

/// Files and ports of one cluster.
pub struct Layout {
    pub name: String,
    pub dir: PathBuf,
    pub pki: PkiPaths,
    pub ports: Ports,
    bin: PathBuf,
    /// This plugin's own binary, which also runs the controller.
    self_exe: PathBuf,
}

fn flag(name: &str, value: impl AsRef<str>) -> String {
    format!("--{name}={}", value.as_ref())
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Kueue's Configuration file of the cluster whose directory is `cluster_dir`.
pub fn kueue_config_file(cluster_dir: &Path) -> PathBuf {
    cluster_dir.join("kueue").join("config.yaml")
}

/// Admin kubeconfig of a cluster, inside its directory.
pub const ADMIN_KUBECONFIG: &str = "admin.kubeconfig";

const ALWAYS_ALLOWED: &str = "/healthz,/readyz,/livez,/metrics";

impl Layout {
    pub fn new(name: &str, dir: &Path, toolchain: &Toolchain, ports: Ports, self_exe: &Path) -> Layout {
        Layout {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            pki: PkiPaths::in_dir(&dir.join("pki")),
            ports,
            bin: toolchain.bin_dir(),
            self_exe: self_exe.to_path_buf(),
        }
    }

    pub fn controller_dir(&self) -> PathBuf {
        self.dir.join("kueue-ext")
    }

    /// The controller's integrations file, written at install when kinds are configured.
    pub fn integrations_file(&self) -> PathBuf {
        self.controller_dir().join("integrations.yaml")
    }

    /// This project's controller and webhook, run as its ServiceAccount.
    pub fn controller(&self) -> ComponentSpec {
        let dir = self.controller_dir();
        let integrations = self.integrations_file();
        ComponentSpec {
            name: "kueue-ext-controller",
            program: self.self_exe.clone(),
            args: [
                "controller".into(),
                flag("kubeconfig", path(&dir.join("kubeconfig"))),
                flag("listen", format!("127.0.0.1:{}", self.ports.controller)),
                flag("cert-dir", path(&dir.join("certs"))),
                flag("log-format", "json"),
                "--leader-elect".into(),
                "-v".into(),
            ]
            .into_iter()
            .chain(integrations.exists().then(|| flag("integrations", path(&integrations))))
            .collect(),
            probe: Probe::Https { port: self.ports.controller, path: "/readyz".into() },
        }
    }

    /// Admin kubeconfig used by the control-plane components themselves.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join(ADMIN_KUBECONFIG)
    }

    pub fn log(&self, component: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{component}.log"))
    }

    pub fn api_server_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.ports.api_server)
    }

    pub fn kueue_dir(&self) -> PathBuf {
        self.dir.join("kueue")
    }

    /// Kueue's Configuration file, which `capture` reads too.
    pub fn kueue_config(&self) -> PathBuf {
        kueue_config_file(&self.dir)
    }

    pub fn kwok_config(&self) -> PathBuf {
        self.dir.join("kwok.yaml")
    }

    pub fn etcd(&self) -> ComponentSpec {
        let client = format!("https://127.0.0.1:{}", self.ports.etcd);
        let peer = format!("https://127.0.0.1:{}", self.ports.etcd_peer);
        let p = &self.pki;
        ComponentSpec {
            name: "etcd",
            program: self.bin.join("etcd"),
            args: vec![
                flag("name", &self.name),
                flag("data-dir", path(&self.dir.join("etcd"))),
                flag("listen-client-urls", &client),
                flag("advertise-client-urls", &client),
                flag("listen-peer-urls", &peer),
                flag("initial-advertise-peer-urls", &peer),
                flag("initial-cluster", format!("{}={peer}", self.name)),
                flag("cert-file", path(&p.serving_cert)),
                flag("key-file", path(&p.serving_key)),
                flag("trusted-ca-file", path(&p.ca_cert)),
                "--client-cert-auth".into(),
                flag("peer-cert-file", path(&p.serving_cert)),
                flag("peer-key-file", path(&p.serving_key)),
                flag("peer-trusted-ca-file", path(&p.ca_cert)),
                "--peer-client-cert-auth".into(),
                // A throw-away sandbox trades durability for speed, as envtest does.
                "--unsafe-no-fsync".into(),
                flag("auto-compaction-retention", "1"),
                flag("log-level", "warn"),
            ],
            probe: Probe::Https { port: self.ports.etcd, path: "/health".into() },
        }
    }

    pub fn api_server(&self) -> ComponentSpec {
        let p = &self.pki;
        ComponentSpec {
            name: "kube-apiserver",
            program: self.bin.join("kube-apiserver"),
            args: vec![
                // Without an advertise address the apiserver looks for a default route and
                // dies on hosts that have none.
                flag("advertise-address", "127.0.0.1"),
                flag("bind-address", "127.0.0.1"),
                flag("secure-port", self.ports.api_server.to_string()),
                flag("cert-dir", path(&self.dir.join("kube-apiserver"))),
                flag("etcd-servers", format!("https://127.0.0.1:{}", self.ports.etcd)),
                flag("etcd-cafile", path(&p.ca_cert)),
                flag("etcd-certfile", path(&p.serving_cert)),
                flag("etcd-keyfile", path(&p.serving_key)),
                flag("tls-cert-file", path(&p.serving_cert)),
                flag("tls-private-key-file", path(&p.serving_key)),
                flag("client-ca-file", path(&p.ca_cert)),
                flag("service-account-issuer", "https://kubernetes.default.svc.cluster.local"),
                flag("service-account-key-file", path(&p.service_account_pub)),
                flag("service-account-signing-key-file", path(&p.service_account_key)),
                flag("service-cluster-ip-range", "10.96.0.0/16"),
                flag("authorization-mode", "Node,RBAC"),
                flag("endpoint-reconciler-type", "none"),
                flag("allow-privileged", "true"),
                flag("profiling", "false"),
            ],
            probe: Probe::Https { port: self.ports.api_server, path: "/readyz".into() },
        }
    }

    fn control_loop_args(&self, port: u16) -> Vec<String> {
        let kubeconfig = path(&self.admin_kubeconfig());
        vec![
            flag("kubeconfig", &kubeconfig),
            flag("authentication-kubeconfig", &kubeconfig),
            flag("authorization-kubeconfig", &kubeconfig),
            flag("authorization-always-allow-paths", ALWAYS_ALLOWED),
            flag("bind-address", "127.0.0.1"),
            flag("secure-port", port.to_string()),
            flag("tls-cert-file", path(&self.pki.serving_cert)),
            flag("tls-private-key-file", path(&self.pki.serving_key)),
            // A restarted sandbox must not wait out a stale lease.
            flag("leader-elect", "false"),
        ]
    }

    pub fn controller_manager(&self) -> ComponentSpec {
        let mut args = self.control_loop_args(self.ports.controller_manager);
        args.extend([
            flag("root-ca-file", path(&self.pki.ca_cert)),
            flag("service-account-private-key-file", path(&self.pki.service_account_key)),
            flag("use-service-account-credentials", "true"),
        ]);
        ComponentSpec {
            name: "kube-controller-manager",
            program: self.bin.join("kube-controller-manager"),
            args,
            probe: Probe::Https { port: self.ports.controller_manager, path: "/healthz".into() },
        }
    }

    pub fn scheduler(&self) -> ComponentSpec {
        ComponentSpec {
            name: "kube-scheduler",
            program: self.bin.join("kube-scheduler"),
            args: self.control_loop_args(self.ports.scheduler),
            probe: Probe::Https { port: self.ports.scheduler, path: "/healthz".into() },
        }
    }

    pub fn kwok(&self) -> ComponentSpec {
        let port = self.ports.kwok.to_string();
        ComponentSpec {
            name: "kwok",
            program: self.bin.join("kwok"),
            args: vec![
                flag("kubeconfig", path(&self.admin_kubeconfig())),
                flag("config", path(&self.kwok_config())),
                "--manage-all-nodes=false".into(),
                flag("manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake"),
                flag("node-ip", "127.0.0.1"),
                flag("node-name", "localhost"),
                flag("node-port", &port),
                flag("server-address", format!("127.0.0.1:{port}")),
                flag("tls-cert-file", path(&self.pki.serving_cert)),
                flag("tls-private-key-file", path(&self.pki.serving_key)),
                flag("node-lease-duration-seconds", "40"),
            ],
            probe: Probe::Https { port: self.ports.kwok, path: "/healthz".into() },
        }
    }

    pub fn kueue(&self) -> ComponentSpec {
        let dir = self.kueue_dir();
        ComponentSpec {
            name: "kueue",
            program: self.bin.join("kueue"),
            args: vec![flag("config", path(&self.kueue_config())), flag("kubeconfig", path(&dir.join("kubeconfig")))],
            probe: Probe::Http { port: self.ports.kueue_health, path: "/readyz".into() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let ports = Ports::from_slice(&[2379, 2380, 6443, 10257, 10259, 10250, 9443, 8081, 9444]);
        Layout {
            name: "manager".into(),
            dir: PathBuf::from("/state/manager"),
            pki: PkiPaths::in_dir(Path::new("/state/manager/pki")),
            ports,
            bin: PathBuf::from("/cache/bin"),
            self_exe: PathBuf::from("/usr/local/bin/kubectl-kueue_ext"),
        }
    }

    fn all(layout: &Layout) -> Vec<ComponentSpec> {
        vec![
            layout.etcd(),
            layout.api_server(),
            layout.controller_manager(),
            layout.scheduler(),
            layout.kwok(),
            layout.kueue(),
            layout.controller(),
        ]
    }

    #[test]
    fn servers_bind_to_loopback_only() {
        let layout = layout();
        for spec in all(&layout) {
            for arg in &spec.args {
                assert!(!arg.contains("0.0.0.0"), "{}: {arg}", spec.name);
                // The issuer is a name inside tokens, not an address anything listens on.
                if arg.contains("://") && !arg.starts_with("--service-account-issuer") {
                    assert!(arg.contains("https://127.0.0.1:"), "{}: {arg} must be TLS on loopback", spec.name);
                }
            }
        }
        assert!(layout.api_server().args.contains(&"--bind-address=127.0.0.1".to_string()));
    }

    #[test]
    fn etcd_requires_client_certificates() {
        let etcd = layout().etcd();
        assert!(etcd.args.contains(&"--client-cert-auth".to_string()));
        assert!(etcd.args.contains(&"--peer-client-cert-auth".to_string()));
        assert_eq!(etcd.probe, Probe::Https { port: 2379, path: "/health".into() });
    }

    #[test]
    fn api_server_talks_tls_to_its_etcd() {
        let args = layout().api_server().args;
        assert!(args.contains(&"--etcd-servers=https://127.0.0.1:2379".to_string()));
        assert!(args.contains(&"--authorization-mode=Node,RBAC".to_string()));
    }

    #[test]
    fn every_component_has_its_own_port_and_log() {
        let layout = layout();
        let specs = all(&layout);
        let mut probe_ports: Vec<u16> = specs
            .iter()
            .map(|s| match s.probe {
                Probe::Https { port, .. } | Probe::Http { port, .. } => port,
            })
            .collect();
        probe_ports.sort();
        probe_ports.dedup();
        assert_eq!(probe_ports.len(), specs.len());
        assert_eq!(layout.log("kueue"), PathBuf::from("/state/manager/logs/kueue.log"));
    }
}
