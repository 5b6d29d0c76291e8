use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::pods::{NewPod, ObservedPod, new_pod, plan};
use super::*;
use crate::api::condition::Condition;
use crate::api::external_job::{ExternalJobSpec, ExternalJobStatus, ExternalPodSet, PodSetStatus};
use crate::jobframework::admission::JobWebhook;

fn template(cpu: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                image: Some("registry.invalid/x".into()),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(cpu.into()))])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

pub(super) fn job(pod_sets: &[(&str, i32)]) -> ExternalJob {
    let mut job = ExternalJob::new(
        "train",
        ExternalJobSpec {
            suspend: Some(false),
            managed_by: None,
            pod_sets: pod_sets
                .iter()
                .map(|(name, count)| ExternalPodSet {
                    name: (*name).into(),
                    count: *count,
                    min_count: None,
                    template: template("1"),
                })
                .collect(),
            backoff_limit: Some(1),
            active_deadline_seconds: None,
        },
    );
    job.metadata = ObjectMeta {
        name: Some("train".into()),
        namespace: Some("default".into()),
        uid: Some("uid-1".into()),
        ..Default::default()
    };
    job
}

fn pod(name: &str, set: &str, phase: &str, ready: bool) -> ObservedPod {
    ObservedPod {
        name: name.into(),
        pod_set: set.into(),
        slot: None,
        phase: phase.into(),
        ready,
        deleting: false,
        stranded_since: None,
    }
}

/// The `attempt`-th pod of `slot`, named as the controller names it.
fn pod_in(set: &str, slot: i32, attempt: usize, phase: &str) -> ObservedPod {
    ObservedPod { slot: Some(slot), ..pod(&format!("train-{set}-{slot}-{attempt}"), set, phase, phase == "Running") }
}

fn new(pod_set: usize, slot: i32, attempt: usize) -> NewPod {
    NewPod { pod_set, slot, attempt }
}

#[test]
fn running_job_gets_its_missing_pods() {
    let job = job(&[("driver", 1), ("workers", 3)]);
    let pods = [pod_in("workers", 0, 0, "Running"), pod_in("workers", 2, 0, "Succeeded")];
    let plan = plan(&job, &pods, "2026-01-01T00:00:00Z");
    assert_eq!(plan.create, vec![new(0, 0, 0), new(1, 1, 0)]);
    assert!(plan.delete.is_empty());
    assert_eq!(
        plan.status.pod_sets[1],
        PodSetStatus { name: "workers".into(), active: 2, ready: 1, succeeded: 1, failed: 0, terminating: 0 },
        "the pod being created is active already"
    );
    assert_eq!(plan.status.start_time.as_deref(), Some("2026-01-01T00:00:00Z"));
}

#[test]
fn suspended_job_loses_its_active_pods() {
    let mut job = job(&[("main", 2)]);
    job.spec.suspend = Some(true);
    let pods = [pod("a", "main", "Running", true), pod("b", "main", "Succeeded", false)];
    let plan = plan(&job, &pods, "now");
    assert_eq!(plan.delete, vec!["a".to_string()]);
    assert!(plan.create.is_empty());
    assert!(crate::api::condition::is_true(&plan.status.conditions, SUSPENDED));
    assert_eq!((plan.status.pod_sets[0].active, plan.status.pod_sets[0].terminating), (0, 1));
}

/// Kueue may evict the job in the very reconcile that creates its pods: the status it reads
/// then must already count them, or the quota goes back while they start.
#[test]
fn a_job_holds_its_quota_from_pod_creation_until_its_pods_have_ended() {
    let mut job = job(&[("launcher", 1), ("workers", 2)]);
    let created = plan(&job, &[], "now");
    assert_eq!(created.create, vec![new(0, 0, 0), new(1, 0, 0), new(1, 1, 0)]);
    job.status = Some(created.status);
    assert!(job.is_active(), "pods being created");

    job.spec.suspend = Some(true);
    let running = [pod("l", "launcher", "Running", true), pod("w1", "workers", "Running", true)];
    let stopping = plan(&job, &running, "now");
    assert_eq!(stopping.delete.len(), 2);
    job.status = Some(stopping.status);
    assert!(job.is_active(), "pods being deleted");

    let mut terminating = running.clone();
    terminating.iter_mut().for_each(|p| p.deleting = true);
    job.status = Some(plan(&job, &terminating, "now").status);
    assert!(job.is_active(), "pods deleted but still running");

    let ended = [ObservedPod { phase: "Failed".into(), ..terminating[0].clone() }];
    job.status = Some(plan(&job, &ended, "now").status);
    assert!(!job.is_active(), "every pod ended or gone");
}

