//! What a reconcile asks of the API server when its Workload comes from the cache. The API
//! server here is a recorder: it answers the requests a test scripts (by default a Workload GET
//! with the Workload it is given) and refuses everything else, so a test sees every request a
//! decision would have made.

use http::Method;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;

use super::*;
use crate::api::external_job::{ExternalJob, ExternalJobStatus, PodSetStatus};
use crate::api::kueue::{AdmissionCheckState, EVICTED, MULTIKUEUE_CONTROLLER, PREBUILT_WORKLOAD_LABEL};
use crate::jobframework::events::EventSink;
use crate::jobframework::field_manager::QUERY;
use crate::jobframework::fixtures::{FLAVOR, suspended_job, workload};
use crate::test_api_server::{self, Requests, requested};

/// A client whose API server serves `current` on GET and refuses anything else.
fn recording_client(current: Option<Workload>) -> (Client, Requests) {
    scripted_client(move |method, _| if *method == Method::GET { current.clone().ok_or(500) } else { Err(500) })
}

/// A client whose API server answers a request (method, path) with the Workload `answer` gives,
/// or refuses it with the status code it gives instead.
fn scripted_client(
    answer: impl Fn(&Method, &str) -> Result<Workload, u16> + Clone + Send + 'static,
) -> (Client, Requests) {
    test_api_server::scripted_client(move |method, path| answer(method, path).map(|wl| json!(wl)))
}

fn assert_no_request(requests: &Requests) {
    let requests = requested(requests);
    assert!(requests.is_empty(), "requests: {requests:?}");
}

/// Reconciles `job` with `cached` in the Workload cache: nothing to do, and nothing asked.
async fn settles_at_no_request(job: &ExternalJob, cached: Workload) {
    let (client, requests) = recording_client(None);
    let ctx = context(client, &[cached]);
    assert_eq!(reconcile(job, &ctx).await.expect("nothing to do"), Action::await_change());
    assert_no_request(&requests);
}

fn context(client: Client, cached: &[Workload]) -> Context {
    let mut writer: Writer<Workload> = Writer::default();
    for wl in cached {
        writer.apply_watcher_event(&watcher::Event::Apply(wl.clone()));
    }
    let mut flavors: Writer<ResourceFlavor> = Writer::default();
    flavors.apply_watcher_event(&watcher::Event::Apply(ResourceFlavor::new(FLAVOR, Default::default())));
    Context {
        client: client.clone(),
        config: Config::default(),
        workloads: writer.as_reader(),
        own_writes: Default::default(),
        flavors: flavors.as_reader(),
        events: EventSink::held().0,
        multikueue: Default::default(),
        multikueue_clusters: Writer::default().as_reader(),
    }
}

#[tokio::test]
async fn a_job_waiting_for_admission_costs_no_request() {
    let job = suspended_job();
    settles_at_no_request(&job, workload(&job, false)).await;
}

#[tokio::test]
async fn a_job_being_deleted_gets_no_new_workload() {
    let mut job = suspended_job();
    job.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
    let (client, requests) = recording_client(None);
    let ctx = context(client, &[]);
    assert_eq!(reconcile(&job, &ctx).await.expect("nothing to do"), Action::await_change());
    assert_no_request(&requests);
}

