//! Any Job-like kind integrated by configuration: a job of a kind described in the integrations
//! file ([`config`]) is a [`ConfiguredJob`], the `GenericJob` the jobframework's reconciler and
//! webhook drive exactly like a compiled-in kind. The kind's own controller runs its pods.

pub mod config;
pub mod controller;
pub mod count;
pub mod path;
pub mod probe;
pub mod schema;
pub mod webhook;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{ApiResource, GroupVersionKind};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::api::kueue::{MULTIKUEUE_ORIGIN_LABEL, PodSet};
use crate::jobframework::generic_job::{Finished, GenericJob};
use crate::jobframework::podset::{self, PodSetInfo, PodSetInfoError};
use crate::jobframework::webhook::FieldError;
use crate::jobframework::workload;
use crate::quantity::{NotAQuantity, check_quantity};
use config::Integration;
use count::Count;
use count::number;
use path::FieldPath;

/// A field of a job and what is wrong with it.
pub type FieldProblem = (String, String);

/// A job of a configured kind: the object as the API server sent it, and its kind's description.
#[derive(Clone, Debug)]
pub struct ConfiguredJob {
    object: Value,
    metadata: ObjectMeta,
    integration: Arc<Integration>,
}

impl PartialEq for ConfiguredJob {
    fn eq(&self, other: &Self) -> bool {
        self.object == other.object && self.metadata == other.metadata
    }
}

impl ConfiguredJob {
    pub fn new(object: Value, integration: Arc<Integration>) -> Result<ConfiguredJob, serde_json::Error> {
        let metadata = serde_json::from_value(object.get("metadata").cloned().unwrap_or_default())?;
        Ok(ConfiguredJob { object, metadata, integration })
    }

    pub fn object(&self) -> &Value {
        &self.object
    }

    pub fn integration(&self) -> &Integration {
        &self.integration
    }

    /// The pod sets the job's fields describe, where they are, and what is wrong with them.
    pub fn resolve_pod_sets(&self) -> Vec<Result<ResolvedPodSet, FieldProblem>> {
        let mut out = Vec::new();
        for rule in &self.integration.pod_sets {
            let Some(each) = &rule.each else {
                let name = rule.name.clone().unwrap_or_default();
                out.push(Ok(ResolvedPodSet::new(name, None, rule)));
                continue;
            };
            let entries = self.entries(each, rule.name_from.as_ref());
            if entries.is_empty() {
                out.push(Err((each.to_string(), "Required value: at least one entry".into())));
            }
            for (base, name) in entries {
                out.push(name.map(|name| ResolvedPodSet::new(name, Some(&base), rule)));
            }
        }
        out
    }

    /// The entries at `each`, each with its pod-set name: a list's by the entry's `name_from`, a
    /// map's by its key lower-cased (or its `name_from`, when given).
    fn entries(
        &self,
        each: &FieldPath,
        name_from: Option<&FieldPath>,
    ) -> Vec<(FieldPath, Result<String, FieldProblem>)> {
        let named = |base: FieldPath, unnamed: Result<String, FieldProblem>| {
            let name = match name_from {
                Some(name_from) => {
                    let path = base.join(name_from);
                    let name = path.get(&self.object).and_then(Value::as_str).map(String::from);
                    name.ok_or_else(|| (path.to_string(), "Required value: a pod set name".to_string()))
                }
                None => unnamed,
            };
            (base, name)
        };
        match each.get(&self.object) {
            Some(Value::Array(list)) => {
                let unnamed =
                    || Err((each.to_string(), "a list: the integration names no `nameFrom` for its entries".into()));
                (0..list.len()).map(|i| named(each.index(i), unnamed())).collect()
            }
            Some(Value::Object(map)) => map.keys().map(|key| named(each.key(key), Ok(key.to_lowercase()))).collect(),
            _ => Vec::new(),
        }
    }