#[test]
fn all_pods_succeeded_completes_the_job() {
    let job = job(&[("main", 2)]);
    let pods = [pod("a", "main", "Succeeded", false), pod("b", "main", "Succeeded", false)];
    let plan = plan(&job, &pods, "now");
    assert!(crate::api::condition::is_true(&plan.status.conditions, COMPLETE));
    assert_eq!(plan.status.completion_time.as_deref(), Some("now"));
    let mut done = job.clone();
    done.status = Some(plan.status);
    assert_eq!(done.finished(), Some(Finished { success: true, message: "All pods succeeded".into() }));
}

#[test]
fn failures_beyond_the_backoff_limit_fail_the_job_and_stop_its_pods() {
    let job = job(&[("main", 3)]);
    let pods =
        [pod("a", "main", "Failed", false), pod("b", "main", "Failed", false), pod("c", "main", "Running", true)];
    let plan = plan(&job, &pods, "now");
    assert!(crate::api::condition::is_true(&plan.status.conditions, FAILED));
    assert_eq!(plan.delete, vec!["c".to_string()]);
    let retry = super::pods::plan(&job, &pods[1..], "now");
    assert_eq!(retry.create.len(), 2, "one failure is within the limit: replace the failed pod too");
}

/// Names are derived from the slot and the attempt: a pod the cache has not shown yet is
/// planned again under the same name, and the API server refuses it rather than running it twice.
#[test]
fn a_failed_pod_is_replaced_under_the_next_name_of_its_slot() {
    let job = job(&[("main", 2)]);
    let pods = [pod_in("main", 0, 0, "Failed"), pod_in("main", 1, 0, "Running")];
    let plan = plan(&job, &pods, "now");
    assert_eq!(plan.create, vec![new(0, 0, 1)]);
    let replacement = new_pod(&job, &plan.create[0]);
    assert_eq!(replacement.metadata.name.as_deref(), Some("train-main-0-1"));
    assert_eq!(replacement.metadata.generate_name, None);
    assert_eq!(replacement.metadata.labels.unwrap()[super::pods::POD_INDEX_LABEL], "0");

    let unseen = super::pods::plan(&job, &pods, "later");
    assert_eq!(unseen.create, plan.create, "the cache still lags: the same pod, by the same name");

    let deleted_while_running = [pod_in("main", 0, 0, "Running"), ObservedPod { deleting: true, ..pods[1].clone() }];
    assert_eq!(super::pods::plan(&job, &deleted_while_running, "now").create, vec![new(0, 1, 1)]);
}

/// A pod as the API shows it after its node restarted between creating its container and
/// starting it (seen on kind: the kubelet made no new sandbox for it, and it waited for ever).
fn pod_left_by_a_node_restart(since: &str, container_id: Option<&str>, waiting_reason: Option<&str>) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "train-main-0-0", "labels": {super::pods::POD_SET_LABEL: "main", super::pods::POD_INDEX_LABEL: "0"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "False", "lastTransitionTime": since},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            ],
            "containerStatuses": [{
                "name": "main", "image": "busybox", "imageID": "", "ready": false, "restartCount": 0,
                "containerID": container_id, "lastState": {},
                "state": {"waiting": waiting_reason.map_or_else(|| serde_json::json!({}), |r| serde_json::json!({"reason": r}))},
            }],
        },
    }))
    .unwrap()
}

