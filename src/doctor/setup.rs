//! What each cluster runs: Kueue (its API, Deployment, version and Configuration), this
//! project's controller (Deployment or process, webhook, certificate), and the CRDs of the
//! integrated kinds.

use std::collections::BTreeSet;

use super::{ClusterFacts, Configuration, Facts, Finding, KueueApi, ObjectRef};
use crate::api::kueue::Role;
use crate::install::kueue_config::List;
use crate::install::preflight::{KUEUE_GROUP, KUEUE_VERSION};
use crate::integrations::declarative::config::CONFIG_MAP;
use crate::integrations::registry;
use crate::manifests::{CERT_NOT_AFTER, DEPLOYMENT, MUTATING_WEBHOOK, NAMESPACE, WEBHOOK_CERT_SECRET};

/// How long after its renewal was due a certificate may stay: the controller looks at it every
/// 30 s, and a leader election may take a minute.
const RENEWAL_GRACE_SECONDS: i64 = 5 * 60;
/// Without its start date, a certificate this close to its end is late for renewal.
const WEEK_SECONDS: i64 = 7 * 24 * 3600;

/// The clusters `check` may look at: readable, with Kueue's API served.
fn with_kueue(facts: &Facts) -> impl Iterator<Item = &ClusterFacts> {
    facts.clusters.iter().filter(|c| c.unreachable.is_none() && c.kueue_api == Some(KueueApi::Served))
}

pub fn reachable(facts: &Facts) -> Vec<Finding> {
    let unreachable = facts.clusters.iter().filter_map(|c| Some((c, c.unreachable.as_ref()?)));
    unreachable
        .map(|(cluster, why)| {
            Finding::error(cluster, format!("cannot be read: {why}"))
                .fix(format!("{} get --raw /readyz   # until the context's server answers", facts.kubectl(cluster)))
        })
        .collect()
}

/// What could not be read: the checks that need it said nothing.
pub fn unread(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    for cluster in facts.clusters.iter().filter(|c| c.unreachable.is_none()) {
        for (what, why) in &cluster.unread {
            out.push(Finding::warning(
                cluster,
                format!("could not read {what}: {why}; what needs them was not checked"),
            ));
        }
    }
    if let (Some(why), Some(manager)) = (&facts.kinds_unread, facts.manager()) {
        out.push(Finding::warning(manager, format!("{why}; only the compiled kinds were checked")).on(ObjectRef::new(
            "ConfigMap",
            NAMESPACE,
            CONFIG_MAP,
        )));
    }
    out
}

pub fn kueue_api(facts: &Facts) -> Vec<Finding> {
    let readable = facts.clusters.iter().filter(|c| c.unreachable.is_none());
    let findings = readable.filter_map(|cluster| match cluster.kueue_api.as_ref()? {
        KueueApi::Served => None,
        KueueApi::Missing => Some(
            Finding::error(cluster, format!("Kueue is not installed: the cluster serves no {KUEUE_GROUP} API"))
                .fix("install Kueue v0.15 or later: https://kueue.sigs.k8s.io/docs/installation/"),
        ),
        KueueApi::Old { served } => Some(
            Finding::error(
                cluster,
                format!(
                    "Kueue is too old: {KUEUE_GROUP} {served} is served, not {KUEUE_VERSION} (Kueue v0.15 or later)"
                ),
            )
            .fix("upgrade Kueue to v0.15 or later: https://kueue.sigs.k8s.io/docs/installation/"),
        ),
    });
    findings.collect()
}

pub fn kueue_deployment(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    for cluster in with_kueue(facts).filter(|c| c.read("Deployments")) {
        match &cluster.kueue {
            None => out.push(Finding::info(
                cluster,
                "Kueue runs without a Deployment here (a process sandbox runs it as a process): its version and \
                 Configuration were not checked",
            )),
            Some(kueue) => {
                if let Some(why) = &kueue.unavailable {
                    out.push(
                        Finding::error(cluster, format!("Kueue has no available replica: {why}"))
                            .on(ObjectRef::new("Deployment", &kueue.namespace, &kueue.name))
                            .fix(format!(
                                "{} -n {} describe deployment {}   # then its pods' events and logs",
                                facts.kubectl(cluster),
                                kueue.namespace,
                                kueue.name
                            )),
                    );
                }
            }
        }
    }
    out
}

