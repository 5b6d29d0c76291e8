//! Reading what `submit` applies: files and directories (recursive, sorted), multi-document
//! YAML or JSON, each document remembered with its file, index and line for error messages.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where a document came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: String,
    /// 1-based index of the document in its file.
    pub index: usize,
    /// 1-based line where the document starts (or where a syntax error is).
    pub line: usize,
    /// 1-based column of a syntax error.
    pub column: Option<usize>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(column) => write!(f, "{}:{}:{column} (document {})", self.file, self.line, self.index),
            None => write!(f, "{}:{} (document {})", self.file, self.line, self.index),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Document {
    pub origin: Origin,
    pub object: Value,
}

/// A problem with one document (or file), naming where and, if known, which field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub origin: Origin,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: {field}: {}", self.origin, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl Problem {
    pub fn new(origin: &Origin, field: Option<&str>, message: impl Into<String>) -> Self {
        Problem { origin: origin.clone(), field: field.map(String::from), message: message.into() }
    }
}

const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// A path given that names no readable file or directory.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("{}: {source}", .dir.display())]
    Dir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: no such file or directory", .0.display())]
    Missing(PathBuf),
}

/// The files named by `paths`: files as given, directories walked recursively in name order
/// keeping `.yaml`, `.yml` and `.json`. `-` stands for standard input.
pub fn collect_files(paths: &[PathBuf], recursive: bool) -> Result<Vec<PathBuf>, Unreadable> {
    let mut out = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" || path.is_file() {
            out.push(path.clone());
        } else if path.is_dir() {
            walk(path, recursive, &mut out).map_err(|source| Unreadable::Dir { dir: path.clone(), source })?;
        } else {
            return Err(Unreadable::Missing(path.clone()));
        }
    }
    Ok(out)
}

/// A directory's manifests in name order; its subdirectories' too when `recursive` (kubectl's `-R`).
fn walk(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            if recursive {
                walk(&entry, recursive, out)?;
            }
        } else if entry.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e)) {
            out.push(entry);
        }
    }
    Ok(())
}

/// Largest object the API server stores (etcd's request limit); bigger ones are refused here,
/// with the file named, rather than by the server.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// Reads and parses one file: bytes that are not UTF-8, a file without objects and objects over
/// the size limit are problems named by file (and document).
pub fn read(file: &str, bytes: &[u8]) -> Result<Vec<Document>, Vec<Problem>> {
    let whole = Origin { file: file.to_string(), index: 0, line: 1, column: None };
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let line = bytes[..err.valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
            let at = Origin { line, ..whole };
            return Err(vec![Problem::new(&at, None, "is not UTF-8 text; save it as UTF-8 YAML or JSON")]);
        }
    };
    let docs = parse(file, text)?;
    if docs.is_empty() {
        return Err(vec![Problem::new(&whole, None, "contains no objects")]);
    }
    let too_big: Vec<Problem> = docs
        .iter()
        .filter(|d| serde_json::to_vec(&d.object).map(|v| v.len()).unwrap_or(0) > MAX_OBJECT_BYTES)
        .map(|d| Problem::new(&d.origin, None, "is larger than 1.5 MiB, the most the API server stores in one object"))
        .collect();
    if too_big.is_empty() { Ok(docs) } else { Err(too_big) }
}

