//! Kueue's Configuration file with our kinds added to its lists of external frameworks, or taken
//! out again, as an operator edits it: the file's comments and layout kept, only lines of ours
//! added or removed. Every edit is checked by reading the result back; a file whose shape the
//! line edit cannot follow (flow style, say) is written out whole instead, without comments.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A list of Kueue's Configuration that names external frameworks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    /// `integrations.externalFrameworks`: `- Kind.version.group`.
    Integrations,
    /// `multiKueue.externalFrameworks`: `- name: Kind.version.group`.
    MultiKueue,
}

impl List {
    pub const ALL: [List; 2] = [List::Integrations, List::MultiKueue];

    /// The top-level key and the list's key under it.
    pub fn path(self) -> (&'static str, &'static str) {
        match self {
            List::Integrations => ("integrations", "externalFrameworks"),
            List::MultiKueue => ("multiKueue", "externalFrameworks"),
        }
    }

    fn item(self, framework: &str) -> Value {
        match self {
            List::Integrations => json!(framework),
            List::MultiKueue => json!({"name": framework}),
        }
    }

    fn line(self, framework: &str) -> String {
        match self {
            List::Integrations => format!("- {framework}"),
            List::MultiKueue => format!("- name: {framework}"),
        }
    }

    fn framework_of(self, item: &Value) -> Option<&str> {
        match self {
            List::Integrations => item.as_str(),
            List::MultiKueue => item["name"].as_str(),
        }
    }
}

/// What an install added to Kueue's Configuration, so that `uninstall` takes out exactly that:
/// the entries, and the keys that did not exist before.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrations: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub multi_kueue: Vec<String>,
    /// Keys made by the install, `integrations` or `integrations.externalFrameworks` and so on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_keys: Vec<String>,
    /// Kueue's own integrations of kinds the install integrates by configuration, taken out
    /// of `integrations.frameworks` (one owner per kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_frameworks: Vec<Removed>,
}

/// An entry taken out of `integrations.frameworks`: where it was and its line as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    pub framework: String,
    pub index: usize,
    pub line: String,
}

impl Added {
    fn entries_mut(&mut self, list: List) -> &mut Vec<String> {
        match list {
            List::Integrations => &mut self.integrations,
            List::MultiKueue => &mut self.multi_kueue,
        }
    }

