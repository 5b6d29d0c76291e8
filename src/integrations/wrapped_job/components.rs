//! The cluster side of a WrappedJob: what exists of its components and pods, and the calls
//! that create and delete them. The decisions are `lifecycle`'s; this module only looks and acts.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use kube::{Client, ResourceExt};
use serde_json::Value;

use super::lifecycle::{
    Completion, ComponentOutcome, ComponentPods, FailedExit, Observed, ObservedComponent, completion_of,
};
use super::podsets;
use super::watched::Caches;
use crate::api::wrapped_job::{COMPONENT_INDEX_ANNOTATION, ComponentFailure, WRAPPED_JOB_LABEL, WrappedJob};
use crate::integrations::kueue_frameworks;
use crate::jobframework::api_error;
use crate::jobframework::field_manager::post_params;
use crate::jobframework::served_kinds::{Served, ServedKinds};

/// The apiVersion and kind of a component template.
pub fn type_of(template: &Value) -> (&str, &str) {
    (template["apiVersion"].as_str().unwrap_or_default(), template["kind"].as_str().unwrap_or_default())
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {what}: {}", api_error::in_words(source))]
    Kube {
        action: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
}

fn kube_err(action: &'static str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let what = what.into();
    move |source| Error::Kube { action, what, source }
}

/// The job's components (by label, owner and index) and its pods: from the controller's caches
/// for the kinds it watches, through the API for the others.
pub async fn observe(
    client: &Client,
    kinds: &ServedKinds,
    caches: &Caches,
    job: &WrappedJob,
) -> Result<Observed, Error> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let selector = ListParams::default().labels(&format!("{WRAPPED_JOB_LABEL}={name}"));
    let uid = job.uid().unwrap_or_default();
    let mut listed: HashMap<(String, String), (Vec<DynamicObject>, bool)> = HashMap::new();
    let mut components = Vec::with_capacity(job.spec.components.len());
    for (index, component) in job.spec.components.iter().enumerate() {
        let (api_version, kind) = type_of(&component.template);
        let key = (api_version.to_string(), kind.to_string());
        if !listed.contains_key(&key) {
            let objects = match caches.components(api_version, kind, &namespace, &name) {
                Some(cached) => (cached, true),
                None => (
                    match kinds.served(api_version, kind).await.map_err(kube_err("discover", kind))? {
                        Some(Served { resource, .. }) => {
                            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
                            match api.list(&selector).await {
                                Ok(list) => list.items,
                                // Its CRD is gone since it was looked up, and every object of the kind with it.
                                Err(err) if api_error::is_unserved(&err) => Vec::new(),
                                Err(err) => return Err(kube_err("list", resource.plural.clone())(err)),
                            }
                        }
                        None => Vec::new(),
                    },
                    false,
                ),
            };
            listed.insert(key.clone(), objects);
        }
        let (objects, watched) = &listed[&key];
        let cached = objects.iter().find(|o| {
            o.owner_references().iter().any(|r| r.controller == Some(true) && r.uid == uid)
                && o.annotations().get(COMPONENT_INDEX_ANNOTATION) == Some(&index.to_string())
        });
        // A component created by a reconcile just before, whose watch event has not come yet.
        let mine = match cached {
            Some(object) => {
                caches.forget_created(&uid, index);
                Some(object.clone())
            }
            None if *watched => caches.just_created(&uid, index),
            None => None,
        };
        components.push(match mine {
            Some(object) => {
                let value = serde_json::to_value(&object).unwrap_or_default();
                let (completion, outcome) = classify(api_version, kind, &value);
                ObservedComponent::Present {
                    name: object.name_any(),
                    deleting: object.metadata.deletion_timestamp.is_some(),
                    completion,
                    outcome,
                    watched: *watched,
                }
            }
            None => ObservedComponent::Missing,
        });
    }
    let pods = caches.pods(&namespace, &name);
    Ok(Observed { components, pods: count_pods(pods.iter().map(AsRef::as_ref)) })
}

