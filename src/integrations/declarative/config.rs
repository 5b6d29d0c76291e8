//! The integrations file: job kinds Kueue manages through this controller, each described by
//! where its fields are rather than by code. Read once at start; every mistake is named by
//! file and field before anything runs.
//!
//! ```yaml
//! apiVersion: kueue-ext.dev/v1alpha1
//! kind: IntegrationConfig
//! integrations:
//! - kind: Job.v1.batch          # Kind.version.group, as Kueue's externalFrameworks
//!   resource: jobs
//!   suspend: {path: spec.suspend}
//!   podSets: [{name: main, template: spec.template, count: spec.parallelism}]
//!   managedBy: spec.managedBy
//!   finished: {succeeded: {condition: Complete}, failed: {condition: Failed}}
//!   active: {sum: [status.active], atLeast: 1}
//!   podsReady: {sum: [status.ready, status.succeeded], atLeast: pods}
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use kube::api::{ApiResource, GroupVersionKind};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::count::Count;
use super::path::FieldPath;
use crate::api::kueue::MAX_POD_SETS;
use crate::jobframework::webhook::{dns1123_label, dns1123_subdomain};

pub const API_VERSION: &str = "kueue-ext.dev/v1alpha1";
pub const KIND: &str = "IntegrationConfig";
/// The ConfigMap (in the controller's namespace) the controller reads its integrations file
/// from, and the key holding the file; every command reads which kinds a cluster runs there.
pub const CONFIG_MAP: &str = "kueue-ext-integrations";
pub const CONFIG_MAP_KEY: &str = "integrations.yaml";

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IntegrationConfig {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub integrations: Vec<Integration>,
}

/// Where Kueue's generic MultiKueue adapter looks for the controller that runs a job.
const MULTIKUEUE_MANAGED_BY_PATH: &str = "spec.managedBy";

/// One integrated kind.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Integration {
    /// `Kind.version.group`.
    pub kind: String,
    /// The plural resource name, as in RBAC rules and URLs.
    pub resource: String,
    pub suspend: Suspend,
    pub pod_sets: Vec<PodSetRule>,
    /// Where the kind names the controller that runs it (MultiKueue hands jobs to workers by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<FieldPath>,
    pub finished: FinishedRule,
    /// True while pods of the job still run; without it the job counts as idle once suspended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<Probe>,
    /// True once every pod runs ready or has succeeded: Kueue's waitForPodsReady evicts a job
    /// that does not get there in time. Required; an `Option` only so that its absence is
    /// refused at load with a suggestion rather than serde's bare "missing field".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_ready: Option<Probe>,
    #[serde(default, skip_serializing_if = "MultiKueueRule::is_empty")]
    pub multi_kueue: MultiKueueRule,
}

/// What MultiKueue's copy of a job on a worker must not keep. Kueue's generic adapter copies the
/// spec verbatim, including fields the manager's API server generated for the original (a
/// Job's selector and its controller-uid labels), which the worker's API server would refuse;
/// the worker's webhook removes them so its API server generates its own.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MultiKueueRule {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_from_copies: Vec<FieldPath>,
}

impl MultiKueueRule {
    fn is_empty(&self) -> bool {
        self.remove_from_copies.is_empty()
    }
}

/// How the kind is held back: a boolean field (`path` alone), or a field with one value for
/// "suspended" and another (or none: the field removed) for "running".
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Suspend {
    pub path: FieldPath,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<Value>,
}

/// Pod sets of a job: one with a fixed `name`, or one per entry at `each`: of a list, named by
/// the entry's `nameFrom`; of a map, by its key lower-cased (as Kueue names a Kubeflow job's
/// replica types), in key order. Each has a pod `template`, or, for kinds without templates,
/// `requests` read as `cpu=1,memory=2Gi` (a synthetic pod). `count` is a [`Count`] expression
/// and `minCount` a field (a number or a numeric string); the count defaults to 1.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodSetRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub each: Option<FieldPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_from: Option<FieldPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<FieldPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<FieldPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Count>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<FieldPath>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FinishedRule {
    pub succeeded: Probe,
    pub failed: Probe,
    /// Where the outcome's message is, when no condition carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<FieldPath>,
}

