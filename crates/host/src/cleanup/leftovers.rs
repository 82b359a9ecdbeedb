//! What runs left without a record (killed before records existed, or a
//! record lost), found by name: best effort.
//!
//! - cgroups `smpsim_TEST_PID` directly under a cgroup hierarchy's root
//!   whose PID is gone and in which no cgroup holds a task (a run in
//!   another PID namespace, whose PID we cannot see, still has its tasks
//!   there: left whole);
//! - tracefs mounted with the source `smpsim-TEST-PID` ([`super::mounts`])
//!   whose PID is gone, when it is the top mount at its point.
//!
//! A tracefs mounted by an older version (source `nodev`) cannot be told
//! from the system's own and is left alone.

use std::path::{Path, PathBuf};

use super::{mounts, pid_alive};

const CGROUP_MOUNT: &str = "/sys/fs/cgroup";

/// Removes both kinds; one line per thing removed or refused.
pub fn sweep() -> Vec<String> {
    let mut lines = Vec::new();
    for root in cgroup_roots(Path::new(CGROUP_MOUNT)) {
        for (dir, pid) in sweep_stale_cgroups(&root) {
            lines.push(format!(
                "restored: cgroup {} removed (left by smpsim pid {pid}; no record, found by its name)",
                dir.display()
            ));
        }
    }
    for m in mounts::mounts() {
        let Some(pid) = mounts::source_pid(&m.source) else {
            continue;
        };
        let on_top = mounts::top_mount_at(&m.at).is_some_and(|t| t == m);
        if m.fstype != "tracefs" || pid_alive(pid) || !on_top {
            continue;
        }
        lines.push(match mounts::umount(&m.at) {
            Ok(()) => format!(
                "restored: tracefs unmounted from {} (mounted by smpsim pid {pid}; no record, found by its source name)",
                m.at.display()
            ),
            Err(e) => format!(
                "not restored: tracefs at {} (mounted by smpsim pid {pid}): {e}; to do it by hand: umount {}",
                m.at.display(),
                m.at.display()
            ),
        });
    }
    lines
}

/// The roots of the cgroup hierarchies: the v2 mount itself, or each v1
/// hierarchy (and a hybrid's `unified`) one level below it.
fn cgroup_roots(mount: &Path) -> Vec<PathBuf> {
    if mount.join("cgroup.procs").exists() {
        return vec![mount.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(mount) else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
                && p.join("cgroup.procs").exists()
        })
        .collect();
    roots.sort();
    roots
}

/// The PID in a cgroup name `smpsim_TEST_PID`.
fn cgroup_pid(name: &str) -> Option<i32> {
    let (test, pid) = name.strip_prefix("smpsim_")?.rsplit_once('_')?;
    (!test.is_empty()).then_some(())?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// Removes the cgroups `smpsim_TEST_PID` under `parent` left by runs
/// whose process is gone; returns them with their PIDs.
pub fn sweep_stale_cgroups(parent: &Path) -> Vec<(PathBuf, i32)> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(cgroup_pid) else {
            continue;
        };
        let path = e.path();
        if !pid_alive(pid) && !holds_tasks(&path) && remove_cgroup(&path).is_ok() {
            removed.push((path, pid));
        }
    }
    removed.sort();
    removed
}

/// Does any cgroup of the tree at `dir` hold a task (v1 `tasks`, v2
/// `cgroup.threads`)?
pub fn holds_tasks(dir: &Path) -> bool {
    let here = ["tasks", "cgroup.threads", "cgroup.procs"]
        .iter()
        .any(|f| std::fs::read_to_string(dir.join(f)).is_ok_and(|t| !t.trim().is_empty()));
    here || std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_type().is_ok_and(|t| t.is_dir()) && holds_tasks(&e.path()))
    })
}

/// Removes a cgroup directory tree, deepest first (a cgroup directory is
/// removed with rmdir, its control files with it).
pub fn remove_cgroup(dir: &Path) -> std::io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                remove_cgroup(&e.path())?;
            }
        }
    }
    std::fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_cgroups_of_dead_processes_are_swept_and_live_ones_kept() {
        let dir = std::env::temp_dir().join(format!("smpsim-sweep-cg-{}", std::process::id()));
        let dead = dir.join("smpsim_membarrier_2147483646/n0/d0");
        let live = dir.join(format!("smpsim_membarrier_{}/n0", std::process::id()));
        let other = dir.join("unrelated_7");
        let no_test = dir.join("smpsim_2147483644");
        // A dead PID whose tree still holds a task (a run in another PID
        // namespace) is in use.
        let busy = dir.join("smpsim_membarrier_2147483645/n0");
        for d in [&dead, &live, &other, &busy, &no_test] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(busy.join("tasks"), "4242\n").unwrap();
        let removed = sweep_stale_cgroups(&dir);
        assert_eq!(
            removed,
            vec![(dir.join("smpsim_membarrier_2147483646"), 2147483646)]
        );
        assert!(live.exists() && other.exists() && busy.exists() && no_test.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cgroup_names_give_the_pid_of_their_run() {
        assert_eq!(cgroup_pid("smpsim_membarrier_12"), Some(12));
        assert_eq!(cgroup_pid("smpsim_my_test_12"), Some(12));
        assert_eq!(cgroup_pid("smpsim_12"), None);
        assert_eq!(cgroup_pid("smpsim_membarrier_x"), None);
        assert_eq!(cgroup_pid("system.slice"), None);
    }
}
