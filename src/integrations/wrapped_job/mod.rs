//! `WrappedJob` on the jobframework: the `GenericJob` adapter (as Kueue's own AppWrapper
//! integration reads an AppWrapper), its pod sets, its lifecycle, and its webhook rules.

pub mod authz;
pub mod components;
pub mod controller;
mod dry_run;
pub mod lifecycle;
pub mod observed;
pub mod podsets;
pub mod settings;
pub mod setup;
pub mod watched;
pub mod webhook;

pub use setup::{INTEGRATION, wrappable};

use kube::ResourceExt;
use kube::api::{ApiResource, GroupVersionKind};

use crate::api::kueue::PodSet;
use crate::api::wrapped_job::{ComponentPodSetInfo, PODS_READY, Phase, QUOTA_RESERVED, RESOURCES_DEPLOYED, WrappedJob};
use crate::jobframework::generic_job::{Finished, GenericJob};
use crate::jobframework::managed_by::Runner;
use crate::jobframework::podset::{PodSetInfo, PodSetInfoError};

impl GenericJob for WrappedJob {
    fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::gvk(crate::api::GROUP, crate::api::VERSION, "WrappedJob")
    }

    fn api_resource(&self) -> ApiResource {
        ApiResource::erase::<WrappedJob>(&())
    }

    fn is_suspended(&self) -> bool {
        WrappedJob::is_suspended(self)
    }

    fn suspend(&mut self) {
        self.spec.suspend = Some(true);
    }

    /// Records the admission per component; the controller applies it when it creates them.
    fn run_with_pod_sets_info(&mut self, infos: &[PodSetInfo]) -> Result<(), PodSetInfoError> {
        let counts = pod_set_counts(self);
        let expected: usize = counts.iter().sum();
        if expected != infos.len() {
            return Err(PodSetInfoError::BadLength { expected, got: infos.len() });
        }
        let mut infos = infos.iter();
        for (component, count) in self.spec.components.iter_mut().zip(counts) {
            component.pod_set_infos = infos.by_ref().take(count).map(component_info).collect();
        }
        self.spec.suspend = Some(false);
        Ok(())
    }

    fn restore_pod_sets_info(&mut self, _infos: &[PodSetInfo]) -> bool {
        let mut changed = false;
        for component in &mut self.spec.components {
            changed |= !component.pod_set_infos.is_empty();
            component.pod_set_infos.clear();
        }
        changed
    }

    fn finished(&self) -> Option<Finished> {
        match self.phase() {
            Phase::Succeeded => Some(Finished { success: true, message: "WrappedJob finished successfully".into() }),
            // Kueue may release the quota only once nothing of the job is left.
            Phase::Failed if !self.is(RESOURCES_DEPLOYED) => Some(Finished {
                success: false,
                message: lifecycle::failure_message(self).unwrap_or_else(|| "WrappedJob failed".into()),
            }),
            _ => None,
        }
    }

    fn pod_sets(&self) -> Vec<PodSet> {
        // The webhook rejects jobs whose pod sets cannot be found; an empty list makes the
        // Workload invalid rather than silently wrong.
        let Ok(pod_sets) = podsets::job_pod_sets(self) else { return Vec::new() };
        pod_sets
            .into_iter()
            .enumerate()
            .map(|(k, p)| PodSet {
                name: pod_set_name(&self.name_any(), k),
                count: p.pod_set.replicas(),
                min_count: None,
                template: p.template,
            })
            .collect()
    }

    /// Quota stays reserved until the controller has removed every component and pod.
    fn is_active(&self) -> bool {
        self.is(QUOTA_RESERVED)
    }

    fn pods_ready(&self) -> bool {
        self.is(PODS_READY)
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

/// Kueue's name for the `k`-th pod set of a wrapper, counted across components.
pub fn pod_set_name(job_name: &str, k: usize) -> String {
    format!("{job_name}-{k}")
}

fn pod_set_counts(job: &WrappedJob) -> Vec<usize> {
    job.spec
        .components
        .iter()
        .enumerate()
        .map(|(i, c)| podsets::component_pod_sets(i, c).map(|p| p.len()).unwrap_or_default())
        .collect()
}

fn component_info(info: &PodSetInfo) -> ComponentPodSetInfo {
    ComponentPodSetInfo {
        annotations: info.annotations.clone(),
        labels: info.labels.clone(),
        node_selector: info.node_selector.clone(),
        tolerations: info.tolerations.clone(),
        scheduling_gates: info.scheduling_gates.clone(),
    }
}
