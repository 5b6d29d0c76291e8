//! One reconcile of a configured kind's job: the kind's own controller runs its pods and writes
//! its status, so all that is left is the jobframework's part.

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::Action;

use super::ConfiguredJob;
use super::config::Integration;
use crate::jobframework::reconciler::{self, Context, Error};
use crate::jobframework::setup::{Setup, jobs_controller};

pub async fn reconcile(object: &DynamicObject, integration: &Arc<Integration>, ctx: &Context) -> Result<Action, Error> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let job = serde_json::to_value(object)
        .and_then(|value| ConfiguredJob::new(value, integration.clone()))
        .map_err(|source| Error::Encode { name, source })?;
    reconciler::reconcile(&job, ctx).await
}

/// The metrics label of reconciles of kinds integrated by configuration.
const CONFIGURED: &str = "configured";

/// The controller of the jobs of `integration`'s kind, until the process stops.
pub fn start(setup: &Setup, integration: Arc<Integration>) -> BoxFuture<'static, ()> {
    let resource = integration.api_resource();
    tracing::info!(kind = %integration.gvk().kind, "integrated by configuration");
    let api = Api::<DynamicObject>::all_with(setup.client.clone(), &resource);
    let jobs = jobs_controller(api, resource.clone(), |_| {}).owns_stream(setup.workload_changes.subscribe(resource));
    setup.run(jobs, CONFIGURED, move |job: Arc<DynamicObject>, ctx: Arc<Context>| {
        let integration = integration.clone();
        async move { reconcile(&job, &integration, &ctx).await }
    })
}