/// Splits a YAML stream at `---` lines, keeping each document's first line number.
fn split_documents(text: &str) -> Vec<(usize, String)> {
    let mut docs = vec![(1usize, String::new())];
    for (i, line) in text.lines().enumerate() {
        let marker = line.trim_end();
        if marker == "---" || marker.starts_with("--- ") || marker.starts_with("---#") {
            docs.push((i + 2, String::new()));
        } else if marker == "..." {
            continue;
        } else if let Some((_, doc)) = docs.last_mut() {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs
}

/// Parses every non-empty document of `text` (YAML, which includes JSON).
pub fn parse(file: &str, text: &str) -> Result<Vec<Document>, Vec<Problem>> {
    let mut documents = Vec::new();
    let mut problems = Vec::new();
    let mut index = 0;
    for (line, body) in split_documents(text) {
        let meaningful = body.lines().any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        if !meaningful {
            continue;
        }
        index += 1;
        let origin = Origin { file: file.to_string(), index, line, column: None };
        match serde_saphyr::from_str::<Value>(&body) {
            Ok(object) if object.is_object() => documents.push(Document { origin, object }),
            Ok(_) => {
                problems.push(Problem::new(&origin, None, "is not a YAML mapping (an object with apiVersion and kind)"))
            }
            Err(err) => {
                let at = err.location().map(|l| Origin {
                    line: line + l.line() as usize - 1,
                    column: Some(l.column() as usize),
                    ..origin.clone()
                });
                let message = err.to_string().lines().next().unwrap_or("invalid YAML").to_string();
                problems.push(Problem::new(at.as_ref().unwrap_or(&origin), None, format!("invalid YAML: {message}")));
            }
        }
    }
    if problems.is_empty() { Ok(documents) } else { Err(problems) }
}

fn non_empty(value: &Value) -> bool {
    value.as_str().is_some_and(|s| !s.is_empty())
}

/// An object named by `metadata.generateName` alone: the API server names it when it is
/// created.
pub fn generates_name(object: &Value) -> bool {
    !non_empty(&object["metadata"]["name"]) && non_empty(&object["metadata"]["generateName"])
}

/// Checks the fields every object needs before anything is sent to a cluster.
pub fn check_shape(doc: &Document) -> Vec<Problem> {
    let mut problems = Vec::new();
    for field in ["apiVersion", "kind"] {
        if !non_empty(&doc.object[field]) {
            problems.push(Problem::new(&doc.origin, Some(field), "Required value: must be a non-empty string"));
        }
    }
    let metadata = &doc.object["metadata"];
    if !non_empty(&metadata["name"]) && !non_empty(&metadata["generateName"]) {
        // The API server's words for the same.
        problems.push(Problem::new(
            &doc.origin,
            Some("metadata.name"),
            "Required value: name or generateName is required",
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_keep_their_index_and_line() {
        let text = "# queues\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n";
        let docs = parse("q.yaml", text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].origin, Origin { file: "q.yaml".into(), index: 1, line: 3, column: None });
        assert_eq!(docs[1].origin, Origin { file: "q.yaml".into(), index: 2, line: 9, column: None });
        assert_eq!(docs[1].object["metadata"]["name"], "b");
    }

    #[test]
    fn yaml_errors_point_at_the_file_line() {
        let text = "apiVersion: v1\nkind: Namespace\n---\napiVersion: v1\nkind: [unclosed\n";
        let problems = parse("bad.yaml", text).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].origin.index, 2);
        assert!(problems[0].origin.line >= 4, "{}", problems[0]);
        assert!(problems[0].origin.column.is_some(), "syntax errors carry a column: {}", problems[0]);
        assert!(problems[0].to_string().starts_with("bad.yaml:"), "{}", problems[0]);
    }

    #[test]
    fn json_is_yaml_too() {
        let docs = parse("x.json", r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}"#).unwrap();
        assert_eq!(docs[0].object["kind"], "Namespace");
    }

    #[test]
    fn missing_required_fields_are_named() {
        let docs = parse("x.yaml", "apiVersion: v1\nmetadata: {}\n").unwrap();
        let fields: Vec<String> = check_shape(&docs[0]).into_iter().filter_map(|p| p.field).collect();
        assert_eq!(fields, ["kind", "metadata.name"]);
        let unnamed = parse("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {generateName: \"\"}\n").unwrap();
        assert_eq!(
            check_shape(&unnamed[0]).iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["x.yaml:1 (document 1): metadata.name: Required value: name or generateName is required"]
        );
    }

    /// Kueue's getting-started Job (`kubectl create -f`) is named by the API server.
    #[test]
    fn a_generated_name_is_name_enough() {
        let docs =
            parse("job.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: sample-job-}\n").unwrap();
        assert_eq!(check_shape(&docs[0]), []);
        assert!(generates_name(&docs[0].object));
        let named = serde_json::json!({"metadata": {"name": "sample-job", "generateName": "sample-job-"}});
        assert!(!generates_name(&named), "a name wins, as on the API server");
    }

    #[test]
    fn hostile_inputs_give_clear_errors() {
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
        let cases: [(&str, &[u8], &str); 5] = [
            ("empty.yaml", b"", "contains no objects"),
            ("latin1.yaml", b"apiVersion: v1\nkind: Namespace\nmetadata: {name: caf\xe9}\n", "is not UTF-8"),
            ("dup.yaml", b"apiVersion: v1\nkind: Namespace\nkind: Pod\nmetadata: {name: a}\n", "invalid YAML"),
            ("bomb.yaml", bomb.as_bytes(), "invalid YAML"),
            ("syntax.yaml", b"apiVersion: v1\nkind: : :\n", "invalid YAML"),
        ];
        for (file, bytes, expected) in cases {
            let problems = read(file, bytes).unwrap_err();
            let text = problems[0].to_string();
            assert!(text.starts_with(file) && text.contains(expected), "{file}: {text}");
        }
        let latin1 = read("l.yaml", b"apiVersion: v1\nkind: Namespace\nmetadata: {name: caf\xe9}\n").unwrap_err();
        assert_eq!(latin1[0].origin.line, 3, "the line of the first bad byte");
    }

    #[test]
    fn objects_over_the_api_server_limit_are_refused() {
        let big = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big}}\ndata: {{blob: {}}}\n",
            "x".repeat(5 * 1024 * 1024)
        );
        let problems = read("big.yaml", big.as_bytes()).unwrap_err();
        assert!(problems[0].to_string().contains("larger than 1.5 MiB"), "{}", problems[0]);
    }

    #[test]
    fn directories_are_read_in_order_keeping_manifests_only_and_walked_with_recursive() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.yaml", "a/z.yml", "a/notes.txt", "c.json"] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let names = |recursive| -> Vec<String> {
            let files = collect_files(&[dir.path().to_path_buf()], recursive).unwrap();
            files.iter().map(|f| f.strip_prefix(dir.path()).unwrap().display().to_string()).collect()
        };
        assert_eq!(names(true), ["a/z.yml", "b.yaml", "c.json"]);
        assert_eq!(names(false), ["b.yaml", "c.json"], "as kubectl -f DIR: the directory's own files");
        let missing = collect_files(&[dir.path().join("missing")], false).unwrap_err();
        assert!(missing.to_string().contains("no such file"));
    }
}
