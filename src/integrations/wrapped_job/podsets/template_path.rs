//! Paths into a component's `template`, as AppWrapper writes them (`template.spec.replicatedJobs[0]
//! .template.spec.template`): parsed, read, and turned into JSON pointers to write through.

use serde_json::Value;

/// Where every path starts: the component's template itself.
pub const TEMPLATE: &str = "template";

/// Why a path is not one of AppWrapper's: `template`, then `.field` or `[index]` elements.
#[derive(Debug, thiserror::Error)]
pub enum BadPath {
    #[error("path {path:?} must start with {TEMPLATE:?}")]
    Start { path: String },
    #[error("path {path:?} has an empty field name after {parsed:?}")]
    EmptyField { path: String, parsed: String },
    #[error("path {path:?} has an unclosed '[' after {parsed:?}")]
    Unclosed { path: String, parsed: String },
    #[error("path {path:?} has an invalid index {index:?} after {parsed:?}")]
    Index { path: String, index: String, parsed: String },
    #[error("path {path:?} has {rest:?} after {parsed:?}; expected '.field' or '[index]'")]
    Unexpected { path: String, rest: String, parsed: String },
}

/// Why a path in a component's `template` holds no pod template; each names the value at fault.
#[derive(Debug, thiserror::Error)]
pub enum NotAPodTemplate {
    #[error(transparent)]
    Path(#[from] BadPath),
    #[error("{0} does not exist")]
    Missing(String),
    #[error("{0} is not an object")]
    NotAnObject(String),
    #[error("{0} is not a list")]
    NotAList(String),
    #[error("{at} is out of range: the list has {len} elements")]
    OutOfRange { at: String, len: usize },
    #[error("{0} has no spec")]
    NoSpec(String),
    #[error("{0}.spec has no containers")]
    NoContainers(String),
    #[error("{path}.spec is not a v1 PodSpec: {source}")]
    NotAPodSpec {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}.metadata.{key} is not a map of strings: {source}")]
    NotAStringMap {
        path: String,
        key: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// One element of a path after `template`.
enum Step<'a> {
    Field(&'a str),
    Index(usize),
}

fn parse_path(path: &str) -> Result<Vec<Step<'_>>, BadPath> {
    let mut rest = path.strip_prefix(TEMPLATE).ok_or_else(|| BadPath::Start { path: path.to_owned() })?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        let parsed = || path[..path.len() - rest.len()].to_owned();
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return Err(BadPath::EmptyField { path: path.to_owned(), parsed: parsed() });
            }
            steps.push(Step::Field(&after[..end]));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let Some((index, tail)) = after.split_once(']') else {
                return Err(BadPath::Unclosed { path: path.to_owned(), parsed: parsed() });
            };
            let Ok(index) = index.parse() else {
                return Err(BadPath::Index { path: path.to_owned(), index: index.to_owned(), parsed: parsed() });
            };
            steps.push(Step::Index(index));
            rest = tail;
        } else {
            return Err(BadPath::Unexpected { path: path.to_owned(), rest: rest.to_owned(), parsed: parsed() });
        }
    }
    Ok(steps)
}

/// The value at `path` in a component's `template`, or why there is none.
pub fn value_at<'v>(template: &'v Value, path: &str) -> Result<&'v Value, NotAPodTemplate> {
    let mut cursor = template;
    let mut at = TEMPLATE.to_owned();
    for step in parse_path(path)? {
        cursor = match step {
            Step::Field(name) => {
                let object = cursor.as_object().ok_or_else(|| NotAPodTemplate::NotAnObject(at.clone()))?;
                at = format!("{at}.{name}");
                object.get(name).ok_or_else(|| NotAPodTemplate::Missing(at.clone()))?
            }
            Step::Index(i) => {
                let list = cursor.as_array().ok_or_else(|| NotAPodTemplate::NotAList(at.clone()))?;
                let len = list.len();
                at = format!("{at}[{i}]");
                list.get(i).ok_or_else(|| NotAPodTemplate::OutOfRange { at: at.clone(), len })?
            }
        };
    }
    Ok(cursor)
}

/// The JSON pointer of `path` inside the template.
pub fn json_pointer(path: &str) -> Result<String, BadPath> {
    Ok(parse_path(path)?
        .iter()
        .map(|step| match step {
            Step::Field(name) => format!("/{}", name.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => format!("/{i}"),
        })
        .collect())
}
