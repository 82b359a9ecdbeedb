//! Temporaries left by processes that are gone (SIGKILL gives no chance to
//! clean up): `.NAME.PID.XXXXXX.tmp` files beside an output, and
//! `PREFIX-PID.XXXXXX` private directories. Removed only when they are
//! ours (owned by this user, of the kind we create, never a link) and
//! their process is dead. Best effort: what cannot be removed is left.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::names::{pid_in, temp_prefix, TEMP_SUFFIX};

fn is_dead(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0
        && unsafe { libc::kill(pid, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

fn ours(meta: &std::fs::Metadata) -> bool {
    // SAFETY: geteuid cannot fail.
    meta.uid() == unsafe { libc::geteuid() }
}

/// Removes the temporaries of dead processes beside `dir/name`.
pub(crate) fn remove_temporaries(dir: &Path, name: &OsStr) {
    // The prefix without the PID: `.NAME.`.
    let full = temp_prefix(name, 0);
    let prefix = &full.as_bytes()[..full.len() - "0.".len()];
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = pid_in(file.as_bytes(), prefix, TEMP_SUFFIX.as_bytes()) else {
            continue;
        };
        // `DirEntry::metadata` does not follow a link.
        let Ok(meta) = entry.metadata() else { continue };
        if meta.file_type().is_file() && ours(&meta) && is_dead(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Removes the private directories `PREFIX PID.XXXXXX` of dead processes
/// in `dir`.
pub(crate) fn remove_dirs(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = pid_in(file.as_bytes(), prefix.as_bytes(), b"") else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if meta.file_type().is_dir() && ours(&meta) && is_dead(pid) {
            // Does not follow links inside it.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_process_temporary_goes_and_a_live_one_and_a_link_stay() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let d = dir.path();
        let stale = d.join(format!(".r.json.{dead}.abcdef.tmp"));
        let live = d.join(format!(".r.json.{}.abcdef.tmp", std::process::id()));
        let link = d.join(format!(".r.json.{dead}.ghijkl.tmp"));
        let target = d.join("target");
        std::fs::write(&stale, "x").unwrap();
        std::fs::write(&live, "x").unwrap();
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        remove_temporaries(d, OsStr::new("r.json"));
        assert!(!stale.exists());
        assert!(live.exists());
        assert!(std::fs::symlink_metadata(&link).is_ok());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