/// Whether a component of this kind ends on its own, and how it is doing, from its status.
pub fn classify(api_version: &str, kind: &str, object: &Value) -> (Completion, ComponentOutcome) {
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let condition = |type_: &str| {
        let conditions = object["status"]["conditions"].as_array().into_iter().flatten();
        conditions.into_iter().find(|c| c["type"] == type_ && c["status"] == "True")
    };
    let failure = |c: &Value| ComponentFailure {
        reason: c["reason"].as_str().unwrap_or_default().to_string(),
        message: c["message"].as_str().unwrap_or_default().to_string(),
    };
    let reported = kueue_frameworks::of_kind(group, kind)
        .filter(|f| f.as_component.is_some())
        .and_then(|f| f.finished_conditions());
    let outcome = match (group, kind, reported) {
        (_, _, Some((succeeded, failed))) => match (condition(succeeded), condition(failed)) {
            (Some(_), _) => ComponentOutcome::Succeeded,
            (None, Some(c)) => ComponentOutcome::Failed(failure(c)),
            (None, None) => ComponentOutcome::Running,
        },
        ("", "Pod", _) => match object["status"]["phase"].as_str() {
            Some("Succeeded") => ComponentOutcome::Succeeded,
            Some("Failed") => ComponentOutcome::Failed(pod_failure(&object["status"])),
            _ => ComponentOutcome::Running,
        },
        ("apps", "Deployment" | "StatefulSet", _) => {
            condition("ReplicaFailure").map_or(ComponentOutcome::Running, |c| ComponentOutcome::Degraded(failure(c)))
        }
        _ => ComponentOutcome::Running,
    };
    (completion_of(api_version, kind), outcome)
}

/// Why a failed Pod failed: the kubelet's reason (`Evicted`, `DeadlineExceeded`) when it gives
/// one, else the first container that exited with a non-zero code.
fn pod_failure(status: &Value) -> ComponentFailure {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    if status["reason"].as_str().is_some_and(|r| !r.is_empty()) {
        return ComponentFailure { reason: text(&status["reason"]), message: text(&status["message"]) };
    }
    let containers = status["containerStatuses"].as_array().into_iter().flatten();
    let exited = containers
        .filter_map(|c| Some((c, c["state"]["terminated"].as_object()?)))
        .find(|(_, t)| t.get("exitCode").and_then(Value::as_i64).is_some_and(|code| code != 0));
    match exited {
        Some((container, terminated)) => ComponentFailure {
            reason: terminated.get("reason").map(text).unwrap_or_default(),
            message: format!(
                "container {} exited with code {}",
                text(&container["name"]),
                terminated.get("exitCode").and_then(Value::as_i64).unwrap_or_default()
            ),
        },
        None => ComponentFailure::default(),
    }
}

/// Pods by phase; a pod being deleted counts only as terminating.
pub fn count_pods<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> ComponentPods {
    let mut counts = ComponentPods::default();
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            counts.terminating += 1;
            continue;
        }
        let status = pod.status.as_ref();
        match status.and_then(|s| s.phase.as_deref()) {
            Some("Running") => counts.running += 1,
            Some("Succeeded") => counts.succeeded += 1,
            Some("Failed") => {
                counts.failed += 1;
                let containers = status.and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
                counts.exits.extend(containers.iter().filter_map(|c| {
                    let code = c.state.as_ref()?.terminated.as_ref()?.exit_code;
                    (code != 0).then(|| FailedExit { pod: pod.name_any(), container: c.name.clone(), code })
                }));
            }
            _ => counts.pending += 1,
        }
    }
    counts
}

/// Why a create failed, and whether trying again can help.
pub struct CreateFailure {
    pub fatal: bool,
    pub message: String,
}

