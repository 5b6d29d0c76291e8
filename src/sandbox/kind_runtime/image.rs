//! The controller's image: this plugin's own binary in a `FROM scratch` image, with the ELF
//! loader and the shared libraries it runs with on this machine when it is dynamically linked
//! (as `cargo install` builds it). The build context is assembled in memory.

use std::collections::{HashSet, VecDeque};
use std::path::{Component, Path, PathBuf};

use object::elf::{
    DT_NEEDED, DT_NULL, DT_RPATH, DT_RUNPATH, DT_SONAME, DT_STRSZ, DT_STRTAB, Dyn64, FileHeader64, PT_LOAD,
};
use object::read::elf::{Dyn as _, FileHeader as _, ProgramHeader as _};
use object::{Endianness, StringTable};

use super::error::KindError;

/// Name of the binary inside the image.
pub const BINARY: &str = "kubectl-kueue_ext";
/// Repository of the controller image; the tag is derived from the files in it.
pub const REPOSITORY: &str = "kueue-ext/controller";
/// The directory of the build context copied onto the image's `/`: the loader and libraries,
/// each under its absolute path.
const ROOTFS: &str = "rootfs";

/// No base image: nothing to pull, which matters offline, and nothing to trust but our binary and,
/// when it is dynamically linked, the loader and libraries it already runs with here.
/// The user is numeric because a scratch image has no /etc/passwd.
fn dockerfile(with_libraries: bool) -> String {
    let libraries = if with_libraries { format!("COPY {ROOTFS}/ /\n") } else { String::new() };
    format!("FROM scratch\n{libraries}COPY {BINARY} /{BINARY}\nUSER 65532:65532\nENTRYPOINT [\"/{BINARY}\"]\n")
}

/// What goes into the image: the binary and, for a dynamically linked one, the loader and the
/// libraries it loads, each under the absolute path the loader opens it by. Their content is read
/// through symlinks: the image has only the files, not the links that led to them here.
pub struct Bundle {
    pub binary: Vec<u8>,
    pub libraries: Vec<(PathBuf, Vec<u8>)>,
}

/// The controller to put in the image: the binary given, else this very executable, with what it
/// needs to run there.
pub fn controller_binary(given: Option<&Path>) -> Result<(PathBuf, Bundle), KindError> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => std::env::current_exe().map_err(KindError::io("the plugin's own executable"))?,
    };
    let binary = std::fs::read(&path).map_err(KindError::io(&path))?;
    let bundle = Bundle::for_binary(&path, binary)?;
    Ok((path, bundle))
}

/// The tag of the image for this bundle: the crate version and a digest of every file and where it
/// goes, so a rebuilt binary or an upgraded library gets a new tag and nodes never run a stale image.
pub fn tag_for(bundle: &Bundle) -> String {
    // A digest of digests: every part takes the same length in it, so no two bundles run together.
    let parts = std::iter::once(bundle.binary.as_slice()).chain(
        bundle.libraries.iter().flat_map(|(path, bytes)| [path.as_os_str().as_encoded_bytes(), bytes.as_slice()]),
    );
    let digests: Vec<u8> =
        parts.flat_map(|part| ring::digest::digest(&ring::digest::SHA256, part).as_ref().to_vec()).collect();
    let digest = super::sha256_hex(&digests);
    format!("{REPOSITORY}:v{}-{}", env!("CARGO_PKG_VERSION"), &digest[..12])
}

/// The archive `kind load image-archive` reads for the image `tag`, under `dir`.
pub fn archive_path(dir: &Path, tag: &str) -> PathBuf {
    dir.join(format!("{}.tar", tag.replace(['/', ':'], "_")))
}

