use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn toleration(key: &str) -> Toleration {
    Toleration { key: Some(key.into()), operator: Some("Exists".into()), ..Default::default() }
}

fn template(labels: &[(&str, &str)], selector: &[(&str, &str)]) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: (!labels.is_empty()).then(|| ObjectMeta { labels: Some(map(labels)), ..Default::default() }),
        spec: Some(PodSpec {
            containers: vec![Container { name: "c".into(), image: Some("img".into()), ..Default::default() }],
            node_selector: (!selector.is_empty()).then(|| map(selector)),
            ..Default::default()
        }),
    }
}

#[test]
fn merge_unites_maps_and_dedupes_lists() {
    let mut a = PodSetInfo {
        name: "main".into(),
        labels: map(&[("a", "1")]),
        tolerations: vec![toleration("t")],
        ..Default::default()
    };
    let b = PodSetInfo {
        labels: map(&[("a", "1"), ("b", "2")]),
        tolerations: vec![toleration("t"), toleration("u")],
        ..Default::default()
    };
    a.merge(&b).unwrap();
    assert_eq!(a.labels, map(&[("a", "1"), ("b", "2")]));
    assert_eq!(a.tolerations.len(), 2);
}

#[test]
fn merge_conflict_names_pod_set_field_and_key() {
    let mut a = PodSetInfo { name: "main".into(), node_selector: map(&[("zone", "a")]), ..Default::default() };
    let b = PodSetInfo { node_selector: map(&[("zone", "b")]), ..Default::default() };
    let err = a.merge(&b).unwrap_err();
    assert_eq!(err.to_string(), r#"pod set main: conflicting nodeSelector "zone": "a" and "b""#);
}

#[test]
fn admission_brings_flavor_labels_tolerations_queue_labels_and_check_updates() {
    let labels = map(&[("type", "kwok")]);
    let tolerations = [toleration("spot")];
    let flavors = BTreeMap::from([("f".to_string(), Flavor { node_labels: &labels, tolerations: &tolerations })]);
    let assignments = [Assignment { name: "main", count: Some(2), flavors: vec!["f", "f"] }];
    let empty = BTreeMap::new();
    let extra = map(&[("checked", "yes")]);
    let updates =
        [CheckUpdate { pod_set: "main", labels: &extra, annotations: &empty, node_selector: &empty, tolerations: &[] }];
    let infos =
        infos_from_admission(&[("main".into(), 4)], &assignments, &flavors, &updates, "wl-1", "user-queue", "cq")
            .unwrap();
    let info = &infos[0];
    assert_eq!(info.count, 2, "the admitted count wins");
    assert_eq!(info.node_selector, labels);
    assert_eq!(info.tolerations, tolerations);
    assert_eq!(info.labels[POD_SET_LABEL], "main");
    assert_eq!(info.labels[LOCAL_QUEUE_LABEL], "user-queue");
    assert_eq!(info.labels[CLUSTER_QUEUE_LABEL], "cq");
    assert_eq!(info.labels["checked"], "yes");
    assert_eq!(info.annotations[WORKLOAD_ANNOTATION], "wl-1");
}

#[test]
fn admission_without_count_keeps_the_pod_set_count_and_skips_missing_flavors() {
    let assignments = [Assignment { name: "main", count: None, flavors: vec!["gone"] }];
    let infos =
        infos_from_admission(&[("main".into(), 3)], &assignments, &BTreeMap::new(), &[], "wl", "Not_A_Label", "cq")
            .unwrap();
    assert_eq!(infos[0].count, 3);
    assert!(infos[0].node_selector.is_empty());
    assert!(!infos[0].labels.contains_key(LOCAL_QUEUE_LABEL), "only valid label values are used");
}

#[test]
fn admission_of_the_wrong_length_is_permanent() {
    let err = infos_from_admission(&[("a".into(), 1), ("b".into(), 1)], &[], &BTreeMap::new(), &[], "w", "q", "c")
        .unwrap_err();
    assert_eq!(err, PodSetInfoError::BadLength { expected: 2, got: 0 });
}

#[test]
fn run_then_restore_gives_back_the_original_templates() {
    let original = vec![template(&[("app", "x")], &[]), template(&[], &[("disk", "ssd")])];
    let mut templates = original.clone();
    let infos = vec![
        PodSetInfo {
            name: "a".into(),
            node_selector: map(&[("type", "kwok")]),
            tolerations: vec![toleration("t")],
            ..Default::default()
        },
        PodSetInfo { name: "b".into(), labels: map(&[(POD_SET_LABEL, "b")]), ..Default::default() },
    ];
    run_with_infos(&mut templates, &infos).unwrap();
    assert_eq!(templates[0].spec.as_ref().unwrap().node_selector, Some(map(&[("type", "kwok")])));
    assert_eq!(templates[0].metadata.as_ref().unwrap().labels, Some(map(&[("app", "x")])));
    assert_eq!(templates[1].spec.as_ref().unwrap().node_selector, Some(map(&[("disk", "ssd")])));

    let stored: Vec<(String, i32, PodTemplateSpec)> =
        original.iter().enumerate().map(|(i, t)| (format!("p{i}"), 1, t.clone())).collect();
    assert!(restore_templates(&mut templates, &infos_from_templates(&stored)));
    assert_eq!(templates, original);
    assert!(!restore_templates(&mut templates, &infos_from_templates(&stored)), "restoring twice changes nothing");
}

#[test]
fn run_refuses_conflicts_and_wrong_lengths() {
    let mut templates = vec![template(&[], &[("zone", "a")])];
    let conflicting = [PodSetInfo { name: "main".into(), node_selector: map(&[("zone", "b")]), ..Default::default() }];
    assert!(matches!(run_with_infos(&mut templates, &conflicting), Err(PodSetInfoError::Conflict { .. })));
    assert_eq!(run_with_infos(&mut templates, &[]), Err(PodSetInfoError::BadLength { expected: 1, got: 0 }));
    assert!(!restore_templates(&mut templates, &[]));
}

#[test]
fn equivalence_compares_counts_and_containers_not_labels() {
    let a = template(&[("x", "1")], &[("zone", "a")]);
    let b = template(&[], &[]);
    assert!(equivalent_pod_sets(&[(2, None, &a)], &[(2, None, &b)], true));
    assert!(!equivalent_pod_sets(&[(2, None, &a)], &[(3, None, &b)], true));
    assert!(!equivalent_pod_sets(&[(2, Some(1), &a)], &[(2, None, &b)], true));
    assert!(!equivalent_pod_sets(&[(2, None, &a)], &[], true));
    let mut other_image = b.clone();
    other_image.spec.as_mut().unwrap().containers[0].image = Some("other".into());
    assert!(!equivalent_pod_sets(&[(2, None, &a)], &[(2, None, &other_image)], true));
    let mut tolerant = b.clone();
    tolerant.spec.as_mut().unwrap().tolerations = Some(vec![toleration("t")]);
    assert!(!equivalent_pod_sets(&[(1, None, &b)], &[(1, None, &tolerant)], true));
    assert!(equivalent_pod_sets(&[(1, None, &b)], &[(1, None, &tolerant)], false), "tolerations change on admission");
}