    pub fn entries(&self, list: List) -> &[String] {
        match list {
            List::Integrations => &self.integrations,
            List::MultiKueue => &self.multi_kueue,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.integrations.is_empty() && self.multi_kueue.is_empty() && self.removed_frameworks.is_empty()
    }

    /// This record and `later` together (a second install with more kinds).
    pub fn merged(mut self, later: Added) -> Added {
        for list in List::ALL {
            let entries = self.entries_mut(list);
            for entry in later.entries(list) {
                if !entries.contains(entry) {
                    entries.push(entry.clone());
                }
            }
        }
        for key in later.created_keys {
            if !self.created_keys.contains(&key) {
                self.created_keys.push(key);
            }
        }
        self.removed_frameworks.extend(later.removed_frameworks);
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("not YAML: {0}")]
    Unreadable(#[from] serde_saphyr::Error),
    #[error("not a Configuration: {0}")]
    NotAMapping(&'static str),
    #[error(transparent)]
    Unwritable(#[from] serde_saphyr::SerializeError),
}

/// The file after an edit, and whether its comments survived.
#[derive(Debug, PartialEq, Eq)]
pub struct Edited {
    pub text: String,
    /// The line edit could not follow the file: it was written out whole, comments lost.
    pub rewritten: bool,
}

fn parse(text: &str) -> Result<Value, EditError> {
    let config: Value = serde_saphyr::from_str(text)?;
    if !config.is_object() {
        return Err(EditError::NotAMapping("the file is not a mapping"));
    }
    Ok(config)
}

/// The frameworks `list` names in the Configuration `text` (none when the list is absent).
pub fn listed(text: &str, list: List) -> Result<Vec<String>, EditError> {
    let config = parse(text)?;
    let (top, key) = list.path();
    let items = config[top][key].as_array().into_iter().flatten();
    Ok(items.filter_map(|item| list.framework_of(item)).map(str::to_string).collect())
}

/// What Kueue takes for `integrations.frameworks` when a Configuration names none.
const DEFAULT_FRAMEWORKS: [&str; 1] = ["batch/job"];

/// Kueue's own integrations a Configuration enables, as `integrations.frameworks` names them.
pub fn built_in_frameworks(text: &str) -> Result<Vec<String>, EditError> {
    let config = if text.trim().is_empty() { json!({}) } else { parse(text)? };
    let named: Vec<String> = config
        .pointer("/integrations/frameworks")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    Ok(if named.is_empty() { DEFAULT_FRAMEWORKS.map(String::from).to_vec() } else { named })
}

/// `text` with every framework of `wanted` that `list` lacks added to it (an empty `wanted` for
/// a list adds nothing), and Kueue's own `replaced` integrations taken out of
/// `integrations.frameworks`. `None` when there was nothing to do.
pub fn add(
    text: &str,
    wanted: &[(List, Vec<String>)],
    replaced: &[String],
) -> Result<Option<(Edited, Added)>, EditError> {
    let mut config = parse(text)?;
    let mut added = Added::default();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut follows = true;
    for framework in replaced {
        let Some(items) = config.pointer_mut("/integrations/frameworks").and_then(Value::as_array_mut) else { break };
        let Some(index) = items.iter().position(|item| item.as_str() == Some(framework)) else { continue };
        items.remove(index);
        let line = take_out_framework(&mut lines, index);
        follows = follows && line.is_some();
        let line = line.unwrap_or_else(|| format!("- {framework}"));
        added.removed_frameworks.push(Removed { framework: framework.clone(), index, line });
    }
    for (list, frameworks) in wanted {
        let (top, key) = list.path();
        let present: Vec<String> = config[top][key]
            .as_array()
            .map(|items| items.iter().filter_map(|i| list.framework_of(i)).map(str::to_string).collect())
            .unwrap_or_default();
        let missing: Vec<&String> = frameworks.iter().filter(|f| !present.contains(f)).collect();
        if missing.is_empty() {
            continue;
        }
        if config.get(top).is_none_or(Value::is_null) {
            added.created_keys.push(top.to_string());
            config[top] = json!({});
        }
        if !config[top].is_object() {
            return Err(EditError::NotAMapping("integrations or multiKueue is not a mapping"));
        }
        if config[top].get(key).is_none_or(Value::is_null) {
            added.created_keys.push(format!("{top}.{key}"));
            config[top][key] = json!([]);
        }
        let Some(items) = config[top][key].as_array_mut() else {
            return Err(EditError::NotAMapping("an externalFrameworks that is not a list"));
        };
        items.extend(missing.iter().map(|f| list.item(f)));
        added.entries_mut(*list).extend(missing.iter().map(|f| f.to_string()));
        let new_lines: Vec<String> = missing.iter().map(|f| list.line(f)).collect();
        follows = follows && insert(&mut lines, top, key, &new_lines);
    }
    if added.is_empty() {
        return Ok(None);
    }
    Ok(Some((checked(lines, follows, &config)?, added)))
}

/// `text` without what `added` recorded: its entries, and the keys it created once they are
/// empty. `None` when none of it is there any more.
pub fn remove(text: &str, added: &Added) -> Result<Option<Edited>, EditError> {
    let mut config = parse(text)?;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut follows = true;
    let mut changed = false;
    for list in List::ALL {
        let (top, key) = list.path();
        let ours = added.entries(list);
        if let Some(items) = config.pointer_mut(&format!("/{top}/{key}")).and_then(Value::as_array_mut) {
            let before = items.len();
            items.retain(|item| !list.framework_of(item).is_some_and(|f| ours.iter().any(|o| o == f)));
            if items.len() != before {
                changed = true;
                let drop: Vec<String> = ours.iter().map(|f| list.line(f)).collect();
                follows = follows && take_out(&mut lines, top, key, &drop);
            }
        }
        let created = |path: String| added.created_keys.contains(&path);
        if created(format!("{top}.{key}")) && config[top][key].as_array().is_some_and(Vec::is_empty) {
            config.get_mut(top).and_then(Value::as_object_mut).map(|map| map.remove(key));
            changed = true;
            follows = follows && take_out_key(&mut lines, Some(top), key);
        }
        if created(top.to_string()) && config[top].as_object().is_some_and(serde_json::Map::is_empty) {
            config.as_object_mut().map(|map| map.remove(top));
            changed = true;
            follows = follows && take_out_key(&mut lines, None, top);
        }
    }
    // Back where they were, last taken out first.
    for removed in added.removed_frameworks.iter().rev() {
        let Some(items) = config.pointer_mut("/integrations/frameworks").and_then(Value::as_array_mut) else { break };
        if items.iter().any(|item| item.as_str() == Some(&removed.framework)) {
            continue;
        }
        items.insert(removed.index.min(items.len()), json!(removed.framework));
        changed = true;
        follows = follows && put_back_framework(&mut lines, removed);
    }
    if !changed {
        return Ok(None);
    }
    Ok(Some(checked(lines, follows, &config)?))
}

/// The item lines of `integrations.frameworks`, in order.
fn framework_lines(lines: &[String]) -> Option<(usize, Vec<usize>)> {
    let (_, Some(key_at), indent) = find(lines, "integrations", "frameworks") else { return None };
    let items = (key_at + 1..lines.len())
        .take_while(|&i| {
            !is_content(&lines[i])
                || indent_of(&lines[i]) > indent
                || (indent_of(&lines[i]) == indent && lines[i].trim_start().starts_with('-'))
        })
        .filter(|&i| is_content(&lines[i]) && lines[i].trim_start().starts_with('-'))
        .collect();
    Some((key_at, items))
}

/// Takes out the `index`th item line of `integrations.frameworks`, returning it as written.
fn take_out_framework(lines: &mut Vec<String>, index: usize) -> Option<String> {
    let (_, items) = framework_lines(lines)?;
    let at = *items.get(index)?;
    Some(lines.remove(at))
}

/// Puts `removed` back as the `index`th item line of `integrations.frameworks`.
fn put_back_framework(lines: &mut Vec<String>, removed: &Removed) -> bool {
    let Some((key_at, items)) = framework_lines(lines) else { return false };
    // Right after the item that preceded it, so comments between items stay where they were.
    let at = match removed.index.checked_sub(1) {
        None => key_at + 1,
        Some(before) => items.get(before).or(items.last()).map_or(key_at + 1, |&at| at + 1),
    };
    lines.insert(at, removed.line.clone());
    true
}

/// The edited lines if they read back as `config`, else `config` written out whole.
fn checked(lines: Vec<String>, follows: bool, config: &Value) -> Result<Edited, EditError> {
    let mut text = lines.join("\n");
    text.push('\n');
    if follows && serde_saphyr::from_str::<Value>(&text).ok().as_ref() == Some(config) {
        return Ok(Edited { text, rewritten: false });
    }
    Ok(Edited { text: serde_saphyr::to_string(config)?, rewritten: true })
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// A line that holds YAML content (not blank, not only a comment).
fn is_content(line: &str) -> bool {
    let trimmed = line.trim_start();
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

/// Whether `line` is `key:` with nothing after it but a comment, at `indent`.
fn opens(line: &str, key: &str, indent: usize) -> bool {
    indent_of(line) == indent
        && line.trim_start().strip_prefix(key).and_then(|rest| rest.strip_prefix(':')).is_some_and(|rest| {
            let rest = rest.trim();
            rest.is_empty() || rest.starts_with('#')
        })
}

/// Where the block under the line `at` ends: the first content line at `indent` or less.
fn block_end(lines: &[String], at: usize, indent: usize) -> usize {
    (at + 1..lines.len()).find(|&i| is_content(&lines[i]) && indent_of(&lines[i]) <= indent).unwrap_or(lines.len())
}

/// The line of the top-level `top:` and of `key:` under it, with the indent of `top`'s children.
fn find(lines: &[String], top: &str, key: &str) -> (Option<usize>, Option<usize>, usize) {
    let Some(top_at) = lines.iter().position(|l| opens(l, top, 0)) else { return (None, None, 2) };
    let end = block_end(lines, top_at, 0);
    let indent = (top_at + 1..end)
        .find(|&i| is_content(&lines[i]))
        .map(|i| indent_of(&lines[i]))
        .filter(|&n| n > 0)
        .unwrap_or(2);
    let key_at = (top_at + 1..end).find(|&i| opens(&lines[i], key, indent));
    (Some(top_at), key_at, indent)
}

/// Adds `items` (list lines without indent) to `top.key`, making the keys that are missing.
/// `false` when the file's shape is not one this edit follows.
fn insert(lines: &mut Vec<String>, top: &str, key: &str, items: &[String]) -> bool {
    let (top_at, key_at, indent) = find(lines, top, key);
    let pad = " ".repeat(indent);
    let item_lines = items.iter().map(|item| format!("{pad}{item}"));
    match (top_at, key_at) {
        (None, _) => {
            lines.push(format!("{top}:"));
            lines.push(format!("{pad}{key}:"));
            lines.extend(item_lines);
            true
        }
        (Some(top_at), None) => {
            let at = top_at + 1;
            let new: Vec<String> = std::iter::once(format!("{pad}{key}:")).chain(item_lines).collect();
            lines.splice(at..at, new);
            true
        }
        (Some(_), Some(key_at)) => {
            // After the list's last item (items sit at the key's indent or deeper).
            let end = (key_at + 1..lines.len())
                .find(|&i| {
                    is_content(&lines[i])
                        && (indent_of(&lines[i]) < indent
                            || (indent_of(&lines[i]) == indent && !lines[i].trim_start().starts_with('-')))
                })
                .unwrap_or(lines.len());
            let last = (key_at + 1..end).rev().find(|&i| is_content(&lines[i])).unwrap_or(key_at);
            let item_indent = if last == key_at { indent } else { indent_of(&lines[last]).min(indent + 2) };
            let item_pad = " ".repeat(item_indent);
            let new: Vec<String> = items.iter().map(|item| format!("{item_pad}{item}")).collect();
            lines.splice(last + 1..last + 1, new);
            true
        }
    }
}

/// Takes the lines `items` out of the list `top.key`.
fn take_out(lines: &mut Vec<String>, top: &str, key: &str, items: &[String]) -> bool {
    let (_, Some(key_at), indent) = find(lines, top, key) else { return false };
    let end = block_end(lines, key_at, indent.saturating_sub(1)).max(key_at + 1);
    let unquoted = |line: &str| line.trim().replace('"', "");
    let before = lines.len();
    let mut at = key_at + 1;
    let mut end = end;
    while at < end {
        if items.iter().any(|item| unquoted(&lines[at]) == *item) {
            lines.remove(at);
            end -= 1;
        } else {
            at += 1;
        }
    }
    lines.len() < before
}

/// Takes out the line `key:` (under `top`, or at the top level), which holds nothing any more.
fn take_out_key(lines: &mut Vec<String>, top: Option<&str>, key: &str) -> bool {
    let at = match top {
        Some(top) => find(lines, top, key).1,
        None => lines.iter().position(|l| opens(l, key, 0)),
    };
    match at {
        Some(at) => {
            lines.remove(at);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Kueue's release Configuration: lists with `- "..."` at the key's indent,
    /// commented-out entries and keys.
    const RELEASE: &str = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n\
        webhook:\n  port: 9443\n# enableClusterQueueResources: true\nintegrations:\n  frameworks:\n  \
        - \"batch/job\"\n  # - \"kubeflow.org/pytorchjob\"\n  - \"pod\"\n#  externalFrameworks:\n#  \
        - \"Foo.v1.example.com\"\n#fairSharing:\n#  preemptionStrategies: []\n";

    fn ours() -> Vec<String> {
        vec!["ExternalJob.v1alpha1.kueue-ext.dev".into(), "WrappedJob.v1alpha1.kueue-ext.dev".into()]
    }

    fn read(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn kueues_own_integrations_are_read_with_its_default() {
        assert_eq!(built_in_frameworks(RELEASE).unwrap(), ["batch/job", "pod"]);
        assert_eq!(built_in_frameworks("kind: Configuration\n").unwrap(), ["batch/job"]);
        assert_eq!(built_in_frameworks("").unwrap(), ["batch/job"]);
        assert!(built_in_frameworks("- a list").is_err());
    }

    #[test]
    fn our_kinds_join_kueues_release_configuration_keeping_its_comments() {
        let (edited, added) = add(RELEASE, &[(List::Integrations, ours())], &[]).unwrap().unwrap();
        assert!(!edited.rewritten, "{}", edited.text);
        assert!(edited.text.contains("# - \"kubeflow.org/pytorchjob\"") && edited.text.contains("#fairSharing:"));
        let config = read(&edited.text);
        assert_eq!(config["integrations"]["externalFrameworks"], json!(ours()));
        assert_eq!(config["integrations"]["frameworks"], json!(["batch/job", "pod"]));
        assert_eq!(added.created_keys, vec!["integrations.externalFrameworks"]);
        assert_eq!(
            add(&edited.text, &[(List::Integrations, ours())], &[]).unwrap(),
            None,
            "a second add changes nothing"
        );
    }

    #[test]
    fn removing_what_was_added_gives_back_the_file_as_it_was() {
        let wanted = [(List::Integrations, ours()), (List::MultiKueue, ours())];
        let (edited, added) = add(RELEASE, &wanted, &[]).unwrap().unwrap();
        assert_eq!(read(&edited.text)["multiKueue"]["externalFrameworks"][1]["name"], ours()[1]);
        let restored = remove(&edited.text, &added).unwrap().unwrap();
        assert!(!restored.rewritten);
        assert_eq!(restored.text, RELEASE, "line for line");
        assert_eq!(remove(RELEASE, &added).unwrap(), None);
    }

    #[test]
    fn a_users_own_entries_stay_and_ours_already_there_are_not_recorded() {
        let text = "integrations:\n  frameworks: [\"batch/job\"]\n  externalFrameworks:\n    - \"Foo.v1.example.com\"\n    \
                    - ExternalJob.v1alpha1.kueue-ext.dev\n";
        let (edited, added) = add(text, &[(List::Integrations, ours())], &[]).unwrap().unwrap();
        assert_eq!(added.integrations, vec![ours()[1].clone()], "only what was missing");
        assert!(added.created_keys.is_empty());
        let frameworks = read(&edited.text)["integrations"]["externalFrameworks"].clone();
        assert_eq!(frameworks, json!(["Foo.v1.example.com", ours()[0], ours()[1]]));
        assert!(edited.text.contains("    - WrappedJob"), "at the list's own indent: {}", edited.text);
        let restored = remove(&edited.text, &added).unwrap().unwrap();
        assert_eq!(read(&restored.text), read(text));
    }

    #[test]
    fn a_file_without_the_keys_gets_them_and_loses_them_again() {
        let text = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n";
        let (edited, added) = add(text, &[(List::MultiKueue, ours())], &[]).unwrap().unwrap();
        assert_eq!(added.created_keys, vec!["multiKueue", "multiKueue.externalFrameworks"]);
        assert_eq!(remove(&edited.text, &added).unwrap().unwrap().text, text);
    }

    #[test]
    fn a_flow_style_list_is_written_out_whole_and_said_so() {
        let text = "# comment\nintegrations:\n  externalFrameworks: [\"Foo.v1.example.com\"]\n";
        let (edited, added) = add(text, &[(List::Integrations, ours())], &[]).unwrap().unwrap();
        assert!(edited.rewritten);
        assert_eq!(read(&edited.text)["integrations"]["externalFrameworks"][2], ours()[1]);
        assert_eq!(read(&remove(&edited.text, &added).unwrap().unwrap().text), read(text));
    }

    #[test]
    fn what_is_not_a_configuration_is_refused() {
        assert!(matches!(add("- a\n- b\n", &[(List::Integrations, ours())], &[]), Err(EditError::NotAMapping(_))));
        assert!(matches!(
            add("integrations: 3\n", &[(List::Integrations, ours())], &[]),
            Err(EditError::NotAMapping(_))
        ));
        assert!(add("a: [", &[], &[]).is_err());
    }

    #[test]
    fn kueues_own_integration_of_a_configured_kind_is_taken_out_and_put_back_where_it_was() {
        let batch = vec!["Job.v1.batch".to_string()];
        let (edited, added) = add(RELEASE, &[(List::Integrations, batch)], &["batch/job".into()]).unwrap().unwrap();
        assert!(!edited.rewritten);
        assert_eq!(read(&edited.text)["integrations"]["frameworks"], json!(["pod"]));
        assert_eq!(added.removed_frameworks[0].line, "  - \"batch/job\"");
        let restored = remove(&edited.text, &added).unwrap().unwrap();
        assert_eq!(restored.text, RELEASE, "line for line");
    }

    #[test]
    fn records_merge_without_repeats() {
        let first =
            Added { integrations: vec!["A".into()], created_keys: vec!["integrations".into()], ..Added::default() };
        let later = Added { integrations: vec!["A".into(), "B".into()], ..Added::default() };
        let merged = first.merged(later);
        assert_eq!(merged.integrations, vec!["A", "B"]);
        assert_eq!(merged.created_keys, vec!["integrations"]);
        let json = serde_json::to_value(&merged).unwrap();
        assert_eq!(json, json!({"integrations": ["A", "B"], "createdKeys": ["integrations"]}));
    }
}
