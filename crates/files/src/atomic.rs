//! Replacing a file atomically: the bytes go to a temporary file beside it,
//! which is then renamed over it, so a reader sees the old file or the new
//! one, never half of one.
//!
//! The temporary is `.NAME.PID.XXXXXX.tmp` (`XXXXXX` random), created with
//! `O_CREAT|O_EXCL`: a name that exists already, a symlink planted there
//! included, is never opened, and a predictable name could not be planted
//! in advance anyway. The rename replaces whatever the final path is at
//! that moment (a link swapped in there is replaced itself, its target is
//! never written). A signal that ends the process while the temporary
//! exists (Ctrl-C) removes it first; one left by a killed process (SIGKILL)
//! is removed by the next write of the same path.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::names;

/// Replaces (or creates) the regular file `path` with `bytes`.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    // An error names the path asked for, not the hidden temporary (which
    // `tempfile`'s errors carry).
    let err = |e: std::io::Error| format!("{}: {}", path.display(), crate::without_path(&e));
    crate::stale::remove_temporaries(dir, name);
    let prefix = names::temp_prefix(name, std::process::id());
    // The handlers are in place before the temporary exists, and it is
    // named to them before it is created: a signal at any point after
    // removes it (none can land between its creation and its naming).
    let _cleanup = TmpGuard::install();
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(names::TEMP_SUFFIX)
        .rand_bytes(names::RAND_LEN)
        .make_in(dir, |candidate| {
            set_tmp_path(candidate);
            // What `File::create` gives: 0666 less the umask; never
            // through a link, never an existing file.
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(candidate);
            if created.is_err() {
                // Not ours (it exists) or not made: nothing to remove.
                set_tmp_path_none();
            }
            created
        })
        .map_err(err)?;
    if let Some(delay) = std::env::var_os("SMPSIM_TEST_SLOW_WRITE") {
        // Tests: hold the temporary file open long enough to be signalled.
        let ms = delay.to_string_lossy().parse().unwrap_or(0);
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    // On an error the temporary is removed as `tmp` drops.
    tmp.write_all(bytes).map_err(err)?;
    // On disk before the rename, so a crash cannot leave an empty result.
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// The temporary file being written, for the signal handler to remove
/// (a `CString` leaked while it is set); null when there is none.
static TMP_PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// A signal that ends the process while a temporary file is written:
/// remove it, then die of the signal as if it had not been caught.
extern "C" fn remove_tmp_and_die(sig: libc::c_int) {
    let p = TMP_PATH.swap(std::ptr::null_mut(), Ordering::SeqCst);
    // SAFETY: `p` is null or a NUL-terminated path that stays allocated
    // (it is leaked while set); unlink, signal and raise are
    // async-signal-safe.
    unsafe {
        if !p.is_null() {
            libc::unlink(p);
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// The signals that end a process by default and can be caught.
const CLEANUP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Names the temporary the signal handler removes.
fn set_tmp_path(tmp: &Path) {
    let c = std::ffi::CString::new(tmp.as_os_str().as_bytes()).unwrap_or_default();
    let old = TMP_PATH.swap(c.into_raw(), Ordering::SeqCst);
    if !old.is_null() {
        // SAFETY: the pointer came from `CString::into_raw`.
        drop(unsafe { std::ffi::CString::from_raw(old) });
    }
}

/// No temporary for the signal handler to remove.
fn set_tmp_path_none() {
    let p = TMP_PATH.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if !p.is_null() {
        // SAFETY: the pointer came from `CString::into_raw`.
        drop(unsafe { std::ffi::CString::from_raw(p) });
    }
}

/// While alive, a signal that ends the process removes the temporary
/// named by [`set_tmp_path`] first. The handlers in place before (the host
/// tests' stop flag) come back on drop.
struct TmpGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl TmpGuard {
    fn install() -> TmpGuard {
        let mut old = Vec::new();
        for sig in CLEANUP_SIGNALS {
            // SAFETY: plain sigaction calls with valid pointers; the handler
            // is async-signal-safe.
            unsafe {
                let mut prev: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut prev);
                if prev.sa_sigaction == libc::SIG_IGN {
                    continue; // nohup and the like: leave ignored signals alone
                }
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = remove_tmp_and_die as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
                old.push((sig, prev));
            }
        }
        TmpGuard { old }
    }
}

impl Drop for TmpGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring the action saved in `new`.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
        set_tmp_path_none();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_and_no_temporary_stays() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, "old").unwrap();
        replace(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["r.json"]);
    }

    #[test]
    fn a_long_name_still_gets_a_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x".repeat(255));
        replace(&p, b"ok").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"ok");
    }

    #[test]
    fn a_missing_directory_is_named_by_the_path_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope").join("r.json");
        let e = replace(&p, b"x").unwrap_err();
        assert!(e.starts_with(&p.display().to_string()), "{e}");
        assert!(e.contains("No such file or directory"), "{e}");
        assert!(!e.contains(".r.json."), "names the temporary: {e}");
    }
}