/// The tag of an image reference (`registry.k8s.io/kueue/kueue:v0.15.2@sha256:…` → `v0.15.2`).
pub fn image_tag(image: &str) -> Option<&str> {
    let image = image.split('@').next().unwrap_or(image);
    let name = image.rsplit('/').next().unwrap_or(image);
    name.split_once(':').map(|(_, tag)| tag)
}

/// Each cluster whose value (by `of`) differs from the manager's (or the first cluster's).
fn differing<'a>(
    facts: &'a Facts,
    of: impl Fn(&'a ClusterFacts) -> Option<&'a str>,
) -> Option<(&'a str, Vec<(&'a ClusterFacts, &'a str)>)> {
    let known: Vec<(&ClusterFacts, &str)> = facts.clusters.iter().filter_map(|c| Some((c, of(c)?))).collect();
    let distinct: BTreeSet<&str> = known.iter().map(|(_, v)| *v).collect();
    if distinct.len() < 2 {
        return None;
    }
    let reference = known.iter().find(|(c, _)| c.role == Role::Manager).or(known.first()).map(|(_, v)| *v)?;
    Some((reference, known.into_iter().filter(|(_, v)| *v != reference).collect()))
}

pub fn kueue_versions(facts: &Facts) -> Vec<Finding> {
    let Some((reference, others)) = differing(facts, |c| c.kueue.as_ref().and_then(|k| image_tag(&k.image))) else {
        return Vec::new();
    };
    let manager = facts.manager().map_or("manager".to_string(), |m| m.name.clone());
    let mut out = Vec::new();
    for (cluster, version) in others {
        let kueue = cluster.kueue.as_ref().map(|k| ObjectRef::new("Deployment", &k.namespace, &k.name));
        let mut finding = Finding::warning(
            cluster,
            format!("Kueue {version} here, {reference} on {manager}: MultiKueue is tested with one version everywhere"),
        )
        .fix(format!("run Kueue {reference} on {}", cluster.name));
        finding.object = kueue;
        out.push(finding);
    }
    out
}

fn controller_ref() -> ObjectRef {
    ObjectRef::new("Deployment", NAMESPACE, DEPLOYMENT)
}

pub fn controller(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    for cluster in with_kueue(facts) {
        let controller = &cluster.controller;
        let install = facts.plugin("install", cluster);
        match &controller.deployment {
            Some(deployment) if deployment.unavailable.is_some() => {
                let why = deployment.unavailable.as_deref().unwrap_or_default();
                out.push(
                    Finding::error(cluster, format!("the kueue-ext controller has no available replica: {why}"))
                        .on(controller_ref())
                        .fix(install),
                );
                continue;
            }
            None if !controller.webhook_configured => {
                out.push(
                    Finding::error(
                        cluster,
                        format!(
                            "kueue-ext is not installed: no Deployment {NAMESPACE}/{DEPLOYMENT} and no \
                             MutatingWebhookConfiguration {MUTATING_WEBHOOK}"
                        ),
                    )
                    .fix(install),
                );
                continue;
            }
            _ => {}
        }
        if let Some(why) = &controller.webhook_refusal {
            // No Deployment: the controller runs as a process, which `up` starts again.
            let fix = if controller.deployment.is_some() {
                install
            } else {
                "kubectl kueue-ext status   # then kubectl kueue-ext up, which starts a component that died".into()
            };
            out.push(
                Finding::error(cluster, format!("the kueue-ext webhook does not answer: {why}"))
                    .on(ObjectRef::cluster_scoped("MutatingWebhookConfiguration", MUTATING_WEBHOOK))
                    .fix(fix),
            );
        }
    }
    out
}

