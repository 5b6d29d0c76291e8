//! ExternalJob as the registry holds it, and its two controllers on one watch, as
//! kube-controller-manager's Job controller and Kueue's job reconciler run apart: the
//! jobframework keeps the Workloads, the pod controller runs the pods. With slots of their own,
//! a burst of jobs gets its Workloads (and its place in the queues) without waiting behind the
//! pods of those already admitted.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::CustomResourceExt;
use kube::api::{Api, ApiResource};
use kube::runtime::controller::{self as runtime_controller, Controller};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{pod_cache, pod_controller};
use crate::api::external_job::ExternalJob;
use crate::jobframework::admission::admit;
use crate::jobframework::generic_job::reading;
use crate::jobframework::integration_callbacks::IntegrationCallbacks;
use crate::jobframework::reconciler::{self, Context};
use crate::jobframework::setup::{Setup, bounded, shared_jobs};

/// The metrics label of the pod controller's reconciles.
const POD_CONTROLLER: &str = "ExternalJob pods";

/// Reconciles in flight in the pod controller. Fewer than the jobframework's: pods wait a
/// little (kube-controller-manager's Job controller runs 5), Workloads of new jobs do not.
const CONCURRENT_POD_RECONCILES: u16 = 8;

pub const INTEGRATION: IntegrationCallbacks = IntegrationCallbacks {
    description: include_str!("description.yaml"),
    sample: include_str!("sample.yaml"),
    short_names: &["ej"],
    read: |object| ExternalJob::deserialize(object).ok().map(|job| reading(&job)),
    admit: admit::<ExternalJob>,
    start,
    crd: ExternalJob::crd,
    controller_rules,
};

fn controller_rules() -> Vec<Value> {
    vec![
        // The webhook dry-runs a PodTemplate of each pod set (never stored).
        json!({"apiGroups": [""], "resources": ["podtemplates"], "verbs": ["create"]}),
        // Its pods: create, watch and delete, never update.
        json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "create", "delete"]}),
    ]
}

fn start(setup: &Setup) -> BoxFuture<'static, ()> {
    let (store, mut feed) = shared_jobs(Api::<ExternalJob>::all(setup.client.clone()));
    let workloads = Controller::for_stream(feed.subscribe(), store.clone())
        .with_config(bounded())
        .owns_stream(setup.workload_changes.subscribe(ApiResource::erase::<ExternalJob>(&())));
    let workloads = setup.run(workloads, "ExternalJob", |job: Arc<ExternalJob>, ctx: Arc<Context>| async move {
        reconciler::reconcile(job.as_ref(), &ctx).await
    });
    let pods = Controller::for_stream(feed.subscribe(), store)
        .with_config(runtime_controller::Config::default().concurrency(CONCURRENT_POD_RECONCILES));
    let (pods, pod_cache) = pod_cache::watch(pods, &setup.client);
    let pod_cache = Arc::new(pod_cache);
    let pods = setup.run(pods, POD_CONTROLLER, move |job: Arc<ExternalJob>, ctx: Arc<Context>| {
        let pod_cache = pod_cache.clone();
        async move { pod_controller::reconcile(&job, &ctx.client, &pod_cache).await }
    });
    async move {
        tokio::spawn(feed.run());
        futures::join!(workloads, pods);
    }
    .boxed()
}