/// A question asked of a job's fields. Exactly one form:
/// - `condition: Type` (and `status`, default `"True"`): a condition in `status.conditions`;
/// - `path` with `equals: [values]`: the field holds one of the values;
/// - `sum: [paths]` with `atLeast`: the numbers at the paths add up to at least the [`AtLeast`].
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Probe {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<FieldPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<Vec<FieldPath>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<AtLeast>,
}

/// The threshold of a probe's `sum`: `N`, `pods` (the pods the job's pod sets ask for), or
/// `{sum: [paths]}`, the numbers at the job's own fields added up (a path may name many with
/// `[*]`), for a status that counts something other than pods: a JobSet counts its ready child
/// Jobs, to be compared with the Jobs its spec asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum AtLeast {
    Number(i64),
    Pods,
    Sum(Vec<FieldPath>),
}

/// The map form of [`AtLeast`].
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SumOfFields {
    sum: Vec<FieldPath>,
}

impl Serialize for AtLeast {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AtLeast::Number(n) => serializer.serialize_i64(*n),
            AtLeast::Pods => serializer.serialize_str("pods"),
            AtLeast::Sum(paths) => SumOfFields { sum: paths.clone() }.serialize(serializer),
        }
    }
}

/// By hand rather than `untagged`, which would swallow the reason a path inside `{sum: [..]}`
/// is not one.
impl<'de> Deserialize<'de> for AtLeast {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match &value {
            Value::Number(n) => {
                n.as_i64().map(AtLeast::Number).ok_or_else(|| D::Error::custom(format!("{n}: {AT_LEAST}")))
            }
            Value::String(word) if word == "pods" => Ok(AtLeast::Pods),
            Value::Object(_) => {
                serde_json::from_value(value).map(|f: SumOfFields| AtLeast::Sum(f.sum)).map_err(D::Error::custom)
            }
            other => Err(D::Error::custom(format!("{other}: {AT_LEAST}"))),
        }
    }
}

const AT_LEAST: &str = "must be a whole number, `pods` or `{sum: [paths]}`";

/// A mistake in the integrations file, naming the file and the field.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{file}: {field}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl IntegrationConfig {
    pub fn new(integrations: Vec<Integration>) -> IntegrationConfig {
        IntegrationConfig { api_version: API_VERSION.into(), kind: KIND.into(), integrations }
    }

    /// Reads and checks `file`.
    pub fn load(file: &Path) -> Result<IntegrationConfig, ConfigError> {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| ConfigError {
            file: name.clone(),
            field: "(file)".into(),
            message: e.to_string(),
        })?;
        IntegrationConfig::parse(&name, &text)
    }

    /// Parses and checks the text of an integrations file named `file`.
    /// The entries of an `integrations:` list alone (a built-in description), read as a whole
    /// file would be.
    pub fn parse_entries(file: &str, entries: &str) -> Result<Vec<Integration>, ConfigError> {
        let text =
            format!("apiVersion: {}/v1alpha1\nkind: IntegrationConfig\nintegrations:\n{entries}", crate::api::GROUP);
        Ok(IntegrationConfig::parse(file, &text)?.integrations)
    }

    pub fn parse(file: &str, text: &str) -> Result<IntegrationConfig, ConfigError> {
        let error = |field: String, message: String| ConfigError { file: file.to_string(), field, message };
        let value: Value = serde_saphyr::from_str(text).map_err(|e| {
            let at = e.location().map(|l| format!("line {}", l.line())).unwrap_or_else(|| "(document)".into());
            error(at, format!("invalid YAML: {}", e.to_string().lines().next().unwrap_or_default()))
        })?;
        let config: IntegrationConfig = serde_path_to_error::deserialize(value).map_err(|e| {
            let field = e.path().to_string();
            error(if field == "." { "(document)".into() } else { field }, e.into_inner().to_string())
        })?;
        config.validate().map_err(|(field, message)| error(field, message))?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if self.api_version != API_VERSION || self.kind != KIND {
            return Err(("kind".into(), format!("must be {KIND} of {API_VERSION}")));
        }
        let mut seen = BTreeSet::new();
        for (i, integration) in self.integrations.iter().enumerate() {
            let at = |field: &str| format!("integrations[{i}].{field}");
            integration.validate().map_err(|(field, message)| (at(&field), message))?;
            if !seen.insert(integration.kind.as_str()) {
                return Err((at("kind"), format!("{} is listed twice", integration.kind)));
            }
        }
        Ok(())
    }
}

