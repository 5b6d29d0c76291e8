//! The checks as the cluster sees them: each creates the sample in its own namespace, drives
//! or waits for the step of the contract it is about, and hands what it observed to its
//! verdict. Single-cluster checks run where kwok runs pods; MultiKueue checks on the manager.

use std::time::Duration;

use kube::ResourceExt;
use kube::core::ObjectMeta;

use super::catalog::Check;
use super::kinds::Description;
use super::report::Evidence;
use super::samples::Sample;
use super::scene::{ADMISSION, COMPLETION, POLL, Scene, until};
use super::setup::{QUEUE, Run};
use super::verdict::{self, Verdict};
use crate::api::kueue::{Workload, WorkloadSpec};

/// What every check of one run shares.
pub struct Suite<'a> {
    pub description: &'a Description,
    pub sample: &'a Sample,
    pub run: &'a Run,
}

impl Suite<'_> {
    async fn create(&self, scene: &Scene) -> Result<crate::integrations::declarative::ConfiguredJob, Evidence> {
        scene.create_job(&self.sample.queued(&scene.namespace, QUEUE)).await
    }

    /// Runs `check` in `scene` (its namespace exists, with LocalQueue `conformance`).
    pub async fn check(&self, check: Check, scene: &Scene) -> Verdict {
        match check {
            Check::SuspendedOnCreate => verdict::suspended_on_create(&self.create(scene).await?),
            Check::OneWorkload => self.one_workload(scene).await,
            Check::PodSetsMatch => self.pod_sets_match(scene).await,
            Check::StartedWithFlavor => self.started_with_flavor(scene).await,
            Check::PodsReady => self.pods_ready(scene).await,
            Check::StopAndRestore => self.stop_and_restore(scene).await,
            Check::QuotaReleasedAfterPods => self.quota_released_after_pods(scene).await,
            Check::FinishedPropagated => self.finished(scene).await,
            Check::PrebuiltWorkloadAdopted => self.prebuilt(scene).await,
            Check::ManagedByMultiKueue => verdict::managed_by_multikueue(&self.create(scene).await?),
            Check::StatusFromWorker => self.status_from_worker(scene).await,
        }
    }

    async fn one_workload(&self, scene: &Scene) -> Verdict {
        let job = self.create(scene).await?;
        // Judged once admitted: by then the integration has settled on its Workload(s).
        scene.admitted_workload().await?;
        verdict::one_workload(&job, &scene.workloads().await?)
    }

    async fn pod_sets_match(&self, scene: &Scene) -> Verdict {
        self.create(scene).await?;
        let admitted = scene.admitted_workload().await?;
        until(ADMISSION, POLL, || async {
            let wl = scene.workload(&admitted.name_any()).await?;
            verdict::pod_sets_match(&wl, &scene.pods().await?)
        })
        .await
    }

    async fn started_with_flavor(&self, scene: &Scene) -> Verdict {
        let job = self.create(scene).await?;
        let (flavor, labels) = (self.run.flavor(), &self.run.node_labels);
        until(ADMISSION, POLL, || async {
            // Pods first: a pod listed means the job read after it has already been unsuspended.
            let pods = scene.pods().await?;
            verdict::started_with_flavor(&scene.job(&job).await?, &flavor, labels, &pods)
        })
        .await
    }

    async fn pods_ready(&self, scene: &Scene) -> Verdict {
        self.create(scene).await?;
        let admitted = scene.admitted_workload().await?;
        until(ADMISSION, POLL, || async {
            verdict::pods_ready(&scene.workload(&admitted.name_any()).await?, &scene.pods().await?)
        })
        .await
    }

    /// Creates the job, waits until it runs, and evicts it as Kueue does on deactivation.
    async fn run_then_deactivate(
        &self,
        scene: &Scene,
    ) -> Result<(crate::integrations::declarative::ConfiguredJob, Workload), Evidence> {
        let job = self.create(scene).await?;
        let wl = scene.admitted_workload().await?;
        scene.running(&job).await?;
        scene.deactivate(&wl).await?;
        Ok((job, wl))
    }

    async fn stop_and_restore(&self, scene: &Scene) -> Verdict {
        let (job, _) = self.run_then_deactivate(scene).await?;
        // The object as created is the spec before admission: only admission may change it.
        let before = job.object()["spec"].clone();
        until(ADMISSION, POLL, || async { verdict::stopped_and_restored(&scene.job(&job).await?, &before) }).await
    }

    async fn quota_released_after_pods(&self, scene: &Scene) -> Verdict {
        let (_, wl) = self.run_then_deactivate(scene).await?;
        // Polled tightly: the pods are listed right after the release is seen.
        until(ADMISSION, Duration::from_millis(50), || async {
            let wl = scene.workload(&wl.name_any()).await?;
            if verdict::holds_quota(&wl) {
                return Err(Evidence::new(
                    format!("{} to give its quota back after the eviction", verdict::workload_ref(&wl)),
                    "QuotaReserved=True",
                ));
            }
            Ok(verdict::quota_released_after_pods(&wl, &scene.pods().await?))
        })
        .await?
    }

    async fn finished(&self, scene: &Scene) -> Verdict {
        let job = self.create(scene).await?;
        until(COMPLETION, POLL, || async {
            let job = scene.job(&job).await?;
            match scene.workload_of(&job).await? {
                Some(wl) => verdict::finished(&job, &wl),
                None => Err(Evidence::new("a Workload controlled by the job", "none").on(verdict::job_ref(&job))),
            }
        })
        .await
    }

    /// Learns the pod sets the integration asks for from a probe job in a held queue (the same
    /// job in another namespace), creates a Workload with them, then the job naming it.
    async fn prebuilt(&self, scene: &Scene) -> Verdict {
        let probe = scene.sibling(&self.run.probe_namespace());
        self.run
            .create_namespace(scene.client(), &probe.namespace, &self.run.cluster_queue(), true)
            .await
            .map_err(|e| Evidence::new("a namespace with a held LocalQueue for the probe job", e.to_string()))?;
        self.create(&probe).await?;
        let pod_sets = until(ADMISSION, POLL, || async {
            match probe.workloads().await?.into_iter().next() {
                Some(wl) => Ok(wl.spec.pod_sets),
                None => Err(Evidence::new("a Workload for the probe job in a held queue", "none")),
            }
        })
        .await?;
        let name = format!("{}-prebuilt", self.sample.name());
        let prebuilt = Workload {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(scene.namespace.clone()),
                ..Default::default()
            },
            spec: WorkloadSpec { pod_sets, queue_name: Some(QUEUE.into()), ..Default::default() },
            status: None,
        };
        scene.create_workload(&prebuilt).await?;
        let job = scene.create_job(&self.sample.with_prebuilt_workload(&scene.namespace, QUEUE, &name)).await?;
        until(ADMISSION, POLL, || async {
            verdict::prebuilt_adopted(&scene.job(&job).await?, &name, &scene.workloads().await?)
        })
        .await
    }

    async fn status_from_worker(&self, scene: &Scene) -> Verdict {
        let job = self.create(scene).await?;
        until(COMPLETION, POLL, || async {
            let job = scene.job(&job).await?;
            verdict::finished_from_worker(&job, scene.workload_of(&job).await?.as_ref())
        })
        .await
    }
}
