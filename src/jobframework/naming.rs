//! Workload names exactly as Kueue makes them (`GetWorkloadNameForOwnerWithGVK`).

use sha1::{Digest, Sha1};

const MAX_NAME_LENGTH: usize = 253;
const HASH_LENGTH: usize = 5;

/// `<lowercase kind>-<job name>` truncated, then `-` and the first 5 hex digits of a SHA-1 over
/// kind, group, job name and UID.
pub fn workload_name(kind: &str, group: &str, job_name: &str, job_uid: &str) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind}\n{group}\n{job_name}\n{job_uid}"));
    let hash: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let mut prefix = format!("{}-{job_name}", kind.to_lowercase());
    prefix.truncate(MAX_NAME_LENGTH - HASH_LENGTH - 1);
    format!("{prefix}-{}", &hash[..HASH_LENGTH])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_kueues_own_example() {
        assert_eq!(workload_name("Job", "batch", "name", "uid"), "job-name-ef3a1");
    }
}