impl Integration {
    pub fn gvk(&self) -> GroupVersionKind {
        let (kind, version, group) = split_kind(&self.kind).expect("validated at load");
        GroupVersionKind::gvk(group, version, kind)
    }

    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&self.gvk(), &self.resource)
    }

    /// Why MultiKueue cannot hand this kind to a worker, if it cannot: Kueue's generic adapter
    /// (v0.19.2) reads the controller's name only at `spec.managedBy`.
    pub fn why_not_through_multikueue(&self) -> Option<String> {
        match &self.managed_by {
            None => {
                Some("it has no managedBy field, which Kueue's MultiKueue adapter for configured kinds needs".into())
            }
            Some(path) if path.to_string() != MULTIKUEUE_MANAGED_BY_PATH => Some(format!(
                "{path} is not {MULTIKUEUE_MANAGED_BY_PATH}, the one field Kueue's MultiKueue adapter for configured kinds reads"
            )),
            Some(_) => None,
        }
    }

    /// Every path of the description that names one field (all but a probe's `sum`), with the
    /// field of the file that holds it. A count's paths are checked with the count.
    fn single_fields(&self) -> Vec<(String, &FieldPath)> {
        let mut fields = vec![("suspend.path".to_string(), &self.suspend.path)];
        fields.extend(self.managed_by.iter().map(|path| ("managedBy".to_string(), path)));
        for (i, rule) in self.pod_sets.iter().enumerate() {
            let named = [
                ("each", &rule.each),
                ("nameFrom", &rule.name_from),
                ("template", &rule.template),
                ("requests", &rule.requests),
                ("minCount", &rule.min_count),
            ];
            for (name, path) in named {
                fields.extend(path.iter().map(|path| (format!("podSets[{i}].{name}"), path)));
            }
        }
        for (i, path) in self.multi_kueue.remove_from_copies.iter().enumerate() {
            fields.push((format!("multiKueue.removeFromCopies[{i}]"), path));
        }
        let probes = [
            ("finished.succeeded", Some(&self.finished.succeeded)),
            ("finished.failed", Some(&self.finished.failed)),
            ("active", self.active.as_ref()),
            ("podsReady", self.pods_ready.as_ref()),
        ];
        for (name, probe) in probes {
            fields.extend(probe.and_then(|p| p.path.as_ref()).map(|path| (format!("{name}.path"), path)));
        }
        fields
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let (_, version, group) = split_kind(&self.kind).ok_or_else(|| {
            ("kind".to_string(), format!("{:?} must be Kind.version.group, e.g. PipelineRun.v1.tekton.dev", self.kind))
        })?;
        dns1123_subdomain(group).map_err(|why| ("kind".to_string(), format!("group {group:?} {why}")))?;
        dns1123_label(version).map_err(|why| ("kind".to_string(), format!("version {version:?} {why}")))?;
        dns1123_label(&self.resource).map_err(|why| ("resource".to_string(), why.to_string()))?;
        if !self.suspend.path.in_spec() {
            return Err(("suspend.path".into(), "must be a field of spec: the job's owner holds it back".into()));
        }
        if self.suspend.suspended.is_none() && self.suspend.running.is_some() {
            return Err(("suspend.running".into(), "needs `suspended` as well (a boolean field needs neither)".into()));
        }
        if self.suspend.suspended.is_some() && self.suspend.suspended == self.suspend.running {
            return Err(("suspend.running".into(), "must differ from `suspended`".into()));
        }
        if let Some((field, path)) = self.single_fields().into_iter().find(|(_, path)| path.is_many()) {
            return Err((field, format!("{path}: `[*]` only goes in a probe's `sum`")));
        }
        if self.pod_sets.is_empty() || self.pod_sets.len() > MAX_POD_SETS {
            return Err(("podSets".into(), format!("must list 1 to {MAX_POD_SETS} pod sets")));
        }
        let mut names = BTreeSet::new();
        for (i, rule) in self.pod_sets.iter().enumerate() {
            let at = |field: &str| format!("podSets[{i}].{field}");
            rule.validate().map_err(|(field, message)| (at(&field), message))?;
            if let Some(name) = &rule.name
                && !names.insert(name.as_str())
            {
                return Err((at("name"), format!("{name:?} is used twice")));
            }
        }
        if let Some(path) = &self.managed_by
            && !path.in_spec()
        {
            return Err(("managedBy".into(), "must be a field of spec".into()));
        }
        for (i, path) in self.multi_kueue.remove_from_copies.iter().enumerate() {
            if !path.in_spec() {
                return Err((format!("multiKueue.removeFromCopies[{i}]"), "must be a field of spec".into()));
            }
        }
        if self.pods_ready.is_none() {
            return Err((
                "podsReady".into(),
                format!(
                    "required: say when every pod of a {} runs ready or has succeeded, with a probe such as \
                     `{{condition: Running}}` or `{{sum: [status.ready, status.succeeded], atLeast: pods}}`; \
                     Kueue's waitForPodsReady evicts a job whose pods are not ready in time",
                    self.gvk().kind
                ),
            ));
        }
        for (field, probe) in [
            ("finished.succeeded", Some(&self.finished.succeeded)),
            ("finished.failed", Some(&self.finished.failed)),
            ("active", self.active.as_ref()),
            ("podsReady", self.pods_ready.as_ref()),
        ] {
            if let Some(probe) = probe {
                probe.validate().map_err(|(below, message)| (format!("{field}{below}"), message))?;
            }
        }
        Ok(())
    }
}

