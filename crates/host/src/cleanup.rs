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

/// The prefix of the cgroup tree a `membarrier` run makes, followed by
/// its PID.
pub const MEMBARRIER_CGROUP_PREFIX: &str = "smpsim_membarrier_";

/// Removes the `smpsim_membarrier_<pid>` trees under `dir` whose process
/// is gone: a run killed with SIGKILL cannot remove its own. A tree whose
/// process is alive (another run) is left alone. Returns a note for each
/// tree removed or that could not be.
pub fn sweep_stale_cgroups(dir: &std::path::Path) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return notes;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(MEMBARRIER_CGROUP_PREFIX)
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if pid <= 0 || process_exists(pid) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match remove_cgroup(&e.path()) {
            Ok(()) => notes.push(format!(
                "removed {name}, left by a run (PID {pid}) that was killed"
            )),
            Err(err) => notes.push(format!("could not remove stale {name}: {err}")),
        }
    }
    notes
}

/// Whether a process with this PID exists (ours to signal or not).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PID no process can have (above any pid_max).
    const DEAD: u32 = 99_999_999;

    #[test]
    fn stale_trees_of_dead_processes_are_swept_live_ones_kept() {
        let dir = std::env::temp_dir().join(format!("smpsim-sweep-{}", std::process::id()));
        let dead = dir.join(format!("{MEMBARRIER_CGROUP_PREFIX}{DEAD}"));
        let live = dir.join(format!("{MEMBARRIER_CGROUP_PREFIX}{}", std::process::id()));
        let other = dir.join("someone_elses");
        for d in [
            dead.join("n0/d0/d1"),
            dead.join("n1"),
            live.join("n0"),
            other.clone(),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let notes = sweep_stale_cgroups(&dir);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains(&DEAD.to_string()), "{notes:?}");
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
        std::fs::remove_dir_all(&dir).unwrap();
        // A directory that cannot be read sweeps nothing.
        assert!(sweep_stale_cgroups(&dir).is_empty());
    }
}