    /// True for MultiKueue's copy of a job on a worker: Kueue names the Workload it must adopt
    /// and the manager it came from.
    pub fn is_multikueue_copy(&self) -> bool {
        workload::prebuilt_name(self).is_some()
            && self.metadata.labels.as_ref().is_some_and(|l| l.contains_key(MULTIKUEUE_ORIGIN_LABEL))
    }

    /// Removes from a MultiKueue copy what it must not carry (see `MultiKueueRule`).
    pub fn prepare_copy(&mut self) {
        if self.is_multikueue_copy() {
            for path in &self.integration.multi_kueue.remove_from_copies {
                path.remove(&mut self.object);
            }
        }
    }

    fn resolved(&self) -> Vec<ResolvedPodSet> {
        self.resolve_pod_sets().into_iter().filter_map(Result::ok).collect()
    }

    fn count_at(&self, path: Option<&FieldPath>) -> Option<i32> {
        path?.get(&self.object).and_then(number).and_then(|n| i32::try_from(n).ok())
    }

    /// A pod set's pod count; 1 when its fields say nothing.
    fn pods_of(&self, pod_set: &ResolvedPodSet) -> i32 {
        let count = pod_set.count.as_ref().and_then(|c| c.eval(&self.object));
        count.and_then(|n| i32::try_from(n).ok()).unwrap_or(1)
    }

    /// The pod template of one pod set: read from the job, or a synthetic one from `requests`.
    pub fn template(&self, pod_set: &ResolvedPodSet) -> Result<PodTemplateSpec, FieldError> {
        if let Some(path) = &pod_set.template {
            let value = path
                .get(&self.object)
                .ok_or_else(|| FieldError::new(path.to_string(), "Required value: a pod template"))?;
            let template: PodTemplateSpec = serde_json::from_value(value.clone())
                .map_err(|e| FieldError::new(path.to_string(), format!("not a pod template: {e}")))?;
            if template.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
                return Err(FieldError::new(
                    format!("{path}.spec.containers"),
                    "Required value: at least one container",
                ));
            }
            return Ok(template);
        }
        let path = pod_set.requests.as_ref().expect("a rule has a template or requests");
        let text = path.get(&self.object).and_then(Value::as_str).unwrap_or_default();
        let requests =
            parse_requests(text).map_err(|why| FieldError::invalid(path.to_string(), text, &why.to_string()))?;
        Ok(PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "main".into(),
                    resources: Some(ResourceRequirements { requests: Some(requests), ..Default::default() }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        })
    }

    fn total_pods(&self) -> i64 {
        self.resolved().iter().map(|p| i64::from(self.pods_of(p))).sum()
    }

    /// Applies `change` to every pod template the job has, in pod-set order; counts go where the
    /// kind keeps them (when that is in its spec).
    fn rewrite_templates(
        &mut self,
        infos: &[PodSetInfo],
        change: impl FnOnce(&mut [PodTemplateSpec], &[PodSetInfo]) -> Result<bool, PodSetInfoError>,
    ) -> Result<bool, PodSetInfoError> {
        let pod_sets = self.resolved();
        if pod_sets.len() != infos.len() {
            return Err(PodSetInfoError::BadLength { expected: pod_sets.len(), got: infos.len() });
        }
        let with_templates: Vec<&ResolvedPodSet> = pod_sets.iter().filter(|p| p.template.is_some()).collect();
        let mut templates: Vec<PodTemplateSpec> = with_templates.iter().filter_map(|p| self.template(p).ok()).collect();
        if templates.len() != with_templates.len() {
            // A template that cannot be read was refused at admission; nothing sensible to write.
            return Ok(false);
        }
        let template_infos: Vec<PodSetInfo> =
            pod_sets.iter().zip(infos).filter(|(p, _)| p.template.is_some()).map(|(_, info)| info.clone()).collect();
        let mut changed = change(&mut templates, &template_infos)?;
        for (pod_set, template) in with_templates.iter().zip(&templates) {
            let path = pod_set.template.as_ref().expect("filtered on templates");
            if let Some(target) = path.get(&self.object).cloned() {
                let mut merged = target.clone();
                write_scheduling_fields(&mut merged, template);
                if merged != target {
                    let _ = path.set(&mut self.object, merged);
                }
            }
        }
        for (pod_set, info) in pod_sets.iter().zip(infos) {
            if let Some(path) = pod_set.count.as_ref().and_then(Count::field).filter(|p| p.in_spec())
                && self.pods_of(pod_set) != info.count
                && (path.get(&self.object).is_some() || info.count != 1)
            {
                changed |= path.set(&mut self.object, Value::from(info.count)).is_ok();
            }
        }
        Ok(changed)
    }
}

