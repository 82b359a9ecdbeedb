//! Leaving the host as it was found.
//!
//! Every change a test makes to the system (a cgroup created, a CPU taken
//! offline, tracefs mounted) is registered on a [`Guard`] as the action
//! that undoes it. The guard undoes everything, newest first, when it is
//! dropped: on return, on error, and on panic (unwinding). SIGINT and
//! SIGTERM do not kill the process: they set a flag every test loop
//! polls, so the test returns early and its guard runs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Routes SIGINT and SIGTERM to the stop flag.
pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Has the user asked us to stop?
pub fn should_stop() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// One undo step.
#[derive(Debug, Clone)]
pub enum Undo {
    /// Remove a cgroup directory (after moving its tasks out).
    RemoveCgroup(PathBuf),
    /// Write "1" to a CPU's `online` file.
    OnlineCpu(u32),
    /// Unmount a filesystem we mounted.
    Umount(PathBuf),
    /// Restore a file's previous contents.
    Restore(PathBuf, String),
}

#[derive(Default)]
pub struct Guard {
    undo: Vec<Undo>,
    /// What undoing reported, for the test's notes.
    pub log: Vec<String>,
}

impl Guard {
    pub fn push(&mut self, u: Undo) {
        self.undo.push(u);
    }

    /// Undoes everything now (also what `drop` does).
    pub fn run(&mut self) {
        while let Some(u) = self.undo.pop() {
            let r = match &u {
                Undo::RemoveCgroup(dir) => remove_cgroup(dir),
                Undo::OnlineCpu(cpu) => {
                    std::fs::write(format!("/sys/devices/system/cpu/cpu{cpu}/online"), "1")
                }
                Undo::Umount(dir) => {
                    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
                        .unwrap_or_default();
                    // SAFETY: valid C string.
                    if unsafe { libc::umount(c.as_ptr()) } == 0 {
                        let _ = std::fs::remove_dir(dir);
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                }
                Undo::Restore(path, text) => std::fs::write(path, text),
            };
            if let Err(e) = r {
                self.log.push(format!("cleanup {u:?} failed: {e}"));
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.run();
    }
}

/// Removes a cgroup directory tree, deepest first.
/// Removes the cgroups `prefix<pid>` under `parent` left by runs whose
/// process is gone (a SIGKILL skips every guard); returns how many.
pub fn sweep_stale_cgroups(parent: &std::path::Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        // A tree that still holds tasks is in use, even if its PID is not
        // visible here (a run in another PID namespace): leave it whole.
        if !alive && !holds_tasks(&e.path()) && remove_cgroup(&e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Does any cgroup of the tree at `dir` hold a task (v1 `tasks`, v2
/// `cgroup.threads`)?
fn holds_tasks(dir: &std::path::Path) -> bool {
    let here = ["tasks", "cgroup.threads", "cgroup.procs"]
        .iter()
        .any(|f| std::fs::read_to_string(dir.join(f)).is_ok_and(|t| !t.trim().is_empty()));
    here || std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_type().is_ok_and(|t| t.is_dir()) && holds_tasks(&e.path()))
    })
}

fn remove_cgroup(dir: &std::path::Path) -> std::io::Result<()> {
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
mod sweep_tests {
    use super::*;

    #[test]
    fn stale_cgroups_of_dead_processes_are_swept_and_live_ones_kept() {
        let dir = std::env::temp_dir().join(format!("smpsim-sweep-cg-{}", std::process::id()));
        let dead = dir.join("smpsim_membarrier_2147483646/n0/d0");
        let live = dir.join(format!("smpsim_membarrier_{}/n0", std::process::id()));
        let other = dir.join("unrelated_7");
        // A dead PID whose tree still holds a task (a run in another PID
        // namespace) is in use.
        let busy = dir.join("smpsim_membarrier_2147483645/n0");
        for d in [&dead, &live, &other, &busy] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(busy.join("tasks"), "4242\n").unwrap();
        assert_eq!(sweep_stale_cgroups(&dir, "smpsim_membarrier_"), 1);
        assert!(!dir.join("smpsim_membarrier_2147483646").exists());
        assert!(live.exists() && other.exists() && busy.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
