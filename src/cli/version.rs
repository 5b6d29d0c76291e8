//! `version`: the plugin's own version and every version the sandbox pins, so a bug report
//! carries the whole story in one paste (`kubectl version` and `kueuectl version` print theirs
//! the same way, `Client Version:` first).

use std::process::ExitCode;

use serde::Serialize;

use crate::sandbox::toolchain::sources::GO_MOD;
use crate::sandbox::toolchain::{self, versions};
use crate::sandbox::{KIND_VERSION, NODE_IMAGE};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Text,
    Json,
    Yaml,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// One pinned component: what it is called, its version, and what in the sandbox runs it.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Pin {
    #[serde(skip)]
    pub name: &'static str,
    pub version: &'static str,
    pub used_for: &'static str,
}

/// The Go toolchain: what `hack/toolchain/go.mod` asks for and what is on PATH (it builds, and
/// keys the cache of, the process runtime's binaries).
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Go {
    pub required: String,
    pub found: Option<String>,
    /// Whether the toolchain built with the Go found is in the cache.
    pub toolchain_built: bool,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    pub plugin_version: String,
    /// By name, so scripts read `.pins.kueue.version`.
    #[serde(serialize_with = "by_name")]
    pub pins: Vec<Pin>,
    pub go: Go,
}

fn by_name<S: serde::Serializer>(pins: &[Pin], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(pins.iter().map(|pin| (pin.name, pin)))
}

/// Every pin, in the order a reader of the README's table meets them.
pub fn pins() -> Vec<Pin> {
    vec![
        Pin {
            name: "kubernetes",
            version: versions::KUBERNETES,
            used_for: "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (process runtime)",
        },
        Pin { name: "kueue", version: versions::KUEUE, used_for: "Kueue's manager and CRDs (both runtimes)" },
        Pin { name: "etcd", version: versions::ETCD, used_for: "storage (process runtime)" },
        Pin { name: "kwok", version: versions::KWOK, used_for: "fake nodes (process runtime)" },
        Pin { name: "kind", version: KIND_VERSION, used_for: "the kind CLI the kind runtime builds from its module" },
        Pin {
            name: "node-image",
            version: NODE_IMAGE,
            used_for: "kind nodes with --kind-images published (local images are built from Debian bookworm and the Kubernetes pin)",
        },
    ]
}

/// The `go` directive of `hack/toolchain/go.mod`, as `go env GOVERSION` spells versions.
fn go_required() -> String {
    GO_MOD
        .lines()
        .find_map(|line| line.strip_prefix("go "))
        .map(|version| format!("go{}", version.trim()))
        .unwrap_or_default()
}

pub fn plugin_version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

fn text(versions: &Versions) -> String {
    let mut out = format!("Plugin Version: {}\n", versions.plugin_version);
    let width = versions.pins.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let version_width = versions.pins.iter().map(|p| p.version.len().min(10)).max().unwrap_or(0);
    out.push_str("Pinned versions:\n");
    for pin in &versions.pins {
        out.push_str(&format!("  {:<width$}  {:<version_width$}  {}\n", pin.name, pin.version, pin.used_for));
    }
    let go = &versions.go;
    let found = match (&go.found, go.toolchain_built) {
        (Some(found), true) => format!("{found} (built the cached toolchain)"),
        (Some(found), false) => format!("{found} (toolchain not built yet: kubectl kueue-ext toolchain install)"),
        (None, _) => "not found on PATH (the process runtime needs it to build the toolchain)".to_string(),
    };
    out.push_str(&format!("Go: {found}; hack/toolchain/go.mod needs {} or newer\n", go.required));
    out
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Go is optional here: `version` must answer on a machine that only runs the kind runtime.
    let found = toolchain::go_version().await.ok();
    let toolchain_built = found.is_some() && matches!(toolchain::find().await, Ok(Some(_)));
    let versions = Versions {
        plugin_version: plugin_version(),
        pins: pins(),
        go: Go { required: go_required(), found, toolchain_built },
    };
    match args.output {
        Output::Text => print!("{}", text(&versions)),
        Output::Json => println!("{}", serde_json::to_string_pretty(&versions)?),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&versions)?),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(found: Option<&str>, built: bool) -> Versions {
        Versions {
            plugin_version: plugin_version(),
            pins: pins(),
            go: Go { required: go_required(), found: found.map(String::from), toolchain_built: built },
        }
    }

    #[test]
    fn go_requirement_comes_from_the_toolchain_module() {
        assert!(go_required().starts_with("go1."), "{}", go_required());
    }

    #[test]
    fn text_names_every_pin_once() {
        let out = text(&sample(Some("go1.26.8"), true));
        assert!(out.starts_with(&format!("Plugin Version: v{}\n", env!("CARGO_PKG_VERSION"))), "{out}");
        for pin in pins() {
            assert_eq!(out.matches(pin.version).count(), 1, "{} in {out}", pin.version);
        }
        assert!(out.contains("Go: go1.26.8 (built the cached toolchain)"), "{out}");
    }

    #[test]
    fn text_says_what_to_do_without_go_or_toolchain() {
        assert!(text(&sample(None, false)).contains("Go: not found on PATH"));
        assert!(text(&sample(Some("go1.26.8"), false)).contains("toolchain install"));
    }

    #[test]
    fn json_keys_are_camel_case() {
        let json = serde_json::to_value(sample(None, false)).unwrap();
        assert_eq!(json["pluginVersion"], plugin_version());
        assert_eq!(json["go"]["found"], serde_json::Value::Null);
        assert_eq!(json["go"]["toolchainBuilt"], false);
        assert_eq!(json["pins"]["kubernetes"]["version"], versions::KUBERNETES);
        assert_eq!(
            json["pins"]["node-image"]["usedFor"],
            "kind nodes with --kind-images published (local images are built from Debian bookworm and the Kubernetes pin)"
        );
    }
}
