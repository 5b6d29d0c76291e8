//! What the runtime asks of the API server: the status write that counts new pods holds the
//! job's resourceVersion, and a job with nothing to report costs no request.

use http::Method;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::controller::Action;
use serde_json::json;

use super::pod_cache::PodCache;
use super::pod_controller::reconcile;
use super::pods::{JOB_UID_LABEL, POD_INDEX_LABEL, POD_SET_LABEL};
use super::tests::job;
use crate::api::external_job::ExternalJob;
use crate::jobframework::field_manager::QUERY;
use crate::jobframework::reconciler::Error;
use crate::test_api_server::{Requests, requested, scripted_client};

const STATUS: &str = "/apis/kueue-ext.dev/v1alpha1/namespaces/default/externaljobs/train/status";
const PODS: &str = "/api/v1/namespaces/default/pods";

/// An admitted job of one pod, as read at resourceVersion 7.
fn admitted() -> ExternalJob {
    let mut job = job(&[("main", 1)]);
    job.metadata.resource_version = Some("7".into());
    job
}

fn running_pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "train-main-0-0", "namespace": "default",
                     "labels": {JOB_UID_LABEL: "uid-1", POD_SET_LABEL: "main", POD_INDEX_LABEL: "0"}},
        "status": {"phase": "Running"},
    }))
    .unwrap()
}

/// A client whose API server takes every write to the job's status with `status_write` (an
/// answer, or the code it refuses with) and every other request as asked.
fn api_server(job: &ExternalJob, status_write: Option<u16>) -> (kube::Client, Requests) {
    let job = json!(job);
    scripted_client(move |method, path| match (method, path) {
        (&Method::PATCH, STATUS) => status_write.map_or_else(|| Ok(job.clone()), Err),
        (&Method::POST, PODS) => Ok(json!(running_pod())),
        (&Method::DELETE, _) => Ok(json!(running_pod())),
        _ => Err(500),
    })
}

/// The `metadata` of the body of the one status write.
fn status_write_metadata(requests: &Requests) -> serde_json::Value {
    let requests = requests.lock().unwrap();
    let writes: Vec<_> = requests.iter().filter(|(request, _)| *request == format!("PATCH {STATUS}{QUERY}")).collect();
    assert_eq!(writes.len(), 1, "{requests:?}");
    writes[0].1["metadata"].clone()
}

#[tokio::test]
async fn the_status_that_counts_new_pods_is_written_on_the_job_as_read_then_the_pods_created() {
    let job = admitted();
    let (client, requests) = api_server(&job, None);
    reconcile(&job, &client, &PodCache::listed(Vec::new())).await.expect("pods created");
    assert_eq!(requested(&requests), [format!("PATCH {STATUS}{QUERY}"), format!("POST {PODS}{QUERY}")]);
    assert_eq!(status_write_metadata(&requests), json!({"resourceVersion": "7"}));
}

/// The jobframework suspended the job after it was read: no pod may start on the quota it is
/// giving back.
#[tokio::test]
async fn a_job_changed_since_it_was_read_gets_no_pod() {
    let job = admitted();
    let (client, requests) = api_server(&job, Some(409));
    let err = reconcile(&job, &client, &PodCache::listed(Vec::new())).await.unwrap_err();
    assert!(matches!(err, Error::Kube { source: kube::Error::Api(ref s), .. } if s.is_conflict()), "{err:?}");
    assert_eq!(requested(&requests), [format!("PATCH {STATUS}{QUERY}")], "no pod created");
}

/// Stopping pods must not wait for a quiet moment on the job: its status is written whatever
/// changed since.
#[tokio::test]
async fn a_suspended_job_has_its_pods_counted_as_terminating_without_a_precondition_then_deleted() {
    let mut job = admitted();
    job.spec.suspend = Some(true);
    let (client, requests) = api_server(&job, None);
    reconcile(&job, &client, &PodCache::listed(vec![running_pod()])).await.expect("pods deleted");
    assert_eq!(requested(&requests), [format!("PATCH {STATUS}{QUERY}"), format!("DELETE {PODS}/train-main-0-0")]);
    assert_eq!(status_write_metadata(&requests), serde_json::Value::Null);
}

#[tokio::test]
async fn a_new_job_waiting_for_admission_costs_no_request() {
    let mut job = admitted();
    job.spec.suspend = Some(true);
    let (client, requests) = api_server(&job, None);
    let action = reconcile(&job, &client, &PodCache::listed(Vec::new())).await.expect("nothing to do");
    assert_eq!(action, Action::await_change());
    assert_eq!(requested(&requests), Vec::<String>::new());
}

/// `spec.managedBy` naming another controller: its pods and status are that controller's, even
/// when the cache shows a pod of the job and the job is suspended (which would otherwise delete
/// it). The same holds for a MultiKueue manager's job, whose copy on a worker runs.
#[tokio::test]
async fn a_job_another_controller_manages_gets_neither_pods_nor_status_writes() {
    for managed_by in ["example.com/some-controller", crate::api::kueue::MULTIKUEUE_CONTROLLER] {
        for suspend in [false, true] {
            let mut job = admitted();
            job.spec.managed_by = Some(managed_by.into());
            job.spec.suspend = Some(suspend);
            for pods in [Vec::new(), vec![running_pod()]] {
                let (client, requests) = api_server(&job, None);
                let action = reconcile(&job, &client, &PodCache::listed(pods)).await.expect("nothing to do");
                assert_eq!(action, Action::await_change());
                assert_eq!(requested(&requests), Vec::<String>::new(), "{managed_by}, suspend {suspend}");
            }
        }
    }
}

#[tokio::test]
async fn a_job_that_names_this_controller_is_run_as_one_that_names_none() {
    let mut job = admitted();
    job.spec.managed_by = Some(crate::jobframework::managed_by::KUEUE_EXT_CONTROLLER.into());
    let (client, requests) = api_server(&job, None);
    reconcile(&job, &client, &PodCache::listed(Vec::new())).await.expect("pods created");
    assert_eq!(requested(&requests), [format!("PATCH {STATUS}{QUERY}"), format!("POST {PODS}{QUERY}")]);
}
