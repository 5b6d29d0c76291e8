//! Prometheus metrics of the controller and webhook.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::api_requests::ApiRequests;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    pub kind: String,
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AdmissionLabels {
    pub kind: String,
    pub operation: String,
    pub allowed: String,
}

pub struct Metrics {
    registry: Registry,
    pub reconciles: Family<ReconcileLabels, Counter>,
    pub reconcile_seconds: Histogram,
    pub admissions: Family<AdmissionLabels, Counter>,
    pub admission_seconds: Histogram,
    pub api_requests: ApiRequests,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kueue_ext");
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        let reconcile_seconds = Histogram::new(exponential_buckets(0.001, 2.0, 14));
        let admissions = Family::<AdmissionLabels, Counter>::default();
        let admission_seconds = Histogram::new(exponential_buckets(0.0001, 2.0, 14));
        registry.register("reconciles", "Job reconciles by kind and result", reconciles.clone());
        registry.register("reconcile_duration_seconds", "Time spent in one job reconcile", reconcile_seconds.clone());
        registry.register("admissions", "Admission requests by kind, operation and verdict", admissions.clone());
        registry.register(
            "admission_duration_seconds",
            "Time spent answering one admission",
            admission_seconds.clone(),
        );
        let api_requests = ApiRequests::default();
        registry.register(
            "api_requests",
            "Requests sent to the API server, by verb, resource and subresource",
            api_requests.clone(),
        );
        Metrics { registry, reconciles, reconcile_seconds, admissions, admission_seconds, api_requests }
    }
}

impl Metrics {
    pub fn reconciled(&self, kind: &str, ok: bool, took: Duration) {
        let result = if ok { "ok" } else { "error" };
        self.reconciles.get_or_create(&ReconcileLabels { kind: kind.into(), result: result.into() }).inc();
        self.reconcile_seconds.observe(took.as_secs_f64());
    }

    pub fn admitted(&self, kind: &str, operation: &str, allowed: bool, took: Duration) {
        let labels = AdmissionLabels { kind: kind.into(), operation: operation.into(), allowed: allowed.to_string() };
        self.admissions.get_or_create(&labels).inc();
        self.admission_seconds.observe(took.as_secs_f64());
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_counters_with_labels() {
        let metrics = Metrics::default();
        metrics.reconciled("ExternalJob", true, Duration::from_millis(3));
        metrics.admitted("ExternalJob", "CREATE", false, Duration::from_micros(300));
        let patch = super::super::api_requests::RequestLabels {
            verb: "patch",
            resource: "workloads.kueue.x-k8s.io".into(),
            subresource: "status".into(),
        };
        metrics.api_requests.get_or_create(&patch).inc();
        let text = metrics.encode();
        assert!(text.contains(r#"kueue_ext_reconciles_total{kind="ExternalJob",result="ok"} 1"#), "{text}");
        let requests =
            r#"kueue_ext_api_requests_total{verb="patch",resource="workloads.kueue.x-k8s.io",subresource="status"} 1"#;
        assert!(text.contains(requests), "{text}");
        assert!(text.contains(r#"allowed="false""#), "{text}");
    }
}
