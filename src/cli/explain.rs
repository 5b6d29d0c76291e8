use std::process::ExitCode;

use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject};

use super::cluster::ClusterArgs;
use crate::api::condition::Condition;
use crate::api::kueue::{LocalQueue, PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL, Workload};
use crate::explain::{Facts, explain};
use crate::jobframework::naming::workload_name;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job: `NAME` (an ExternalJob), `externaljob/NAME`, `wrappedjob/NAME` (or `wj/NAME`) or
    /// `job/NAME` (batch/v1).
    pub job: String,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Group, version, kind and plural of a job kind.
type JobKind = (&'static str, &'static str, &'static str, &'static str);

/// The kind and name of a job reference.
fn kind_of(reference: &str) -> Result<(JobKind, &str), String> {
    let (kind, name) = reference.split_once('/').unwrap_or(("externaljob", reference));
    let resolved = match kind.to_lowercase().as_str() {
        "externaljob" | "externaljobs" | "ej" | "externaljob.kueue-ext.dev" => {
            ("kueue-ext.dev", "v1alpha1", "ExternalJob", "externaljobs")
        }
        "wrappedjob" | "wrappedjobs" | "wj" | "wrappedjob.kueue-ext.dev" => {
            ("kueue-ext.dev", "v1alpha1", "WrappedJob", "wrappedjobs")
        }
        "job" | "jobs" | "job.batch" => ("batch", "v1", "Job", "jobs"),
        other => {
            return Err(format!("unknown job kind {other:?}: use externaljob/NAME, wrappedjob/NAME or job/NAME"));
        }
    };
    Ok((resolved, name))
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let ((group, version, kind, plural), name) = kind_of(&args.job).map_err(anyhow::Error::msg)?;
    let (client, namespace) = args.cluster.connect().await?;
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    };
    let jobs: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    let Some(job) = jobs.get_opt(name).await? else {
        eprintln!("{kind} {namespace}/{name} not found");
        return Ok(ExitCode::FAILURE);
    };
    let queue = job.labels().get(QUEUE_NAME_LABEL).cloned();
    let workload_name = job
        .annotations()
        .get(PREBUILT_WORKLOAD_LABEL)
        .cloned()
        .unwrap_or_else(|| workload_name(kind, group, name, &job.uid().unwrap_or_default()));
    let workload = Api::<Workload>::namespaced(client.clone(), &namespace).get_opt(&workload_name).await?;
    let local_queue_exists = match &queue {
        Some(q) => Some(Api::<LocalQueue>::namespaced(client, &namespace).get_opt(q).await?.is_some()),
        None => None,
    };
    let conditions: Vec<Condition> =
        serde_json::from_value(job.data["status"]["conditions"].clone()).unwrap_or_default();
    let facts = Facts {
        job: format!("{kind} {namespace}/{name}"),
        queue: queue.as_deref(),
        suspended: job.data["spec"]["suspend"] == true,
        managed_by: job.data["spec"]["managedBy"].as_str(),
        job_conditions: &conditions,
        phase: job.data["status"]["phase"].as_str(),
        workload: workload.as_ref(),
        local_queue_exists,
    };
    for line in explain(&facts) {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_references_resolve_like_kubectl() {
        assert_eq!(kind_of("train").unwrap().0.2, "ExternalJob");
        assert_eq!(kind_of("job/sample").unwrap(), (("batch", "v1", "Job", "jobs"), "sample"));
        for reference in ["wrappedjob/train", "wj/train", "WrappedJobs/train"] {
            assert_eq!(
                kind_of(reference).unwrap(),
                (("kueue-ext.dev", "v1alpha1", "WrappedJob", "wrappedjobs"), "train")
            );
        }
        assert!(kind_of("pod/x").unwrap_err().contains("unknown job kind"));
    }
}
