//! Which description of a kind the checks read: the cluster's integrations file when it lists
//! the kind (that is how its controller runs it), else the built-in one.

use std::sync::Arc;

use crate::integrations::declarative::config::{Integration, split_kind};
use crate::integrations::registry::{JobKind, KindRegistry, Origin};

#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    BuiltIn,
    /// The integrations file, or the ConfigMap it was read from.
    Configured(String),
}

#[derive(Clone, Debug)]
pub struct Description {
    pub integration: Arc<Integration>,
    pub source: Source,
}

impl Description {
    pub fn kind(&self) -> &str {
        &self.integration.kind
    }

    /// `built-in`, or the file it came from.
    pub fn source_text(&self) -> String {
        match &self.source {
            Source::BuiltIn => "built-in".into(),
            Source::Configured(origin) => origin.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KindError {
    #[error("--kind {0:?}: must be Kind.version.group, as in Kueue's externalFrameworks (e.g. Job.v1.batch)")]
    Malformed(String),
    #[error(
        "--kind {kind}: not integrated on this cluster; it knows {known}. Describe the kind in an integrations \
         file and start the sandbox with `up --integrations FILE` (see samples/integrations/ and samples/addons/)"
    )]
    Unknown { kind: String, known: String },
}

/// The description of `kind` in `registry`: configured when the cluster's integrations file
/// lists it, else built in.
pub fn describe(kind: &str, registry: &KindRegistry) -> Result<Description, KindError> {
    if split_kind(kind).is_none() {
        return Err(KindError::Malformed(kind.into()));
    }
    let Some(found) = registry.find(kind) else {
        let known: Vec<&str> = registry.kinds().iter().map(JobKind::qualified).collect();
        return Err(KindError::Unknown { kind: kind.into(), known: known.join(", ") });
    };
    let source = match found.origin() {
        Origin::BuiltIn => Source::BuiltIn,
        Origin::Configured(origin) => Source::Configured(origin.clone()),
    };
    Ok(Description { integration: found.description().clone(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::declarative::config::IntegrationConfig;

    fn configured(sample: &str, origin: &str) -> KindRegistry {
        let text = std::fs::read_to_string(format!("samples/{sample}")).unwrap();
        KindRegistry::with_configured(&IntegrationConfig::parse(sample, &text).unwrap(), origin)
    }

    #[test]
    fn built_in_kinds_are_this_projects_and_kueues_job() {
        let job = describe("Job.v1.batch", &KindRegistry::built_in()).unwrap();
        assert_eq!((job.source_text().as_str(), job.integration.resource.as_str()), ("built-in", "jobs"));
    }

    #[test]
    fn the_clusters_integrations_file_wins_over_the_built_in_description() {
        let origin = "ConfigMap kueue-ext-system/kueue-ext-integrations";
        let registry = configured("integrations/job-integration.yaml", origin);
        let found = describe("Job.v1.batch", &registry).unwrap();
        assert_eq!(found.source, Source::Configured(origin.into()));
        assert_eq!(found.source_text(), origin);
        assert_eq!(found.integration.resource, "jobs");
        let external = describe("ExternalJob.v1alpha1.kueue-ext.dev", &registry).unwrap();
        assert_eq!(external.source, Source::BuiltIn);
    }

    #[test]
    fn a_configured_third_party_kind_is_found() {
        let registry = configured("addons/tekton/pipelinerun-integration.yaml", "i.yaml");
        let found = describe("PipelineRun.v1.tekton.dev", &registry).unwrap();
        assert_eq!(found.kind(), "PipelineRun.v1.tekton.dev");
    }

    #[test]
    fn unknown_and_malformed_kinds_are_named_with_what_is_known() {
        let registry = configured("addons/tekton/pipelinerun-integration.yaml", "i.yaml");
        let err = describe("RayJob.v1.ray.io", &registry).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--kind RayJob.v1.ray.io: not integrated on this cluster; it knows ExternalJob.v1alpha1.kueue-ext.dev, \
             WrappedJob.v1alpha1.kueue-ext.dev, Job.v1.batch, JobSet.v1alpha2.jobset.x-k8s.io, PyTorchJob.v1.kubeflow.org, PipelineRun.v1.tekton.dev. Describe the kind in an \
             integrations file and start the sandbox with `up --integrations FILE` (see samples/integrations/ and samples/addons/)"
        );
        assert_eq!(describe("batch/v1", &registry).unwrap_err(), KindError::Malformed("batch/v1".into()));
    }
}
