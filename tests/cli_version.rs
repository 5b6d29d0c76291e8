//! `version`: the plugin's version and every pin, for people and for scripts.

mod common;

use std::process::Command;

use common::{BIN, text};
use serde_json::Value;

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
    assert!(json["go"]["found"].is_string() || json["go"]["found"].is_null(), "{json}");
}

#[test]
fn yaml_and_text_say_the_same() {
    let json: Value = serde_json::from_str(&version_output(&["-o", "json"])).unwrap();
    let yaml: Value = serde_saphyr::from_str(&version_output(&["-o", "yaml"])).expect("valid YAML");
    assert_eq!(yaml, json);
    let text = version_output(&[]);
    assert!(text.starts_with(&format!("Plugin Version: v{}\n", env!("CARGO_PKG_VERSION"))), "{text}");
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
fn the_version_flag_still_works() {
    let output = Command::new(BIN).arg("--version").output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("kubectl kueue-ext {}", env!("CARGO_PKG_VERSION"))
    );
}
