//! What carrying out a step asks of the API server, and how soon a refused create is tried
//! again. The API server here is scripted: discovery serves batch Jobs, the job's status takes
//! every write, and the Job create is refused.

use http::Method;
use kube::runtime::reflector::store::Writer;
use serde_json::{Value, json};

use super::*;
use crate::api::wrapped_job::COMPONENT_INDEX_ANNOTATION;
use crate::integrations::wrapped_job::watched::listed_empty;
use crate::jobframework::events::EventSink;
use crate::jobframework::field_manager::QUERY;
use crate::jobframework::reconciler::Config;
use crate::test_api_server::{Requests, requested, scripted_client};

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const STATUS: &str = "/apis/kueue-ext.dev/v1alpha1/namespaces/default/wrappedjobs/wj/status";

/// An admitted WrappedJob of one batch Job, resuming: its Job is still to be created.
fn resuming() -> WrappedJob {
    serde_json::from_value(json!({
        "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
        "metadata": {"name": "wj", "namespace": "default", "uid": "uid-1", "resourceVersion": "7"},
        "spec": {"suspend": false, "components": [{"template": {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "wj-work"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "w"}]}}},
        }}]},
        "status": {"phase": "Resuming", "componentStatus": [{"name": "wj-work", "kind": "Job", "apiVersion": "batch/v1"}]},
    }))
    .unwrap()
}

fn discovery() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "batch/v1", "resources": [
        {"name": "jobs", "singularName": "job", "namespaced": true, "kind": "Job", "verbs": ["create", "get", "list"]},
    ]})
}

/// An API server whose admission refuses the Job create as "not found".
fn api_server(job: &WrappedJob) -> (kube::Client, Requests) {
    let job = json!(job);
    scripted_client(move |method, path| match (method, path) {
        (&Method::GET, "/apis/batch/v1") => Ok(discovery()),
        (&Method::POST, JOBS) => Err(404),
        (&Method::PATCH, STATUS) => Ok(job.clone()),
        _ => Err(500),
    })
}

fn context(client: kube::Client) -> Context {
    Context {
        client,
        config: Config::default(),
        workloads: Writer::default().as_reader(),
        own_writes: Default::default(),
        flavors: Writer::default().as_reader(),
        events: EventSink::held().0,
        multikueue: Default::default(),
        multikueue_clusters: Writer::default().as_reader(),
    }
}

/// Kueue's Job webhook answers 404 while its cache has not seen the Job's owner: a refusal
/// that passes later. Looking again only when the admission grace ran out reset the job
/// instead, with any component already created running twice.
#[tokio::test]
async fn a_create_a_webhook_refuses_for_now_is_tried_again_within_a_second() {
    let job = resuming();
    let (client, requests) = api_server(&job);
    // Planned before the create was refused: look again when the admission grace runs out.
    let step = Step {
        status: job.status.clone().unwrap(),
        actions: vec![Act::Create(0)],
        requeue: Some(Duration::from_secs(60)),
        notes: Vec::new(),
    };
    let (_, look_again) = act_with_nothing_there(&job, client, step).await.expect("acted");
    assert_eq!(
        requested(&requests),
        ["GET /apis/batch/v1".to_string(), format!("POST {JOBS}{QUERY}"), format!("PATCH {STATUS}{QUERY}")]
    );
    assert_eq!(look_again, Some(lifecycle::CREATE_RETRY));
}

/// `spec.managedBy` naming another controller: that controller creates the components and
/// writes the status, so nothing of the job is touched here (the jobframework still keeps its
/// Workload; this job names no queue, so it has none). The same job managed by this controller
/// has its Job created.
#[tokio::test]
async fn a_job_another_controller_manages_has_no_component_created_and_no_status_written() {
    let cases = [
        (None, true),
        (Some(crate::jobframework::managed_by::KUEUE_EXT_CONTROLLER), true),
        (Some("example.com/some-controller"), false),
        (Some(crate::api::kueue::MULTIKUEUE_CONTROLLER), false),
    ];
    for (managed_by, ours) in cases {
        let mut job = resuming();
        job.spec.managed_by = managed_by.map(Into::into);
        job.metadata.finalizers = Some(vec![WRAPPED_JOB_FINALIZER.into()]);
        let (client, requests) = api_server(&job);
        let caches = listed_empty();
        reconcile(&job, &context(client.clone()), &ServedKinds::new(client), &caches, &Default::default())
            .await
            .expect("reconciled");
        let requested = requested(&requests);
        if ours {
            assert!(requested.contains(&format!("POST {JOBS}{QUERY}")), "{managed_by:?}: {requested:?}");
        } else {
            assert_eq!(requested, Vec::<String>::new(), "{managed_by:?}");
        }
    }
}

/// A reconcile queued before the one that removed the finalizer and let the job go finds it
/// gone: the removal is done, not a failure to report and retry.
#[tokio::test]
async fn removing_the_finalizer_of_a_job_already_gone_is_done() {
    let mut job = resuming();
    job.metadata.finalizers = Some(vec![WRAPPED_JOB_FINALIZER.into()]);
    let (client, requests) = scripted_client(|_, _| Err(404));
    let step = Step {
        status: job.status.clone().unwrap(),
        actions: vec![Act::RemoveFinalizer],
        requeue: None,
        notes: Vec::new(),
    };
    act_with_nothing_there(&job, client, step).await.expect("nothing is left to do");
    let job_path = STATUS.trim_end_matches("/status");
    assert_eq!(requested(&requests), [format!("PATCH {job_path}{QUERY}")]);
}

/// Under a burst the watch brings a created Job seconds later, and the status written meanwhile
/// reconciles the job again: that reconcile finds the Job as it was created, and creates nothing.
/// (Before, 110 of 200 WrappedJobs had their Job POSTed again, refused as already there.)
#[tokio::test]
async fn a_component_just_created_is_not_created_again_before_its_watch_brings_it() {
    let mut job = resuming();
    job.metadata.finalizers = Some(vec![WRAPPED_JOB_FINALIZER.into()]);
    let answer = json!(job);
    let (client, requests) = scripted_client(move |method, path| match (method, path) {
        (&Method::GET, "/apis/batch/v1") => Ok(discovery()),
        (&Method::POST, JOBS) => Ok(json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "wj-work", "namespace": "default", "annotations": {COMPONENT_INDEX_ANNOTATION: "0"},
                "ownerReferences": [{"apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob", "name": "wj",
                    "uid": "uid-1", "controller": true}]}})),
        (&Method::PATCH, STATUS) => Ok(answer.clone()),
        _ => Err(500),
    });
    let (ctx, kinds, caches) = (context(client.clone()), ServedKinds::new(client), listed_empty());
    for _ in 0..2 {
        reconcile(&job, &ctx, &kinds, &caches, &Default::default()).await.expect("reconciled");
    }
    let posts = requested(&requests).into_iter().filter(|r| r.starts_with("POST")).collect::<Vec<_>>();
    assert_eq!(posts, [format!("POST {JOBS}{QUERY}")]);
}

/// `act` on `step` for a job whose component does not exist, with nothing cached.
async fn act_with_nothing_there(
    job: &WrappedJob,
    client: kube::Client,
    step: Step,
) -> Result<(WrappedJob, Option<Duration>), super::Error> {
    let observed = lifecycle::Observed { components: vec![ObservedComponent::Missing], pods: Default::default() };
    let (ctx, kinds) = (context(client.clone()), ServedKinds::new(client));
    act(job, &ctx, &kinds, &listed_empty(), step, &observed, &Default::default()).await
}
