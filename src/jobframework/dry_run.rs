//! The API server's own validation of what an admitted job will create, asked by server-side
//! dry runs (of PodTemplates, for pods): a template no
//! pod (or component) could be made from is refused at admission with its field path, instead
//! of being admitted and then stuck (Kueue holds a pod set whose requests exceed its limits; a
//! Job named too long for its pods' labels fails once created).

use futures::future::join_all;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};

use super::authorizer::{Authorizer, ServedResource};
use super::webhook::FieldError;

/// What the dry runs ask for in place of a real name.
const GENERATE_NAME: &str = "kueue-ext-dry-run-";

/// A PodTemplate is validated as a pod is (the same pod-spec rules) but skips the admission
/// only a Pod meets, which refuses while the namespace's ServiceAccount does not exist yet.
fn pod_templates_resource() -> ServedResource {
    ServedResource { group: String::new(), version: "v1".into(), plural: "podtemplates".into(), namespaced: true }
}

/// Where a PodTemplate keeps the pod template, as its validation names fields.
const POD_TEMPLATE_FIELD: &str = "template.";

fn pod_template_of(template: &PodTemplateSpec, namespace: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"generateName": GENERATE_NAME, "namespace": namespace},
        "template": template,
    })
}

/// Every field of every `(path, template)` the API server would refuse in a pod made from it,
/// under `path` (the template's own field path).
pub async fn pod_templates(
    templates: &[(String, &PodTemplateSpec)],
    namespace: &str,
    authorizer: &dyn Authorizer,
) -> Vec<FieldError> {
    let resource = pod_templates_resource();
    let checks = templates.iter().map(|(path, template)| {
        let object = pod_template_of(template, namespace);
        let resource = &resource;
        async move { refused(path, resource, namespace, &object, authorizer, POD_TEMPLATE_FIELD).await }
    });
    join_all(checks).await.concat()
}

/// The refusals of a dry run of `object`, each at `path` plus its field less `strip`.
pub async fn refused(
    path: &str,
    resource: &ServedResource,
    namespace: &str,
    object: &Value,
    authorizer: &dyn Authorizer,
    strip: &str,
) -> Vec<FieldError> {
    match authorizer.invalid_fields(resource, namespace, object).await {
        Ok(causes) => causes
            .into_iter()
            .map(|(field, message)| {
                let field = field.strip_prefix(strip).unwrap_or(&field);
                let at = if field.is_empty() { path.to_string() } else { format!("{path}.{field}") };
                FieldError::new(at, message)
            })
            .collect(),
        // The dry run is a second opinion: a failure to get it never blocks a job.
        Err(why) => {
            tracing::warn!(%path, %why, "no dry run of a job's template");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobframework::authorizer::fake::FakeAuthorizer;

    fn template() -> PodTemplateSpec {
        serde_json::from_value(json!({
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "main", "image": "i",
                     "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]},
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn a_refused_pod_field_is_named_under_its_template() {
        let message = "Invalid value: \"2\": must be less than or equal to cpu limit of 1";
        let fake =
            FakeAuthorizer::new().refuse("podtemplates", "template.spec.containers[0].resources.requests", message);
        let template = template();
        let templates = [("spec.podSets[0].template".to_string(), &template)];
        let errors = pod_templates(&templates, "team-a", &fake).await;
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [format!("spec.podSets[0].template.spec.containers[0].resources.requests: {message}")]
        );
        assert_eq!(fake.dry_runs(), ["podtemplates kueue-ext-dry-run- team-a"]);
        assert!(pod_templates(&templates, "team-a", &FakeAuthorizer::new()).await.is_empty());
    }

    #[tokio::test]
    async fn an_unanswered_dry_run_blocks_nothing() {
        let template = template();
        let templates = [("t".to_string(), &template)];
        assert!(pod_templates(&templates, "ns", &FakeAuthorizer::new().unreachable()).await.is_empty());
    }
}