/// Creates component `index` (admission infos injected, labelled, owned by the job) and returns
/// it as the API server answered. An object of that name that this job already controls counts
/// as created.
pub async fn create(
    client: &Client,
    kinds: &ServedKinds,
    job: &WrappedJob,
    index: usize,
) -> Result<DynamicObject, CreateFailure> {
    let fatal = |message: String| CreateFailure { fatal: true, message };
    let component = &job.spec.components[index];
    let (api_version, kind) = type_of(&component.template);
    let pod_sets = podsets::component_pod_sets(index, component).map_err(|e| fatal(e.to_string()))?;
    let mut object = podsets::object_to_create(job, index, &pod_sets).map_err(|e| fatal(e.to_string()))?;
    object["metadata"]["annotations"][COMPONENT_INDEX_ANNOTATION] = Value::String(index.to_string());
    let resource = match kinds.served(api_version, kind).await {
        Ok(Some(served)) => served.resource,
        Ok(None) => return Err(fatal(api_error::not_served(kind, api_version))),
        Err(err) => return Err(CreateFailure { fatal: false, message: api_error::in_words(&err) }),
    };
    let object: DynamicObject =
        serde_json::from_value(object).map_err(|e| fatal(format!("the component is not an object: {e}")))?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &job.namespace().unwrap_or_default(), &resource);
    match api.create(&post_params(), &object).await {
        Ok(created) => Ok(created),
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            let name = object.name_any();
            let existing = api
                .get_opt(&name)
                .await
                .map_err(|e| CreateFailure { fatal: false, message: api_error::in_words(&e) })?;
            let uid = job.uid().unwrap_or_default();
            match existing {
                Some(o) if o.owner_references().iter().any(|r| r.controller == Some(true) && r.uid == uid) => Ok(o),
                _ => Err(fatal(format!("{} {name} exists and is not controlled by this WrappedJob", resource.kind))),
            }
        }
        // Served when looked up, gone since (its CRD deleted): it may come back.
        Err(err) if api_error::is_unserved(&err) => {
            Err(CreateFailure { fatal: false, message: api_error::not_served(kind, api_version) })
        }
        Err(kube::Error::Api(status)) => {
            Err(CreateFailure { fatal: refused_for_good(status.code), message: status.message.clone() })
        }
        Err(err) => Err(CreateFailure { fatal: false, message: api_error::in_words(&err) }),
    }
}

/// Whether a create the API server refused with `code` would be refused again: a request it
/// cannot read (400) or an invalid object (422); unknown kinds never get this far. Anything else
/// may pass later: quota, a busy server, and webhooks, which deny with codes of their own:
/// Kueue's Job webhook answers 404 when its cache has not seen the component's owner yet (a soak
/// lost two WrappedJobs to that).
fn refused_for_good(code: u16) -> bool {
    matches!(code, 400 | 422)
}

/// Deletes components by index (what is already gone is fine); children go in the background.
pub async fn delete(
    client: &Client,
    kinds: &ServedKinds,
    job: &WrappedJob,
    names: &[(usize, String)],
    forceful: bool,
) -> Result<(), Error> {
    let params = if forceful { DeleteParams::background().grace_period(0) } else { DeleteParams::background() };
    for (index, name) in names {
        let (api_version, kind) = type_of(&job.spec.components[*index].template);
        let Some(Served { resource, .. }) =
            kinds.served(api_version, kind).await.map_err(kube_err("discover", kind))?
        else {
            continue;
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &job.namespace().unwrap_or_default(), &resource);
        match api.delete(name, &params).await {
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            // Its CRD is gone, and every object of the kind with it.
            Err(err) if api_error::is_unserved(&err) => {}
            other => {
                other.map_err(kube_err("delete", format!("{kind} {name}")))?;
            }
        }
    }
    Ok(())
}

