//! `ExternalJob` on the jobframework: the `GenericJob` adapter, its pods, its webhook rules.

pub mod pod_cache;
pub mod pod_controller;
pub mod pods;
pub mod setup;
pub mod webhook;

pub use setup::INTEGRATION;

use kube::api::{ApiResource, GroupVersionKind};

use crate::api::condition;
use crate::api::external_job::ExternalJob;
use crate::api::kueue::PodSet;
use crate::jobframework::generic_job::{Finished, GenericJob};
use crate::jobframework::managed_by::Runner;
use crate::jobframework::podset::{self, PodSetInfo, PodSetInfoError};
use crate::jobframework::workload;

pub const COMPLETE: &str = "Complete";
pub const FAILED: &str = "Failed";
pub const RUNNING: &str = "Running";
pub const SUSPENDED: &str = "Suspended";

impl GenericJob for ExternalJob {
    fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::gvk(crate::api::GROUP, crate::api::VERSION, "ExternalJob")
    }

    fn api_resource(&self) -> ApiResource {
        ApiResource::erase::<ExternalJob>(&())
    }

    fn is_suspended(&self) -> bool {
        ExternalJob::is_suspended(self)
    }

    fn suspend(&mut self) {
        self.spec.suspend = Some(true);
    }

    fn run_with_pod_sets_info(&mut self, infos: &[PodSetInfo]) -> Result<(), PodSetInfoError> {
        let mut templates: Vec<_> = self.spec.pod_sets.iter().map(|p| p.template.clone()).collect();
        podset::run_with_infos(&mut templates, infos)?;
        for ((pod_set, template), info) in self.spec.pod_sets.iter_mut().zip(templates).zip(infos) {
            pod_set.template = template;
            pod_set.count = info.count;
        }
        self.spec.suspend = Some(false);
        Ok(())
    }

    fn restore_pod_sets_info(&mut self, infos: &[PodSetInfo]) -> bool {
        if infos.len() != self.spec.pod_sets.len() {
            return false;
        }
        let mut templates: Vec<_> = self.spec.pod_sets.iter().map(|p| p.template.clone()).collect();
        let mut changed = podset::restore_templates(&mut templates, infos);
        for ((pod_set, template), info) in self.spec.pod_sets.iter_mut().zip(templates).zip(infos) {
            changed |= pod_set.count != info.count;
            pod_set.template = template;
            pod_set.count = info.count;
        }
        changed
    }

    fn finished(&self) -> Option<Finished> {
        let conditions = self.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        [(COMPLETE, true), (FAILED, false)].into_iter().find_map(|(kind, success)| {
            condition::find(conditions, kind)
                .filter(|c| c.is_true())
                .map(|c| Finished { success, message: c.message.clone() })
        })
    }

    fn pod_sets(&self) -> Vec<PodSet> {
        self.spec
            .pod_sets
            .iter()
            .map(|p| PodSet {
                name: p.name.clone(),
                count: p.count,
                min_count: p.min_count,
                template: workload::with_schema_defaults(p.template.clone()),
            })
            .collect()
    }

    /// Pods being deleted count: the quota is held until they have ended.
    fn is_active(&self) -> bool {
        self.status.as_ref().is_some_and(|s| s.pod_sets.iter().any(|p| p.active + p.terminating > 0))
    }

    fn pods_ready(&self) -> bool {
        let status = self.status_or_default();
        self.spec.pod_sets.iter().all(|wanted| {
            status
                .pod_sets
                .iter()
                .find(|s| s.name == wanted.name)
                .is_some_and(|s| s.ready + s.succeeded >= wanted.count)
        })
    }

    fn managed_by(&self) -> Option<&str> {
        self.spec.managed_by.as_deref()
    }

    fn set_managed_by(&mut self, controller: &str) {
        self.spec.managed_by = Some(controller.to_string());
    }

    fn can_default_managed_by(&self) -> bool {
        Runner::of_ours(self.managed_by()) == Runner::Own
    }
}

#[cfg(test)]
mod pod_controller_tests;
#[cfg(test)]
mod tests;
