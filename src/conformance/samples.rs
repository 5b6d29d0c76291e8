//! The job each check creates: a built-in sample for the built-in kinds (a compiled kind brings
//! its own; Kueue's table of its kinds has the others), or the user's `--sample FILE`. Every
//! check puts its own copy in its own namespace and queue.

use std::path::Path;

use serde_json::{Value, json};

use crate::api::kueue::{PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL};
use crate::integrations::declarative::config::Integration;
use crate::integrations::{kueue_frameworks, registry};

#[derive(Clone, Debug)]
pub struct Sample {
    pub object: Value,
    /// `built-in`, or the file.
    pub source: String,
}

impl Sample {
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// A copy to create in `namespace`, queued in `queue`.
    pub fn queued(&self, namespace: &str, queue: &str) -> Value {
        let mut object = self.object.clone();
        if let Some(map) = object.as_object_mut() {
            map.remove("status");
        }
        let metadata = &mut object["metadata"];
        if let Some(map) = metadata.as_object_mut() {
            // Left over from a `kubectl get -o yaml`, they would make the create fail.
            for key in ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"] {
                map.remove(key);
            }
        }
        metadata["namespace"] = json!(namespace);
        set_entry(metadata, "labels", QUEUE_NAME_LABEL, queue);
        object
    }

    /// A queued copy that names the prebuilt Workload it must adopt (label and annotation: Kueue
    /// reads either, by version and feature gate).
    pub fn with_prebuilt_workload(&self, namespace: &str, queue: &str, workload: &str) -> Value {
        let mut object = self.queued(namespace, queue);
        set_entry(&mut object["metadata"], "labels", PREBUILT_WORKLOAD_LABEL, workload);
        set_entry(&mut object["metadata"], "annotations", PREBUILT_WORKLOAD_LABEL, workload);
        object
    }
}

fn set_entry(metadata: &mut Value, map: &str, key: &str, value: &str) {
    if !metadata[map].is_object() {
        metadata[map] = json!({});
    }
    metadata[map][key] = json!(value);
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SampleError {
    #[error("{kind} has no built-in sample: pass --sample FILE with one {kind} to create")]
    Missing { kind: String },
    #[error("{file}: {field}: {message}")]
    Invalid { file: String, field: String, message: String },
}

/// The sample for `integration`: `file` when given, else the built-in one.
pub fn load(integration: &Integration, file: Option<&Path>) -> Result<Sample, SampleError> {
    let Some(file) = file else {
        let compiled = registry::compiled().iter().find(|(description, _)| description.kind == integration.kind);
        let text = match compiled {
            Some((_, kind)) => Some(kind.sample),
            None => kueue_frameworks::of(integration).and_then(|f| f.sample),
        }
        .ok_or_else(|| SampleError::Missing { kind: integration.kind.clone() })?;
        return parse(integration, "built-in", text);
    };
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|e| SampleError::Invalid {
        file: name.clone(),
        field: "(file)".into(),
        message: e.to_string(),
    })?;
    parse(integration, &name, &text)
}

/// One object of the described kind, with a name.
pub fn parse(integration: &Integration, file: &str, text: &str) -> Result<Sample, SampleError> {
    let invalid = |field: &str, message: String| SampleError::Invalid {
        file: file.to_string(),
        field: field.to_string(),
        message,
    };
    let documents: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| invalid("(document)", format!("invalid YAML: {}", e.to_string().lines().next().unwrap_or(""))))?;
    let mut objects = documents.into_iter().filter(|d| !d.is_null());
    let (Some(object), None) = (objects.next(), objects.next()) else {
        return Err(invalid("(document)", "must hold exactly one object: the job to create".into()));
    };
    let gvk = integration.gvk();
    let api_version = if gvk.group.is_empty() { gvk.version.clone() } else { format!("{}/{}", gvk.group, gvk.version) };
    if object["apiVersion"] != api_version.as_str() || object["kind"] != gvk.kind.as_str() {
        return Err(invalid(
            "kind",
            format!(
                "is {} {}, but --kind {} needs apiVersion {api_version}, kind {}",
                object["apiVersion"], object["kind"], integration.kind, gvk.kind
            ),
        ));
    }
    if object["metadata"]["name"].as_str().is_none_or(str::is_empty) {
        return Err(invalid("metadata.name", "Required value: the job's name".into()));
    }
    Ok(Sample { object, source: file.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::registry::KindRegistry;

    fn integration(kind: &str) -> Integration {
        KindRegistry::built_in().find(kind).unwrap().description().as_ref().clone()
    }

    #[test]
    fn every_built_in_kind_has_a_sample_of_its_kind() {
        for integration in KindRegistry::built_in().kinds().iter().map(|k| k.description().as_ref().clone()) {
            let sample = load(&integration, None).unwrap();
            assert_eq!((sample.name(), sample.source.as_str()), ("sample", "built-in"), "{}", integration.kind);
        }
    }

    #[test]
    fn a_queued_copy_lives_in_its_namespace_and_queue() {
        let sample = load(&integration("Job.v1.batch"), None).unwrap();
        let copy = sample.with_prebuilt_workload("ns-1", "lq", "prebuilt");
        assert_eq!(copy["metadata"]["namespace"], "ns-1");
        assert_eq!(copy["metadata"]["labels"][QUEUE_NAME_LABEL], "lq");
        assert_eq!(copy["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL], "prebuilt");
        assert_eq!(copy["metadata"]["annotations"][PREBUILT_WORKLOAD_LABEL], "prebuilt");
        assert_eq!(copy["spec"], sample.object["spec"]);
    }

    #[test]
    fn an_exported_object_loses_what_would_make_its_create_fail() {
        let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, uid: u, resourceVersion: '1'}\nspec: {}\nstatus: {active: 1}\n";
        let sample = parse(&integration("Job.v1.batch"), "j.yaml", text).unwrap();
        let copy = sample.queued("ns", "lq");
        assert_eq!(copy["metadata"], json!({"name": "j", "namespace": "ns", "labels": {QUEUE_NAME_LABEL: "lq"}}));
        assert!(copy.get("status").is_none());
    }

    #[test]
    fn a_sample_of_another_kind_or_without_a_name_is_refused_naming_the_field() {
        let job = integration("Job.v1.batch");
        let other = "apiVersion: kueue-ext.dev/v1alpha1\nkind: ExternalJob\nmetadata: {name: x}\n";
        assert_eq!(
            parse(&job, "s.yaml", other).unwrap_err().to_string(),
            "s.yaml: kind: is \"kueue-ext.dev/v1alpha1\" \"ExternalJob\", but --kind Job.v1.batch needs apiVersion \
             batch/v1, kind Job"
        );
        let unnamed = "apiVersion: batch/v1\nkind: Job\nmetadata: {}\n";
        assert_eq!(
            parse(&job, "s.yaml", unnamed).unwrap_err().to_string(),
            "s.yaml: metadata.name: Required value: the job's name"
        );
        let two = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: b}\n";
        assert!(parse(&job, "s.yaml", two).unwrap_err().to_string().contains("exactly one object"));
    }

    #[test]
    fn a_kind_without_a_built_in_sample_asks_for_one() {
        let text = std::fs::read_to_string("samples/addons/tekton/pipelinerun-integration.yaml").unwrap();
        let config = crate::integrations::declarative::config::IntegrationConfig::parse("p.yaml", &text).unwrap();
        assert_eq!(
            load(&config.integrations[0], None).unwrap_err().to_string(),
            "PipelineRun.v1.tekton.dev has no built-in sample: pass --sample FILE with one PipelineRun.v1.tekton.dev to create"
        );
    }
}
