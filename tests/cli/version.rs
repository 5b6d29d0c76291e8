//! `version`: the plugin's version and every pin, for people and for scripts.

use std::process::Command;

use crate::{BIN, text};
use serde_json::{Value, json};

const PINS: [&str; 6] = ["kubernetes", "kueue", "etcd", "kwok", "kind", "node-image"];

fn version_output(args: &[&str]) -> String {
    let output = Command::new(BIN).arg("version").args(args).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn json_carries_the_plugin_version_and_every_pin() {
    let json: Value = serde_json::from_str(&version_output(&["-o", "json"])).expect("valid JSON");
    assert_eq!(json["pluginVersion"], format!("v{}", env!("CARGO_PKG_VERSION")));
    for pin in PINS {
        let version = json["pins"][pin]["version"].as_str().unwrap_or_else(|| panic!("{pin} missing in {json}"));
        assert!(version.starts_with('v') || version.starts_with("kindest/node:v"), "{pin}: {version}");
    }
    assert!(json["go"]["required"].as_str().is_some_and(|v| v.starts_with("go1.")), "{json}");
    // The Go found is the one on PATH, named as `go env GOVERSION` names it; none without one.
    let go = Command::new("go").args(["env", "GOVERSION"]).output().ok().filter(|o| o.status.success());
    let go = go.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert_eq!(json["go"]["found"], json!(go), "{json}");
    // The commit built is the checkout's HEAD (build.rs), "unknown" outside a git checkout.
    let head = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success());
    let head = head.map_or_else(|| "unknown".to_string(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert_eq!(json["build"]["commit"], head, "{json}");
    for field in ["commit", "buildDate", "platform", "rustc"] {
        assert!(json["build"][field].as_str().is_some_and(|v| !v.is_empty()), "build.{field} missing in {json}");
    }
    assert!(json["build"]["rustc"].as_str().unwrap().starts_with("rustc 1."), "{json}");
}

#[test]
fn yaml_and_text_say_the_same() {
    let json: Value = serde_json::from_str(&version_output(&["-o", "json"])).unwrap();
    let yaml: Value = serde_saphyr::from_str(&version_output(&["-o", "yaml"])).expect("valid YAML");
    assert_eq!(yaml, json);
    let text = version_output(&[]);
    let build = &json["build"];
    let first = format!(
        "Plugin Version: v{} (commit {}, built {}, {}, {})\n",
        env!("CARGO_PKG_VERSION"),
        build["commit"].as_str().unwrap(),
        build["buildDate"].as_str().unwrap(),
        build["platform"].as_str().unwrap(),
        build["rustc"].as_str().unwrap()
    );
    assert!(text.starts_with(&first), "{text}");
    for pin in PINS {
        assert!(text.contains(json["pins"][pin]["version"].as_str().unwrap()), "{pin} missing in {text}");
    }
}

#[test]
fn without_go_the_pins_are_still_printed() {
    let output = Command::new(BIN).args(["version", "-o", "json"]).env("PATH", "/nonexistent").output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["go"]["found"], Value::Null);
    assert_eq!(json["go"]["toolchainBuilt"], false);
}

#[test]
fn the_version_flag_says_what_version_says() {
    let output = Command::new(BIN).arg("--version").output().unwrap();
    assert!(output.status.success());
    let flag = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let command = version_output(&[]);
    let said = command.lines().next().unwrap().strip_prefix("Plugin Version: ").unwrap();
    assert_eq!(flag, format!("kubectl kueue-ext {said}"));
    assert!(said.starts_with(&format!("v{} (commit ", env!("CARGO_PKG_VERSION"))), "{said}");
}
