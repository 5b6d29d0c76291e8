//! The krew manifest: the template in plugins/ has the shape krew validates
//! (`internal/index/validation` in kubernetes-sigs/krew), and hack/release-krew.sh turns it into
//! one with nothing left to fill.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/plugins/kueue-ext.yaml");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/hack/release-krew.sh");
const PLATFORMS: [(&str, &str); 4] = [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")];

fn version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

fn parse(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_else(|| panic!("{pointer} missing or not a string"))
}

fn is_sha256(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What krew checks, plus this plugin's own rules; `filled` says the release script has run.
fn check(manifest: &Value, filled: bool) {
    assert_eq!(str_at(manifest, "/apiVersion"), "krew.googlecontainertools.github.com/v1alpha2");
    assert_eq!(str_at(manifest, "/kind"), "Plugin");
    // krew: the name matches the file name and `^[\w-]+$`; kubectl finds `kueue-ext` as
    // kubectl-kueue_ext, the binary's name.
    assert_eq!(str_at(manifest, "/metadata/name"), "kueue-ext");
    assert_eq!(str_at(manifest, "/spec/version"), version(), "spec.version must follow Cargo.toml's version");
    let short = str_at(manifest, "/spec/shortDescription");
    assert!(!short.is_empty() && !short.contains(['\r', '\n']) && short.len() <= 60, "shortDescription {short:?}");
    assert!(!str_at(manifest, "/spec/description").trim().is_empty());
    let homepage = str_at(manifest, "/spec/homepage");
    assert!(if filled { homepage.starts_with("https://") } else { homepage == "${REPO_URL}" }, "homepage {homepage}");

    let platforms = manifest.pointer("/spec/platforms").and_then(Value::as_array).expect("spec.platforms");
    let mut seen = BTreeSet::new();
    for platform in platforms {
        let labels =
            platform.pointer("/selector/matchLabels").and_then(Value::as_object).expect("selector.matchLabels");
        assert!(labels.keys().all(|k| k == "os" || k == "arch"), "krew supports only os and arch: {labels:?}");
        let (os, arch) = (str_at(platform, "/selector/matchLabels/os"), str_at(platform, "/selector/matchLabels/arch"));
        assert!(seen.insert((os.to_string(), arch.to_string())), "{os}/{arch} listed twice");

        let uri = str_at(platform, "/uri");
        let prefix = if filled { "https://" } else { "${REPO_URL}/" };
        let file = format!("/releases/download/{}/kubectl-kueue_ext-{os}-{arch}.tar.gz", version());
        assert!(uri.starts_with(prefix) && uri.ends_with(&file), "{os}/{arch}: uri {uri}");

        let sha256 = str_at(platform, "/sha256");
        let placeholder = format!("${{SHA256_{}_{}}}", os.to_uppercase(), arch.to_uppercase());
        assert!(is_sha256(sha256) || (!filled && sha256 == placeholder), "{os}/{arch}: sha256 {sha256}");

        assert_eq!(str_at(platform, "/bin"), "kubectl-kueue_ext", "{os}/{arch}");
        let files = platform.pointer("/files").and_then(Value::as_array).expect("files");
        let from: BTreeSet<&str> = files.iter().map(|f| str_at(f, "/from")).collect();
        assert_eq!(from, BTreeSet::from(["kubectl-kueue_ext", "LICENSE"]), "{os}/{arch}: the binary and its license");
        assert!(files.iter().all(|f| !str_at(f, "/to").is_empty()));
    }
    let expected: BTreeSet<_> = PLATFORMS.iter().map(|(os, arch)| (os.to_string(), arch.to_string())).collect();
    assert_eq!(seen, expected);
}

#[test]
fn the_template_has_the_shape_krew_requires() {
    check(&parse(Path::new(TEMPLATE)), false);
}

#[test]
fn the_release_script_fills_every_placeholder_from_the_archives() {
    let out = tempfile::tempdir().unwrap();
    let mut sums = Vec::new();
    for (os, arch) in PLATFORMS {
        let content = format!("archive for {os}/{arch}");
        std::fs::write(out.path().join(format!("kubectl-kueue_ext-{os}-{arch}.tar.gz")), &content).unwrap();
        let digest = ring::digest::digest(&ring::digest::SHA256, content.as_bytes());
        sums.push(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>());
    }
    let run = Command::new("bash")
        .args([SCRIPT, "manifest", "https://example.com/kueue-ext/"])
        .env("KREW_OUT", out.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let written = out.path().join("kueue-ext.yaml");
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(!text.contains("${REPO_URL}") && !text.contains("${SHA256"), "{text}");
    let manifest = parse(&written);
    check(&manifest, true);
    assert_eq!(str_at(&manifest, "/spec/homepage"), "https://example.com/kueue-ext");
    let platforms = manifest.pointer("/spec/platforms").and_then(Value::as_array).unwrap();
    for ((platform, sum), (os, arch)) in platforms.iter().zip(&sums).zip(PLATFORMS) {
        assert_eq!(str_at(platform, "/selector/matchLabels/os"), os);
        assert_eq!(str_at(platform, "/selector/matchLabels/arch"), arch);
        assert_eq!(str_at(platform, "/sha256"), sum, "{os}/{arch}");
    }
}

#[test]
fn the_release_script_refuses_while_an_archive_is_missing() {
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("kubectl-kueue_ext-linux-amd64.tar.gz"), "one").unwrap();
    let run = Command::new("bash")
        .args([SCRIPT, "manifest", "https://example.com/kueue-ext"])
        .env("KREW_OUT", out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: no archive for") && stderr.contains("darwin-arm64.tar.gz"), "{stderr}");
    assert!(!stderr.contains("linux-amd64.tar.gz"), "{stderr}");
    assert!(!out.path().join("kueue-ext.yaml").exists());
}