#[test]
fn a_pod_its_node_left_unstarted_is_replaced_once_stranded_for_a_minute() {
    use super::pods::until_stranded;
    use std::time::Duration;
    let since = "2026-01-01T00:01:00Z";
    let stranded = ObservedPod::from_pod(&pod_left_by_a_node_restart(since, Some("containerd://1e14"), None));
    assert_eq!(stranded.stranded_since.as_deref(), Some(since));
    assert_eq!(stranded.phase, "Pending");
    let creating = ObservedPod::from_pod(&pod_left_by_a_node_restart(since, None, Some("ContainerCreating")));
    assert_eq!(creating.stranded_since, None, "a sandbox still being made is not stranded");
    let backing_off = ObservedPod::from_pod(&pod_left_by_a_node_restart(since, Some("containerd://1e14"), Some("x")));
    assert_eq!(backing_off.stranded_since, None, "a container waiting for a reason is the kubelet's to start");

    let job = job(&[("main", 2)]);
    let pods = [stranded.clone(), pod_in("main", 1, 0, "Running")];
    let early = plan(&job, &pods, "2026-01-01T00:01:30Z");
    assert!(early.delete.is_empty() && early.create.is_empty(), "{early:?}");
    assert_eq!(until_stranded(&pods, "2026-01-01T00:01:30Z"), Some(Duration::from_secs(31)));

    let due = plan(&job, &pods, "2026-01-01T00:02:00Z");
    assert_eq!(due.delete, vec![stranded.name.clone()]);
    assert_eq!(due.create, vec![new(0, 0, 1)], "its slot gets the next attempt");
    assert_eq!(due.status.pod_sets[0].failed, 0, "its work never began: no failure counted");
    assert_eq!(due.status.pod_sets[0].terminating, 1);
    assert_eq!(until_stranded(&pods, "2026-01-01T00:02:00Z"), None);
}

#[test]
fn deadline_fails_a_running_job() {
    let mut job = job(&[("main", 1)]);
    job.spec.active_deadline_seconds = Some(10);
    job.status = Some(ExternalJobStatus { start_time: Some("2026-01-01T00:00:00Z".into()), ..Default::default() });
    let plan = plan(&job, &[pod("a", "main", "Running", true)], "2026-01-01T00:00:11Z");
    let failed = crate::api::condition::find(&plan.status.conditions, FAILED).unwrap();
    assert_eq!(failed.reason, "DeadlineExceeded");
}

#[test]
fn a_running_job_with_a_deadline_is_looked_at_again_just_past_it() {
    use super::pods::until_deadline;
    use std::time::Duration;
    let mut job = job(&[("main", 1)]);
    let running = [pod("a", "main", "Running", true)];
    job.status = Some(ExternalJobStatus { start_time: Some("2026-01-01T00:00:00Z".into()), ..Default::default() });
    let at = |now: &str, job: &ExternalJob| until_deadline(job, &plan(job, &running, now).status, now);
    assert_eq!(at("2026-01-01T00:00:04Z", &job), None, "no deadline");

    job.spec.active_deadline_seconds = Some(10);
    assert_eq!(at("2026-01-01T00:00:04Z", &job), Some(Duration::from_secs(7)));
    assert_eq!(at("2026-01-01T00:00:10Z", &job), Some(Duration::from_secs(1)), "not past it yet");
    assert_eq!(at("2026-01-01T00:00:11Z", &job), None, "failed: nothing left to wait for");

    job.spec.suspend = Some(true);
    assert_eq!(at("2026-01-01T00:00:04Z", &job), None, "suspended");
}

#[test]
fn run_with_infos_then_restore_gives_back_the_template() {
    let mut running = job(&[("main", 4)]);
    running.spec.suspend = Some(true);
    let original = running.clone();
    let info = PodSetInfo {
        name: "main".into(),
        count: 3,
        node_selector: BTreeMap::from([("zone".to_string(), "a".to_string())]),
        ..Default::default()
    };
    running.run_with_pod_sets_info(std::slice::from_ref(&info)).unwrap();
    assert!(!running.is_suspended());
    assert_eq!(running.spec.pod_sets[0].count, 3);
    let selector = running.spec.pod_sets[0].template.spec.as_ref().unwrap().node_selector.clone().unwrap();
    assert_eq!(selector["zone"], "a");

    let stored = podset::infos_from_templates(&[("main".into(), 4, original.spec.pod_sets[0].template.clone())]);
    running.suspend();
    assert!(running.restore_pod_sets_info(&stored));
    assert_eq!(running.spec, original.spec);
    assert!(!running.restore_pod_sets_info(&[]), "a length mismatch changes nothing");
}

