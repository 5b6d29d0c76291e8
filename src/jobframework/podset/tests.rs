use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn map(pairs: &[(&str, &str)]) -> StringMap {
    pairs.iter().map(|&(key, value)| (key.to_owned(), value.to_owned())).collect()
}

fn tol(key: &str, operator: Option<&str>, value: &str, effect: &str) -> Toleration {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Toleration {
        key: some(key),
        operator: operator.map(str::to_owned),
        value: some(value),
        effect: some(effect),
        ..Default::default()
    }
}

fn gate(name: &str) -> PodSchedulingGate {
    PodSchedulingGate { name: name.to_owned() }
}

fn named(name: &str) -> PodSetInfo {
    PodSetInfo { name: name.to_owned(), ..PodSetInfo::default() }
}

fn conflict(pod_set: &str, field: &'static str, key: &str, existing: &str, new: &str) -> PodSetInfoError {
    PodSetInfoError::Conflict {
        pod_set: pod_set.to_owned(),
        field,
        key: key.to_owned(),
        existing: existing.to_owned(),
        new: new.to_owned(),
    }
}

/// A template as the API returns it: empty fields unset.
#[derive(Clone, Default)]
struct Tpl {
    labels: &'static [(&'static str, &'static str)],
    annotations: &'static [(&'static str, &'static str)],
    node_selector: &'static [(&'static str, &'static str)],
    tolerations: Vec<Toleration>,
    gates: Vec<PodSchedulingGate>,
    image: &'static str,
}

impl Tpl {
    fn build(&self) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: owned_map(&map(self.labels)),
                annotations: owned_map(&map(self.annotations)),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "main".into(),
                    image: Some(if self.image.is_empty() { "busybox" } else { self.image }.into()),
                    ..Container::default()
                }],
                node_selector: owned_map(&map(self.node_selector)),
                tolerations: owned_list(&self.tolerations),
                scheduling_gates: owned_list(&self.gates),
                ..PodSpec::default()
            }),
        }
    }
}

#[test]
fn merge() {
    let gpu = tol("gpu", None, "true", "NoSchedule");
    let cases: Vec<(&str, PodSetInfo, PodSetInfo, Result<PodSetInfo, PodSetInfoError>)> = vec![
        (
            "disjoint maps are joined",
            PodSetInfo { labels: map(&[("a", "1")]), node_selector: map(&[("zone", "x")]), ..named("ps") },
            PodSetInfo { labels: map(&[("b", "2")]), annotations: map(&[("n", "v")]), ..named("") },
            Ok(PodSetInfo {
                labels: map(&[("a", "1"), ("b", "2")]),
                annotations: map(&[("n", "v")]),
                node_selector: map(&[("zone", "x")]),
                ..named("ps")
            }),
        ),
        (
            "same key with the same value is fine",
            PodSetInfo { labels: map(&[("a", "1")]), ..named("ps") },
            PodSetInfo { labels: map(&[("a", "1")]), ..named("") },
            Ok(PodSetInfo { labels: map(&[("a", "1")]), ..named("ps") }),
        ),
        (
            "label conflict",
            PodSetInfo { labels: map(&[("a", "1")]), ..named("ps") },
            PodSetInfo { labels: map(&[("a", "2")]), ..named("") },
            Err(conflict("ps", "labels", "a", "1", "2")),
        ),
        (
            "annotation conflict",
            PodSetInfo { annotations: map(&[("a", "1")]), ..named("ps") },
            PodSetInfo { annotations: map(&[("a", "2")]), ..named("") },
            Err(conflict("ps", "annotations", "a", "1", "2")),
        ),
        (
            "node selector conflict",
            PodSetInfo { node_selector: map(&[("zone", "x")]), ..named("ps") },
            PodSetInfo { node_selector: map(&[("zone", "y")]), labels: map(&[("new", "1")]), ..named("") },
            Err(conflict("ps", "nodeSelector", "zone", "x", "y")),
        ),
        (
            "annotations are checked before labels",
            PodSetInfo { labels: map(&[("l", "1")]), annotations: map(&[("a", "1")]), ..named("ps") },
            PodSetInfo { labels: map(&[("l", "2")]), annotations: map(&[("a", "2")]), ..named("") },
            Err(conflict("ps", "annotations", "a", "1", "2")),
        ),
        (
            "tolerations: an unset operator equals Equal and tolerationSeconds is ignored",
            PodSetInfo { tolerations: vec![gpu.clone()], ..named("ps") },
            PodSetInfo {
                tolerations: vec![
                    tol("gpu", Some("Equal"), "true", "NoSchedule"),
                    Toleration { toleration_seconds: Some(30), ..gpu.clone() },
                    tol("gpu", None, "false", "NoSchedule"),
                    tol("gpu", Some("Exists"), "", "NoSchedule"),
                    tol("gpu", Some("Exists"), "", "NoSchedule"),
                ],
                ..named("")
            },
            Ok(PodSetInfo {
                tolerations: vec![
                    gpu.clone(),
                    tol("gpu", None, "false", "NoSchedule"),
                    tol("gpu", Some("Exists"), "", "NoSchedule"),
                ],
                ..named("ps")
            }),
        ),
        (
            "scheduling gates without duplicates",
            PodSetInfo { scheduling_gates: vec![gate("a")], ..named("ps") },
            PodSetInfo { scheduling_gates: vec![gate("a"), gate("b"), gate("b")], ..named("") },
            Ok(PodSetInfo { scheduling_gates: vec![gate("a"), gate("b")], ..named("ps") }),
        ),
        (
            "name and count stay",
            PodSetInfo { count: 3, ..named("ps") },
            PodSetInfo { count: 5, ..named("other") },
            Ok(PodSetInfo { count: 3, ..named("ps") }),
        ),
    ];
    for (name, base, other, want) in cases {
        let mut got = base.clone();
        let result = got.merge(&other);
        match want {
            Ok(want) => assert_eq!((result, got), (Ok(()), want), "{name}"),
            // A failed merge must leave the info as it was.
            Err(err) => assert_eq!((result, got), (Err(err), base), "{name}"),
        }
    }
}

