//! Every job kind the commands know, in one place: the kinds compiled into this project, Kueue's
//! batch Job as our tools see it, and the kinds of an integrations file. `watch`, `explain`,
//! `submit`, completion and `conformance` take their kinds from here, so a kind integrated by
//! configuration shows wherever a compiled one does, and "has this job finished?" has one answer.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ApiResource};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::declarative::ConfiguredJob;
use super::declarative::config::{CONFIG_MAP, CONFIG_MAP_KEY, ConfigError, Integration, IntegrationConfig};
use crate::api::external_job::ExternalJob;
use crate::api::wrapped_job::WrappedJob;
use crate::jobframework::api_error;
use crate::jobframework::generic_job::{Finished, GenericJob};
use crate::jobframework::managed_by::KUEUE_EXT_CONTROLLER;

const BUILT_IN: &str = include_str!("builtin_kinds.yaml");

/// How a kind's objects become a [`GenericJob`]: compiled kinds by their types, the others by
/// their description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decoder {
    ExternalJob,
    WrappedJob,
    Described,
}

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
    decoder: Decoder,
    short_names: &'static [&'static str],
    /// Who runs the kind's pods when `managedBy` leaves them to it, and the value naming it.
    runner: String,
    own_managed_by: &'static str,
}

/// One job kind, cheap to clone; equal, ordered and hashed by `Kind.version.group`.
#[derive(Clone, Debug)]
pub struct JobKind(Arc<Entry>);

/// What the commands read of a job, decided by its kind's own rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobReading {
    pub suspended: bool,
    pub managed_by: Option<String>,
    pub finished: Option<Finished>,
}

fn read<J: GenericJob>(job: &J) -> JobReading {
    JobReading {
        suspended: job.is_suspended(),
        managed_by: job.managed_by().filter(|m| !m.is_empty()).map(String::from),
        finished: job.finished(),
    }
}

impl JobKind {
    fn new(description: Integration, origin: Origin) -> JobKind {
        let (decoder, short_names, runner, own_managed_by) = match description.kind.as_str() {
            "ExternalJob.v1alpha1.kueue-ext.dev" => {
                (Decoder::ExternalJob, &["ej"][..], "kueue-ext", KUEUE_EXT_CONTROLLER)
            }
            "WrappedJob.v1alpha1.kueue-ext.dev" => {
                (Decoder::WrappedJob, &["wj"][..], "kueue-ext", KUEUE_EXT_CONTROLLER)
            }
            "Job.v1.batch" => (Decoder::Described, &[][..], "kube-controller-manager", "kubernetes.io/job-controller"),
            _ => (Decoder::Described, &[][..], "", ""),
        };
        let runner = match runner {
            "" => format!("the {} controller", description.gvk().kind),
            named => named.to_string(),
        };
        JobKind(Arc::new(Entry {
            description: Arc::new(description),
            origin,
            decoder,
            short_names,
            runner,
            own_managed_by,
        }))
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
        let named = names.iter().any(|n| n == name) || self.0.short_names.contains(&name);
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
        let compiled = match self.0.decoder {
            Decoder::ExternalJob => ExternalJob::deserialize(object).ok().map(|j| read(&j)),
            Decoder::WrappedJob => WrappedJob::deserialize(object).ok().map(|j| read(&j)),
            Decoder::Described => None,
        };
        match compiled {
            Some(reading) => Some(reading),
            None => ConfiguredJob::new(object.clone(), self.0.description.clone()).ok().map(|j| read(&j)),
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
    /// This project's kinds and Kueue's batch Job.
    pub fn built_in() -> KindRegistry {
        let config =
            IntegrationConfig::parse("builtin_kinds.yaml", BUILT_IN).expect("the built-in descriptions are valid");
        KindRegistry { kinds: config.integrations.into_iter().map(|i| JobKind::new(i, Origin::BuiltIn)).collect() }
    }

    /// The built-in kinds and those of `config`, read from `origin`.
    pub fn with_configured(config: &IntegrationConfig, origin: &str) -> KindRegistry {
        let mut registry = KindRegistry::built_in();
        for integration in &config.integrations {
            let kind = JobKind::new(integration.clone(), Origin::Configured(origin.to_string()));
            match registry.kinds.iter_mut().find(|k| **k == kind) {
                Some(built_in) => *built_in = kind,
                None => registry.kinds.push(kind),
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
