//! Building a job's Workload and telling whether an existing one still matches (Kueue's
//! `ConstructWorkload`, `EquivalentToWorkload`, `PrebuiltWorkloadFor`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerPort, EnvVar, PodTemplateSpec, Probe, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::generic_job::GenericJob;
use super::naming::workload_name;
use super::podset;
use crate::api::kueue::{
    JOB_UID_LABEL, PREBUILT_WORKLOAD_LABEL, PriorityClassRef, QUOTA_RESERVED, RESOURCE_IN_USE_FINALIZER, Workload,
    WorkloadSpec,
};

/// The Workload name Kueue would give this job.
pub fn name_for<J: GenericJob>(job: &J) -> String {
    let gvk = job.gvk();
    workload_name(&gvk.kind, &gvk.group, &job.name_any(), job.uid().as_deref().unwrap_or_default())
}

/// The controller reference a Workload carries to its job.
pub fn owner_reference<J: GenericJob>(job: &J) -> OwnerReference {
    let gvk = job.gvk();
    OwnerReference {
        api_version: if gvk.group.is_empty() { gvk.version.clone() } else { format!("{}/{}", gvk.group, gvk.version) },
        kind: gvk.kind,
        name: job.name_any(),
        uid: job.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The prebuilt Workload a job must adopt (a MultiKueue worker copy names it): annotation
/// first, as Kueue writes it by default, else the label.
pub fn prebuilt_name<J: GenericJob>(job: &J) -> Option<String> {
    job.annotations().get(PREBUILT_WORKLOAD_LABEL).or_else(|| job.labels().get(PREBUILT_WORKLOAD_LABEL)).cloned()
}

/// True when `workload`'s controller owner is this very job (name and UID).
pub fn is_controlled_by<J: GenericJob>(workload: &Workload, job: &J) -> bool {
    controller_uid(workload).is_some_and(|uid| Some(uid) == job.uid().as_deref())
}

pub fn controller_uid(workload: &Workload) -> Option<&str> {
    workload.owner_references().iter().find(|o| o.controller == Some(true)).map(|o| o.uid.as_str())
}

/// A new Workload for `job`, owned by it, named as Kueue names it.
pub fn construct<J: GenericJob>(job: &J, priority: Option<(PriorityClassRef, i32)>) -> Workload {
    let (priority_class_ref, priority) = match priority {
        Some((class, value)) => (Some(class), Some(value)),
        None => (None, Some(0)),
    };
    let mut labels = BTreeMap::new();
    if let Some(uid) = job.uid() {
        labels.insert(JOB_UID_LABEL.to_string(), uid);
    }
    Workload {
        metadata: ObjectMeta {
            name: Some(name_for(job)),
            namespace: job.namespace(),
            labels: Some(labels),
            finalizers: Some(vec![RESOURCE_IN_USE_FINALIZER.to_string()]),
            owner_references: Some(vec![owner_reference(job)]),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            pod_sets: job.pod_sets(),
            queue_name: job.queue_name(),
            priority_class_ref,
            priority,
            active: None,
        },
        status: None,
    }
}

/// Whether `workload` still describes `job` (Kueue's equivalence): same owner, and pod sets
/// with equal counts, containers and (before admission) tolerations. While quota is reserved the
/// admitted counts are what the job runs with.
pub fn equivalent<J: GenericJob>(job: &J, workload: &Workload) -> bool {
    let owner = workload.owner_references().iter().find(|o| o.controller == Some(true));
    if owner.is_none_or(|o| o.name != job.name_any() || Some(&o.uid) != job.uid().as_ref()) {
        return false;
    }
    let wanted = job.pod_sets();
    let reserved = workload.is(QUOTA_RESERVED);
    let assigned_count = |name: &str, count: i32| {
        workload
            .admission()
            .and_then(|a| a.pod_set_assignments.iter().find(|p| p.name == name))
            .and_then(|p| p.count)
            .filter(|_| reserved)
            .unwrap_or(count)
    };
    let expected: Vec<_> =
        workload.spec.pod_sets.iter().map(|p| (assigned_count(&p.name, p.count), p.min_count, &p.template)).collect();
    let actual: Vec<_> = wanted.iter().map(|p| (p.count, p.min_count, &p.template)).collect();
    podset::equivalent_pod_sets(&expected, &actual, !reserved)
}

/// The template as the API server stores it in a Workload, defaulted by the Workload CRD's schema
/// (Kueue v0.19.2 `kueue.x-k8s.io_workloads.yaml`, `podSets[].template`): equivalence compares a
/// job's templates with the stored ones field by field, so both must carry the same defaults.
/// The schema's other defaults are empty reference names, which k8s-openapi always has. Its
/// metadata is written even when empty, as Kueue's Go structs write it, so that our pod sets
/// read exactly as Kueue's own integration of the same kind would have them.
pub fn with_schema_defaults(mut template: PodTemplateSpec) -> PodTemplateSpec {
    template.metadata.get_or_insert_with(Default::default);
    let Some(spec) = template.spec.as_mut() else { return template };
    for c in spec.containers.iter_mut().chain(spec.init_containers.iter_mut().flatten()) {
        default_container(
            &mut c.env,
            [&mut c.liveness_probe, &mut c.readiness_probe, &mut c.startup_probe],
            &mut c.ports,
        );
    }
    for c in spec.ephemeral_containers.iter_mut().flatten() {
        default_container(
            &mut c.env,
            [&mut c.liveness_probe, &mut c.readiness_probe, &mut c.startup_probe],
            &mut c.ports,
        );
    }
    for volume in spec.volumes.iter_mut().flatten() {
        default_volume(volume);
    }
    template
}

/// Containers, init containers and ephemeral containers are different types with these fields in common.
fn default_container(
    env: &mut Option<Vec<EnvVar>>,
    probes: [&mut Option<Probe>; 3],
    ports: &mut Option<Vec<ContainerPort>>,
) {
    for file_key in env.iter_mut().flatten().filter_map(|e| e.value_from.as_mut()?.file_key_ref.as_mut()) {
        file_key.optional.get_or_insert(false);
    }
    for grpc in probes.into_iter().filter_map(|probe| probe.as_mut()?.grpc.as_mut()) {
        grpc.service.get_or_insert_default();
    }
    for port in ports.iter_mut().flatten() {
        port.protocol.get_or_insert_with(|| "TCP".to_owned());
    }
}

fn default_volume(volume: &mut Volume) {
    if let Some(disk) = volume.azure_disk.as_mut() {
        disk.fs_type.get_or_insert_with(|| "ext4".to_owned());
        disk.read_only.get_or_insert(false);
    }
    if let Some(iscsi) = volume.iscsi.as_mut() {
        iscsi.iscsi_interface.get_or_insert_with(|| "default".to_owned());
    }
    if let Some(rbd) = volume.rbd.as_mut() {
        rbd.keyring.get_or_insert_with(|| "/etc/ceph/keyring".to_owned());
        rbd.pool.get_or_insert_with(|| "rbd".to_owned());
        rbd.user.get_or_insert_with(|| "admin".to_owned());
    }
    if let Some(scale_io) = volume.scale_io.as_mut() {
        scale_io.fs_type.get_or_insert_with(|| "xfs".to_owned());
        scale_io.storage_mode.get_or_insert_with(|| "ThinProvisioned".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schema_defaults_fill_what_the_workload_crd_defaults() {
        let probe = json!({"grpc": {"port": 9000}});
        let container = json!({
            "name": "c", "ports": [{"containerPort": 80}],
            "env": [{"name": "E", "valueFrom": {"fileKeyRef": {"key": "k", "path": "p", "volumeName": "v"}}}],
            "livenessProbe": probe, "readinessProbe": probe, "startupProbe": probe,
        });
        let template: PodTemplateSpec = serde_json::from_value(json!({"spec": {
            "containers": [container], "initContainers": [container], "ephemeralContainers": [container],
            "volumes": [
                {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u"}},
                {"name": "i", "iscsi": {"iqn": "q", "lun": 0, "targetPortal": "t"}},
                {"name": "r", "rbd": {"image": "i", "monitors": []}},
                {"name": "s", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {}}},
            ],
        }}))
        .unwrap();
        let spec = serde_json::to_value(with_schema_defaults(template)).unwrap()["spec"].clone();
        for list in ["containers", "initContainers", "ephemeralContainers"] {
            let c = &spec[list][0];
            assert_eq!(c["ports"][0]["protocol"], "TCP", "{list}");
            assert_eq!(c["env"][0]["valueFrom"]["fileKeyRef"]["optional"], false, "{list}");
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                assert_eq!(c[probe]["grpc"]["service"], "", "{list} {probe}");
            }
        }
        let volumes = &spec["volumes"];
        assert_eq!(volumes[0]["azureDisk"]["fsType"], "ext4");
        assert_eq!(volumes[0]["azureDisk"]["readOnly"], false);
        assert_eq!(volumes[1]["iscsi"]["iscsiInterface"], "default");
        assert_eq!(
            volumes[2]["rbd"],
            json!({"image": "i", "monitors": [], "keyring": "/etc/ceph/keyring", "pool": "rbd", "user": "admin"})
        );
        assert_eq!(volumes[3]["scaleIO"]["fsType"], "xfs");
        assert_eq!(volumes[3]["scaleIO"]["storageMode"], "ThinProvisioned");
        assert_eq!(volumes[3]["scaleIO"]["secretRef"]["name"], "", "names need no defaulting");
    }

    #[test]
    fn schema_defaults_keep_values_that_are_set() {
        let template: PodTemplateSpec =
            serde_json::from_value(json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [
                {"name": "c", "ports": [{"containerPort": 53, "protocol": "UDP"}]},
            ]}}))
            .unwrap();
        assert_eq!(with_schema_defaults(template.clone()), template);
    }

    #[test]
    fn a_template_without_metadata_reads_as_kueues_with_empty_metadata() {
        let template: PodTemplateSpec =
            serde_json::from_value(json!({"spec": {"containers": [{"name": "c"}]}})).unwrap();
        let stored = serde_json::to_value(with_schema_defaults(template)).unwrap();
        assert_eq!(stored, json!({"metadata": {}, "spec": {"containers": [{"name": "c"}]}}));
    }
}
