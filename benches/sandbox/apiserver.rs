//! Where the API server says a run's requests spent their time: the sums and counts of its own
//! histograms, read from its /metrics before and after, per verb and resource, per webhook, per
//! client (through API Priority and Fairness) and per etcd operation; and the requests it
//! answered with an error, by code (a controller that creates what exists shows here).

use std::collections::BTreeMap;

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kueue_ext::sandbox::cluster_setup::kueue::manifests as kueue_manifests;
use serde_json::json;

/// The clients told apart per cluster: a FlowSchema each, named after them.
const CLIENTS: [(&str, &str, &str); 3] = [
    ("kueue-ext-controller", kueue_ext::manifests::NAMESPACE, kueue_ext::manifests::SERVICE_ACCOUNT),
    ("kueue", kueue_manifests::NAMESPACE, kueue_manifests::SERVICE_ACCOUNT),
    ("multikueue", kueue_manifests::NAMESPACE, kueue_ext::connect::SERVICE_ACCOUNT),
];

/// Gives each of [`CLIENTS`] a FlowSchema of its own, so the API server counts its requests
/// apart. Each goes to `workload-low`, where the built-in `service-accounts` schema sends them
/// anyway: only the accounting changes, not how requests are queued.
pub async fn tell_clients_apart(client: &kube::Client) {
    let resource = ApiResource {
        group: "flowcontrol.apiserver.k8s.io".into(),
        version: "v1".into(),
        api_version: "flowcontrol.apiserver.k8s.io/v1".into(),
        kind: "FlowSchema".into(),
        plural: "flowschemas".into(),
    };
    let schemas: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    for (name, namespace, account) in CLIENTS {
        let schema = json!({
            "apiVersion": resource.api_version, "kind": "FlowSchema", "metadata": {"name": name},
            "spec": {
                "priorityLevelConfiguration": {"name": "workload-low"},
                // Before `service-accounts` (9000), after the built-in leader-election schemas.
                "matchingPrecedence": 1000,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{
                    "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": account, "namespace": namespace}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                       "clusterScope": true, "namespaces": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }],
            },
        });
        let schema: DynamicObject = serde_json::from_value(schema).expect("a FlowSchema");
        match schemas.create(&PostParams::default(), &schema).await {
            // Already there from an earlier run.
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            // Without it the client's requests count under `service-accounts`: said, not fatal.
            Err(e) => eprintln!("no FlowSchema for {name}, its requests count with the rest: {e}"),
            Ok(_) => {}
        }
    }
}

/// What a breakdown line groups by.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// "GET workloads", "webhook vworkload.kb.io".
    Request,
    /// The FlowSchema a request matched: which client sent it; time spent executing it.
    Client,
    /// Time the client's requests waited in their priority level's queue before executing.
    Queued,
    /// "get workloads": the API server's calls to etcd.
    Etcd,
    /// "POST workloads 409": requests the API server answered with an error, by code.
    Refused,
}

/// Seconds and calls per family and key.
#[derive(Default)]
pub struct Spent(BTreeMap<(Family, String), (f64, f64)>);

pub async fn scrape(client: &kube::Client) -> Spent {
    let request = http::Request::get("/metrics").body(Vec::new()).expect("a GET");
    // A failed scrape leaves the breakdown empty; the run's times still count.
    let text = client.request_text(request).await.unwrap_or_default();
    let mut spent = Spent::default();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else { continue };
        let Ok(value) = value.parse::<f64>() else { continue };
        let Some((metric, labels)) = series.split_once('{') else { continue };
        let label = |name: &str| {
            let start = labels.find(&format!("{name}=\""))? + name.len() + 2;
            labels[start..].split('"').next()
        };
        if metric == "apiserver_request_total" {
            let code = label("code").unwrap_or("?");
            if !code.starts_with('2') {
                let subresource = label("subresource").filter(|s| !s.is_empty()).map(|s| format!("/{s}"));
                let (verb, resource) = (label("verb").unwrap_or("?"), label("resource").unwrap_or("?"));
                let key = format!("{verb} {resource}{} {code}", subresource.unwrap_or_default());
                spent.0.entry((Family::Refused, key)).or_default().1 += value;
            }
            continue;
        }
        let Some((histogram, is_sum)) = metric
            .strip_suffix("_sum")
            .map(|h| (h, true))
            .or_else(|| metric.strip_suffix("_count").map(|h| (h, false)))
        else {
            continue;
        };
        let label_or = |name| label(name).unwrap_or("?");
        let key = match histogram {
            "apiserver_request_duration_seconds" => {
                let subresource = label("subresource").filter(|s| !s.is_empty()).map(|s| format!("/{s}"));
                let request =
                    format!("{} {}{}", label_or("verb"), label_or("resource"), subresource.unwrap_or_default());
                (Family::Request, request)
            }
            "apiserver_admission_webhook_admission_duration_seconds" => {
                (Family::Request, format!("webhook {}", label_or("name")))
            }
            "apiserver_flowcontrol_request_execution_seconds" => (Family::Client, label_or("flow_schema").to_string()),
            "apiserver_flowcontrol_request_wait_duration_seconds" => {
                (Family::Queued, label_or("flow_schema").to_string())
            }
            "etcd_request_duration_seconds" => {
                (Family::Etcd, format!("{} {}", label_or("operation"), label_or("resource")))
            }
            _ => continue,
        };
        let entry = spent.0.entry(key).or_default();
        if is_sum { entry.0 += value } else { entry.1 += value }
    }
    spent
}

impl Spent {
    /// One line per family of what happened between `before` and this.
    pub fn lines_since(&self, before: &Spent) -> Vec<String> {
        [
            (Family::Request, "requests", 8),
            (Family::Client, "by client", 8),
            (Family::Queued, "queued by client", 4),
            (Family::Etcd, "etcd", 5),
            (Family::Refused, "answered with an error", 8),
        ]
        .into_iter()
        .map(|(family, title, top)| format!("{title}: {}", self.most_since(before, family, top).join("; ")))
        .collect()
    }

    /// The `top` keys of `family` counted most often between `before` and this, as
    /// "key: calls × mean ms".
    fn most_since(&self, before: &Spent, family: Family, top: usize) -> Vec<String> {
        let mut rows: Vec<(&String, f64, f64)> = self
            .0
            .iter()
            .filter(|((f, key), _)| *f == family && !key.starts_with("WATCH"))
            .map(|(key, (sum, count))| {
                let (sum0, count0) = before.0.get(key).copied().unwrap_or_default();
                (&key.1, sum - sum0, count - count0)
            })
            .filter(|(_, _, count)| *count > 0.0)
            .collect();
        rows.sort_by(|a, b| b.2.total_cmp(&a.2));
        rows.iter()
            .take(top)
            .map(|(key, sum, count)| match family {
                Family::Refused => format!("{key}: {count}"),
                _ => format!("{key}: {count} × {:.1} ms", sum / count * 1000.0),
            })
            .collect()
    }
}