impl PodSetRule {
    fn validate(&self) -> Result<(), (String, String)> {
        match (&self.name, &self.each, &self.name_from) {
            (Some(name), None, None) => dns1123_label(name).map_err(|why| ("name".to_string(), why.to_string()))?,
            (None, Some(_), _) => {}
            _ => return Err(("name".into(), "give either `name`, or `each` (with `nameFrom` for a list)".into())),
        }
        if let Some(count) = &self.count {
            count.validate().map_err(|why| ("count".to_string(), why.to_string()))?;
        }
        match (&self.template, &self.requests) {
            (Some(template), None) if self.each.is_some() || template.in_spec() => Ok(()),
            (Some(_), None) => Err(("template".into(), "must be a field of spec: admission writes into it".into())),
            (None, Some(_)) => Ok(()),
            _ => Err((
                "template".into(),
                "give either `template` or, for a kind without pod templates, `requests`".into(),
            )),
        }
    }
}

impl Probe {
    fn validate(&self) -> Result<(), (String, String)> {
        let shapes = [
            self.condition.is_some(),
            self.path.is_some() || self.equals.is_some(),
            self.sum.is_some() || self.at_least.is_some(),
        ];
        if shapes.iter().filter(|s| **s).count() != 1 {
            return Err((
                String::new(),
                "give exactly one of `condition`, `path` with `equals`, or `sum` with `atLeast`".into(),
            ));
        }
        if self.status.is_some() && self.condition.is_none() {
            return Err((".status".into(), "only goes with `condition`".into()));
        }
        if self.path.is_some() != self.equals.is_some() {
            return Err((".equals".into(), "`path` and `equals` go together".into()));
        }
        if self.sum.is_some() != self.at_least.is_some() {
            return Err((".atLeast".into(), "`sum` and `atLeast` go together".into()));
        }
        if let Some(AtLeast::Sum(paths)) = &self.at_least
            && paths.is_empty()
        {
            return Err((".atLeast.sum".into(), "must list at least one field".into()));
        }
        Ok(())
    }
}

/// `Kind.version.group` split into its parts.
pub fn split_kind(text: &str) -> Option<(&str, &str, &str)> {
    let (kind, rest) = text.split_once('.')?;
    let (version, group) = rest.split_once('.')?;
    let valid_kind =
        kind.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && kind.chars().all(|c| c.is_ascii_alphanumeric());
    (valid_kind && !version.is_empty() && !group.is_empty()).then_some((kind, version, group))
}
