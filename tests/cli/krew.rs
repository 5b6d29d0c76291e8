//! The krew manifest: the template in plugins/ has the shape krew validates
//! (`internal/index/validation` in kubernetes-sigs/krew), and hack/release-krew.sh turns it into
//! one with nothing left to fill, from archives its `package` makes.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/plugins/kueue-ext.yaml");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/hack/release-krew.sh");
/// Linux only: the kind runtime loads the plugin's own binary into Linux kind nodes, which a
/// darwin (Mach-O) binary cannot be.
const PLATFORMS: [(&str, &str); 2] = [("linux", "amd64"), ("linux", "arm64")];
const LICENSE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/LICENSE");

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

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// hack/release-krew.sh with `args`, its archives and manifest in `out` rather than target/krew.
fn release_script(args: &[&str], out: &Path) -> Output {
    Command::new("bash").arg(SCRIPT).args(args).env("KREW_OUT", out).output().unwrap()
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
        sums.push(sha256_hex(content.as_bytes()));
    }
    let run = release_script(&["manifest", "https://example.com/kueue-ext/"], out.path());
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
    let run = release_script(&["manifest", "https://example.com/kueue-ext"], out.path());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: no archive for") && stderr.contains("linux-arm64.tar.gz"), "{stderr}");
    assert!(!stderr.contains("linux-amd64.tar.gz"), "{stderr}");
    assert!(!out.path().join("kueue-ext.yaml").exists());
}

/// What stands in for the release binary of `os`/`arch`: bytes of its own per platform (not
/// UTF-8, as a binary's are not), so each archive is seen to hold its own binary, byte for byte.
fn stand_in_binary(dir: &Path, os: &str, arch: &str) -> (PathBuf, Vec<u8>) {
    let bytes = [format!("#!/bin/sh\necho stand-in for {os}/{arch}\n").as_bytes(), &[0, 0xff, 0x7f]].concat();
    let path = dir.join(format!("stand-in-{os}-{arch}"));
    std::fs::write(&path, &bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (path, bytes)
}

/// `package BINARY OS ARCH` into `out`, which must succeed and name the archive it wrote.
fn package(binary: &Path, os: &str, arch: &str, out: &Path) -> PathBuf {
    let run = release_script(&["package", binary.to_str().unwrap(), os, arch], out);
    assert!(run.status.success(), "{os}/{arch}: {}", String::from_utf8_lossy(&run.stderr));
    let archive = out.join(format!("kubectl-kueue_ext-{os}-{arch}.tar.gz"));
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), archive.to_str().unwrap(), "{os}/{arch}: printed path");
    archive
}

/// The archive's entries by path: mode and content. Unzipped by gzip (the `tar` crate reads the
/// rest), as no gzip crate is among this package's dependencies.
fn archive_entries(archive: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let gunzip = Command::new("gzip").arg("-dc").arg(archive).output().unwrap();
    assert!(gunzip.status.success(), "{}: {}", archive.display(), String::from_utf8_lossy(&gunzip.stderr));
    let mut entries = BTreeMap::new();
    for entry in tar::Archive::new(gunzip.stdout.as_slice()).entries().unwrap() {
        let mut entry = entry.unwrap();
        assert!(entry.header().entry_type().is_file(), "{}: only regular files", archive.display());
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mode = entry.header().mode().unwrap() & 0o7777;
        let mut content = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut content).unwrap();
        assert!(entries.insert(path.clone(), (mode, content)).is_none(), "{}: {path} twice", archive.display());
    }
    entries
}

/// The files the template's entry for `os`/`arch` takes from its archive.
fn manifest_files(os: &str, arch: &str) -> BTreeSet<String> {
    let manifest = parse(Path::new(TEMPLATE));
    let platforms = manifest.pointer("/spec/platforms").and_then(Value::as_array).expect("spec.platforms");
    let platform = platforms
        .iter()
        .find(|p| str_at(p, "/selector/matchLabels/os") == os && str_at(p, "/selector/matchLabels/arch") == arch)
        .unwrap_or_else(|| panic!("no {os}/{arch} in the template"));
    let files = platform.pointer("/files").and_then(Value::as_array).expect("files");
    files.iter().map(|f| str_at(f, "/from").to_string()).collect()
}

#[test]
fn the_release_script_packages_exactly_the_files_the_manifest_names() {
    let (bins, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let license = std::fs::read(LICENSE).unwrap();
    for (os, arch) in PLATFORMS {
        let (binary, bytes) = stand_in_binary(bins.path(), os, arch);
        let entries = archive_entries(&package(&binary, os, arch, out.path()));
        // krew installs what `files:` names from the archive and fails on a name it lacks.
        assert_eq!(entries.keys().cloned().collect::<BTreeSet<_>>(), manifest_files(os, arch), "{os}/{arch}");
        // `bin:` is run as unpacked: executable whatever the packager's umask.
        assert_eq!(entries["kubectl-kueue_ext"], (0o755, bytes), "{os}/{arch}: the binary");
        assert_eq!(entries["LICENSE"], (0o644, license.clone()), "{os}/{arch}: the license");
    }
}

#[test]
fn the_release_script_fills_the_sha256_of_the_archives_it_packaged() {
    let (bins, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut sums = BTreeMap::new();
    for (os, arch) in PLATFORMS {
        let (binary, _) = stand_in_binary(bins.path(), os, arch);
        let archive = package(&binary, os, arch, out.path());
        sums.insert((os, arch), sha256_hex(&std::fs::read(archive).unwrap()));
    }
    let run = release_script(&["manifest", "https://github.com/OWNER/kueue-ext"], out.path());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let manifest = parse(&out.path().join("kueue-ext.yaml"));
    check(&manifest, true);
    for platform in manifest.pointer("/spec/platforms").and_then(Value::as_array).unwrap() {
        let (os, arch) = (str_at(platform, "/selector/matchLabels/os"), str_at(platform, "/selector/matchLabels/arch"));
        assert_eq!(str_at(platform, "/sha256"), sums[&(os, arch)], "{os}/{arch}");
        let download = format!("https://github.com/OWNER/kueue-ext/releases/download/{}/", version());
        assert_eq!(str_at(platform, "/uri"), format!("{download}kubectl-kueue_ext-{os}-{arch}.tar.gz"));
    }
}

#[test]
fn the_release_script_refuses_to_package_for_darwin() {
    let (bins, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for arch in ["amd64", "arm64"] {
        let (binary, _) = stand_in_binary(bins.path(), "darwin", arch);
        let run = release_script(&["package", binary.to_str().unwrap(), "darwin", arch], out.path());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "darwin/{arch}: {stderr}");
        // The reason, not only the refusal: a darwin binary cannot run in the kind runtime's nodes.
        assert!(stderr.starts_with(&format!("error: no krew archive for darwin/{arch}")), "{stderr}");
        assert!(stderr.contains("Linux kind nodes") && stderr.contains("Linux only"), "{stderr}");
    }
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "no archive written");
}
