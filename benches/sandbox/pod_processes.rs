//! The host's processes of a pod that runs on a kind node: a kind node is a container on this
//! host, so every process of its pods is in the host's /proc, in a cgroup named after its
//! container's id.

use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use crate::sandbox::peak_rss_mib;

/// The largest peak resident set (VmHWM) among the main processes of the pods in `namespace`
/// labelled `selector`: of a controller with replicas, the one that did the work.
pub async fn peak_rss_mib_of(client: &kube::Client, namespace: &str, selector: &str) -> f64 {
    let pods: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()));
    let listed = pods.list(&ListParams::default().labels(selector)).await.expect("pods listed");
    let ids: Vec<String> = listed
        .items
        .iter()
        .flat_map(|pod| pod.data["status"]["containerStatuses"].as_array().cloned().unwrap_or_default())
        .filter_map(|status| Some(status["containerID"].as_str()?.rsplit("://").next()?.to_string()))
        .collect();
    assert!(!ids.is_empty(), "no running container in {namespace} labelled {selector}");
    let pids: Vec<i32> = ids.iter().filter_map(|id| first_process_in(id)).collect();
    assert_eq!(pids.len(), ids.len(), "a container of {namespace}/{selector} has no process on this host");
    pids.into_iter().map(peak_rss_mib).fold(0.0, f64::max)
}

/// The lowest pid in the cgroup of container `id`: its entrypoint.
fn first_process_in(id: &str) -> Option<i32> {
    let entries = std::fs::read_dir("/proc").ok()?.flatten();
    let pids = entries.filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok());
    pids.filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| c.contains(id))).min()
}
