//! Cgroups of a kind node that a killed runc left frozen. On a cgroup v1 host, runc freezes a
//! container's cgroup while it writes the container's device rules; killed in that window (its
//! node stopped at once, by `kind delete` or `docker restart`), it leaves the cgroup FROZEN, and
//! the `runc init` inside can neither run nor die. Docker then never sees the node exit ("did
//! not receive an exit event") and the cluster cannot be deleted until those cgroups thaw.

use std::io;
use std::path::{Path, PathBuf};

const FREEZER_ROOT: &str = "/sys/fs/cgroup/freezer";
const STATE: &str = "freezer.state";

/// The freezer cgroup of a process, from its `/proc/<pid>/cgroup` (cgroup v1 only).
fn freezer_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers.split(',').any(|c| c == "freezer").then_some(path)
    })
}

/// Thaws every frozen cgroup in the tree at `dir`: how many it thawed.
fn thaw_tree(dir: &Path) -> io::Result<usize> {
    let mut thawed = 0;
    let state = dir.join(STATE);
    if std::fs::read_to_string(&state).is_ok_and(|s| s.trim() != "THAWED") {
        std::fs::write(&state, "THAWED")?;
        thawed += 1;
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            thawed += thaw_tree(&entry.path())?;
        }
    }
    Ok(thawed)
}

/// Thaws every frozen cgroup under that of process `pid` (a node container's init): how many
/// it thawed. None on a cgroup v2 host, where runc freezes nothing for device rules.
pub fn thaw_under(pid: u32) -> io::Result<usize> {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
    let Some(path) = freezer_path(&cgroups) else { return Ok(0) };
    let dir: PathBuf = Path::new(FREEZER_ROOT).join(path.trim_start_matches('/'));
    if dir.is_dir() { thaw_tree(&dir) } else { Ok(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_freezer_cgroup_is_read_from_a_v1_hierarchy_and_none_from_v2_alone() {
        let v1 = "9:name=systemd:/docker/abc\n6:freezer:/docker/abc\n0::/docker/abc/init.scope\n";
        assert_eq!(freezer_path(v1), Some("/docker/abc"));
        assert_eq!(freezer_path("4:cpu,freezer:/x\n"), Some("/x"));
        assert_eq!(freezer_path("0::/system.slice/docker-abc.scope\n"), None);
    }

    #[test]
    fn every_frozen_cgroup_of_the_tree_is_thawed_and_no_other_written() {
        let root = tempfile::tempdir().unwrap();
        let frozen = root.path().join("kubelet.slice/pod-a/cri-containerd-1.scope");
        let thawed = root.path().join("kubelet.slice/pod-b");
        std::fs::create_dir_all(&frozen).unwrap();
        std::fs::create_dir_all(&thawed).unwrap();
        std::fs::write(root.path().join(STATE), "THAWED\n").unwrap();
        std::fs::write(frozen.join(STATE), "FROZEN\n").unwrap();
        std::fs::write(thawed.join(STATE), "THAWED\n").unwrap();
        assert_eq!(thaw_tree(root.path()).unwrap(), 1);
        assert_eq!(std::fs::read_to_string(frozen.join(STATE)).unwrap(), "THAWED");
        assert_eq!(std::fs::read_to_string(thawed.join(STATE)).unwrap(), "THAWED\n", "left as it was");
        assert_eq!(thaw_tree(root.path()).unwrap(), 0, "nothing left to thaw");
    }
}
