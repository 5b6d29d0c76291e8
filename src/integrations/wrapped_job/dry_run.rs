//! Each component of a WrappedJob dry-run as itself whenever what it wraps is new: a component
//! the API server would refuse is refused at admission with its field path.

use futures::future::join_all;
use serde_json::{Value, json};

use super::authz::type_of;
use crate::api::wrapped_job::WrappedJob;
use crate::jobframework::authorizer::{Authorizer, ServedResource};
use crate::jobframework::dry_run::refused;
use crate::jobframework::served_kinds::group_version;
use crate::jobframework::webhook::{FieldError, dns1123_label};

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
        let path = format!("spec.components[{i}].template");
        if let Some(stand_in) = with_stand_in_name(&object, &resource) {
            let errors = refused(&path, &resource, namespace, &stand_in, authorizer, "").await;
            if errors.is_empty() {
                return errors;
            }
            // What refused the stand-in names it: ask again as the component itself.
        }
        refused(&path, &resource, namespace, &object, authorizer, "").await
    });
    join_all(checks).await.concat()
}

/// `object` under a stand-in name of the same length, when that cannot change the answer: the
/// name is a DNS-1123 label (63 characters at most), and Kubernetes itself
/// serves the kind (its API groups have no dot, a CRD's must), whose validation reads a name
/// only for its form and length. Jobs of one template then share one dry run, which the
/// authorizer reuses, where their own names would each cost a round trip.
fn with_stand_in_name(object: &Value, resource: &ServedResource) -> Option<Value> {
    let name = object["metadata"]["name"].as_str()?;
    if dns1123_label(name).is_err() || resource.group.contains('.') {
        return None;
    }
    let mut stand_in = object.clone();
    stand_in["metadata"]["name"] = json!("x".repeat(name.len()));
    Some(stand_in)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobframework::authorizer::fake::FakeAuthorizer;

    fn job_of(components: Value) -> WrappedJob {
        serde_json::from_value(json!({
            "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
            "metadata": {"name": "w", "namespace": "team-a"},
            "spec": {"components": components},
        }))
        .unwrap()
    }

    fn component(api_version: &str, kind: &str, name: &str) -> Value {
        json!({"template": {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}})
    }

    #[tokio::test]
    async fn jobs_of_one_template_share_a_dry_run_under_a_stand_in_name() {
        let fake = FakeAuthorizer::new().serve("example.com/v1", "Trainer", "trainers", true);
        for job in ["job-1-work", "job-2-work"] {
            let job = job_of(json!([component("batch/v1", "Job", job)]));
            assert!(components(&job, "team-a", &fake).await.is_empty());
        }
        let odd = job_of(json!([
            component("v1", "ConfigMap", "settings.v2"),
            component("v1", "ConfigMap", "-dash"),
            component("example.com/v1", "Trainer", "trainer-1"),
        ]));
        assert!(components(&odd, "team-a", &fake).await.is_empty());
        assert_eq!(
            fake.dry_runs(),
            [
                "jobs xxxxxxxxxx team-a",
                "jobs xxxxxxxxxx team-a",
                "configmaps settings.v2 team-a",
                "configmaps -dash team-a",
                "trainers trainer-1 team-a",
            ],
            "a plain name of Kubernetes' own kind stands in; a dotted or odd name, or a CRD's kind, goes as itself"
        );
    }

    #[tokio::test]
    async fn components_are_dry_run_as_themselves_and_unserved_kinds_are_skipped() {
        let job =
            job_of(json!(
                [component("batch/v1", "Job", &"a".repeat(64)), component("example.com/v1", "Unknown", "u"),]
            ));
        let fake = FakeAuthorizer::new().refuse("jobs", "metadata.name", "must be no more than 63 characters");
        let errors: Vec<String> = components(&job, "team-a", &fake).await.iter().map(ToString::to_string).collect();
        assert_eq!(errors, ["spec.components[0].template.metadata.name: must be no more than 63 characters"]);
        assert_eq!(fake.dry_runs(), [format!("jobs {} team-a", "a".repeat(64))], "no label: no stand-in");
    }

    #[tokio::test]
    async fn a_refused_stand_in_is_asked_again_as_the_component() {
        let job = job_of(json!([component("batch/v1", "Job", "job-1-work")]));
        let fake = FakeAuthorizer::new().refuse("jobs", "spec.template", "Required value");
        let errors: Vec<String> = components(&job, "team-a", &fake).await.iter().map(ToString::to_string).collect();
        assert_eq!(errors, ["spec.components[0].template.spec.template: Required value"]);
        assert_eq!(
            fake.dry_runs(),
            ["jobs xxxxxxxxxx team-a", "jobs job-1-work team-a"],
            "the refusal is the component's own, naming its own name"
        );
    }
}
