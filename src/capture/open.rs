//! Reading a capture back, for `up --from`: the archive is opened whole before anything starts,
//! its manifest's `format` checked, and every file the manifest lists found. Each cluster's
//! files are parsed on request; an error names the archive, the entry and the field.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::{ClusterEntry, FORMAT, Manifest};
use super::{CONFIGURATION_FILE, INTEGRATIONS_FILE, MANIFEST_FILE};

/// What is wrong with a capture archive: the archive, the entry in it (empty for the archive
/// as a whole), and what.
#[derive(Debug, PartialEq, thiserror::Error)]
pub struct OpenError {
    pub file: PathBuf,
    pub entry: String,
    pub message: String,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entry.as_str() {
            "" => write!(f, "{}: {}", self.file.display(), self.message),
            entry => write!(f, "{}: {entry}: {}", self.file.display(), self.message),
        }
    }
}

/// A capture archive, read whole.
#[derive(Debug)]
pub struct Opened {
    pub path: PathBuf,
    pub manifest: Manifest,
    pub clusters: Vec<CapturedCluster>,
}

/// One cluster's files in an archive.
#[derive(Debug)]
pub struct CapturedCluster {
    pub entry: ClusterEntry,
    archive: PathBuf,
    files: BTreeMap<String, Vec<u8>>,
}

/// Reads the capture at `path`: a gzip-compressed tar whose `capture.json` has this plugin's
/// format and lists only files the archive holds.
pub fn open(path: &Path) -> Result<Opened, OpenError> {
    let fail = |entry: &str, message: String| OpenError { file: path.to_path_buf(), entry: entry.into(), message };
    let bytes = std::fs::read(path).map_err(|e| fail("", format!("cannot read it: {e}")))?;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(fail("", "not a gzip-compressed archive (`kubectl kueue-ext capture -o FILE` writes one)".into()));
    }
    let mut entries = entries(&bytes).map_err(|e| fail("", format!("not a readable tar.gz archive: {e}")))?;
    let manifest =
        entries.remove(MANIFEST_FILE).ok_or_else(|| fail(MANIFEST_FILE, "missing: not a capture archive".into()))?;
    let manifest = manifest_of(&manifest).map_err(|message| fail(MANIFEST_FILE, message))?;
    let mut clusters = Vec::new();
    for entry in &manifest.clusters {
        let prefix = format!("{}/", entry.name);
        let files: BTreeMap<String, Vec<u8>> = entries
            .iter()
            .filter_map(|(name, bytes)| Some((name.strip_prefix(&prefix)?.to_string(), bytes.clone())))
            .collect();
        if let Some(missing) = entry.files.keys().find(|file| !files.contains_key(*file)) {
            return Err(fail(&format!("{prefix}{missing}"), "listed in capture.json but not in the archive".into()));
        }
        clusters.push(CapturedCluster { entry: entry.clone(), archive: path.to_path_buf(), files });
    }
    Ok(Opened { path: path.to_path_buf(), manifest, clusters })
}

fn entries(bytes: &[u8]) -> std::io::Result<BTreeMap<String, Vec<u8>>> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut out = BTreeMap::new();
    for entry in tar.entries()? {
        let mut entry = entry?;
        let name = entry.path()?.display().to_string();
        let mut content = Vec::new();
        entry.read_to_end(&mut content)?;
        out.insert(name, content);
    }
    Ok(out)
}

/// The manifest, its `format` checked first: a later format may mean anything.
fn manifest_of(bytes: &[u8]) -> Result<Manifest, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    match value["format"].as_str() {
        Some(FORMAT) => {}
        Some(other) => return Err(format!("format is {other:?}; this plugin reads {FORMAT:?}")),
        None => return Err(format!("format is missing; this plugin reads {FORMAT:?}")),
    }
    serde_path_to_error::deserialize(value).map_err(|e| format!("{}: {}", e.path(), e.inner()))
}

impl CapturedCluster {
    pub fn name(&self) -> &str {
        &self.entry.name
    }

    fn fail(&self, file: &str, message: String) -> OpenError {
        OpenError { file: self.archive.clone(), entry: format!("{}/{file}", self.entry.name), message }
    }

    /// The items of a `List` file, each an object with a `metadata.name`; none when the
    /// capture has no such file (the kind was not served there).
    pub fn list(&self, file: &str) -> Result<Vec<Value>, OpenError> {
        let Some(bytes) = self.files.get(file) else { return Ok(Vec::new()) };
        let list: Value = serde_json::from_slice(bytes).map_err(|e| self.fail(file, format!("not JSON: {e}")))?;
        let items = list["items"].as_array().ok_or_else(|| self.fail(file, "items: not a list".into()))?;
        for (i, item) in items.iter().enumerate() {
            if item["metadata"]["name"].as_str().is_none_or(str::is_empty) {
                return Err(self.fail(file, format!("items[{i}].metadata.name: missing")));
            }
            if item["apiVersion"].as_str().is_none() || item["kind"].as_str().is_none() {
                return Err(self.fail(file, format!("items[{i}]: apiVersion or kind missing")));
            }
        }
        Ok(items.clone())
    }