#[test]
fn error_messages() {
    let cases = [
        (PodSetInfoError::BadLength { expected: 2, got: 1 }, "expecting 2 pod sets info, got 1"),
        (
            conflict("main", "nodeSelector", "zone", "a", "b"),
            r#"invalid pod set update for pod set "main": conflict for nodeSelector key "zone": "a" vs "b""#,
        ),
    ];
    for (err, want) in cases {
        assert_eq!(err.to_string(), want);
    }
}

/// pod set, labels, annotations, node selector, tolerations
type Update = (&'static str, StringMap, StringMap, StringMap, Vec<Toleration>);

struct Admission {
    pod_sets: Vec<(String, i32)>,
    assignments: Vec<(&'static str, Option<i32>, Vec<&'static str>)>,
    updates: Vec<Update>,
    cluster_queue: &'static str,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            pod_sets: vec![("main".into(), 4)],
            assignments: vec![("main", None, vec!["default"])],
            updates: Vec::new(),
            cluster_queue: "cq",
        }
    }
}

/// What infos_from_admission adds to every pod set of the default Admission.
fn admitted(name: &str, count: i32) -> PodSetInfo {
    PodSetInfo {
        count,
        labels: map(&[
            ("kueue.x-k8s.io/podset", name),
            ("kueue.x-k8s.io/local-queue-name", "lq"),
            ("kueue.x-k8s.io/cluster-queue-name", "cq"),
        ]),
        annotations: map(&[("kueue.x-k8s.io/workload", "job-abc")]),
        ..named(name)
    }
}

