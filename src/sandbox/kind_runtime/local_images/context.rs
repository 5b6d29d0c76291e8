//! Docker build contexts written as tar files: a Dockerfile and the files it copies, with fixed
//! modes and times so the same inputs give the same layers.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One entry of a build context.
enum Entry {
    Bytes {
        path: String,
        mode: u32,
        data: Vec<u8>,
    },
    /// A file on disk, streamed into the tar (binaries and image archives are large).
    Disk {
        path: String,
        mode: u32,
        from: PathBuf,
    },
    Symlink {
        path: String,
        target: String,
    },
}

/// A build context under construction.
pub struct Context {
    dockerfile: String,
    entries: Vec<Entry>,
}

impl Context {
    pub fn new(dockerfile: impl Into<String>) -> Self {
        Context { dockerfile: dockerfile.into(), entries: Vec::new() }
    }

    pub fn bytes(mut self, path: &str, mode: u32, data: impl Into<Vec<u8>>) -> Self {
        self.entries.push(Entry::Bytes { path: path.into(), mode, data: data.into() });
        self
    }

    pub fn disk(mut self, path: &str, mode: u32, from: &Path) -> Self {
        self.entries.push(Entry::Disk { path: path.into(), mode, from: from.to_path_buf() });
        self
    }

    pub fn symlink(mut self, path: &str, target: &str) -> Self {
        self.entries.push(Entry::Symlink { path: path.into(), target: target.into() });
        self
    }

    /// The paths in the context, Dockerfile first.
    #[cfg(test)]
    pub fn paths(&self) -> Vec<&str> {
        let names = self.entries.iter().map(|e| match e {
            Entry::Bytes { path, .. } | Entry::Disk { path, .. } | Entry::Symlink { path, .. } => path.as_str(),
        });
        std::iter::once("Dockerfile").chain(names).collect()
    }

    #[cfg(test)]
    pub fn dockerfile(&self) -> &str {
        &self.dockerfile
    }

    /// Writes the context as a tar file at `to`.
    pub fn write(&self, to: &Path) -> std::io::Result<()> {
        let mut tar = tar::Builder::new(BufWriter::new(File::create(to)?));
        append_bytes(&mut tar, "Dockerfile", 0o644, self.dockerfile.as_bytes())?;
        for entry in &self.entries {
            match entry {
                Entry::Bytes { path, mode, data } => append_bytes(&mut tar, path, *mode, data)?,
                Entry::Disk { path, mode, from } => {
                    let mut file = File::open(from)?;
                    let mut header = header(*mode, file.metadata()?.len());
                    tar.append_data(&mut header, path, &mut file)?;
                }
                Entry::Symlink { path, target } => {
                    let mut header = header(0o777, 0);
                    header.set_entry_type(tar::EntryType::Symlink);
                    tar.append_link(&mut header, path, target)?;
                }
            }
        }
        tar.into_inner()?.flush()
    }
}

fn header(mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(mode);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

fn append_bytes<W: Write>(tar: &mut tar::Builder<W>, path: &str, mode: u32, data: &[u8]) -> std::io::Result<()> {
    let mut header = header(mode, data.len() as u64);
    tar.append_data(&mut header, path, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_context_holds_its_dockerfile_files_and_links_with_their_modes() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("binary");
        std::fs::write(&binary, b"\x7fELF").unwrap();
        let context = Context::new("FROM scratch\n")
            .bytes("etc/config", 0o644, "a = 1\n")
            .disk("bin/tool", 0o755, &binary)
            .symlink("bin/alias", "tool");
        assert_eq!(context.paths(), ["Dockerfile", "etc/config", "bin/tool", "bin/alias"]);
        let tar = dir.path().join("context.tar");
        context.write(&tar).unwrap();

        let mut seen = Vec::new();
        for entry in tar::Archive::new(File::open(&tar).unwrap()).entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mode = entry.header().mode().unwrap();
            let link = entry.link_name().unwrap().map(|l| l.display().to_string());
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            seen.push((path, mode, link, data));
        }
        assert_eq!(
            seen,
            [
                ("Dockerfile".to_string(), 0o644, None, b"FROM scratch\n".to_vec()),
                ("etc/config".to_string(), 0o644, None, b"a = 1\n".to_vec()),
                ("bin/tool".to_string(), 0o755, None, b"\x7fELF".to_vec()),
                ("bin/alias".to_string(), 0o777, Some("tool".to_string()), Vec::new()),
            ]
        );
    }
}
