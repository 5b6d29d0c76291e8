//! WrappedJob as the registry holds it, and its controller: components of the kinds every
//! cluster serves are watched, others are looked at on a timer.

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::CustomResourceExt;
use kube::api::{Api, ApiResource};
use kube::runtime::controller::Action;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{controller, watched};
use crate::api::wrapped_job::WrappedJob;
use crate::integrations::kueue_frameworks::KUEUE_FRAMEWORKS;
use crate::jobframework::admission::admit;
use crate::jobframework::generic_job::reading;
use crate::jobframework::integration_callbacks::IntegrationCallbacks;
use crate::jobframework::own_writes::{KEPT_FOR, OwnWrites};
use crate::jobframework::reconciler::Context;
use crate::jobframework::served_kinds::ServedKinds;
use crate::jobframework::setup::{Setup, jobs_controller};

/// Components a WrappedJob may have that are no kind of job: the configuration its jobs read.
const NOT_JOBS: [(&str, &str); 2] = [("", "services"), ("", "configmaps")];

/// The kinds the controller may create and delete for WrappedJobs, `(API group, resource)`:
/// those of Kueue's integrations a WrappedJob may wrap, then Services and ConfigMaps. The webhook
/// asks the API server whether the controller may, so extending the ClusterRole lets a cluster
/// wrap more kinds; the CRD kinds need their CRDs installed to be used.
pub fn wrappable() -> impl Iterator<Item = (&'static str, &'static str)> {
    let jobs = KUEUE_FRAMEWORKS.iter().filter(|f| f.as_component.is_some()).map(|f| (f.group, f.resource));
    jobs.chain(NOT_JOBS)
}

pub const INTEGRATION: IntegrationCallbacks = IntegrationCallbacks {
    description: include_str!("description.yaml"),
    sample: include_str!("sample.yaml"),
    short_names: &["wj"],
    read: |object| WrappedJob::deserialize(object).ok().map(|job| reading(&job)),
    admit: admit::<WrappedJob>,
    start,
    crd: WrappedJob::crd,
    controller_rules,
};

fn controller_rules() -> Vec<Value> {
    // The webhook asks whether the submitting user may create each component.
    let mut rules = vec![
        json!({"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}),
    ];
    // The components: create, watch and delete, never update.
    for (group, resource) in wrappable() {
        rules.push(json!({"apiGroups": [group], "resources": [resource], "verbs": ["get", "list", "watch", "create", "delete"]}));
    }
    rules
}

fn start(setup: &Setup) -> BoxFuture<'static, ()> {
    let kinds = Arc::new(ServedKinds::new(setup.client.clone()));
    let own_writes = Arc::new(OwnWrites::default());
    let seeing = own_writes.clone();
    let jobs = jobs_controller(Api::<WrappedJob>::all(setup.client.clone()), (), move |job| seeing.seen(job))
        .owns_stream(setup.workload_changes.subscribe(ApiResource::erase::<WrappedJob>(&())));
    let (jobs, caches) = watched::watch(jobs, &setup.client);
    setup.run(jobs, "WrappedJob", move |job: Arc<WrappedJob>, ctx: Arc<Context>| {
        let (kinds, caches, own_writes) = (kinds.clone(), caches.clone(), own_writes.clone());
        async move {
            let newest = own_writes.newest(job);
            let action = controller::reconcile(&newest.object, &ctx, &kinds, &caches, &own_writes).await?;
            // Decided on our own write in place of a cache that trailed it: again once it expires.
            Ok(if newest.stand_in && action == Action::await_change() { Action::requeue(KEPT_FOR) } else { action })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappable_kinds_are_kueues_marked_so_then_services_and_configmaps() {
        let kinds: Vec<_> = wrappable().collect();
        assert_eq!(
            kinds,
            [
                ("", "pods"),
                ("apps", "deployments"),
                ("apps", "statefulsets"),
                ("batch", "jobs"),
                ("jobset.x-k8s.io", "jobsets"),
                ("kubeflow.org", "pytorchjobs"),
                ("ray.io", "rayclusters"),
                ("ray.io", "rayjobs"),
                ("leaderworkerset.x-k8s.io", "leaderworkersets"),
                ("", "services"),
                ("", "configmaps"),
            ]
        );
    }
}
