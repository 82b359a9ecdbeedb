//! Leaving the host as it was found.
//!
//! Every change a test makes to the system (a cgroup created, a CPU taken
//! offline, tracefs mounted, a temporary file) is registered on a
//! [`Guard`] as the step that undoes it, and written to this process's
//! state record ([`state`]) BEFORE the change is made. The guard undoes
//! everything, newest first, when it is dropped: on return, on error, on
//! panic (unwinding), and after a terminating signal ([`signals`]: the
//! signal only asks the test to stop; it returns and its guard runs). An
//! undone step leaves the record; an empty record is removed.
//!
//! Only SIGKILL (or a crash) skips the guard; then the record stays, and
//! the next host run restores what it lists ([`restore_left_behind`]),
//! then looks for what older runs left without a record ([`leftovers`]).

pub mod leftovers;
pub mod mounts;
pub mod signals;
pub mod state;

use std::fmt;
use std::path::{Path, PathBuf};

pub use signals::{
    catch_sigpipe, install_signal_handlers, should_stop, signal_name, stop_signal, stopped_status,
};

/// One undo step, as the state record writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// Remove a cgroup directory tree (it must hold no task).
    RemoveCgroup(PathBuf),
    /// Write "1" to a CPU's `online` file.
    OnlineCpu(u32),
    /// Unmount the tracefs we mounted at `at`, named `source` (the mount's
    /// source field, `smpsim-mutex-readers-PID`, finds it again).
    UmountTracefs { at: PathBuf, source: String },
    /// Remove a temporary file (never a directory, never through a link).
    RemoveFile(PathBuf),
}

impl fmt::Display for Undo {
    /// The record's line (no newline); [`Undo::parse`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Undo::OnlineCpu(cpu) => write!(f, "cpu-offline {cpu}"),
            Undo::RemoveCgroup(p) => write!(f, "cgroup {}", p.display()),
            Undo::UmountTracefs { at, source } => write!(f, "tracefs {source} {}", at.display()),
            Undo::RemoveFile(p) => write!(f, "temp {}", p.display()),
        }
    }
}

impl Undo {
    pub fn parse(line: &str) -> Option<Undo> {
        let (kind, rest) = line.split_once(' ')?;
        let path = |p: &str| Some(PathBuf::from(p)).filter(|p| p.is_absolute());
        match kind {
            "cpu-offline" => rest.parse().ok().map(Undo::OnlineCpu),
            "cgroup" => path(rest).map(Undo::RemoveCgroup),
            "temp" => path(rest).map(Undo::RemoveFile),
            "tracefs" => {
                let (source, at) = rest.split_once(' ')?;
                Some(Undo::UmountTracefs {
                    at: path(at)?,
                    source: source.into(),
                })
            }
            _ => None,
        }
    }

    /// Can it be written as one line of the record (and read back)?
    fn recordable(&self) -> Result<(), String> {
        let line = self.to_string();
        match Undo::parse(&line) {
            Some(back) if back == *self && !line.contains('\n') => Ok(()),
            _ => Err(format!(
                "cannot record `{self:?}` in the state file (a path that is not absolute UTF-8 on one line)"
            )),
        }
    }

    /// Undoes the step in this process (the change was ours, made now).
    fn undo(&self) -> std::io::Result<()> {
        match self {
            Undo::RemoveCgroup(dir) => match leftovers::remove_cgroup(dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                r => r,
            },
            Undo::OnlineCpu(cpu) => std::fs::write(cpu_online_file(*cpu), "1"),
            Undo::UmountTracefs { at, .. } => mounts::umount(at),
            Undo::RemoveFile(p) => match std::fs::remove_file(p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                r => r,
            },
        }
    }
}

pub fn cpu_online_file(cpu: u32) -> PathBuf {
    PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}/online"))
}

/// The changes one test made, undone newest first on drop.
#[derive(Default)]
pub struct Guard {
    undo: Vec<Undo>,
    /// What undoing reported, for the test's notes.
    pub log: Vec<String>,
}

impl Guard {
    /// Records `u` in the state file and registers it: call it BEFORE the
    /// change `u` undoes, so a SIGKILL between the two leaves a record.
    /// An error means the record could not be written: make no change.
    pub fn before(&mut self, u: Undo) -> Result<(), String> {
        u.recordable()?;
        state::record(&u)?;
        self.undo.push(u);
        Ok(())
    }

    /// The change registered last was not made after all (it failed):
    /// forget it, record included, so that nothing undoes it.
    pub fn not_made(&mut self) {
        if let Some(u) = self.undo.pop() {
            state::forget(&u);
        }
    }

    /// Undoes everything now (also what `drop` does). A step that fails
    /// stays in the record, for the next run to retry.
    pub fn run(&mut self) {
        while let Some(u) = self.undo.pop() {
            match u.undo() {
                Ok(()) => state::forget(&u),
                Err(e) => self.log.push(format!("cleanup `{u}` failed: {e}")),
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.run();
    }
}

/// Restores what runs that died left behind: first every step in the
/// state records of dead processes, then (best effort, found by name
/// without a record) `smpsim_*_PID` cgroups and `smpsim-*-PID` tracefs
/// mounts of PIDs that are gone. One line per step, for stderr:
/// `restored: cpu1 online (left offline by smpsim pid 1234)`.
pub fn restore_left_behind() -> Vec<String> {
    let mut lines = state::restore_dead_runs();
    lines.extend(leftovers::sweep());
    lines
}

/// [`restore_left_behind`], each line on stderr: what `host run`,
/// `host compare` and `calibrate` do first.
pub fn restore_and_report() {
    use std::io::Write;
    for line in restore_left_behind() {
        // Not eprintln: a closed stderr must not stop the run before its test.
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// Does a process with this PID exist (in our PID namespace)?
pub fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// Is `path` free of symbolic links (every component) and absolute?
fn no_links(path: &Path) -> bool {
    path.is_absolute() && std::fs::canonicalize(path).is_ok_and(|c| c == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_reads_back_from_its_record_line() {
        for u in [
            Undo::OnlineCpu(3),
            Undo::RemoveCgroup("/sys/fs/cgroup/cpu/smpsim_membarrier_12".into()),
            Undo::UmountTracefs {
                at: "/sys/kernel/tracing".into(),
                source: "smpsim-mutex-readers-12".into(),
            },
            Undo::RemoveFile("/tmp/a dir/profile.toml".into()),
        ] {
            assert_eq!(Undo::parse(&u.to_string()), Some(u.clone()), "{u}");
            assert!(u.recordable().is_ok());
        }
        assert!(Undo::RemoveFile("relative".into()).recordable().is_err());
        assert!(Undo::RemoveFile("/a\nb".into()).recordable().is_err());
        assert_eq!(Undo::parse("cgroup relative/path"), None);
        assert_eq!(Undo::parse("reboot now"), None);
    }
}
