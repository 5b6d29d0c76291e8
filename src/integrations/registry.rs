//! Every job kind the commands know, in one place: the kinds compiled into this project, Kueue's
//! batch Job as our tools see it, and the kinds of an integrations file. `watch`, `explain`,
//! `submit`, completion and `conformance` take their kinds from here, so a kind integrated by
//! configuration shows wherever a compiled one does, and "has this job finished?" has one answer.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ApiResource};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::declarative::ConfiguredJob;
use super::declarative::config::{CONFIG_MAP, CONFIG_MAP_KEY, ConfigError, Integration, IntegrationConfig};
use super::{external_job, kueue_frameworks, wrapped_job};
use crate::jobframework::api_error;
use crate::jobframework::generic_job::{JobReading, reading};
use crate::jobframework::integration_callbacks::IntegrationCallbacks;
use crate::jobframework::managed_by::KUEUE_EXT_CONTROLLER;

/// The kinds compiled into this project, one line each: everything else about a compiled kind
/// (its controller, webhooks, manifests, how the commands read it) is in its own module.
pub static COMPILED: [&IntegrationCallbacks; 2] = [&external_job::INTEGRATION, &wrapped_job::INTEGRATION];

/// Where a kind's description comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    BuiltIn,
    /// The integrations file (a path, or the ConfigMap it was read from).
    Configured(String),
}

#[derive(Debug)]
struct Entry {
    description: Arc<Integration>,
    origin: Origin,
    /// Set for a compiled kind.
    compiled: Option<&'static IntegrationCallbacks>,
    /// Who runs the kind's pods when `managedBy` leaves them to it, and the value naming it.
    runner: String,
    own_managed_by: &'static str,
}

/// One job kind, cheap to clone; equal, ordered and hashed by `Kind.version.group`.
#[derive(Clone, Debug)]
pub struct JobKind(Arc<Entry>);

impl JobKind {
    fn new(description: Integration, origin: Origin, compiled: Option<&'static IntegrationCallbacks>) -> JobKind {
        let (runner, own_managed_by) = match (compiled, kueue_frameworks::of(&description)) {
            (Some(_), _) => ("kueue-ext".to_string(), KUEUE_EXT_CONTROLLER),
            (None, Some(kueues)) => (kueues.runner.to_string(), kueues.managed_by.unwrap_or_default()),
            (None, None) => (format!("the {} controller", description.gvk().kind), ""),
        };
        JobKind(Arc::new(Entry { description: Arc::new(description), origin, compiled, runner, own_managed_by }))
    }

    /// The compiled kind's callbacks; `None` for a kind integrated by configuration.
    pub fn compiled(&self) -> Option<&'static IntegrationCallbacks> {
        self.0.compiled
    }

    /// `ExternalJob`, `Job`, `PipelineRun`.
    pub fn name(&self) -> &str {
        self.0.description.kind.split('.').next().unwrap_or_default()
    }

    /// `Kind.version.group`, as in Kueue's `externalFrameworks`.
    pub fn qualified(&self) -> &str {
        &self.0.description.kind
    }

    pub fn group(&self) -> String {
        self.0.description.gvk().group
    }

    pub fn api_resource(&self) -> ApiResource {
        self.0.description.api_resource()
    }

    pub fn description(&self) -> &Arc<Integration> {
        &self.0.description
    }

    pub fn origin(&self) -> &Origin {
        &self.0.origin
    }

    /// Who runs a job of this kind when `spec.managedBy` leaves it to the kind's own
    /// controller, and the `managedBy` value that names that controller.
    pub fn own_runner(&self) -> (&str, &str) {
        (&self.0.runner, self.0.own_managed_by)
    }

    /// Whether a kubectl user means this kind by `alias`: its kind, plural or short name, alone
    /// or with its group (`ej`, `wrappedjobs`, `job.batch`, `pipelinerun.tekton.dev`).
    pub fn answers_to(&self, alias: &str) -> bool {
        let alias = alias.to_lowercase();
        let (name, group) = match alias.split_once('.') {
            Some((name, group)) => (name, Some(group)),
            None => (alias.as_str(), None),
        };
        let resource = self.api_resource();
        let names = [resource.kind.to_lowercase(), resource.plural.clone()];
        let short_names = self.0.compiled.map(|c| c.short_names).unwrap_or_default();
        let named = names.iter().any(|n| n == name) || short_names.contains(&name);
        named && group.is_none_or(|g| g == resource.group || alias == self.qualified().to_lowercase())
    }

    /// Whether `object` (its `apiVersion` and `kind`) is of this kind.
    pub fn is_kind_of(&self, object: &Value) -> bool {
        let resource = self.api_resource();
        object["apiVersion"] == resource.api_version.as_str() && object["kind"] == resource.kind.as_str()
    }

    /// The job's state by the kind's rules: a compiled kind's own code when the object decodes
    /// as its type, its description otherwise (an object of another version of the CRD costs
    /// precision, never the row). `None` when the object has no readable metadata.
    pub fn read(&self, object: &Value) -> Option<JobReading> {
        match self.0.compiled.and_then(|c| (c.read)(object)) {
            Some(reading) => Some(reading),
            None => ConfiguredJob::new(object.clone(), self.0.description.clone()).ok().map(|j| reading(&j)),
        }
    }
}