/// Deletes every pod of the job without grace: the last resort of the deletion protocol.
pub async fn delete_pods(client: &Client, job: &WrappedJob) -> Result<(), Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &job.namespace().unwrap_or_default());
    let selector = ListParams::default().labels(&format!("{WRAPPED_JOB_LABEL}={}", job.name_any()));
    for pod in pods.list(&selector).await.map_err(kube_err("list pods of", job.name_any()))? {
        match pods.delete(&pod.name_any(), &DeleteParams::default().grace_period(0)).await {
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            other => {
                other.map_err(kube_err("delete pod", pod.name_any()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_an_unreadable_or_invalid_component_is_refused_for_good() {
        assert!(refused_for_good(400) && refused_for_good(422));
        // 404: a webhook whose cache lags; 403, 409, 429, 500: denials and a busy server.
        for code in [403, 404, 409, 429, 500, 503] {
            assert!(!refused_for_good(code), "{code} may pass later");
        }
    }

    /// What the job's status and its CreateFailed event then say.
    #[tokio::test]
    async fn a_component_of_a_kind_the_cluster_does_not_serve_fails_in_words() {
        let job: WrappedJob = serde_json::from_value(json!({
            "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
            "metadata": {"name": "wj", "namespace": "default", "uid": "uid-1"},
            "spec": {"suspend": false, "components": [{
                "podSets": [{"path": "template.spec.leaderWorkerTemplate.workerTemplate", "replicas": 2}],
                "template": {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                             "metadata": {"name": "lws"},
                             "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "w", "image": "w"}]}}}}},
            }]},
        }))
        .unwrap();
        let client = crate::jobframework::api_error::serving_nothing();
        let failure = create(&client, &ServedKinds::new(client.clone()), &job, 0).await.expect_err("not served");
        assert!(failure.fatal);
        assert_eq!(
            failure.message,
            "the cluster does not serve LeaderWorkerSet in leaderworkerset.x-k8s.io/v1: is its CRD installed (kubectl \
             get crds)?"
        );
    }

    #[test]
    fn kinds_are_classified_by_how_they_end() {
        let job = |conditions: Value| json!({"status": {"conditions": conditions}});
        let cases = [
            (
                "batch/v1",
                "Job",
                job(json!([{"type": "Complete", "status": "True"}])),
                Completion::RunsToCompletion,
                ComponentOutcome::Succeeded,
            ),
            (
                "batch/v1",
                "Job",
                job(json!([{"type": "Complete", "status": "False"}])),
                Completion::RunsToCompletion,
                ComponentOutcome::Running,
            ),
            (
                "batch/v1",
                "Job",
                job(
                    json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many"}]),
                ),
                Completion::RunsToCompletion,
                ComponentOutcome::Failed(ComponentFailure {
                    reason: "BackoffLimitExceeded".into(),
                    message: "too many".into(),
                }),
            ),
            (
                "v1",
                "Pod",
                json!({"status": {"phase": "Succeeded"}}),
                Completion::RunsToCompletion,
                ComponentOutcome::Succeeded,
            ),
            (
                "v1",
                "Pod",
                json!({"status": {"phase": "Failed", "containerStatuses": [
                    {"name": "side", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                    {"name": "main", "state": {"terminated": {"exitCode": 42, "reason": "Error"}}},
                ]}}),
                Completion::RunsToCompletion,
                ComponentOutcome::Failed(ComponentFailure {
                    reason: "Error".into(),
                    message: "container main exited with code 42".into(),
                }),
            ),
            (
                "v1",
                "Pod",
                json!({"status": {"phase": "Failed", "reason": "DeadlineExceeded", "message": "too long"}}),
                Completion::RunsToCompletion,
                ComponentOutcome::Failed(ComponentFailure {
                    reason: "DeadlineExceeded".into(),
                    message: "too long".into(),
                }),
            ),
            (
                "jobset.x-k8s.io/v1alpha2",
                "JobSet",
                job(json!([{"type": "Completed", "status": "True"}])),
                Completion::RunsToCompletion,
                ComponentOutcome::Succeeded,
            ),
            ("apps/v1", "Deployment", json!({}), Completion::RunsUntilDeleted, ComponentOutcome::Running),
            (
                "apps/v1",
                "Deployment",
                job(
                    json!([{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "forbidden"}]),
                ),
                Completion::RunsUntilDeleted,
                ComponentOutcome::Degraded(ComponentFailure {
                    reason: "FailedCreate".into(),
                    message: "forbidden".into(),
                }),
            ),
            ("v1", "Service", json!({}), Completion::RunsUntilDeleted, ComponentOutcome::Running),
            ("example.com/v1", "Widget", json!({}), Completion::Unknown, ComponentOutcome::Running),
        ];
        for (api_version, kind, object, completion, outcome) in cases {
            assert_eq!(classify(api_version, kind, &object), (completion, outcome), "{kind} {object}");
        }
    }

    #[test]
    fn pods_are_counted_by_phase_with_their_exit_codes() {
        let pod = |name: &str, phase: &str, code: Option<i32>, deleting: bool| -> Pod {
            let mut value = json!({"metadata": {"name": name}, "status": {"phase": phase}});
            if let Some(code) = code {
                value["status"]["containerStatuses"] = json!([{"name": "main", "image": "x", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": code}}}]);
            }
            if deleting {
                value["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            serde_json::from_value(value).unwrap()
        };
        let counts = count_pods(&[
            pod("a", "Pending", None, false),
            pod("b", "Running", None, false),
            pod("c", "Running", None, true),
            pod("d", "Succeeded", Some(0), false),
            pod("e", "Failed", Some(3), false),
        ]);
        assert_eq!(
            (counts.pending, counts.running, counts.terminating, counts.succeeded, counts.failed),
            (1, 1, 1, 1, 1)
        );
        assert_eq!(counts.exits, [FailedExit { pod: "e".into(), container: "main".into(), code: 3 }]);
    }
}
