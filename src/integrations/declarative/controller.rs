//! One reconcile of a configured kind's job: the kind's own controller runs its pods and writes
//! its status, so all that is left is the jobframework's part.

use std::sync::Arc;

use kube::api::DynamicObject;
use kube::runtime::controller::Action;

use super::ConfiguredJob;
use super::config::Integration;
use crate::jobframework::reconciler::{self, Context, Error};

pub async fn reconcile(object: &DynamicObject, integration: &Arc<Integration>, ctx: &Context) -> Result<Action, Error> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let job = serde_json::to_value(object)
        .and_then(|value| ConfiguredJob::new(value, integration.clone()))
        .map_err(|source| Error::Encode { name, source })?;
    reconciler::reconcile(&job, ctx).await
}