fn controller_image(cluster: &ClusterFacts) -> Option<&str> {
    cluster.controller.deployment.as_ref().map(|d| d.image.as_str())
}

pub fn controller_images(facts: &Facts) -> Vec<Finding> {
    let Some((reference, others)) = differing(facts, controller_image) else { return Vec::new() };
    let others = others.into_iter().map(|(cluster, image)| {
        Finding::warning(cluster, format!("the kueue-ext controller runs {image} here, {reference} elsewhere"))
            .on(controller_ref())
            .fix(format!("{} --image {reference}", facts.plugin("install", cluster)))
    });
    others.collect()
}

fn seconds(rfc3339: &str) -> Option<i64> {
    rfc3339.parse::<k8s_openapi::jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// The webhook's serving certificate is renewed two thirds into its validity; one still there
/// well after that (or past its end) means no leader renews it.
pub fn certificate(facts: &Facts, now: i64) -> Vec<Finding> {
    let mut out = Vec::new();
    for cluster in with_kueue(facts) {
        let controller = &cluster.controller;
        let Some(certificate) = &controller.certificate else { continue };
        let secret = ObjectRef::new("Secret", NAMESPACE, WEBHOOK_CERT_SECRET);
        let fix = match controller.deployment {
            Some(_) => format!(
                "{} -n {NAMESPACE} rollout restart deployment/{DEPLOYMENT}   # its new leader renews it",
                facts.kubectl(cluster)
            ),
            None => "kubectl kueue-ext up   # starts the controller again, which renews it".into(),
        };
        let Some(not_after) = certificate.not_after.as_deref() else {
            // An install's Secret stays empty until a replica starts; only a running one is late.
            if controller.deployment.as_ref().is_some_and(|d| d.unavailable.is_none()) {
                out.push(
                    Finding::warning(cluster, format!("no {CERT_NOT_AFTER}: the controller has not filled it"))
                        .on(secret)
                        .fix(fix),
                );
            }
            continue;
        };
        let Some(end) = seconds(not_after) else {
            out.push(Finding::warning(cluster, format!("{CERT_NOT_AFTER} is not a time: {not_after:?}")).on(secret));
            continue;
        };
        let renewal = match certificate.not_before.as_deref().and_then(seconds) {
            Some(start) => start + (end - start) * 2 / 3 + RENEWAL_GRACE_SECONDS,
            None => end - WEEK_SECONDS,
        };
        let problem = if now >= end {
            format!("the webhook's certificate expired at {not_after}: the API server cannot call the webhook")
        } else if now >= renewal {
            format!("the webhook's certificate expires at {not_after} and was not renewed when due")
        } else {
            continue;
        };
        out.push(Finding::warning(cluster, problem).on(secret).fix(fix));
    }
    out
}

pub fn kinds_served(facts: &Facts) -> Vec<Finding> {
    let compiled: Vec<String> = registry::compiled().iter().map(|(description, _)| description.kind.clone()).collect();
    let mut out = Vec::new();
    for cluster in with_kueue(facts) {
        for kind in &cluster.unserved {
            let fix = if compiled.contains(kind) {
                facts.plugin("install", cluster)
            } else {
                format!(
                    "{} apply --server-side -f CRD.yaml   # the kind's CustomResourceDefinition",
                    facts.kubectl(cluster)
                )
            };
            out.push(
                Finding::error(cluster, format!("{kind} is integrated, but this cluster does not serve it")).fix(fix),
            );
        }
    }
    out
}

/// Kueue's Configuration lists every integrated kind, and MultiKueue's list does on a manager.
pub fn kueue_configuration(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    for cluster in with_kueue(facts) {
        let Some(kueue) = &cluster.kueue else { continue };
        let deployment = ObjectRef::new("Deployment", &kueue.namespace, &kueue.name);
        let install = facts.plugin("install", cluster);
        match &kueue.configuration {
            Configuration::NoFile => out.push(
                Finding::error(
                    cluster,
                    format!(
                        "Kueue reads no Configuration file (no --config): it integrates none of {}",
                        facts.kinds.join(", ")
                    ),
                )
                .on(deployment)
                .fix("give Kueue a Configuration file that lists them under integrations.externalFrameworks"),
            ),
            Configuration::Unreadable(why) => out.push(
                Finding::warning(cluster, format!("Kueue's Configuration could not be read: {why}")).on(deployment),
            ),
            Configuration::Read { config_map, integrations, multikueue } => {
                let (namespace, name) = config_map.split_once('/').unwrap_or(("", config_map));
                let mut wanted = vec![(List::Integrations, integrations)];
                if !cluster.multikueue_clusters.is_empty() {
                    wanted.push((List::MultiKueue, multikueue));
                }
                for (list, listed) in wanted {
                    let missing: Vec<&str> =
                        facts.kinds.iter().filter(|k| !listed.contains(k)).map(String::as_str).collect();
                    if missing.is_empty() {
                        continue;
                    }
                    let (top, key) = list.path();
                    out.push(
                        Finding::error(
                            cluster,
                            format!("Kueue's Configuration lacks {} in {top}.{key}", missing.join(", ")),
                        )
                        .on(ObjectRef::new("ConfigMap", namespace, name))
                        .fix(format!("{install}   # adds them again and restarts Kueue")),
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{healthy, manager_mut, worker_mut};
    use super::super::{Certificate, Deployment, KueueFacts, Severity};
    use super::*;

    const NOW: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

    #[test]
    fn a_healthy_setup_says_nothing() {
        let facts = healthy();
        for check in [reachable, unread, kueue_api, kinds_served, kueue_configuration, controller, controller_images] {
            assert_eq!(check(&facts), []);
        }
        assert_eq!(certificate(&facts, NOW), []);
        assert_eq!(kueue_versions(&facts), []);
        assert_eq!(kueue_deployment(&facts), []);
    }

    #[test]
    fn a_cluster_that_cannot_be_read_is_an_error_and_nothing_else_of_it_is_checked() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker1").unreachable = Some("connection refused".into());
        worker_mut(&mut facts, "worker1").controller = Default::default();
        let found = reachable(&facts);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].severity, found[0].cluster.as_str()), (Severity::Error, "worker1"));
        assert_eq!(found[0].problem, "cannot be read: connection refused");
        assert!(found[0].fix.as_deref().unwrap().starts_with("kubectl --context kueue-ext-worker1 get --raw /readyz"));
        assert_eq!(controller(&facts), [], "an unreachable cluster is not also uninstalled");
    }

    #[test]
    fn kueue_missing_or_too_old_is_an_error() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker1").kueue_api = Some(KueueApi::Missing);
        worker_mut(&mut facts, "worker2").kueue_api = Some(KueueApi::Old { served: "v1beta1".into() });
        let found = kueue_api(&facts);
        assert_eq!(found[0].problem, "Kueue is not installed: the cluster serves no kueue.x-k8s.io API");
        assert_eq!(
            found[1].problem,
            "Kueue is too old: kueue.x-k8s.io v1beta1 is served, not v1beta2 (Kueue v0.15 or later)"
        );
        assert!(found.iter().all(|f| f.severity == Severity::Error && f.fix.is_some()));
    }

    #[test]
    fn kueue_without_a_deployment_is_said_once_and_its_configuration_is_left_alone() {
        let mut facts = healthy();
        manager_mut(&mut facts).kueue = None;
        let found = kueue_deployment(&facts);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Info);
        assert!(found[0].problem.starts_with("Kueue runs without a Deployment here"), "{}", found[0].problem);
        assert_eq!(kueue_configuration(&facts), []);
    }

    #[test]
    fn kueue_unavailable_names_its_deployment() {
        let mut facts = healthy();
        manager_mut(&mut facts).kueue.as_mut().unwrap().unavailable = Some("0 of 1 replicas available".into());
        let found = kueue_deployment(&facts);
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "Deployment/kueue-system/kueue-controller-manager");
        assert_eq!(found[0].problem, "Kueue has no available replica: 0 of 1 replicas available");
    }

    #[test]
    fn kueue_versions_that_differ_are_a_warning_on_the_odd_cluster() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker2").kueue.as_mut().unwrap().image = "registry.k8s.io/kueue/kueue:v0.15.0".into();
        let found = kueue_versions(&facts);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].severity, found[0].cluster.as_str()), (Severity::Warning, "worker2"));
        assert_eq!(
            found[0].problem,
            "Kueue v0.15.0 here, v0.19.2 on manager: MultiKueue is tested with one version everywhere"
        );
        assert_eq!(found[0].fix.as_deref(), Some("run Kueue v0.19.2 on worker2"));
    }

    #[test]
    fn image_tags_are_versions() {
        assert_eq!(image_tag("registry.k8s.io/kueue/kueue:v0.15.2"), Some("v0.15.2"));
        assert_eq!(image_tag("localhost:5000/kueue:v1@sha256:abc"), Some("v1"));
        assert_eq!(image_tag("localhost:5000/kueue"), None);
    }

    #[test]
    fn a_cluster_without_the_controller_is_told_to_install_it() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker1").controller = Default::default();
        let found = controller(&facts);
        assert_eq!(found.len(), 1);
        assert!(found[0].problem.starts_with("kueue-ext is not installed"), "{}", found[0].problem);
        assert_eq!(found[0].fix.as_deref(), Some("kubectl kueue-ext install --context kueue-ext-worker1"));
    }

    #[test]
    fn an_unavailable_controller_or_a_silent_webhook_is_an_error() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker1").controller.deployment = Some(Deployment {
            image: "kueue-ext/controller:v0.1.0".into(),
            unavailable: Some("ImagePullBackOff".into()),
        });
        worker_mut(&mut facts, "worker1").controller.webhook_refusal = Some("connection refused".into());
        worker_mut(&mut facts, "worker2").controller.webhook_refusal = Some("connection refused".into());
        let found = controller(&facts);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].problem, "the kueue-ext controller has no available replica: ImagePullBackOff");
        assert_eq!(found[0].fix.as_deref(), Some("kubectl kueue-ext install --context kueue-ext-worker1"));
        assert_eq!(found[1].problem, "the kueue-ext webhook does not answer: connection refused");
        assert!(found[1].fix.as_deref().unwrap().starts_with("kubectl kueue-ext status"), "a process: up restarts it");
    }

    #[test]
    fn controller_images_that_differ_are_a_warning() {
        let mut facts = healthy();
        for (name, image) in [("manager", "kueue-ext/controller:v2"), ("worker1", "kueue-ext/controller:v1")] {
            let cluster = facts.clusters.iter_mut().find(|c| c.name == name).unwrap();
            cluster.controller.deployment = Some(Deployment { image: image.into(), unavailable: None });
        }
        let found = controller_images(&facts);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].problem,
            "the kueue-ext controller runs kueue-ext/controller:v1 here, kueue-ext/controller:v2 elsewhere"
        );
        assert_eq!(
            found[0].fix.as_deref(),
            Some("kubectl kueue-ext install --context kueue-ext-worker1 --image kueue-ext/controller:v2")
        );
    }

    #[test]
    fn a_certificate_past_its_renewal_or_its_end_is_a_warning() {
        let mut facts = healthy();
        let cert = |not_before: &str, not_after: &str| Certificate {
            not_before: Some(not_before.into()),
            not_after: Some(not_after.into()),
        };
        // A year's certificate, eight months in: renewal was due.
        worker_mut(&mut facts, "worker1").controller.certificate =
            Some(cert("2025-05-01T00:00:00Z", "2026-05-01T00:00:00Z"));
        // Expired.
        worker_mut(&mut facts, "worker2").controller.certificate =
            Some(cert("2024-12-01T00:00:00Z", "2025-12-01T00:00:00Z"));
        // An hour's certificate, ten minutes in: in its last week, and still fine.
        manager_mut(&mut facts).controller.certificate = Some(cert("2025-12-31T23:50:00Z", "2026-01-01T00:50:00Z"));
        let found = certificate(&facts, NOW);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            found[0].problem,
            "the webhook's certificate expires at 2026-05-01T00:00:00Z and was not renewed when due"
        );
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "Secret/kueue-ext-system/kueue-ext-webhook-cert");
        assert!(found[1].problem.starts_with("the webhook's certificate expired at 2025-12-01T00:00:00Z"));
        assert!(found[1].fix.as_deref().unwrap().starts_with("kubectl kueue-ext up"), "no Deployment: a process");
    }

    #[test]
    fn a_kind_not_served_is_an_error_with_the_way_to_serve_it() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker1").unserved.insert("ExternalJob.v1alpha1.kueue-ext.dev".into());
        worker_mut(&mut facts, "worker2").unserved.insert("PipelineRun.v1.tekton.dev".into());
        let found = kinds_served(&facts);
        assert_eq!(
            found[0].problem,
            "ExternalJob.v1alpha1.kueue-ext.dev is integrated, but this cluster does not serve it"
        );
        assert_eq!(found[0].fix.as_deref(), Some("kubectl kueue-ext install --context kueue-ext-worker1"));
        assert!(found[1].fix.as_deref().unwrap().contains("apply --server-side -f CRD.yaml"));
    }

    #[test]
    fn a_kind_missing_from_kueues_configuration_is_an_error_fixed_by_install() {
        let mut facts = healthy();
        let manager = manager_mut(&mut facts);
        manager.kueue = Some(KueueFacts {
            configuration: Configuration::Read {
                config_map: "kueue-system/kueue-manager-config".into(),
                integrations: vec!["ExternalJob.v1alpha1.kueue-ext.dev".into()],
                multikueue: vec![],
            },
            ..manager.kueue.clone().unwrap()
        });
        let found = kueue_configuration(&facts);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            found[0].problem,
            "Kueue's Configuration lacks WrappedJob.v1alpha1.kueue-ext.dev in integrations.externalFrameworks"
        );
        assert_eq!(
            found[1].problem,
            "Kueue's Configuration lacks ExternalJob.v1alpha1.kueue-ext.dev, WrappedJob.v1alpha1.kueue-ext.dev in \
             multiKueue.externalFrameworks"
        );
        assert_eq!(found[0].object.as_ref().unwrap().to_string(), "ConfigMap/kueue-system/kueue-manager-config");
        assert!(found[0].fix.as_deref().unwrap().starts_with("kubectl kueue-ext install --context kueue-ext-manager"));
        // A worker needs no MultiKueue list.
        let worker = worker_mut(&mut facts, "worker1");
        worker.kueue.as_mut().unwrap().configuration = Configuration::Read {
            config_map: "kueue-system/kueue-manager-config".into(),
            integrations: vec!["ExternalJob.v1alpha1.kueue-ext.dev".into(), "WrappedJob.v1alpha1.kueue-ext.dev".into()],
            multikueue: vec![],
        };
        assert!(kueue_configuration(&facts).iter().all(|f| f.cluster == "manager"));
    }

    #[test]
    fn what_could_not_be_read_is_a_warning() {
        let mut facts = healthy();
        worker_mut(&mut facts, "worker1").unread.insert("LocalQueues".into(), "forbidden".into());
        facts.kinds_unread = Some("ConfigMap kueue-ext-system/kueue-ext-integrations: integrations[0]: bad".into());
        let found = unread(&facts);
        assert_eq!(found[0].problem, "could not read LocalQueues: forbidden; what needs them was not checked");
        assert_eq!(found[1].cluster, "manager");
        assert!(found.iter().all(|f| f.severity == Severity::Warning));
    }
}
