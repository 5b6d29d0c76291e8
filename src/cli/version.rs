//! `version`: the plugin's own version and every version the sandbox pins, so a bug report
//! carries the whole story in one paste (`kubectl version` and `kueuectl version` print theirs
//! the same way, `Client Version:` first).

use std::process::ExitCode;

use serde::Serialize;

use super::output::{self, Output};

use crate::sandbox::toolchain::sources::GO_MOD;
use crate::sandbox::toolchain::{self, versions};
use crate::sandbox::{KIND_VERSION, NODE_IMAGE};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format: json or yaml [default: lines for people]
    #[arg(short, long, value_name = "FORMAT", value_parser = output::accepting(&[Output::Json, Output::Yaml]))]
    pub output: Option<Output>,
}

/// The plugin's version as `-V` and `version` both print it: the release, then the build.
pub const LONG: &str = concat!(
    "v",
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KUEUE_EXT_COMMIT"),
    ", built ",
    env!("KUEUE_EXT_BUILD_DATE"),
    ", ",
    env!("KUEUE_EXT_TARGET"),
    ", ",
    env!("KUEUE_EXT_RUSTC"),
    ")"
);

/// Where the plugin binary came from, for bug reports.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Build {
    pub commit: &'static str,
    pub build_date: &'static str,
    /// The Rust target triple it was built for.
    pub platform: &'static str,
    pub rustc: &'static str,
}

impl Build {
    fn this() -> Self {
        Build {
            commit: env!("KUEUE_EXT_COMMIT"),
            build_date: env!("KUEUE_EXT_BUILD_DATE"),
            platform: env!("KUEUE_EXT_TARGET"),
            rustc: env!("KUEUE_EXT_RUSTC"),
        }
    }
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
    pub build: Build,
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
    let build = &versions.build;
    let mut out = format!(
        "Plugin Version: {} (commit {}, built {}, {}, {})\n",
        versions.plugin_version, build.commit, build.build_date, build.platform, build.rustc
    );
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
        build: Build::this(),
        pins: pins(),
        go: Go { required: go_required(), found, toolchain_built },
    };
    match args.output.unwrap_or_default() {
        Output::Json => println!("{}", serde_json::to_string_pretty(&versions)?),
        Output::Yaml => print!("{}", serde_saphyr::to_string(&versions)?),
        _ => print!("{}", text(&versions)),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(found: Option<&str>, built: bool) -> Versions {
        Versions {
            plugin_version: plugin_version(),
            build: Build::this(),
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
        assert!(out.starts_with(&format!("Plugin Version: {LONG}\n")), "{out}");
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
        assert_eq!(json["build"]["platform"], env!("KUEUE_EXT_TARGET"));
        assert!(json["build"]["rustc"].as_str().is_some_and(|r| r.starts_with("rustc 1.")), "{json}");
        assert_eq!(json["pins"]["kubernetes"]["version"], versions::KUBERNETES);
        assert_eq!(
            json["pins"]["node-image"]["usedFor"],
            "kind nodes with --kind-images published (local images are built from Debian bookworm and the Kubernetes pin)"
        );
    }
}
