//! Who runs a job, as its `spec.managedBy` says. kube-controller-manager's Job controller
//! leaves a batch Job alone when the field names another controller, and AppWrapper's
//! controller does the same for an AppWrapper: two controllers running one job's pods is the
//! double run the field exists to prevent. Kueue's side does not depend on it: the job keeps
//! its Workload and is started and stopped by admission whoever runs it.

use crate::api::kueue::MULTIKUEUE_CONTROLLER;

/// The value that names this project's controller as the runner of the kinds whose runtime it
/// carries (ExternalJob, WrappedJob), as `kubernetes.io/job-controller` names
/// kube-controller-manager's for a batch Job. Unset means the same.
pub const KUEUE_EXT_CONTROLLER: &str = "kueue-ext.dev/controller";

/// Whose pods a job's are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner<'a> {
    /// The kind's own controller (`managedBy` unset, empty or naming it).
    Own,
    /// On a MultiKueue manager: the copy on a worker runs, and Kueue copies its status back.
    MultiKueue,
    /// Another controller runs the pods and writes the status.
    Other(&'a str),
}

impl<'a> Runner<'a> {
    /// The runner `managed_by` names for a kind whose own controller is called `own`.
    pub fn of(managed_by: Option<&'a str>, own: &str) -> Self {
        match managed_by {
            None | Some("") => Runner::Own,
            Some(name) if name == own => Runner::Own,
            Some(MULTIKUEUE_CONTROLLER) => Runner::MultiKueue,
            Some(other) => Runner::Other(other),
        }
    }

    /// The runner of one of this project's kinds.
    pub fn of_ours(managed_by: Option<&'a str>) -> Self {
        Runner::of(managed_by, KUEUE_EXT_CONTROLLER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_by_names_who_runs_the_pods() {
        let cases: [(Option<&str>, Runner); 6] = [
            (None, Runner::Own),
            (Some(""), Runner::Own),
            (Some(KUEUE_EXT_CONTROLLER), Runner::Own),
            (Some(MULTIKUEUE_CONTROLLER), Runner::MultiKueue),
            (Some("example.com/some-controller"), Runner::Other("example.com/some-controller")),
            (Some("kubernetes.io/job-controller"), Runner::Other("kubernetes.io/job-controller")),
        ];
        for (managed_by, runner) in cases {
            assert_eq!(Runner::of_ours(managed_by), runner, "{managed_by:?}");
        }
        let batch = "kubernetes.io/job-controller";
        assert_eq!(Runner::of(Some(batch), batch), Runner::Own, "a kind's own name is its own controller");
        assert_eq!(Runner::of(Some(KUEUE_EXT_CONTROLLER), batch), Runner::Other(KUEUE_EXT_CONTROLLER));
    }
}