/// Removes the controller archives in `dir` other than `keep`: each binary makes one, and only
/// the current one is loaded again.
pub fn remove_other_archives(dir: &Path, keep: &Path) -> std::io::Result<()> {
    let prefix = format!("{}_", REPOSITORY.replace('/', "_"));
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path != keep && name.starts_with(&prefix) && name.ends_with(".tar") {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// The build context: a tar holding the Dockerfile, the binary and, under `rootfs/`, the loader
/// and libraries at their paths; all executables (mode 0755), since the kernel runs the loader.
pub fn build_context(bundle: &Bundle) -> Vec<u8> {
    let dockerfile = dockerfile(!bundle.libraries.is_empty());
    let libraries = bundle
        .libraries
        .iter()
        .map(|(path, bytes)| (Path::new(ROOTFS).join(path.strip_prefix("/").unwrap_or(path)), 0o755, bytes.as_slice()));
    let files = [
        (PathBuf::from("Dockerfile"), 0o644, dockerfile.as_bytes()),
        (PathBuf::from(BINARY), 0o755, bundle.binary.as_slice()),
    ]
    .into_iter()
    .chain(libraries);
    let mut tar = tar::Builder::new(Vec::new());
    for (name, mode, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, name, data).expect("writing a tar into memory cannot fail");
    }
    tar.into_inner().expect("writing a tar into memory cannot fail")
}

impl Bundle {
    /// The bundle of `binary`, read from `path`: its libraries found as glibc's loader will find
    /// them in the image, breadth first from the binary's `DT_NEEDED`, each name loaded once.
    fn for_binary(path: &Path, binary: Vec<u8>) -> Result<Bundle, KindError> {
        let linking = Linking::read(&binary)
            .map_err(|e| KindError::ControllerNotElf { path: path.to_path_buf(), detail: e.to_string() })?;
        let Some(interpreter) = &linking.interpreter else {
            return Ok(Bundle { binary, libraries: Vec::new() });
        };
        let read = |library: &Path| -> Result<(Vec<u8>, Linking), KindError> {
            let unreadable = |detail| KindError::LibraryUnreadable {
                binary: path.to_path_buf(),
                library: library.to_path_buf(),
                detail,
            };
            let bytes = std::fs::read(library).map_err(|e| unreadable(e.to_string()))?;
            let linking = Linking::read(&bytes).map_err(|e| unreadable(e.to_string()))?;
            Ok((bytes, linking))
        };
        // The kernel maps the loader before anything else, and glibc answers a DT_NEEDED on the
        // loader's soname (Rust's std has one) with the loader itself.
        let loader_path = lexical(Path::new(interpreter));
        let (bytes, loader) = read(&loader_path)?;
        let mut loaded: HashSet<String> = loader.soname.into_iter().collect();
        let mut libraries = vec![(loader_path, bytes)];
        // Who asked for each name, with its search path; the binary is /kubectl-kueue_ext in the
        // image, so its $ORIGIN there is `/`.
        let mut objects = vec![(path.to_path_buf(), SearchPath::of(&linking, Path::new("/"), &SearchPath::default()))];
        let mut queue: VecDeque<(String, usize)> = linking.needed.into_iter().map(|name| (name, 0)).collect();
        while let Some((name, needed_by)) = queue.pop_front() {
            if !loaded.insert(name.clone()) {
                continue;
            }
            let (requester, search) = &objects[needed_by];
            let found = locate(&name, search, Path::is_file).ok_or_else(|| KindError::LibraryMissing {
                binary: path.to_path_buf(),
                library: name.clone(),
                needed_by: requester.clone(),
                searched: search.dirs().iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>().join(", "),
            })?;
            let (bytes, linking) = read(&found)?;
            loaded.extend(linking.soname.clone());
            let search = SearchPath::of(&linking, found.parent().unwrap_or(Path::new("/")), search);
            queue.extend(linking.needed.into_iter().map(|name| (name, objects.len())));
            objects.push((found.clone(), search));
            libraries.push((found, bytes));
        }
        Ok(Bundle { binary, libraries })
    }
}

/// Why a file cannot be read as the loader reads it.
#[derive(Debug, thiserror::Error)]
enum NotElf {
    #[error(transparent)]
    Object(#[from] object::read::Error),
    #[error("the dynamic string table is in no loadable segment")]
    NoStringTable,
}

/// What the loader reads from an ELF file before running it.
#[derive(Debug, Default)]
struct Linking {
    /// `PT_INTERP`: the loader the kernel starts first; none for a static binary.
    interpreter: Option<String>,
    /// `DT_SONAME`: a second name the loader knows the file by once it is loaded.
    soname: Option<String>,
    /// `DT_NEEDED`, in order.
    needed: Vec<String>,
    /// `DT_RPATH` and `DT_RUNPATH`, as written: `:`-separated, maybe with `$ORIGIN`.
    rpath: Vec<String>,
    runpath: Vec<String>,
}

impl Linking {
    /// Reads a 64-bit ELF file through its program headers, as the loader does, so a file
    /// stripped of its section headers reads the same.
    fn read(elf: &[u8]) -> Result<Linking, NotElf> {
        let header = FileHeader64::<Endianness>::parse(elf)?;
        let endian = header.endian()?;
        let segments = header.program_headers(endian, elf)?;
        let mut linking = Linking::default();
        let mut dynamic: &[Dyn64<Endianness>] = &[];
        for segment in segments {
            if let Some(path) = segment.interpreter(endian, elf)? {
                linking.interpreter = Some(String::from_utf8_lossy(path).into_owned());
            }
            if let Some(entries) = segment.dynamic(endian, elf)? {
                dynamic = entries;
            }
        }
        let entries: Vec<_> = dynamic.iter().take_while(|entry| entry.tag(endian) != DT_NULL).collect();
        let value = |tag| entries.iter().find(|entry| entry.tag(endian) == tag).map(|entry| entry.val(endian));
        let (Some(address), Some(size)) = (value(DT_STRTAB), value(DT_STRSZ)) else {
            return Ok(linking);
        };
        // DT_STRTAB is an address in memory; the loadable segment holding it says where it lies in the file.
        let strings = segments
            .iter()
            .filter(|segment| segment.p_type(endian) == PT_LOAD)
            .find_map(|segment| segment.data_range(endian, elf, address, size).ok().flatten())
            .ok_or(NotElf::NoStringTable)?;
        let strings = StringTable::new(strings, 0, size);
        for entry in entries {
            let string = || entry.string(endian, strings).map(|s| String::from_utf8_lossy(s).into_owned());
            match entry.tag(endian) {
                DT_NEEDED => linking.needed.push(string()?),
                DT_SONAME => linking.soname = Some(string()?),
                DT_RPATH => linking.rpath.push(string()?),
                DT_RUNPATH => linking.runpath.push(string()?),
                _ => {}
            }
        }
        Ok(linking)
    }
}

/// Where the loader looks for the libraries one object needs, in glibc's order, less what the
/// image does not have (LD_LIBRARY_PATH, /etc/ld.so.cache).
#[derive(Debug, Default, PartialEq)]
struct SearchPath {
    /// `DT_RPATH` of the object, then of the object that loaded it, and so on up to the binary.
    rpath: Vec<PathBuf>,
    /// `DT_RUNPATH` of the object alone; when it has one, no `DT_RPATH` is searched.
    runpath: Vec<PathBuf>,
}

impl SearchPath {
    /// The search path of an object that sits in `origin` in the image and was loaded by an
    /// object with the search path `loader`.
    fn of(linking: &Linking, origin: &Path, loader: &SearchPath) -> SearchPath {
        let origin = origin.to_string_lossy();
        let dirs = |lists: &[String]| -> Vec<PathBuf> {
            lists
                .iter()
                .flat_map(|list| list.split(':'))
                .map(|dir| lexical(Path::new(&dir.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin))))
                .collect()
        };
        // glibc drops an object's DT_RPATH when it has a DT_RUNPATH, also for the objects it loads.
        let own = if linking.runpath.is_empty() { dirs(&linking.rpath) } else { Vec::new() };
        SearchPath {
            rpath: own.into_iter().chain(loader.rpath.iter().cloned()).collect(),
            runpath: dirs(&linking.runpath),
        }
    }

    /// The directories searched, in order.
    fn dirs(&self) -> Vec<PathBuf> {
        let rpath = if self.runpath.is_empty() { self.rpath.as_slice() } else { &[] };
        rpath.iter().chain(&self.runpath).cloned().chain(system_dirs()).collect()
    }
}

/// glibc's built-in directories, its last resort, and the only one in an image without
/// /etc/ld.so.cache. Each distribution builds in its own (Debian the multiarch ones, /lib and
/// /usr/lib; Fedora /lib64 and /usr/lib64) and keeps its libraries in those, so their union finds
/// the file the loader will.
fn system_dirs() -> Vec<PathBuf> {
    let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("/lib/{multiarch}"),
        format!("/usr/lib/{multiarch}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// The file the loader opens for `name`: a name with a slash is a path, others are looked for in
/// each directory of the search path in turn.
fn locate(name: &str, search: &SearchPath, exists: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    if name.contains('/') {
        let path = lexical(Path::new(name));
        return exists(&path).then_some(path);
    }
    search.dirs().into_iter().map(|dir| dir.join(name)).find(|path| exists(path))
}

/// `path` as the kernel resolves it in the image, from `/` (also the working directory there):
/// `.` and `..` taken away by hand, which is exact because every directory in the image is real.
fn lexical(path: &Path) -> PathBuf {
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(part) => resolved.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::elf::{PT_DYNAMIC, PT_INTERP};
    use std::io::Read;

    /// The tar's entries: name, mode, content.
    fn entries(context: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut archive = tar::Archive::new(context);
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            assert_eq!(entry.header().entry_type(), tar::EntryType::Regular);
            let name = entry.path().unwrap().display().to_string();
            let mode = entry.header().mode().unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            seen.push((name, mode, data));
        }
        seen
    }

    /// A 64-bit little-endian ELF file asking for `interpreter` and needing `needed`: the program
    /// headers and dynamic section the loader reads, nothing else.
    fn elf(interpreter: Option<&str>, needed: &[&str]) -> Vec<u8> {
        const HEADER: usize = 0x40;
        const SEGMENT: usize = 0x38;
        let mut strings = vec![0u8];
        let mut dynamic = Vec::new();
        for name in needed {
            dynamic.push((DT_NEEDED, strings.len() as u64));
            strings.extend(name.as_bytes());
            strings.push(0);
        }
        let interp = interpreter.map(|path| format!("{path}\0")).unwrap_or_default();
        let segments = 1 + usize::from(interpreter.is_some()) + usize::from(!needed.is_empty());
        let interp_at = HEADER + segments * SEGMENT;
        let strings_at = interp_at + interp.len();
        let dynamic_at = strings_at + strings.len();
        dynamic.extend([(DT_STRTAB, strings_at as u64), (DT_STRSZ, strings.len() as u64), (DT_NULL, 0)]);
        let end = dynamic_at + 16 * dynamic.len();
        let mut program = vec![(PT_LOAD, 0, end)];
        if interpreter.is_some() {
            program.push((PT_INTERP, interp_at, interp.len()));
        }
        if !needed.is_empty() {
            program.push((PT_DYNAMIC, dynamic_at, end - dynamic_at));
        }

        let mut elf = vec![0u8; end];
        let mut put = |at: usize, bytes: &[u8]| elf[at..at + bytes.len()].copy_from_slice(bytes);
        put(0, b"\x7fELF\x02\x01\x01");
        put(0x20, &(HEADER as u64).to_le_bytes());
        put(0x36, &(SEGMENT as u16).to_le_bytes());
        put(0x38, &(program.len() as u16).to_le_bytes());
        for (i, (kind, offset, size)) in program.into_iter().enumerate() {
            let at = HEADER + i * SEGMENT;
            put(at, &kind.to_le_bytes());
            // Loaded where it lies in the file: p_offset = p_vaddr, p_filesz = p_memsz.
            put(at + 0x08, &(offset as u64).to_le_bytes());
            put(at + 0x10, &(offset as u64).to_le_bytes());
            put(at + 0x20, &(size as u64).to_le_bytes());
            put(at + 0x28, &(size as u64).to_le_bytes());
        }
        put(interp_at, interp.as_bytes());
        put(strings_at, &strings);
        for (i, (tag, value)) in dynamic.iter().enumerate() {
            put(dynamic_at + 16 * i, &tag.to_le_bytes());
            put(dynamic_at + 16 * i + 8, &value.to_le_bytes());
        }
        elf
    }

    /// The loader this test executable asks for, as it is dynamically linked like any default build.
    fn this_loader() -> String {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        Linking::read(&me).unwrap().interpreter.expect("the test executable is dynamically linked")
    }

    #[test]
    fn a_static_binary_goes_alone_into_the_image() {
        let binary = elf(None, &[]);
        let bundle = Bundle::for_binary(Path::new("/bin/static"), binary.clone()).unwrap();
        assert!(bundle.libraries.is_empty());
        let seen = entries(&build_context(&bundle));
        let dockerfile = "FROM scratch\nCOPY kubectl-kueue_ext /kubectl-kueue_ext\nUSER 65532:65532\n\
                          ENTRYPOINT [\"/kubectl-kueue_ext\"]\n";
        assert_eq!(
            seen,
            [("Dockerfile".to_string(), 0o644, dockerfile.as_bytes().to_vec()), (BINARY.to_string(), 0o755, binary)]
        );
    }

    #[test]
    fn a_dynamic_binary_brings_its_loader_and_libraries_at_their_paths() {
        let me = std::env::current_exe().unwrap();
        let (path, bundle) = controller_binary(Some(&me)).unwrap();
        assert_eq!(path, me);
        let paths: Vec<&PathBuf> = bundle.libraries.iter().map(|(path, _)| path).collect();
        let loader = lexical(Path::new(&this_loader()));
        assert_eq!(*paths[0], loader, "the loader comes first");
        assert!(paths.iter().any(|path| path.file_name() == Some("libc.so.6".as_ref())), "{paths:?}");
        // The loader is found again by its soname in the library directories, but is loaded once.
        assert_eq!(paths.iter().filter(|path| path.file_name() == loader.file_name()).count(), 1, "{paths:?}");
        assert_eq!(paths.iter().collect::<HashSet<_>>().len(), paths.len(), "{paths:?}");

        let seen = entries(&build_context(&bundle));
        assert_eq!(seen.len(), 2 + paths.len());
        assert_eq!(seen[0].0, "Dockerfile");
        let dockerfile = String::from_utf8(seen[0].2.clone()).unwrap();
        assert!(dockerfile.starts_with("FROM scratch\nCOPY rootfs/ /\n"), "{dockerfile}");
        assert_eq!((seen[1].0.as_str(), seen[1].1), (BINARY, 0o755));
        for ((name, mode, data), path) in seen[2..].iter().zip(&paths) {
            assert_eq!(*name, format!("rootfs{}", path.display()));
            assert_eq!(*mode, 0o755);
            assert_eq!(*data, std::fs::read(path).unwrap(), "{name} holds the file, not a link");
        }
    }

    #[test]
    fn each_library_is_loaded_once_whoever_needs_it() {
        // libc.so.6 needs the loader by its soname, which the loader already answers.
        let binary = elf(Some(&this_loader()), &["libc.so.6", "libc.so.6"]);
        let bundle = Bundle::for_binary(Path::new("/bin/app"), binary).unwrap();
        let names: Vec<_> = bundle.libraries.iter().map(|(path, _)| path.file_name().unwrap()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(names[1], "libc.so.6");
    }

    #[test]
    fn a_missing_library_is_named_with_the_binary_and_the_way_out() {
        let binary = elf(Some(&this_loader()), &["libkueue-ext-nowhere.so.7"]);
        let err = Bundle::for_binary(Path::new("/opt/app/kubectl-kueue_ext"), binary).err().unwrap();
        assert!(matches!(&err, KindError::LibraryMissing { library, .. } if library == "libkueue-ext-nowhere.so.7"));
        let message = err.to_string();
        assert!(message.starts_with("/opt/app/kubectl-kueue_ext cannot run in the controller image"), "{message}");
        assert!(message.contains("libkueue-ext-nowhere.so.7, which is in none of /lib/"), "{message}");
        assert!(message.contains("--controller-binary"), "{message}");
    }

    #[test]
    fn unreadable_files_are_named() {
        let err = Bundle::for_binary(Path::new("/opt/app/tool"), b"#!/bin/sh\n".to_vec()).err().unwrap();
        assert_eq!(
            err.to_string(),
            "/opt/app/tool cannot be the controller: it is not a 64-bit ELF executable (Invalid ELF header size or \
             alignment); pass a Linux build of this plugin with --controller-binary (or KUEUE_EXT_CONTROLLER_BINARY)"
        );

        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("ld.so");
        std::fs::write(&script, format!("#!/bin/sh\n{}\n", "#".repeat(64))).unwrap();
        let binary = elf(Some(script.to_str().unwrap()), &[]);
        let err = Bundle::for_binary(Path::new("/opt/app/tool"), binary).err().unwrap();
        assert!(matches!(&err, KindError::LibraryUnreadable { library, .. } if *library == script), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(&format!("it loads {}", script.display())), "{message}");
        assert!(message.contains("Unsupported ELF header"), "{message}");
    }

    #[test]
    fn libraries_are_found_where_the_loader_looks_first() {
        let multiarch = format!("/lib/{}-linux-gnu", std::env::consts::ARCH);
        let with = |rpath: &[&str], runpath: &[&str]| SearchPath {
            rpath: rpath.iter().map(PathBuf::from).collect(),
            runpath: runpath.iter().map(PathBuf::from).collect(),
        };
        let cases: [(&str, SearchPath, Vec<String>, Option<String>); 10] = [
            (
                "libc.so.6",
                with(&[], &[]),
                vec![format!("{multiarch}/libc.so.6"), "/usr/lib/libc.so.6".into()],
                Some(format!("{multiarch}/libc.so.6")),
            ),
            ("libz.so.1", with(&[], &[]), vec!["/usr/lib/libz.so.1".into()], Some("/usr/lib/libz.so.1".into())),
            (
                "libz.so.1",
                with(&[], &[]),
                vec!["/usr/lib/libz.so.1".into(), "/lib64/libz.so.1".into()],
                Some("/lib64/libz.so.1".into()),
            ),
            ("libz.so.1", with(&[], &[]), vec!["/usr/local/lib/libz.so.1".into()], None),
            (
                "libz.so.1",
                with(&["/opt/a", "/opt/b"], &[]),
                vec!["/opt/b/libz.so.1".into(), "/usr/lib/libz.so.1".into()],
                Some("/opt/b/libz.so.1".into()),
            ),
            (
                "libz.so.1",
                with(&["/opt/a"], &["/opt/b"]),
                vec!["/opt/a/libz.so.1".into(), "/opt/b/libz.so.1".into()],
                Some("/opt/b/libz.so.1".into()),
            ),
            (
                "libz.so.1",
                with(&["/opt/a"], &["/opt/b"]),
                vec!["/opt/a/libz.so.1".into(), "/usr/lib/libz.so.1".into()],
                Some("/usr/lib/libz.so.1".into()),
            ),
            (
                "/opt/c/libz.so.1",
                with(&[], &[]),
                vec!["/opt/c/libz.so.1".into(), "/usr/lib/libz.so.1".into()],
                Some("/opt/c/libz.so.1".into()),
            ),
            ("sub/../libz.so.1", with(&[], &[]), vec!["/libz.so.1".into()], Some("/libz.so.1".into())),
            ("./libz.so.1", with(&[], &[]), vec!["/usr/lib/libz.so.1".into()], None),
        ];
        for (name, search, files, expected) in cases {
            let exists = |path: &Path| files.iter().any(|file| Path::new(file) == path);
            assert_eq!(
                locate(name, &search, exists),
                expected.map(PathBuf::from),
                "{name} in {search:?} among {files:?}"
            );
        }
    }

    #[test]
    fn search_paths_expand_origin_and_let_runpath_hide_rpath() {
        let paths = |dirs: &[&str]| dirs.iter().map(PathBuf::from).collect::<Vec<_>>();
        let linking = |rpath: &str, runpath: &str| Linking {
            rpath: [rpath].iter().filter(|s| !s.is_empty()).map(|s| s.to_string()).collect(),
            runpath: [runpath].iter().filter(|s| !s.is_empty()).map(|s| s.to_string()).collect(),
            ..Linking::default()
        };
        let parent = SearchPath { rpath: paths(&["/opt/parent"]), runpath: Vec::new() };
        let cases = [
            (linking("", ""), "/usr/lib", &parent, paths(&["/opt/parent"]), paths(&[])),
            (
                linking("$ORIGIN/../lib:/opt/x", ""),
                "/usr/app",
                &parent,
                paths(&["/usr/lib", "/opt/x", "/opt/parent"]),
                paths(&[]),
            ),
            (
                linking("/opt/ignored", "${ORIGIN}/plugins"),
                "/opt/app",
                &parent,
                paths(&["/opt/parent"]),
                paths(&["/opt/app/plugins"]),
            ),
            (linking("$ORIGIN/lib", ""), "/", &SearchPath::default(), paths(&["/lib"]), paths(&[])),
            (linking("", "lib:./x/./y"), "/opt/app", &SearchPath::default(), paths(&[]), paths(&["/lib", "/x/y"])),
        ];
        for (linking, origin, loader, rpath, runpath) in cases {
            let search = SearchPath::of(&linking, Path::new(origin), loader);
            assert_eq!(search, SearchPath { rpath, runpath }, "{linking:?} in {origin}");
        }
    }

    #[test]
    fn linking_reads_the_interpreter_and_needed_libraries() {
        let linking =
            Linking::read(&elf(Some("/lib64/ld-linux-x86-64.so.2"), &["libgcc_s.so.1", "libc.so.6"])).unwrap();
        assert_eq!(linking.interpreter.as_deref(), Some("/lib64/ld-linux-x86-64.so.2"));
        assert_eq!(linking.needed, ["libgcc_s.so.1", "libc.so.6"]);
        let me = Linking::read(&std::fs::read(std::env::current_exe().unwrap()).unwrap()).unwrap();
        assert!(me.needed.iter().any(|name| name == "libc.so.6"), "{me:?}");
    }

    #[test]
    fn tags_change_with_any_file_in_the_image() {
        let bundle = |binary: &[u8], libraries: &[(&str, &[u8])]| Bundle {
            binary: binary.to_vec(),
            libraries: libraries.iter().map(|(path, bytes)| (PathBuf::from(path), bytes.to_vec())).collect(),
        };
        let base = tag_for(&bundle(b"one", &[("/lib/libc.so.6", b"c")]));
        assert_eq!(base, tag_for(&bundle(b"one", &[("/lib/libc.so.6", b"c")])));
        assert!(base.starts_with(&format!("{REPOSITORY}:v{}-", env!("CARGO_PKG_VERSION"))));
        for other in [
            bundle(b"two", &[("/lib/libc.so.6", b"c")]),
            bundle(b"one", &[("/lib/libc.so.6", b"C")]),
            bundle(b"one", &[("/usr/lib/libc.so.6", b"c")]),
            bundle(b"one", &[]),
        ] {
            assert_ne!(base, tag_for(&other));
        }
    }
}