/// One pod set of a job: its name and where its fields are in this very job.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedPodSet {
    pub name: String,
    pub template: Option<FieldPath>,
    pub requests: Option<FieldPath>,
    pub count: Option<Count>,
    pub min_count: Option<FieldPath>,
}

impl ResolvedPodSet {
    fn new(name: String, base: Option<&FieldPath>, rule: &config::PodSetRule) -> ResolvedPodSet {
        let at = |path: &Option<FieldPath>| path.as_ref().map(|p| base.map_or_else(|| p.clone(), |b| b.join(p)));
        ResolvedPodSet {
            name,
            template: at(&rule.template),
            requests: at(&rule.requests),
            count: rule.count.as_ref().map(|c| base.map_or_else(|| c.clone(), |b| c.below(b))),
            min_count: at(&rule.min_count),
        }
    }
}

/// Copies the fields an admission injects (and a stop restores) from `template` into the JSON
/// pod template `target`, leaving every other field as it is.
fn write_scheduling_fields(target: &mut Value, template: &PodTemplateSpec) {
    let meta = template.metadata.as_ref();
    let spec = template.spec.as_ref();
    let fields: [(&str, &str, Option<Value>); 5] = [
        ("metadata", "labels", meta.and_then(|m| m.labels.as_ref()).map(|v| serde_json::json!(v))),
        ("metadata", "annotations", meta.and_then(|m| m.annotations.as_ref()).map(|v| serde_json::json!(v))),
        ("spec", "nodeSelector", spec.and_then(|s| s.node_selector.as_ref()).map(|v| serde_json::json!(v))),
        ("spec", "tolerations", spec.and_then(|s| s.tolerations.as_ref()).map(|v| serde_json::json!(v))),
        ("spec", "schedulingGates", spec.and_then(|s| s.scheduling_gates.as_ref()).map(|v| serde_json::json!(v))),
    ];
    for (parent, key, value) in fields {
        let path = FieldPath::parse(&format!("{parent}.{key}")).expect("a fixed path");
        match value
            .filter(|v| v.as_object().is_none_or(|m| !m.is_empty()) && v.as_array().is_none_or(|a| !a.is_empty()))
        {
            Some(value) => {
                let _ = path.set(target, value);
            }
            None => path.remove(target),
        }
    }
}

/// Why a `requests` field does not read as resource requests.
#[derive(Debug, thiserror::Error)]
enum BadRequests {
    #[error("must be resource=quantity pairs, e.g. cpu=1,memory=2Gi")]
    NotPairs,
    #[error(transparent)]
    Quantity(#[from] NotAQuantity),
    #[error("must name at least one resource, e.g. cpu=1")]
    Empty,
}

/// `cpu=1,memory=2Gi` as resource requests.
fn parse_requests(text: &str) -> Result<BTreeMap<String, Quantity>, BadRequests> {
    let mut requests = BTreeMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (resource, quantity) = part.split_once('=').ok_or(BadRequests::NotPairs)?;
        check_quantity(quantity.trim())?;
        requests.insert(resource.trim().to_string(), Quantity(quantity.trim().to_string()));
    }
    if requests.is_empty() {
        return Err(BadRequests::Empty);
    }
    Ok(requests)
}

