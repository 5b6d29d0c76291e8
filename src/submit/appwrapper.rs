//! AppWrapper manifests submitted as WrappedJobs to a cluster that does not run AppWrapper's
//! controller. A WrappedJob has AppWrapper's shape, so the conversion renames the kind and the
//! fault-tolerance annotations and drops what only AppWrapper's controller reads (or what the
//! cluster writes).

use kube::Client;
use kube::api::GroupVersionKind;
use serde_json::{Map, Value};

use super::documents::Document;
use crate::api::{GROUP, VERSION};
use crate::integrations::wrapped_job::settings;

const APPWRAPPER_API_VERSION: &str = "workload.codeflare.dev/v1beta2";
const APPWRAPPER_ANNOTATIONS: &str = "workload.codeflare.dev.appwrapper/";
/// AppWrapper's own controller: a WrappedJob managed by it would be run by nobody.
const APPWRAPPER_CONTROLLER: &str = "workload.codeflare.dev/appwrapper-controller";

/// Whether the cluster serves AppWrappers (AppWrapper's CRD, as `up --addons appwrapper`
/// installs it): then an AppWrapper is submitted as it is, for its own controller.
pub async fn served(client: &Client) -> bool {
    let gvk = GroupVersionKind::gvk("workload.codeflare.dev", "v1beta2", "AppWrapper");
    kube::discovery::pinned_kind(client, &gvk).await.is_ok()
}

pub fn is_appwrapper(object: &Value) -> bool {
    object["apiVersion"] == APPWRAPPER_API_VERSION && object["kind"] == "AppWrapper"
}

/// Replaces every AppWrapper in `docs` by its WrappedJob; one notice per document converted.
pub fn convert(docs: &mut [Document]) -> Vec<String> {
    let mut notices = Vec::new();
    for doc in docs.iter_mut().filter(|d| is_appwrapper(&d.object)) {
        doc.object = to_wrapped_job(&doc.object);
        let metadata = &doc.object["metadata"];
        let name = match metadata["name"].as_str() {
            Some(name) if !name.is_empty() => name,
            _ => metadata["generateName"].as_str().unwrap_or_default(),
        };
        notices.push(format!("{}: AppWrapper {name} is submitted as a WrappedJob ({GROUP}/{VERSION})", doc.origin));
    }
    notices
}

/// The WrappedJob an AppWrapper manifest stands for. Fields that are not what AppWrapper
/// defines are passed on as they are, for the API server to judge.
pub fn to_wrapped_job(appwrapper: &Value) -> Value {
    let mut metadata = Map::new();
    // Status, finalizers and server-set fields are AppWrapper's controller's or the cluster's.
    for field in ["name", "generateName", "namespace", "labels"] {
        if let Some(value) = appwrapper["metadata"].get(field) {
            metadata.insert(field.into(), value.clone());
        }
    }
    if let Some(annotations) = appwrapper["metadata"]["annotations"].as_object() {
        metadata.insert("annotations".into(), Value::Object(renamed(annotations)));
    }
    let source = &appwrapper["spec"];
    let mut spec = Map::new();
    if let Some(components) = source.get("components") {
        spec.insert("components".into(), components_of(components));
    }
    if let Some(suspend) = source.get("suspend") {
        spec.insert("suspend".into(), suspend.clone());
    }
    if let Some(managed_by) = source.get("managedBy").filter(|m| *m != APPWRAPPER_CONTROLLER) {
        spec.insert("managedBy".into(), managed_by.clone());
    }
    let mut job = Map::new();
    job.insert("apiVersion".into(), Value::String(format!("{GROUP}/{VERSION}")));
    job.insert("kind".into(), Value::String("WrappedJob".into()));
    job.insert("metadata".into(), Value::Object(metadata));
    job.insert("spec".into(), Value::Object(spec));
    Value::Object(job)
}

/// AppWrapper's settings under our prefix; a setting already written for WrappedJob wins.
fn renamed(annotations: &Map<String, Value>) -> Map<String, Value> {
    let mut out: Map<String, Value> =
        annotations.iter().filter(|(k, _)| setting(k).is_none()).map(|(k, v)| (k.clone(), v.clone())).collect();
    for (key, value) in annotations {
        if let Some(setting) = setting(key) {
            out.entry(format!("{}{setting}", settings::PREFIX)).or_insert_with(|| value.clone());
        }
    }
    out
}

/// The setting an AppWrapper annotation holds, if it is one.
fn setting(key: &str) -> Option<&str> {
    key.strip_prefix(APPWRAPPER_ANNOTATIONS).filter(|k| settings::KEYS.contains(k))
}

