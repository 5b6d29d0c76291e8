//! A configured kind checked against its CustomResourceDefinition, before anything starts: a
//! field the kind's schema has no room for is pruned by the API server when our webhook writes
//! it. A suspend field there is not (LeaderWorkerSet has none) means a job that is never held
//! back: it cannot be queued by suspension at all.

use serde_json::Value;

use super::config::Integration;
use super::path::FieldPath;

/// The CRD among `crds` that serves `integration`'s group and resource.
pub fn crd_of<'a>(integration: &Integration, crds: &'a [Value]) -> Option<&'a Value> {
    let group = integration.gvk().group;
    crds.iter().find(|crd| {
        crd["spec"]["group"] == group.as_str() && crd["spec"]["names"]["plural"] == integration.resource.as_str()
    })
}

/// Each field of `integration` that the schema of its version in `crd` has no room for, as
/// `(field of the integrations file, message)`.
pub fn missing_fields(integration: &Integration, crd: &Value) -> Vec<(String, String)> {
    let version = integration.gvk().version;
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let versions = crd["spec"]["versions"].as_array().into_iter().flatten();
    let Some(schema) =
        versions.into_iter().find(|v| v["name"] == version.as_str()).map(|v| &v["schema"]["openAPIV3Schema"])
    else {
        return vec![("kind".into(), format!("CustomResourceDefinition {name} serves no version {version}"))];
    };
    let absent = |path: &FieldPath| !path.in_schema(schema);
    let mut missing = Vec::new();
    if absent(&integration.suspend.path) {
        missing.push((
            "suspend.path".to_string(),
            format!(
                "{} is not a field of {} (CustomResourceDefinition {name}): a job that cannot be held back cannot be \
                 queued by suspension",
                integration.suspend.path,
                integration.gvk().kind
            ),
        ));
    }
    if let Some(path) = integration.managed_by.as_ref().filter(|path| absent(path)) {
        missing.push((
            "managedBy".into(),
            format!("{path} is not a field of {} (CustomResourceDefinition {name})", integration.gvk().kind),
        ));
    }
    for (i, rule) in integration.pod_sets.iter().enumerate() {
        let list = rule.each.as_ref().filter(|path| path.in_spec() && absent(path));
        if let Some(path) = list {
            missing
                .push((format!("podSets[{i}].each"), format!("{path} is not a field of {}", integration.gvk().kind)));
        }
        let plain = rule.template.as_ref().filter(|path| rule.each.is_none() && path.in_spec() && absent(path));
        if let Some(path) = plain {
            missing.push((
                format!("podSets[{i}].template"),
                format!("{path} is not a field of {}", integration.gvk().kind),
            ));
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::integrations::declarative::config::IntegrationConfig;

    /// A CRD of one version with `spec` described by `spec_properties`.
    fn crd(group: &str, plural: &str, kind: &str, spec_properties: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "names": {"plural": plural, "kind": kind}, "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": spec_properties}}}},
            }]},
        })
    }

    fn integration(text: &str) -> Integration {
        let file = format!("apiVersion: kueue-ext.dev/v1alpha1\nkind: IntegrationConfig\nintegrations:\n{text}");
        IntegrationConfig::parse("lws.yaml", &file).unwrap().integrations.remove(0)
    }

    #[test]
    fn a_kind_without_a_suspend_field_is_refused_with_the_reason() {
        let lws = crd(
            "leaderworkerset.x-k8s.io",
            "leaderworkersets",
            "LeaderWorkerSet",
            json!({
                "replicas": {"type": "integer"},
                "leaderWorkerTemplate": {"type": "object", "properties": {
                    "workerTemplate": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            }),
        );
        let described = integration(
            "- kind: LeaderWorkerSet.v1.leaderworkerset.x-k8s.io\n  resource: leaderworkersets\n  \
             suspend: {path: spec.suspend}\n  managedBy: spec.managedBy\n  \
             podSets: [{name: workers, template: spec.leaderWorkerTemplate.workerTemplate, count: spec.replicas}]\n  \
             finished: {succeeded: {condition: Available}, failed: {condition: Failed}}\n  \
             podsReady: {condition: Available}\n",
        );
        let crds = [lws];
        let found = crd_of(&described, &crds).expect("the CRD of its group and resource");
        let missing = missing_fields(&described, found);
        let fields: Vec<&str> = missing.iter().map(|(field, _)| field.as_str()).collect();
        assert_eq!(fields, ["suspend.path", "managedBy"], "the template below a free-form field is fine: {missing:?}");
        assert!(missing[0].1.contains("spec.suspend is not a field of LeaderWorkerSet"), "{missing:?}");
        assert!(missing[0].1.contains("cannot be queued by suspension"), "{missing:?}");
    }

    #[test]
    fn lists_and_maps_of_the_schema_hold_each_entry() {
        let jobset = crd(
            "example.dev",
            "groupjobs",
            "GroupJob",
            json!({
                "suspend": {"type": "boolean"},
                "groups": {"type": "array", "items": {"type": "object", "properties": {"template": {"type": "object"}}}},
                "byRole": {"type": "object", "additionalProperties": {"type": "object"}},
            }),
        );
        let described = integration(
            "- kind: GroupJob.v1.example.dev\n  resource: groupjobs\n  suspend: {path: spec.suspend}\n  \
             podSets: [{each: spec.groups, nameFrom: name, template: template}]\n  \
             finished: {succeeded: {condition: Complete}, failed: {condition: Failed}}\n  \
             podsReady: {sum: [status.ready], atLeast: pods}\n",
        );
        assert_eq!(missing_fields(&described, &jobset), []);
        let schema = &jobset["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert!(FieldPath::parse("spec.byRole[any.key]").unwrap().in_schema(schema), "a map holds any key");
        assert!(!FieldPath::parse("spec.byRole[any.key].replicas").unwrap().in_schema(schema));
        assert!(!FieldPath::parse("spec.groups[3].template.spec").unwrap().in_schema(schema), "not preserved");
        let other_version = integration(
            "- kind: GroupJob.v2.example.dev\n  resource: groupjobs\n  suspend: {path: spec.suspend}\n  \
             podSets: [{each: spec.groups, nameFrom: name, template: template}]\n  \
             finished: {succeeded: {condition: Complete}, failed: {condition: Failed}}\n  \
             podsReady: {sum: [status.ready], atLeast: pods}\n",
        );
        assert_eq!(
            missing_fields(&other_version, &jobset),
            [("kind".to_string(), "CustomResourceDefinition groupjobs.example.dev serves no version v2".to_string())]
        );
    }
}
