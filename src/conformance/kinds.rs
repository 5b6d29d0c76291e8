//! Which description of a kind the checks read: the sandbox's integrations file when it lists
//! the kind (that is how the sandbox runs it), else the built-in one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::integrations::declarative::config::{Integration, IntegrationConfig, split_kind};
use crate::integrations::registry::{JobKind, KindRegistry, Origin};

#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    BuiltIn,
    Configured(PathBuf),
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
            Source::Configured(file) => file.display().to_string(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KindError {
    #[error("--kind {0:?}: must be Kind.version.group, as in Kueue's externalFrameworks (e.g. Job.v1.batch)")]
    Malformed(String),
    #[error(
        "--kind {kind}: not integrated in this sandbox; it knows {known}. Describe the kind in an integrations \
         file and start the sandbox with `up --integrations FILE` (see samples/third-party/)"
    )]
    Unknown { kind: String, known: String },
}

/// The description of `kind`: from `configured` (the sandbox's integrations file and its path)
/// when it lists it, else built in.
pub fn describe(kind: &str, configured: Option<(&Path, &IntegrationConfig)>) -> Result<Description, KindError> {
    if split_kind(kind).is_none() {
        return Err(KindError::Malformed(kind.into()));
    }
    let registry = match configured {
        Some((file, config)) => KindRegistry::with_configured(config, &file.display().to_string()),
        None => KindRegistry::built_in(),
    };
    let Some(found) = registry.find(kind) else {
        let known: Vec<&str> = registry.kinds().iter().map(JobKind::qualified).collect();
        return Err(KindError::Unknown { kind: kind.into(), known: known.join(", ") });
    };
    let source = match found.origin() {
        Origin::BuiltIn => Source::BuiltIn,
        Origin::Configured(file) => Source::Configured(PathBuf::from(file)),
    };
    Ok(Description { integration: found.description().clone(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured_pipeline_run() -> IntegrationConfig {
        let text = std::fs::read_to_string("samples/third-party/pipelinerun-integration.yaml").unwrap();
        IntegrationConfig::parse("pipelinerun-integration.yaml", &text).unwrap()
    }

    #[test]
    fn built_in_kinds_are_this_projects_and_kueues_job() {
        let job = describe("Job.v1.batch", None).unwrap();
        assert_eq!((job.source_text().as_str(), job.integration.resource.as_str()), ("built-in", "jobs"));
    }

    #[test]
    fn the_sandboxs_integrations_file_wins_over_the_built_in_description() {
        let text = std::fs::read_to_string("samples/third-party/job-integration.yaml").unwrap();
        let config = IntegrationConfig::parse("job-integration.yaml", &text).unwrap();
        let file = Path::new("/state/worker1/kueue-ext/integrations.yaml");
        let found = describe("Job.v1.batch", Some((file, &config))).unwrap();
        assert_eq!(found.source, Source::Configured(file.to_path_buf()));
        assert_eq!(found.integration.as_ref(), &config.integrations[0]);
        let external = describe("ExternalJob.v1alpha1.kueue-ext.dev", Some((file, &config))).unwrap();
        assert_eq!(external.source, Source::BuiltIn);
    }

    #[test]
    fn a_configured_third_party_kind_is_found() {
        let config = configured_pipeline_run();
        let found = describe("PipelineRun.v1.tekton.dev", Some((Path::new("i.yaml"), &config))).unwrap();
        assert_eq!(found.kind(), "PipelineRun.v1.tekton.dev");
    }

    #[test]
    fn unknown_and_malformed_kinds_are_named_with_what_is_known() {
        let config = configured_pipeline_run();
        let err = describe("RayJob.v1.ray.io", Some((Path::new("i.yaml"), &config))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--kind RayJob.v1.ray.io: not integrated in this sandbox; it knows ExternalJob.v1alpha1.kueue-ext.dev, \
             WrappedJob.v1alpha1.kueue-ext.dev, Job.v1.batch, PipelineRun.v1.tekton.dev. Describe the kind in an \
             integrations file and start the sandbox with `up --integrations FILE` (see samples/third-party/)"
        );
        assert_eq!(describe("batch/v1", None).unwrap_err(), KindError::Malformed("batch/v1".into()));
    }
}
