//! The capture as one gzip-compressed tar archive: `capture.json` first, then each cluster's
//! files under the directory of its name. Written beside its target and renamed into place,
//! so that a failed capture never leaves half an archive where a whole one was expected.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::{Capture, CaptureError, MANIFEST_FILE};

/// The archive's bytes; every entry is dated `mtime` (seconds since the epoch).
pub fn archive(capture: &Capture, mtime: u64) -> std::io::Result<Vec<u8>> {
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    let mut add = |path: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(mtime);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, bytes)
    };
    let manifest = serde_json::to_vec_pretty(&capture.manifest).map_err(std::io::Error::other)?;
    add(MANIFEST_FILE, &manifest)?;
    for cluster in &capture.clusters {
        for (path, bytes) in &cluster.files {
            add(&format!("{}/{path}", cluster.name), bytes)?;
        }
    }
    tar.into_inner()?.finish()
}

/// Writes `bytes` to `path` whole or not at all: into a file beside it, synced, then renamed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CaptureError> {
    let failed = |source| CaptureError::Write { path: path.to_path_buf(), source };
    let name = path.file_name().ok_or_else(|| failed(std::io::Error::other("not a file name")))?;
    let staging: PathBuf = path.with_file_name(format!(".{}.{}.partial", name.to_string_lossy(), std::process::id()));
    let written = std::fs::File::create(&staging)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&staging, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&staging);
        return Err(failed(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Read;

    use super::*;
    use crate::capture::{ClusterCapture, Manifest};

    fn capture() -> Capture {
        let manifest = Manifest {
            format: crate::capture::FORMAT.into(),
            captured_at: "2026-01-01T00:00:00Z".into(),
            plugin_version: "0.1.0".into(),
            origin: "test".into(),
            namespace: None,
            selector: None,
            clusters: Vec::new(),
            left_out: Vec::new(),
        };
        let manager = ClusterCapture {
            name: "manager".into(),
            files: vec![("clusterqueues.json".into(), b"{\"items\":[]}".to_vec())],
            workloads: Vec::new(),
        };
        Capture { manifest, clusters: vec![manager] }
    }

    #[test]
    fn the_manifest_comes_first_then_each_clusters_files() {
        let bytes = archive(&capture(), 1_767_225_600).unwrap();
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        let mut files = BTreeMap::new();
        let mut order = Vec::new();
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            order.push(path.clone());
            files.insert(path, text);
        }
        assert_eq!(order, ["capture.json", "manager/clusterqueues.json"]);
        let manifest: Manifest = serde_json::from_str(&files["capture.json"]).unwrap();
        assert_eq!(manifest, capture().manifest);
    }

    #[test]
    fn a_failed_write_names_the_file_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("missing-dir").join("capture.tgz");
        let error = write_atomically(&target, b"x").unwrap_err().to_string();
        assert!(error.starts_with(&format!("cannot write the capture to {}: ", target.display())), "{error}");
        let written = dir.path().join("capture.tgz");
        write_atomically(&written, b"whole").unwrap();
        assert_eq!(std::fs::read(&written).unwrap(), b"whole");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["capture.tgz"], "no staging file is left");
    }
}