impl PartialEq for JobKind {
    fn eq(&self, other: &Self) -> bool {
        self.qualified() == other.qualified()
    }
}

impl Eq for JobKind {}

impl Hash for JobKind {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.qualified().hash(state);
    }
}

impl PartialOrd for JobKind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for JobKind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.qualified().cmp(other.qualified())
    }
}

impl Serialize for JobKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// The kinds a cluster runs: the built-in ones, with those of its integrations file added (a
/// configured kind replaces the built-in description of the same kind, as the controller does).
#[derive(Clone, Debug)]
pub struct KindRegistry {
    kinds: Vec<JobKind>,
}

impl Default for KindRegistry {
    fn default() -> Self {
        KindRegistry::built_in()
    }
}

impl KindRegistry {
    /// This project's kinds and those Kueue integrates itself (batch Job, JobSet).
    pub fn built_in() -> KindRegistry {
        let compiled =
            compiled().iter().map(|(description, c)| JobKind::new(description.clone(), Origin::BuiltIn, Some(c)));
        let described = kueue_frameworks::described().iter().map(|d| JobKind::new(d.clone(), Origin::BuiltIn, None));
        KindRegistry { kinds: compiled.chain(described).collect() }
    }

    /// The built-in kinds and those of `config`, read from `origin`.
    pub fn with_configured(config: &IntegrationConfig, origin: &str) -> KindRegistry {
        let mut registry = KindRegistry::built_in();
        for integration in &config.integrations {
            let origin = Origin::Configured(origin.to_string());
            match registry.kinds.iter_mut().find(|k| k.qualified() == integration.kind) {
                // A compiled kind described again keeps its own code for what it describes.
                Some(built_in) => *built_in = JobKind::new(integration.clone(), origin, built_in.compiled()),
                None => registry.kinds.push(JobKind::new(integration.clone(), origin, None)),
            }
        }
        registry
    }

    /// The kinds a cluster runs, as its integrations ConfigMap (in `namespace`) says; only the
    /// built-in ones where there is none. A ConfigMap the controller could not read either is
    /// refused, naming it and the field.
    pub async fn discover(client: &Client, namespace: &str) -> Result<KindRegistry, ConfigError> {
        let origin = format!("ConfigMap {namespace}/{CONFIG_MAP}");
        let found = Api::<ConfigMap>::namespaced(client.clone(), namespace).get_opt(CONFIG_MAP).await;
        let text = match found {
            Ok(Some(map)) => map.data.and_then(|mut data| data.remove(CONFIG_MAP_KEY)),
            // Not installed, or not ours to read: the built-in kinds are all that can be known.
            Ok(None) => None,
            Err(e) if api_error::is_unserved(&e) || api_error::is_forbidden(&e) => None,
            Err(e) => {
                return Err(ConfigError { file: origin, field: "(read)".into(), message: api_error::in_words(&e) });
            }
        };
        match text {
            Some(text) => Ok(KindRegistry::with_configured(&IntegrationConfig::parse(&origin, &text)?, &origin)),
            None => Ok(KindRegistry::built_in()),
        }
    }

    pub fn kinds(&self) -> &[JobKind] {
        &self.kinds
    }

    /// The kind named `Kind.version.group`.
    pub fn find(&self, qualified: &str) -> Option<&JobKind> {
        self.kinds.iter().find(|k| k.qualified() == qualified)
    }

    /// The kind a kubectl user means by `alias`.
    pub fn by_alias(&self, alias: &str) -> Option<&JobKind> {
        self.kinds.iter().find(|k| k.answers_to(alias))
    }

    /// The kind of `object`, if it is a job kind at all.
    pub fn of_object(&self, object: &Value) -> Option<&JobKind> {
        self.kinds.iter().find(|k| k.is_kind_of(object))
    }

    /// Every kind's name, for messages (`ExternalJob, WrappedJob, Job, PipelineRun`).
    pub fn names(&self) -> String {
        self.kinds.iter().map(JobKind::name).collect::<Vec<_>>().join(", ")
    }
}

/// A built-in kind by name (`ExternalJob`, `Job`), for tests.
#[cfg(test)]
pub fn built_in_kind(name: &str) -> JobKind {
    KindRegistry::built_in().by_alias(name).cloned().expect("a built-in kind")
}

#[cfg(test)]
mod tests;

/// Each compiled kind with its description, parsed once.
pub fn compiled() -> &'static [(Integration, &'static IntegrationCallbacks)] {
    static COMPILED_KINDS: LazyLock<Vec<(Integration, &'static IntegrationCallbacks)>> = LazyLock::new(|| {
        let parse = |c: &'static IntegrationCallbacks| {
            let described = IntegrationConfig::parse_entries("a compiled kind's description.yaml", c.description);
            described.expect("the compiled descriptions are valid").into_iter().map(move |d| (d, c))
        };
        COMPILED.iter().copied().flat_map(parse).collect()
    });
    &COMPILED_KINDS
}
