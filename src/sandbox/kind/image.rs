//! The controller's image: this plugin's own binary, statically linked, in a `FROM scratch`
//! image whose build context is assembled in memory.

use std::path::{Path, PathBuf};

use super::error::KindError;

/// Name of the binary inside the image.
pub const BINARY: &str = "kubectl-kueue_ext";
/// Repository of the controller image; the tag is derived from the binary.
pub const REPOSITORY: &str = "kueue-ext/controller";

/// No base image: nothing to pull, which matters offline, and nothing but our binary to trust.
/// The user is numeric because a scratch image has no /etc/passwd.
pub const DOCKERFILE: &str = "FROM scratch\n\
COPY kubectl-kueue_ext /kubectl-kueue_ext\n\
USER 65532:65532\n\
ENTRYPOINT [\"/kubectl-kueue_ext\"]\n";

/// The tag of the image for this binary: the crate version and a digest of the binary, so a
/// rebuilt binary gets a new tag and nodes never run a stale image.
pub fn tag_for(binary: &[u8]) -> String {
    let digest = super::sha256_hex(binary);
    format!("{REPOSITORY}:v{}-{}", env!("CARGO_PKG_VERSION"), &digest[..12])
}

/// The ELF interpreter a binary asks for (`PT_INTERP`), or `None` when it needs none, i.e. it
/// runs with no dynamic libraries at all (static or static-pie).
pub fn interpreter(elf: &[u8]) -> Result<Option<String>, String> {
    const PT_INTERP: u32 = 3;
    if elf.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("not an ELF file".into());
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let read = |at: usize, len: usize| elf.get(at..at + len).ok_or_else(|| "truncated ELF header".to_string());
    let u16_at = |at| read(at, 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at| read(at, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let u64_at = |at| read(at, 8).map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")) as usize);
    let (table, entry_size, entries) = (u64_at(0x20)?, u16_at(0x36)?, u16_at(0x38)?);
    for i in 0..entries {
        let header = table + i * entry_size;
        if u32_at(header)? == PT_INTERP {
            let (offset, size) = (u64_at(header + 0x08)?, u64_at(header + 0x20)?);
            let name = read(offset, size)?;
            return Ok(Some(String::from_utf8_lossy(name).trim_end_matches('\0').to_string()));
        }
    }
    Ok(None)
}

/// The binary to put in the image: the one given, else this very executable; either must be
/// static, since the image has no loader and no libc.
pub fn controller_binary(given: Option<&Path>) -> Result<(PathBuf, Vec<u8>), KindError> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => std::env::current_exe().map_err(KindError::io("the plugin's own executable"))?,
    };
    let bytes = std::fs::read(&path).map_err(KindError::io(&path))?;
    match interpreter(&bytes) {
        Ok(None) => Ok((path, bytes)),
        Ok(Some(loader)) => Err(KindError::NotStatic { path, detail: format!("its interpreter is {loader}") }),
        Err(detail) => Err(KindError::NotStatic { path, detail }),
    }
}

/// The build context: a tar holding the Dockerfile and the binary (mode 0755).
pub fn build_context(binary: &[u8]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, mode, data) in [("Dockerfile", 0o644, DOCKERFILE.as_bytes()), (BINARY, 0o755, binary)] {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, name, data).expect("writing a tar into memory cannot fail");
    }
    tar.into_inner().expect("writing a tar into memory cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn build_context_is_a_tar_with_the_dockerfile_and_an_executable_binary() {
        let binary = b"\x7fELF pretend binary";
        let context = build_context(binary);
        let mut archive = tar::Archive::new(context.as_slice());
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().display().to_string();
            let mode = entry.header().mode().unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            seen.push((name, mode, data));
        }
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], ("Dockerfile".to_string(), 0o644, DOCKERFILE.as_bytes().to_vec()));
        assert_eq!(seen[1], (BINARY.to_string(), 0o755, binary.to_vec()));
        assert!(DOCKERFILE.starts_with("FROM scratch\n"));
        assert!(DOCKERFILE.contains(&format!("COPY {BINARY} /{BINARY}")));
    }

    /// A minimal ELF64 header with one program header of type `kind`.
    fn elf_with_segment(kind: u32, payload: &[u8]) -> Vec<u8> {
        let mut elf = vec![0u8; 0x40 + 0x38];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        elf[0x36..0x38].copy_from_slice(&0x38u16.to_le_bytes());
        elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        elf[0x40..0x44].copy_from_slice(&kind.to_le_bytes());
        let offset = elf.len() as u64;
        elf[0x48..0x50].copy_from_slice(&offset.to_le_bytes());
        elf[0x60..0x68].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        elf.extend_from_slice(payload);
        elf
    }

    #[test]
    fn interpreter_tells_static_from_dynamic() {
        let dynamic = elf_with_segment(3, b"/lib64/ld-linux-x86-64.so.2\0");
        assert_eq!(interpreter(&dynamic).unwrap().as_deref(), Some("/lib64/ld-linux-x86-64.so.2"));
        let static_pie = elf_with_segment(1, b"");
        assert_eq!(interpreter(&static_pie).unwrap(), None);
        assert!(interpreter(b"#!/bin/sh\n").unwrap_err().contains("not an ELF"));
        assert!(interpreter(&dynamic[..0x30]).unwrap_err().contains("truncated"));
    }

    #[test]
    fn a_dynamically_linked_binary_is_refused_with_the_way_out() {
        // This test executable is linked against glibc like any default build.
        let me = std::env::current_exe().unwrap();
        let err = controller_binary(Some(&me)).unwrap_err();
        assert!(matches!(err, KindError::NotStatic { .. }));
        let message = err.to_string();
        assert!(message.contains("interpreter") && message.contains("--controller-binary"), "{message}");
    }

    #[test]
    fn tags_change_with_the_binary() {
        assert_ne!(tag_for(b"one"), tag_for(b"two"));
        assert!(tag_for(b"one").starts_with(&format!("{REPOSITORY}:v{}-", env!("CARGO_PKG_VERSION"))));
    }
}