#[tokio::test]
async fn an_admission_seen_in_the_cache_is_confirmed_before_the_job_starts() {
    let job = suspended_job();
    // The cache shows the admission; the API server has already taken it back.
    let (client, requests) = recording_client(Some(workload(&job, false)));
    let ctx = context(client, &[workload(&job, true)]);
    let action = reconcile(&job, &ctx).await.expect("nothing to do on the current Workload");
    assert_eq!(action, Action::await_change());
    let name = workload::name_for(&job);
    assert_eq!(
        requested(&requests),
        [format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/{name}?resourceVersion=1")],
        "one read (from the watch cache, at least as new as the cached copy), and no write to the job"
    );
}

#[tokio::test]
async fn an_admission_the_api_server_confirms_starts_the_job_with_flavors_from_the_cache() {
    let job = suspended_job();
    let (client, requests) = recording_client(Some(workload(&job, true)));
    let ctx = context(client, &[workload(&job, true)]);
    // The recorder refuses the write: reaching it is what this test looks for.
    assert!(reconcile(&job, &ctx).await.is_err());
    let name = workload::name_for(&job);
    assert_eq!(
        requested(&requests),
        [
            format!("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/{name}?resourceVersion=1"),
            format!("PUT /apis/kueue-ext.dev/v1alpha1/namespaces/default/externaljobs/train{QUERY}"),
        ],
        "the flavor is read from the cache"
    );
}

#[tokio::test]
async fn a_running_job_on_an_admitted_workload_costs_no_request() {
    let mut job = suspended_job();
    job.spec.suspend = Some(false);
    settles_at_no_request(&job, workload(&job, true)).await;
}

#[tokio::test]
async fn a_job_evicted_and_stopped_waits_for_admission_at_no_request() {
    let mut job = suspended_job();
    let mut wl = workload(&job, false);
    let mut conditions = wl.conditions().to_vec();
    condition::set(&mut conditions, Condition::new(EVICTED, true, "Preempted", ""), &condition::now());
    wl.status.as_mut().unwrap().conditions = conditions;
    // Stopped already: suspended, with the templates the Workload recorded.
    job.restore_pod_sets_info(&recorded_infos(&wl));
    settles_at_no_request(&job, wl).await;
}

/// A Workload evicted while it holds quota, for `job` whose status shows 3 pods running.
fn evicted_while_running(job: &mut ExternalJob) -> Workload {
    let mut wl = workload(job, true);
    let mut conditions = wl.conditions().to_vec();
    condition::set(&mut conditions, Condition::new(EVICTED, true, "AdmissionCheck", "remote lost"), &condition::now());
    wl.status.as_mut().unwrap().conditions = conditions;
    job.restore_pod_sets_info(&recorded_infos(&wl));
    job.status = Some(ExternalJobStatus {
        pod_sets: vec![PodSetStatus {
            name: "workers".into(),
            active: 3,
            ready: 0,
            succeeded: 0,
            failed: 0,
            terminating: 0,
        }],
        ..Default::default()
    });
    wl
}

#[tokio::test]
async fn an_evicted_job_keeps_its_quota_while_its_pods_run() {
    let mut job = suspended_job();
    let wl = evicted_while_running(&mut job);
    let (client, requests) = recording_client(Some(wl.clone()));
    let ctx = context(client, &[wl]);
    let action = reconcile(&job, &ctx).await.expect("waits");
    assert_eq!(action, Action::requeue(WAIT));
    assert!(!requested(&requests).iter().any(|r| r.starts_with("PATCH")), "{:?}", requested(&requests));
}

/// The manager's copy shows the pods the lost worker last reported: they do not run here.
#[tokio::test]
async fn an_evicted_job_multikueue_runs_gives_its_quota_back_whatever_its_copied_status_says() {
    let mut job = suspended_job();
    job.spec.managed_by = Some(MULTIKUEUE_CONTROLLER.into());
    let wl = evicted_while_running(&mut job);
    let (client, requests) = recording_client(Some(wl.clone()));
    let ctx = context(client, &[wl]);
    // The recorder refuses the write: reaching it is what this test looks for.
    assert!(reconcile(&job, &ctx).await.is_err());
    let path = workload_path(&job);
    assert_eq!(requested(&requests).last(), Some(&format!("PATCH {path}/status{QUERY}")), "{:?}", requested(&requests));
}

/// A job on a MultiKueue manager whose Workload has held quota since `reserved_at` with the
/// MultiKueue check Pending and no worker nominated.
fn dispatched_by_multikueue(reserved_at: &str) -> (ExternalJob, Workload) {
    let mut job = suspended_job();
    job.spec.managed_by = Some(MULTIKUEUE_CONTROLLER.into());
    let mut wl = workload(&job, false);
    let status = wl.status.as_mut().unwrap();
    let mut reserved = Condition::new(QUOTA_RESERVED, true, "QuotaReserved", "");
    reserved.last_transition_time = Some(reserved_at.into());
    status.conditions[0] = reserved;
    status.admission_checks =
        vec![AdmissionCheckState { name: "multikueue".into(), state: "Pending".into(), ..Default::default() }];
    (job, wl)
}

#[tokio::test]
async fn a_workload_multikueue_left_without_a_worker_is_nudged() {
    let (job, wl) = dispatched_by_multikueue("2026-11-24T01:00:00Z");
    let (client, requests) = recording_client(Some(wl.clone()));
    let ctx = context(client, &[wl]);
    // The recorder refuses the write: reaching it is what this test looks for.
    assert!(reconcile(&job, &ctx).await.is_err());
    let path = workload_path(&job);
    assert_eq!(requested(&requests), [format!("GET {path}?resourceVersion=1"), format!("PATCH {path}{QUERY}")]);
}

#[tokio::test]
async fn a_workload_just_reserved_is_looked_at_again_later_at_no_request() {
    let (job, wl) = dispatched_by_multikueue(&condition::now());
    let (client, requests) = recording_client(None);
    let ctx = context(client, &[wl]);
    let action = reconcile(&job, &ctx).await.expect("nothing to do yet");
    assert_ne!(action, Action::await_change(), "a stranded Workload must be looked at again");
    assert_no_request(&requests);
}

#[tokio::test]
async fn a_prebuilt_workload_out_of_sync_is_adopted_then_finished_and_never_started() {
    let mut job = suspended_job();
    job.metadata.annotations = Some([(PREBUILT_WORKLOAD_LABEL.to_string(), "train-copy".to_string())].into());
    // The copy MultiKueue made, admitted, for a job of another shape and not yet owned.
    let mut copy = workload(&job, true);
    copy.metadata.name = Some("train-copy".into());
    copy.metadata.owner_references = None;
    copy.metadata.finalizers = None;
    copy.spec.pod_sets[0].count = 2;
    copy.status.as_mut().unwrap().admission.as_mut().unwrap().pod_set_assignments[0].count = Some(2);
    let mut adopted = copy.clone();
    adopted.metadata.owner_references = Some(vec![workload::owner_reference(&job)]);
    adopted.metadata.resource_version = Some("2".into());
    let mut finished = adopted.clone();
    finished.status.as_mut().unwrap().conditions.push(Condition::new(FINISHED, true, "OutOfSync", ""));
    finished.metadata.resource_version = Some("3".into());

    let path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/train-copy";
    let status_path = format!("{path}/status");
    let (client, requests) = scripted_client(move |method, at| match *method {
        Method::GET if at == path => Ok(copy.clone()),
        Method::PATCH if at == path => Ok(adopted.clone()),
        Method::PATCH if at == status_path => Ok(finished.clone()),
        _ => Err(500),
    });
    let ctx = context(client, &[]);
    assert_eq!(reconcile(&job, &ctx).await.expect("a finished Workload"), Action::await_change());
    assert_eq!(
        requested(&requests),
        [format!("GET {path}"), format!("PATCH {path}{QUERY}"), format!("PATCH {path}/status{QUERY}")]
    );
    let out_of_sync = &requests.lock().unwrap()[2].1;
    assert_eq!(out_of_sync["metadata"]["resourceVersion"], "2", "pinned to the adopted Workload");
}

/// On a MultiKueue worker every job runs on a prebuilt Workload; once adopted, the cache's copy
/// decides, and one the cache has not seen yet, or not adopted, is read.
#[tokio::test]
async fn a_job_on_its_adopted_prebuilt_workload_costs_no_request() {
    let mut job = suspended_job();
    job.metadata.annotations = Some([(PREBUILT_WORKLOAD_LABEL.to_string(), "train-copy".to_string())].into());
    let mut copy = workload(&job, false);
    copy.metadata.name = Some("train-copy".into());
    settles_at_no_request(&job, copy.clone()).await;

    let (client, requests) = recording_client(Some(copy.clone()));
    let mut not_adopted = copy;
    not_adopted.metadata.owner_references = None;
    let ctx = context(client, &[not_adopted]);
    reconcile(&job, &ctx).await.expect("adopted, as the API server tells");
    let path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/train-copy";
    assert_eq!(requested(&requests), [format!("GET {path}")], "not adopted in the cache: read");
}

#[tokio::test]
async fn a_finished_workload_has_its_finalizer_removed_without_a_read_first() {
    let job = suspended_job();
    let finished = finished_with_finalizer(&job);
    let mut released = finished.clone();
    released.metadata.finalizers = None;
    let (client, requests) = scripted_client(move |method, _| match *method {
        Method::PATCH => Ok(released.clone()),
        _ => Err(500),
    });
    let ctx = context(client, &[finished]);
    assert_eq!(reconcile(&job, &ctx).await.expect("released"), Action::await_change());
    let path = workload_path(&job);
    assert_eq!(requested(&requests), [format!("PATCH {path}{QUERY}")], "finished is for good: no read first");
    let patch = &requests.lock().unwrap()[0].1;
    assert_eq!(patch[0], serde_json::json!({"op": "test", "path": "/metadata/uid", "value": "wl-uid-1"}));
}

/// The watch brings the removal seconds later under a burst; a reconcile in between decides on
/// the removal we wrote rather than try it again on the cached copy (refused as a failed test).
#[tokio::test]
async fn a_finalizer_removal_stands_in_for_the_cache_until_the_watch_brings_it() {
    let job = suspended_job();
    let finished = finished_with_finalizer(&job);
    let mut released = finished.clone();
    released.metadata.finalizers = None;
    released.metadata.resource_version = Some("2".into());
    let (client, requests) = scripted_client(move |method, _| match *method {
        Method::PATCH => Ok(released.clone()),
        _ => Err(500),
    });
    let ctx = context(client, &[finished]);
    for _ in 0..2 {
        reconcile(&job, &ctx).await.expect("released");
    }
    let path = workload_path(&job);
    assert_eq!(requested(&requests), [format!("PATCH {path}{QUERY}")], "removed once");
}

#[tokio::test]
async fn a_refused_finalizer_removal_on_a_cached_workload_is_decided_again_on_the_current_one() {
    let job = suspended_job();
    let stale = finished_with_finalizer(&job);
    let mut current = stale.clone();
    current.metadata.finalizers = None;
    let (client, requests) = scripted_client(move |method, _| match *method {
        Method::PATCH => Err(422),
        Method::GET => Ok(current.clone()),
        _ => Err(500),
    });
    let ctx = context(client, &[stale]);
    assert_eq!(reconcile(&job, &ctx).await.expect("already released"), Action::await_change());
    let path = workload_path(&job);
    assert_eq!(requested(&requests), [format!("PATCH {path}{QUERY}"), format!("GET {path}?resourceVersion=1")]);
}

/// Where the API server serves `job`'s Workload.
fn workload_path(job: &ExternalJob) -> String {
    format!("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/{}", workload::name_for(job))
}

/// `job`'s Workload, finished, still holding our finalizer.
fn finished_with_finalizer(job: &ExternalJob) -> Workload {
    let mut finished = workload(job, true);
    finished.status.as_mut().unwrap().conditions.push(Condition::new(FINISHED, true, "Succeeded", ""));
    finished.metadata.finalizers = Some(vec![RESOURCE_IN_USE_FINALIZER.to_string()]);
    finished.metadata.uid = Some("wl-uid-1".into());
    finished
}

const JOB_PATH: &str = "/apis/kueue-ext.dev/v1alpha1/namespaces/default/externaljobs/train";

/// The bodies of the requests made with `method`, in order.
fn bodies(requests: &Requests, method: &str) -> Vec<Value> {
    let log = requests.lock().unwrap();
    log.iter().filter(|(request, _)| request.starts_with(method)).map(|(_, body)| body.clone()).collect()
}

#[tokio::test]
async fn an_evicted_running_job_is_suspended_then_given_its_templates_back_and_keeps_its_quota_meanwhile() {
    let mut job = suspended_job();
    let wl = evicted_while_running(&mut job);
    job.spec.suspend = Some(false);
    let injected = json!({"zone": "a"});
    job.spec.pod_sets[0].template.spec.as_mut().unwrap().node_selector =
        Some(serde_json::from_value(injected.clone()).unwrap());
    let (current, written) = (json!(wl), json!(job));
    let (client, requests) = test_api_server::scripted_client(move |method, path| match (method.as_str(), path) {
        ("GET", _) => Ok(current.clone()),
        ("PUT", JOB_PATH) => Ok(written.clone()),
        _ => Err(500),
    });
    let ctx = context(client, &[wl]);
    assert_eq!(reconcile(&job, &ctx).await.expect("stops"), Action::requeue(WAIT), "pods still run");
    let puts = bodies(&requests, "PUT");
    assert_eq!(puts.len(), 2, "{puts:?}");
    let template = |put: &Value| put["spec"]["podSets"][0]["template"]["spec"].clone();
    // A batch/v1 Job takes template changes only once suspended: stop first, then restore.
    assert_eq!(
        (puts[0]["spec"]["suspend"].clone(), template(&puts[0])["nodeSelector"].clone()),
        (json!(true), injected)
    );
    assert_eq!(
        (puts[1]["spec"]["suspend"].clone(), template(&puts[1])["nodeSelector"].clone()),
        (json!(true), Value::Null)
    );
    assert!(bodies(&requests, "PATCH").is_empty(), "the quota is kept while pods run");
}

#[tokio::test]
async fn a_suspended_job_whose_pod_sets_changed_has_its_workload_updated_to_the_new_shape() {
    let queued = workload(&suspended_job(), false);
    let mut job = suspended_job();
    job.spec.pod_sets[0].count = 3;
    let mut updated = queued.clone();
    updated.spec.pod_sets = job.pod_sets();
    let (client, requests) =
        scripted_client(move |method, _| if *method == Method::PUT { Ok(updated.clone()) } else { Err(500) });
    let ctx = context(client, &[queued]);
    assert_eq!(reconcile(&job, &ctx).await.expect("updates"), Action::await_change());
    assert_eq!(requested(&requests), [format!("PUT {}{QUERY}", workload_path(&job))]);
    let put = &bodies(&requests, "PUT")[0];
    assert_eq!(put["spec"]["podSets"][0]["count"], 3);
    assert_eq!(put["metadata"]["name"], json!(workload::name_for(&job)), "the same Workload, reused");
}

#[tokio::test]
async fn a_workload_of_another_shape_beside_the_matching_one_is_removed() {
    let job = suspended_job();
    let matching = workload(&job, false);
    let mut extra = matching.clone();
    extra.metadata.name = Some("train-old".into());
    extra.metadata.uid = Some("uid-old".into());
    extra.spec.pod_sets[0].count = 5;
    let answer = extra.clone();
    let (client, requests) = scripted_client(move |method, _| match *method {
        Method::PATCH | Method::DELETE => Ok(answer.clone()),
        _ => Err(500),
    });
    let ctx = context(client, &[matching, extra]);
    assert_eq!(reconcile(&job, &ctx).await.expect("cleans up"), Action::await_change());
    let old = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/train-old";
    assert_eq!(requested(&requests), [format!("PATCH {old}{QUERY}"), format!("DELETE {old}")]);
    let patch = bodies(&requests, "PATCH")[0].to_string();
    assert!(patch.contains(RESOURCE_IN_USE_FINALIZER), "the finalizer goes first: {patch}");
}

/// A Workload created and one declared finished, both under the controller's name, so that
/// `managedFields` tell its fields from Kueue's.
#[tokio::test]
async fn the_workload_is_created_and_its_status_written_under_the_controllers_field_manager() {
    let job = suspended_job();
    let workloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads";
    let created = workload(&job, false);
    let (client, requests) = scripted_client(move |method, _| match *method {
        Method::POST => Ok(created.clone()),
        _ => Err(404),
    });
    let ctx = context(client, &[]);
    assert_eq!(reconcile(&job, &ctx).await.expect("created"), Action::await_change());
    assert_eq!(requested(&requests), [format!("POST {workloads}{QUERY}")], "none in the cache: none to read");
    // Until the watch brings it, the Workload we created is the one a reconcile sees: no read,
    // no second create, and a look again once that stand-in expires.
    assert_eq!(reconcile(&job, &ctx).await.expect("waits"), Action::requeue(own_writes::KEPT_FOR));
    assert_eq!(requested(&requests).len(), 1, "{:?}", requested(&requests));

    let mut done = job.clone();
    done.status = Some(ExternalJobStatus {
        conditions: vec![Condition::new(crate::integrations::external_job::COMPLETE, true, "Completed", "")],
        ..Default::default()
    });
    let admitted = workload(&job, true);
    let (current, finished) = (admitted.clone(), admitted.clone());
    let (client, requests) = scripted_client(move |method, _| match *method {
        Method::GET => Ok(current.clone()),
        Method::PATCH => Ok(finished.clone()),
        _ => Err(500),
    });
    assert_eq!(reconcile(&done, &context(client, &[admitted])).await.expect("finished"), Action::await_change());
    let path = workload_path(&job);
    assert_eq!(requested(&requests), [format!("PATCH {path}/status{QUERY}")], "pinned to the cached copy: no read");
}

#[tokio::test]
async fn a_condition_write_refused_as_a_conflict_is_decided_again_on_the_current_workload() {
    let job = suspended_job();
    let mut done = job.clone();
    done.status = Some(ExternalJobStatus {
        conditions: vec![Condition::new(crate::integrations::external_job::COMPLETE, true, "Completed", "")],
        ..Default::default()
    });
    let stale = workload(&job, true);
    let mut current = stale.clone();
    current.metadata.resource_version = Some("2".into());
    let patches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (client, requests) = scripted_client(move |method, _| match *method {
        Method::GET => Ok(current.clone()),
        // Kueue wrote since the cached copy: the first write is refused.
        Method::PATCH if patches.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 => Err(409),
        Method::PATCH => Ok(current.clone()),
        _ => Err(500),
    });
    assert_eq!(reconcile(&done, &context(client, &[stale])).await.expect("finished"), Action::await_change());
    let path = workload_path(&job);
    let status = format!("PATCH {path}/status{QUERY}");
    assert_eq!(requested(&requests), [status.clone(), format!("GET {path}?resourceVersion=1"), status]);
    let pinned: Vec<Value> =
        bodies(&requests, "PATCH").iter().map(|b| b["metadata"]["resourceVersion"].clone()).collect();
    assert_eq!(pinned, [json!("1"), json!("2")], "each write pinned to the copy it was decided on");
}