impl Serialize for ConfiguredJob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = self.object.clone();
        object["metadata"] = serde_json::to_value(&self.metadata).map_err(serde::ser::Error::custom)?;
        object.serialize(serializer)
    }
}

impl Resource for ConfiguredJob {
    type DynamicType = ApiResource;
    type Scope = NamespaceResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl GenericJob for ConfiguredJob {
    fn gvk(&self) -> GroupVersionKind {
        self.integration.gvk()
    }

    fn api_resource(&self) -> ApiResource {
        self.integration.api_resource()
    }

    fn is_suspended(&self) -> bool {
        let suspend = &self.integration.suspend;
        let value = suspend.path.get(&self.object);
        match &suspend.suspended {
            None => value == Some(&Value::Bool(true)),
            Some(suspended) => value == Some(suspended),
        }
    }

    fn suspend(&mut self) {
        let suspend = &self.integration.suspend;
        let value = suspend.suspended.clone().unwrap_or(Value::Bool(true));
        let _ = suspend.path.set(&mut self.object, value);
    }

    fn run_with_pod_sets_info(&mut self, infos: &[PodSetInfo]) -> Result<(), PodSetInfoError> {
        self.rewrite_templates(infos, |templates, infos| podset::run_with_infos(templates, infos).map(|_| true))?;
        let integration = self.integration.clone();
        let suspend = &integration.suspend;
        match (&suspend.suspended, &suspend.running) {
            (None, _) => {
                let _ = suspend.path.set(&mut self.object, Value::Bool(false));
            }
            (Some(_), Some(running)) => {
                let _ = suspend.path.set(&mut self.object, running.clone());
            }
            (Some(_), None) => suspend.path.remove(&mut self.object),
        }
        Ok(())
    }

    fn restore_pod_sets_info(&mut self, infos: &[PodSetInfo]) -> bool {
        self.rewrite_templates(infos, |templates, infos| Ok(podset::restore_templates(templates, infos)))
            .unwrap_or(false)
    }

    fn finished(&self) -> Option<Finished> {
        let finished = &self.integration.finished;
        let pods = self.total_pods();
        [(&finished.succeeded, true), (&finished.failed, false)].into_iter().find_map(|(probe, success)| {
            probe.holds(&self.object, pods).then(|| {
                let message = probe
                    .message(&self.object)
                    .or_else(|| finished.message.as_ref()?.get(&self.object)?.as_str().map(String::from));
                Finished { success, message: message.unwrap_or_default() }
            })
        })
    }

    fn pod_sets(&self) -> Vec<PodSet> {
        self.resolved()
            .iter()
            .filter_map(|p| {
                let template = self.template(p).ok()?;
                Some(PodSet {
                    name: p.name.clone(),
                    count: self.pods_of(p),
                    min_count: self.count_at(p.min_count.as_ref()),
                    template: workload::with_schema_defaults(template),
                })
            })
            .collect()
    }

    fn is_active(&self) -> bool {
        self.integration.active.as_ref().is_some_and(|probe| probe.holds(&self.object, self.total_pods()))
    }

    fn pods_ready(&self) -> bool {
        self.integration.pods_ready.as_ref().is_some_and(|probe| probe.holds(&self.object, self.total_pods()))
    }

    fn managed_by(&self) -> Option<&str> {
        self.integration.managed_by.as_ref()?.get(&self.object)?.as_str()
    }

    fn why_not_through_multikueue(&self) -> Option<String> {
        self.integration.why_not_through_multikueue()
    }

    fn set_managed_by(&mut self, controller: &str) {
        if let Some(path) = self.integration.managed_by.clone() {
            let _ = path.set(&mut self.object, Value::String(controller.into()));
        }
    }
}

#[cfg(test)]
mod tests;
