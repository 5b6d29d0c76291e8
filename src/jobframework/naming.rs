//! Workload names, chosen exactly as Kueue chooses them.

use sha1::{Digest, Sha1};

/// Longest name Kueue generates: the DNS-1123 subdomain limit. Kueue's `ShortWorkloadNames` gate
/// (alpha, off by default) would lower it to 63; we follow the default.
const MAX_NAME_LEN: usize = 253;
/// Hex digits of the SHA-1 kept as the name's suffix.
const HASH_LEN: usize = 5;

/// The name of the Workload for a job: `<kind>-<job name>`, cut to fit, then `-` and a short hash.
///
/// Mirrors Kueue's `jobframework.GetWorkloadNameForOwnerWithGVK`, so that a Workload made here has
/// the name Kueue itself would give it and a Kueue reader recognises the rule:
/// - the prefix lowercases the kind, while the hash takes it as written;
/// - the hash covers kind, group, name and UID, so jobs of different kinds or a recreated job with
///   the same name still get distinct Workloads; the version is left out, so a job keeps its
///   Workload across API versions;
/// - the prefix is cut at `253 - 6` bytes with nothing trimmed, so a cut landing on `.` gives `.-`,
///   as in Kueue.
pub fn workload_name(kind: &str, group: &str, job_name: &str, job_uid: &str) -> String {
    let mut prefix = format!("{}-{job_name}", kind.to_lowercase());
    // Kubernetes names are ASCII, where this is Go's byte cut; the floor only keeps other input from panicking.
    prefix.truncate(prefix.floor_char_boundary(MAX_NAME_LEN - 1 - HASH_LEN));
    let digest = Sha1::digest(format!("{kind}\n{group}\n{job_name}\n{job_uid}"));
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hash: String =
        digest.iter().flat_map(|b| [b >> 4, b & 0xf]).take(HASH_LEN).map(|n| char::from(HEX[usize::from(n)])).collect();
    format!("{prefix}-{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// A case computed by Kueue's own function; see `hack/toolchain/cmd/workloadnames`.
    #[derive(Deserialize)]
    struct Vector {
        kind: String,
        group: String,
        version: String,
        name: String,
        uid: String,
        expected: String,
    }

    #[test]
    fn matches_kueue() {
        let vectors: Vec<Vector> = serde_json::from_str(include_str!("testdata/workload_names.json")).unwrap();
        assert!(!vectors.is_empty());
        for v in vectors {
            assert_eq!(
                workload_name(&v.kind, &v.group, &v.name, &v.uid),
                v.expected,
                "{}.{}/{} {:?} uid {:?}",
                v.kind,
                v.group,
                v.version,
                v.name,
                v.uid
            );
        }
    }

    #[test]
    fn long_name_is_a_dns1123_subdomain() {
        let name = workload_name("ExternalJob", "kueue-ext.dev", &format!("{}tail", "segment.".repeat(32)), "uid");
        assert!(name.len() <= MAX_NAME_LEN, "{} bytes", name.len());
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
        };
        assert!(name.split('.').all(label_ok), "{name}");
    }
}
