//! Each component of a WrappedJob dry-run as itself whenever what it wraps is new: a component
//! the API server would refuse is refused at admission with its field path.

use futures::future::join_all;
use serde_json::json;

use super::authz::type_of;
use crate::api::wrapped_job::WrappedJob;
use crate::jobframework::authorizer::Authorizer;
use crate::jobframework::dry_run::refused;
use crate::jobframework::served_kinds::group_version;
use crate::jobframework::webhook::FieldError;

/// Every field of every component of `job` the API server would refuse, were the component
/// created in `namespace`. Components of kinds nothing serves are left to the authorization
/// check, which names them.
pub async fn components(job: &WrappedJob, namespace: &str, authorizer: &dyn Authorizer) -> Vec<FieldError> {
    let checks = job.spec.components.iter().enumerate().map(|(i, component)| async move {
        let Some((api_version, kind)) = type_of(&component.template) else { return Vec::new() };
        if group_version(api_version).is_none() {
            return Vec::new();
        }
        let Ok(Some(resource)) = authorizer.resource(api_version, kind).await else { return Vec::new() };
        if !resource.namespaced {
            return Vec::new();
        }
        let mut object = component.template.clone();
        object["metadata"]["namespace"] = json!(namespace);
        refused(&format!("spec.components[{i}].template"), &resource, namespace, &object, authorizer, "").await
    });
    join_all(checks).await.concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobframework::authorizer::fake::FakeAuthorizer;

    #[tokio::test]
    async fn components_are_dry_run_as_themselves_and_unserved_kinds_are_skipped() {
        let job: WrappedJob = serde_json::from_value(json!({
            "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
            "metadata": {"name": "w", "namespace": "team-a"},
            "spec": {"components": [
                {"template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a".repeat(64)}}},
                {"template": {"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": {"name": "u"}}},
            ]},
        }))
        .unwrap();
        let fake = FakeAuthorizer::new().refuse("jobs", "metadata.name", "must be no more than 63 characters");
        let errors: Vec<String> = components(&job, "team-a", &fake).await.iter().map(ToString::to_string).collect();
        assert_eq!(errors, ["spec.components[0].template.metadata.name: must be no more than 63 characters"]);
        assert_eq!(fake.dry_runs(), [format!("jobs {} team-a", "a".repeat(64))]);
    }
}