    /// Kueue's Configuration, when it was captured.
    pub fn kueue_configuration(&self) -> Result<Option<Value>, OpenError> {
        let Some(bytes) = self.files.get(CONFIGURATION_FILE) else { return Ok(None) };
        let text = std::str::from_utf8(bytes).map_err(|e| self.fail(CONFIGURATION_FILE, e.to_string()))?;
        let config: Value =
            serde_saphyr::from_str(text).map_err(|e| self.fail(CONFIGURATION_FILE, format!("not YAML: {e}")))?;
        if !config.is_object() {
            return Err(self.fail(CONFIGURATION_FILE, "not a Configuration object".into()));
        }
        Ok(Some(config))
    }

    /// kueue-ext's integrations file, when the cluster had one, and its name in the archive.
    pub fn integrations(&self) -> Result<Option<(String, String)>, OpenError> {
        let Some(bytes) = self.files.get(INTEGRATIONS_FILE) else { return Ok(None) };
        let text = String::from_utf8(bytes.clone()).map_err(|e| self.fail(INTEGRATIONS_FILE, e.to_string()))?;
        let origin = format!("{}: {}/{INTEGRATIONS_FILE}", self.archive.display(), self.entry.name);
        Ok(Some((origin, text)))
    }

    /// The files of jobs (`jobs/<resource>.<group>.json`), in name order.
    pub fn job_files(&self) -> Vec<&str> {
        self.files.keys().filter(|name| name.starts_with("jobs/")).map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kueue::Role;
    use crate::capture::{Capture, ClusterCapture, archive};

    fn capture(format: &str) -> Capture {
        let mut entry = ClusterEntry::new("manager", "kueue-ext-manager", Role::Manager);
        entry.files.insert("clusterqueues.json".into(), "ClusterQueue objects".into());
        let manifest = Manifest {
            format: format.into(),
            captured_at: "2026-01-01T00:00:00Z".into(),
            plugin_version: "0.1.0".into(),
            origin: "test".into(),
            namespace: None,
            selector: None,
            clusters: vec![entry],
            left_out: Vec::new(),
        };
        let queues = br#"{"items": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                     "metadata": {"name": "cq"}}]}"#;
        let manager = ClusterCapture {
            name: "manager".into(),
            files: vec![("clusterqueues.json".into(), queues.to_vec())],
            ..Default::default()
        };
        Capture { manifest, clusters: vec![manager] }
    }

    fn written(dir: &Path, bytes: &[u8]) -> PathBuf {
        let path = dir.join("capture.tgz");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_capture_reads_back_with_its_manifest_and_lists() {
        let dir = tempfile::tempdir().unwrap();
        let path = written(dir.path(), &archive(&capture(FORMAT), 0).unwrap());
        let opened = open(&path).unwrap();
        assert_eq!(opened.manifest.clusters[0].name, "manager");
        let manager = &opened.clusters[0];
        assert_eq!(manager.list("clusterqueues.json").unwrap()[0]["metadata"]["name"], "cq");
        assert!(manager.list("topologies.json").unwrap().is_empty(), "a kind not captured has none");
        assert_eq!(manager.kueue_configuration().unwrap(), None);
    }

    #[test]
    fn a_bad_archive_is_named_with_the_entry_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let error = |bytes: &[u8]| open(&written(dir.path(), bytes)).unwrap_err().to_string();
        let at = |rest: &str| format!("{}: {rest}", dir.path().join("capture.tgz").display());
        assert_eq!(
            error(b"apiVersion: v1\n"),
            at("not a gzip-compressed archive (`kubectl kueue-ext capture -o FILE` writes one)")
        );
        assert!(error(&[0x1f, 0x8b, 0, 1, 2]).starts_with(&at("not a readable tar.gz archive: ")));
        assert_eq!(
            error(&archive(&capture("kueue-ext.dev/capture/v9"), 0).unwrap()),
            at(
                "capture.json: format is \"kueue-ext.dev/capture/v9\"; this plugin reads \"kueue-ext.dev/capture/v1alpha1\""
            )
        );
        let mut missing = capture(FORMAT);
        missing.clusters[0].files.clear();
        assert_eq!(
            error(&archive(&missing, 0).unwrap()),
            at("manager/clusterqueues.json: listed in capture.json but not in the archive")
        );
        let mut nameless = capture(FORMAT);
        nameless.clusters[0].files[0].1 = br#"{"items": [{"apiVersion": "v1", "kind": "X", "metadata": {}}]}"#.to_vec();
        let opened = open(&written(dir.path(), &archive(&nameless, 0).unwrap())).unwrap();
        assert_eq!(
            opened.clusters[0].list("clusterqueues.json").unwrap_err().to_string(),
            at("manager/clusterqueues.json: items[0].metadata.name: missing")
        );
    }
}
