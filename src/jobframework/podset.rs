use std::collections::BTreeMap;
use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration, PodSchedulingGate};
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodSetInfo {
    pub name: String,
    pub count: i32,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub scheduling_gates: Vec<PodSchedulingGate>,
}
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PodSetInfoError {
    #[error("x")] BadLength { expected: usize, got: usize },
}
pub struct Assignment<'a> { pub name: &'a str, pub count: Option<i32>, pub flavors: Vec<&'a str> }
pub struct Flavor<'a> { pub node_labels: &'a BTreeMap<String,String>, pub tolerations: &'a [Toleration] }
pub struct CheckUpdate<'a> { pub pod_set: &'a str, pub labels: &'a BTreeMap<String,String>, pub annotations: &'a BTreeMap<String,String>, pub node_selector: &'a BTreeMap<String,String>, pub tolerations: &'a [Toleration] }
pub fn infos_from_admission(_pod_sets: &[(String, i32)], _assignments: &[Assignment], _flavors: &BTreeMap<String, Flavor>, _check_updates: &[CheckUpdate], _workload_name: &str, _local_queue: &str, _cluster_queue: &str) -> Result<Vec<PodSetInfo>, PodSetInfoError> { todo!() }
pub fn infos_from_templates(_pod_sets: &[(String, i32, PodTemplateSpec)]) -> Vec<PodSetInfo> { todo!() }
pub fn run_with_infos(_templates: &mut [PodTemplateSpec], _infos: &[PodSetInfo]) -> Result<(), PodSetInfoError> { todo!() }
pub fn restore_templates(_templates: &mut [PodTemplateSpec], _infos: &[PodSetInfo]) -> bool { todo!() }
pub fn equivalent_pod_sets(_a: &[(i32, Option<i32>, &PodTemplateSpec)], _b: &[(i32, Option<i32>, &PodTemplateSpec)], _compare_tolerations: bool) -> bool { todo!() }