#[test]
fn infos_from_admission_cases() {
    let spot_labels = map(&[("node-type", "spot"), ("zone", "a")]);
    let spot_tolerations = [tol("spot", Some("Exists"), "", "NoSchedule")];
    let gpu_labels = map(&[("zone", "b"), ("gpu", "a100")]);
    let gpu_tolerations = [tol("gpu", None, "true", "NoSchedule"), tol("spot", Some("Exists"), "", "NoSchedule")];
    let empty = StringMap::new();
    let flavors = BTreeMap::from([
        ("default".to_owned(), Flavor { node_labels: &empty, tolerations: &[] }),
        ("spot".to_owned(), Flavor { node_labels: &spot_labels, tolerations: &spot_tolerations }),
        ("gpu".to_owned(), Flavor { node_labels: &gpu_labels, tolerations: &gpu_tolerations }),
    ]);
    let with_labels = |info: PodSetInfo, labels: &[(&str, &str)]| {
        let mut info = info;
        info.labels.extend(map(labels));
        info
    };
    type Want = Result<Vec<PodSetInfo>, PodSetInfoError>;
    let cases: Vec<(&str, Admission, Want)> = vec![
        ("no assignments", Admission { assignments: vec![], ..Admission::default() }, Ok(vec![])),
        (
            "more assignments than pod sets",
            Admission { assignments: vec![("main", None, vec![]), ("extra", None, vec![])], ..Admission::default() },
            Err(PodSetInfoError::BadLength { expected: 1, got: 2 }),
        ),
        ("count from the pod set", Admission::default(), Ok(vec![admitted("main", 4)])),
        (
            "count from a partial admission",
            Admission { assignments: vec![("main", Some(2), vec!["default"])], ..Admission::default() },
            Ok(vec![admitted("main", 2)]),
        ),
        (
            "flavor node labels and tolerations, each flavor once",
            Admission { assignments: vec![("main", None, vec!["spot", "spot"])], ..Admission::default() },
            Ok(vec![PodSetInfo {
                node_selector: spot_labels.clone(),
                tolerations: spot_tolerations.to_vec(),
                ..admitted("main", 4)
            }]),
        ),
        (
            "two flavors: the later node label wins and tolerations are not deduplicated",
            Admission { assignments: vec![("main", None, vec!["spot", "gpu"])], ..Admission::default() },
            Ok(vec![PodSetInfo {
                node_selector: map(&[("node-type", "spot"), ("zone", "b"), ("gpu", "a100")]),
                tolerations: [&spot_tolerations[..], &gpu_tolerations[..]].concat(),
                ..admitted("main", 4)
            }]),
        ),
        (
            "a deleted flavor is skipped",
            Admission { assignments: vec![("main", None, vec!["gone", "spot"])], ..Admission::default() },
            Ok(vec![PodSetInfo {
                node_selector: spot_labels.clone(),
                tolerations: spot_tolerations.to_vec(),
                ..admitted("main", 4)
            }]),
        ),
        (
            "a cluster queue name with dots gets no label",
            Admission { cluster_queue: "team.a", ..Admission::default() },
            Ok(vec![PodSetInfo {
                labels: map(&[("kueue.x-k8s.io/podset", "main"), ("kueue.x-k8s.io/local-queue-name", "lq")]),
                ..admitted("main", 4)
            }]),
        ),
        (
            "a cluster queue name over 63 characters gets no label",
            Admission {
                cluster_queue: "q234567890123456789012345678901234567890123456789012345678901234",
                ..Admission::default()
            },
            Ok(vec![PodSetInfo {
                labels: map(&[("kueue.x-k8s.io/podset", "main"), ("kueue.x-k8s.io/local-queue-name", "lq")]),
                ..admitted("main", 4)
            }]),
        ),
        (
            "admission check updates go to their pod set only",
            Admission {
                pod_sets: vec![("driver".into(), 1), ("workers".into(), 8)],
                assignments: vec![("driver", None, vec!["default"]), ("workers", Some(6), vec!["spot"])],
                updates: vec![
                    (
                        "workers",
                        map(&[("prov", "yes")]),
                        map(&[("ann", "1")]),
                        empty.clone(),
                        spot_tolerations.to_vec(),
                    ),
                    (
                        "workers",
                        map(&[("more", "1")]),
                        empty.clone(),
                        map(&[("pool", "p")]),
                        vec![tol("late", None, "", "")],
                    ),
                    ("nobody", map(&[("x", "y")]), empty.clone(), empty.clone(), vec![]),
                ],
                ..Admission::default()
            },
            Ok(vec![
                admitted("driver", 1),
                PodSetInfo {
                    annotations: map(&[("kueue.x-k8s.io/workload", "job-abc"), ("ann", "1")]),
                    node_selector: map(&[("node-type", "spot"), ("zone", "a"), ("pool", "p")]),
                    tolerations: vec![spot_tolerations[0].clone(), tol("late", None, "", "")],
                    ..with_labels(admitted("workers", 6), &[("prov", "yes"), ("more", "1")])
                },
            ]),
        ),
        (
            "an update agreeing with a flavor node label",
            Admission {
                assignments: vec![("main", None, vec!["spot"])],
                updates: vec![("main", empty.clone(), empty.clone(), map(&[("zone", "a")]), vec![])],
                ..Admission::default()
            },
            Ok(vec![PodSetInfo {
                node_selector: spot_labels.clone(),
                tolerations: spot_tolerations.to_vec(),
                ..admitted("main", 4)
            }]),
        ),
        (
            "an update conflicting with a flavor node label",
            Admission {
                assignments: vec![("main", None, vec!["spot"])],
                updates: vec![("main", empty.clone(), empty.clone(), map(&[("zone", "b")]), vec![])],
                ..Admission::default()
            },
            Err(conflict("main", "nodeSelector", "zone", "a", "b")),
        ),
        (
            "an update conflicting with the pod set label",
            Admission {
                updates: vec![(
                    "main",
                    map(&[("kueue.x-k8s.io/podset", "other")]),
                    empty.clone(),
                    empty.clone(),
                    vec![],
                )],
                ..Admission::default()
            },
            Err(conflict("main", "labels", "kueue.x-k8s.io/podset", "main", "other")),
        ),
    ];
    for (name, admission, want) in cases {
        let assignments: Vec<Assignment> = admission
            .assignments
            .iter()
            .map(|(name, count, flavors)| Assignment { name, count: *count, flavors: flavors.clone() })
            .collect();
        let updates: Vec<CheckUpdate> = admission
            .updates
            .iter()
            .map(|(pod_set, labels, annotations, node_selector, tolerations)| CheckUpdate {
                pod_set,
                labels,
                annotations,
                node_selector,
                tolerations,
            })
            .collect();
        let got = infos_from_admission(
            &admission.pod_sets,
            &assignments,
            &flavors,
            &updates,
            "job-abc",
            "lq",
            admission.cluster_queue,
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn infos_from_templates_copies_the_pod_fields() {
    let full = Tpl {
        labels: &[("app", "x")],
        annotations: &[("note", "y")],
        node_selector: &[("zone", "a")],
        tolerations: vec![tol("t", None, "v", "NoSchedule")],
        gates: vec![gate("g")],
        ..Tpl::default()
    };
    let bare = PodTemplateSpec::default();
    let got = infos_from_templates(&[("main".into(), 3, full.build()), ("side".into(), 1, bare)]);
    let want = vec![
        PodSetInfo {
            name: "main".into(),
            count: 3,
            labels: map(&[("app", "x")]),
            annotations: map(&[("note", "y")]),
            node_selector: map(&[("zone", "a")]),
            tolerations: vec![tol("t", None, "v", "NoSchedule")],
            scheduling_gates: vec![gate("g")],
        },
        PodSetInfo { count: 1, ..named("side") },
    ];
    assert_eq!(got, want);
}

#[test]
fn run_with_infos_cases() {
    let flavor_tol = tol("spot", Some("Exists"), "", "NoSchedule");
    let cases: Vec<(&str, Tpl, PodSetInfo, Result<Tpl, PodSetInfoError>)> = vec![
        ("nothing to add", Tpl::default(), named("main"), Ok(Tpl::default())),
        (
            "maps are joined",
            Tpl { labels: &[("app", "x")], node_selector: &[("zone", "a")], ..Tpl::default() },
            PodSetInfo {
                labels: map(&[("kueue.x-k8s.io/podset", "main")]),
                annotations: map(&[("kueue.x-k8s.io/workload", "wl")]),
                node_selector: map(&[("zone", "a"), ("pool", "p")]),
                ..named("main")
            },
            Ok(Tpl {
                labels: &[("app", "x"), ("kueue.x-k8s.io/podset", "main")],
                annotations: &[("kueue.x-k8s.io/workload", "wl")],
                node_selector: &[("pool", "p"), ("zone", "a")],
                ..Tpl::default()
            }),
        ),
        (
            "tolerations and gates without duplicates",
            Tpl { tolerations: vec![flavor_tol.clone()], gates: vec![gate("mine")], ..Tpl::default() },
            PodSetInfo {
                tolerations: vec![flavor_tol.clone(), tol("gpu", None, "", "")],
                scheduling_gates: vec![gate("mine"), gate("kueue")],
                ..named("main")
            },
            Ok(Tpl {
                tolerations: vec![flavor_tol.clone(), tol("gpu", None, "", "")],
                gates: vec![gate("mine"), gate("kueue")],
                ..Tpl::default()
            }),
        ),
        (
            "a conflicting node selector names the pod set",
            Tpl { node_selector: &[("zone", "a")], ..Tpl::default() },
            PodSetInfo {
                labels: map(&[("new", "1")]),
                node_selector: map(&[("zone", "b")]),
                tolerations: vec![flavor_tol.clone()],
                ..named("workers")
            },
            Err(conflict("workers", "nodeSelector", "zone", "a", "b")),
        ),
        (
            "a conflicting label",
            Tpl { labels: &[("kueue.x-k8s.io/podset", "old")], ..Tpl::default() },
            PodSetInfo { labels: map(&[("kueue.x-k8s.io/podset", "main")]), ..named("main") },
            Err(conflict("main", "labels", "kueue.x-k8s.io/podset", "old", "main")),
        ),
    ];
    for (name, template, info, want) in cases {
        let mut got = [template.build()];
        let result = run_with_infos(&mut got, &[info]);
        match want {
            Ok(want) => assert_eq!((result, got), (Ok(()), [want.build()]), "{name}"),
            Err(err) => assert_eq!((result, got), (Err(err), [template.build()]), "{name}"),
        }
    }
}

#[test]
fn length_mismatch() {
    let template = Tpl::default().build();
    for (templates, infos) in [(0, 1), (1, 0), (1, 2), (2, 1)] {
        let mut got = vec![template.clone(); templates];
        let infos = vec![PodSetInfo { labels: map(&[("a", "1")]), ..named("main") }; infos];
        assert_eq!(
            run_with_infos(&mut got, &infos),
            Err(PodSetInfoError::BadLength { expected: templates, got: infos.len() })
        );
        assert!(!restore_templates(&mut got, &infos));
        assert_eq!(got, vec![template.clone(); templates]);
    }
}

#[test]
fn restore_after_run_gives_back_the_templates() {
    let originals = [
        Tpl::default(),
        Tpl {
            labels: &[("app", "x")],
            annotations: &[("note", "y")],
            node_selector: &[("zone", "a")],
            tolerations: vec![tol("mine", None, "", "")],
            gates: vec![gate("mine")],
            ..Tpl::default()
        },
        Tpl { tolerations: vec![tol("spot", Some("Exists"), "", "NoSchedule")], ..Tpl::default() },
    ];
    let originals: Vec<PodTemplateSpec> = originals.iter().map(Tpl::build).collect();
    let admitted_info = |name: &str| PodSetInfo {
        node_selector: map(&[("pool", "p"), ("zone", "a")]),
        tolerations: vec![tol("spot", Some("Exists"), "", "NoSchedule")],
        scheduling_gates: vec![gate("kueue.x-k8s.io/topology")],
        ..admitted(name, 1)
    };
    let pod_sets: Vec<(String, i32, PodTemplateSpec)> =
        originals.iter().enumerate().map(|(i, template)| (format!("ps{i}"), 1, template.clone())).collect();
    let stored = infos_from_templates(&pod_sets);
    let admitted_infos: Vec<PodSetInfo> = pod_sets.iter().map(|(name, ..)| admitted_info(name)).collect();

    let mut templates = originals.clone();
    assert!(!restore_templates(&mut templates, &stored), "restoring untouched templates changes nothing");
    assert_eq!(run_with_infos(&mut templates, &admitted_infos), Ok(()));
    assert_ne!(templates, originals);
    assert!(restore_templates(&mut templates, &stored));
    assert_eq!(templates, originals);
    assert!(!restore_templates(&mut templates, &stored), "a second restore changes nothing");
}

#[test]
fn restore_cases() {
    let empty_maps = PodTemplateSpec {
        metadata: Some(ObjectMeta { labels: Some(StringMap::new()), ..ObjectMeta::default() }),
        spec: Some(PodSpec { tolerations: Some(vec![]), node_selector: Some(StringMap::new()), ..PodSpec::default() }),
    };
    let cases = [
        ("empty equals unset", empty_maps.clone(), named("main"), false, empty_maps.clone()),
        ("no metadata or spec", PodTemplateSpec::default(), named("main"), false, PodTemplateSpec::default()),
        (
            "values are put back",
            Tpl { labels: &[("a", "1"), ("kueue", "x")], tolerations: vec![tol("t", None, "", "")], ..Tpl::default() }
                .build(),
            PodSetInfo { labels: map(&[("a", "1")]), annotations: map(&[("b", "2")]), ..named("main") },
            true,
            Tpl { labels: &[("a", "1")], annotations: &[("b", "2")], ..Tpl::default() }.build(),
        ),
        (
            "tolerations are compared exactly when restoring",
            Tpl { tolerations: vec![tol("t", Some("Equal"), "", "")], ..Tpl::default() }.build(),
            PodSetInfo { tolerations: vec![tol("t", None, "", "")], ..named("main") },
            true,
            Tpl { tolerations: vec![tol("t", None, "", "")], ..Tpl::default() }.build(),
        ),
    ];
    for (name, template, info, want_changed, want) in cases {
        let mut got = [template];
        assert_eq!(restore_templates(&mut got, &[info]), want_changed, "{name}");
        assert_eq!(got, [want], "{name}");
    }
}

#[test]
fn equivalence() {
    let base = Tpl::default().build();
    let decorated = Tpl {
        labels: &[("kueue.x-k8s.io/podset", "main")],
        annotations: &[("a", "b")],
        node_selector: &[("zone", "a")],
        gates: vec![gate("g")],
        ..Tpl::default()
    }
    .build();
    let tolerated = Tpl { tolerations: vec![tol("spot", Some("Exists"), "", "")], ..Tpl::default() }.build();
    let other_image = Tpl { image: "nginx", ..Tpl::default() }.build();
    let mut empty_init = base.clone();
    if let Some(spec) = empty_init.spec.as_mut() {
        spec.init_containers = Some(vec![]);
    }
    let mut with_init = base.clone();
    if let Some(spec) = with_init.spec.as_mut() {
        spec.init_containers = Some(vec![Container { name: "init".into(), ..Container::default() }]);
    }
    let no_spec = PodTemplateSpec::default();
    let mut no_containers = base.clone();
    if let Some(spec) = no_containers.spec.as_mut() {
        spec.containers.clear();
    }
    type PodSets<'a> = Vec<(i32, Option<i32>, &'a PodTemplateSpec)>;
    let cases: Vec<(&str, PodSets, PodSets, bool, bool)> = vec![
        ("identical", vec![(2, None, &base)], vec![(2, None, &base)], true, true),
        ("both empty", vec![], vec![], true, true),
        ("lengths differ", vec![(2, None, &base)], vec![(2, None, &base), (1, None, &base)], true, false),
        (
            "labels, annotations, nodeSelector, gates ignored",
            vec![(2, None, &base)],
            vec![(2, None, &decorated)],
            true,
            true,
        ),
        ("count differs", vec![(2, None, &base)], vec![(3, None, &base)], true, false),
        ("min count differs", vec![(2, Some(1), &base)], vec![(2, None, &base)], true, false),
        ("same min count", vec![(2, Some(1), &base)], vec![(2, Some(1), &base)], true, true),
        ("container differs", vec![(2, None, &base)], vec![(2, None, &other_image)], false, false),
        ("unset and empty init containers", vec![(2, None, &base)], vec![(2, None, &empty_init)], true, true),
        ("init container added", vec![(2, None, &base)], vec![(2, None, &with_init)], true, false),
        ("tolerations compared", vec![(2, None, &base)], vec![(2, None, &tolerated)], true, false),
        ("tolerations ignored", vec![(2, None, &base)], vec![(2, None, &tolerated)], false, true),
        ("no spec equals an empty one", vec![(1, None, &no_spec)], vec![(1, None, &no_containers)], true, true),
        (
            "second pod set differs",
            vec![(1, None, &base), (2, None, &base)],
            vec![(1, None, &base), (3, None, &base)],
            true,
            false,
        ),
    ];
    for (name, a, b, compare_tolerations, want) in cases {
        assert_eq!(equivalent_pod_sets(&a, &b, compare_tolerations), want, "{name}");
        assert_eq!(equivalent_pod_sets(&b, &a, compare_tolerations), want, "{name} (swapped)");
    }
}
