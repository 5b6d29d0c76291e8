//! Where the API server says a run's requests spent their time: the sums and counts of its own
//! histograms, read from its /metrics before and after, per verb and resource and per webhook.

use std::collections::BTreeMap;

/// Seconds and calls per request kind ("POST externaljobs") and per webhook ("webhook <name>").
#[derive(Default)]
pub struct Spent(BTreeMap<String, (f64, f64)>);

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
        let (key, is_sum) = match metric {
            "apiserver_request_duration_seconds_sum" | "apiserver_request_duration_seconds_count" => {
                let subresource = label("subresource").filter(|s| !s.is_empty()).map(|s| format!("/{s}"));
                let key = format!(
                    "{} {}{}",
                    label("verb").unwrap_or("?"),
                    label("resource").unwrap_or("?"),
                    subresource.unwrap_or_default()
                );
                (key, metric.ends_with("_sum"))
            }
            "apiserver_admission_webhook_admission_duration_seconds_sum"
            | "apiserver_admission_webhook_admission_duration_seconds_count" => {
                (format!("webhook {}", label("name").unwrap_or("?")), metric.ends_with("_sum"))
            }
            _ => continue,
        };
        let entry = spent.0.entry(key).or_default();
        if is_sum { entry.0 += value } else { entry.1 += value }
    }
    spent
}

impl Spent {
    /// The `top` request kinds and webhooks called most often between `before` and this, as
    /// "name: calls × mean ms".
    pub fn most_since(&self, before: &Spent, top: usize) -> Vec<String> {
        let mut rows: Vec<(&String, f64, f64)> = self
            .0
            .iter()
            .map(|(key, (sum, count))| {
                let (sum0, count0) = before.0.get(key).copied().unwrap_or_default();
                (key, sum - sum0, count - count0)
            })
            .filter(|(key, _, count)| *count > 0.0 && !key.starts_with("WATCH"))
            .collect();
        rows.sort_by(|a, b| b.2.total_cmp(&a.2));
        rows.iter()
            .take(top)
            .map(|(key, sum, count)| format!("{key}: {count} × {:.1} ms", sum / count * 1000.0))
            .collect()
    }
}