/// Each component's template and pod sets; `podSetInfos` are Kueue's to write on admission.
fn components_of(components: &Value) -> Value {
    let Some(list) = components.as_array() else { return components.clone() };
    let component = |c: &Value| match c.as_object() {
        Some(fields) => {
            let kept = fields.iter().filter(|(k, _)| *k == "template" || *k == "podSets");
            Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect())
        }
        None => c.clone(),
    };
    Value::Array(list.iter().map(component).collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::submit::documents;

    fn appwrapper() -> Value {
        json!({
            "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {
                "name": "train", "namespace": "team-a", "uid": "1234", "resourceVersion": "7",
                "finalizers": ["workload.codeflare.dev/finalizer"],
                "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                "annotations": {
                    "workload.codeflare.dev.appwrapper/retryLimit": "5",
                    "workload.codeflare.dev.appwrapper/terminalExitCodes": "3,4",
                    "workload.codeflare.dev.appwrapper/unknownKnob": "x",
                    "team": "ml",
                },
            },
            "spec": {
                "suspend": true,
                "managedBy": "workload.codeflare.dev/appwrapper-controller",
                "components": [{
                    "annotations": {"reserved": "yes"},
                    "podSets": [{"path": "template.spec.template", "replicas": 2}],
                    "podSetInfos": [{"nodeSelector": {"pool": "a"}}],
                    "template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t"}, "spec": {"parallelism": 2}},
                }],
            },
            "status": {"phase": "Running"},
        })
    }

    #[test]
    fn an_appwrapper_keeps_its_spec_and_settings_under_our_names() {
        assert_eq!(
            to_wrapped_job(&appwrapper()),
            json!({
                "apiVersion": "kueue-ext.dev/v1alpha1", "kind": "WrappedJob",
                "metadata": {
                    "name": "train", "namespace": "team-a",
                    "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                    "annotations": {
                        "kueue-ext.dev/retryLimit": "5",
                        "kueue-ext.dev/terminalExitCodes": "3,4",
                        "workload.codeflare.dev.appwrapper/unknownKnob": "x",
                        "team": "ml",
                    },
                },
                "spec": {
                    "suspend": true,
                    "components": [{
                        "podSets": [{"path": "template.spec.template", "replicas": 2}],
                        "template": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t"}, "spec": {"parallelism": 2}},
                    }],
                },
            })
        );
    }

    #[test]
    fn multikueue_stays_in_charge_and_our_own_settings_win() {
        let mut aw = appwrapper();
        aw["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
        aw["metadata"]["annotations"]["kueue-ext.dev/retryLimit"] = json!("1");
        let job = to_wrapped_job(&aw);
        assert_eq!(job["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
        assert_eq!(job["metadata"]["annotations"]["kueue-ext.dev/retryLimit"], "1");
        assert!(job["metadata"]["annotations"].get("workload.codeflare.dev.appwrapper/retryLimit").is_none());
    }

    #[test]
    fn every_documented_setting_is_renamed() {
        let annotations: Map<String, Value> =
            settings::KEYS.iter().map(|k| (format!("{APPWRAPPER_ANNOTATIONS}{k}"), json!("1"))).collect();
        let out = renamed(&annotations);
        assert_eq!(out.len(), settings::KEYS.len());
        assert!(out.keys().all(|k| k.starts_with(settings::PREFIX)), "{out:?}");
    }

    #[test]
    fn only_v1beta2_appwrappers_are_converted_and_each_is_told() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n\
                    apiVersion: workload.codeflare.dev/v1beta1\nkind: AppWrapper\nmetadata: {name: old}\n---\n\
                    apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {name: train}\nspec: {components: []}\n";
        let mut docs = documents::parse("aw.yaml", text).unwrap();
        let notices = convert(&mut docs);
        assert_eq!(
            notices,
            ["aw.yaml:9 (document 3): AppWrapper train is submitted as a WrappedJob (kueue-ext.dev/v1alpha1)"]
        );
        let kinds: Vec<&str> = docs.iter().filter_map(|d| d.object["kind"].as_str()).collect();
        assert_eq!(kinds, ["ConfigMap", "AppWrapper", "WrappedJob"]);
    }

    #[test]
    fn malformed_components_are_passed_on_for_the_api_server_to_reject() {
        let mut aw = appwrapper();
        aw["spec"]["components"] = json!("all of them");
        assert_eq!(to_wrapped_job(&aw)["spec"]["components"], "all of them");
    }
}