#[test]
fn pod_sets_and_activity_follow_spec_and_status() {
    let mut job = job(&[("main", 2)]);
    assert_eq!(job.pod_sets()[0].count, 2);
    assert!(!job.is_active() && !job.pods_ready());
    job.status = Some(ExternalJobStatus {
        pod_sets: vec![PodSetStatus {
            name: "main".into(),
            active: 2,
            ready: 1,
            succeeded: 1,
            failed: 0,
            terminating: 0,
        }],
        ..Default::default()
    });
    assert!(job.is_active() && job.pods_ready());
    job.status.as_mut().unwrap().conditions.push(Condition::new(FAILED, true, "BackoffLimitExceeded", "too many"));
    assert_eq!(job.finished(), Some(Finished { success: false, message: "too many".into() }));
}

#[test]
fn validation_names_each_bad_field() {
    let mut bad = job(&[("Main", 0)]);
    bad.metadata.labels = Some(BTreeMap::from([("kueue.x-k8s.io/queue-name".to_string(), "Bad_Queue".to_string())]));
    bad.spec.pod_sets[0].template = template("lots");
    let errors: Vec<String> = JobWebhook::validate_create(&bad).iter().map(ToString::to_string).collect();
    let expect = [
        "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Bad_Queue\"",
        "spec.podSets[0].name: Invalid value: \"Main\"",
        "spec.podSets[0].count: Invalid value: \"0\"",
        "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\"",
    ];
    for want in expect {
        assert!(errors.iter().any(|e| e.starts_with(want)), "missing {want:?} in {errors:#?}");
    }
}

#[test]
fn pod_set_count_must_be_one_to_eight() {
    assert!(JobWebhook::validate_create(&job(&[])).iter().any(|e| e.path == "spec.podSets"));
    let nine: Vec<(String, i32)> = (0..9).map(|i| (format!("p{i}"), 1)).collect();
    let nine: Vec<(&str, i32)> = nine.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert!(JobWebhook::validate_create(&job(&nine)).iter().any(|e| e.path == "spec.podSets"));
    let eight: Vec<(String, i32)> = (0..8).map(|i| (format!("p{i}"), 1)).collect();
    let eight: Vec<(&str, i32)> = eight.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert!(JobWebhook::validate_create(&job(&eight)).is_empty());
    assert!(
        JobWebhook::validate_create(&job(&[("a", 1), ("a", 1)])).iter().any(|e| e.message.starts_with("Duplicate"))
    );
}

#[test]
fn running_jobs_keep_pod_sets_queue_and_managed_by() {
    let old = job(&[("main", 2)]);
    let mut grown = old.clone();
    grown.spec.pod_sets[0].count = 5;
    assert!(JobWebhook::validate_update(&old, &grown).iter().any(|e| e.path == "spec.podSets"));
    let mut suspended_old = old.clone();
    suspended_old.spec.suspend = Some(true);
    assert!(
        JobWebhook::validate_update(&suspended_old, &grown).is_empty(),
        "starting a suspended job may change its pod sets"
    );

    let mut requeued = old.clone();
    requeued.metadata.labels = Some(BTreeMap::from([("kueue.x-k8s.io/queue-name".to_string(), "other".to_string())]));
    assert!(JobWebhook::validate_update(&old, &requeued).iter().any(|e| e.path.contains("queue-name")));

    let mut handed_over = old.clone();
    handed_over.spec.managed_by = Some("someone/else".into());
    assert!(JobWebhook::validate_update(&old, &handed_over).iter().any(|e| e.path == "spec.managedBy"));
}

/// Kueue's `CanDefaultManagedBy`: a job on a MultiKueue queue is handed to MultiKueue unless it
/// named a controller other than this one.
#[test]
fn multikueue_defaulting_keeps_a_controller_the_job_named() {
    use crate::api::kueue::MULTIKUEUE_CONTROLLER;
    use crate::jobframework::managed_by::KUEUE_EXT_CONTROLLER;
    use crate::jobframework::reconciler::Config;

    let cases = [
        (None, Some(MULTIKUEUE_CONTROLLER)),
        (Some(KUEUE_EXT_CONTROLLER), Some(MULTIKUEUE_CONTROLLER)),
        (Some("example.com/some-controller"), Some("example.com/some-controller")),
    ];
    for (named, defaulted) in cases {
        let mut queued = job(&[("main", 1)]);
        queued.metadata.labels = Some(BTreeMap::from([("kueue.x-k8s.io/queue-name".into(), "user-queue".into())]));
        queued.spec.managed_by = named.map(Into::into);
        queued.apply_defaults(&Config::default(), true);
        assert_eq!(queued.spec.managed_by.as_deref(), defaulted, "{named:?}");
    }
}
