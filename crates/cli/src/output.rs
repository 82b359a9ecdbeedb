//! Writing results: to stdout (no path, or `-`), or to a file. A regular
//! file (or a path that does not exist yet) is written atomically, as a
//! temporary file renamed into place, so a failed run never leaves a
//! half-written result; a symlink is followed and its target replaced; a
//! character device or FIFO (`/dev/null`, a named pipe) is written through,
//! never replaced.

use std::io::Write;
use std::path::{Path, PathBuf};

pub fn emit(text: &str, output: Option<&Path>) -> Result<(), String> {
    match output {
        None => to_stdout(text),
        Some(path) if path.as_os_str() == "-" => to_stdout(text),
        Some(path) => {
            let target = follow_symlinks(path)?;
            match std::fs::metadata(&target) {
                Ok(meta) if !meta.is_file() && !meta.is_dir() => {
                    // A device or a FIFO: write into it.
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&target)
                        .and_then(|mut f| f.write_all(text.as_bytes()))
                        .map_err(|e| format!("{}: {e}", target.display()))
                }
                Ok(meta) if meta.is_dir() => Err(format!("{}: is a directory", target.display())),
                _ => replace_atomically(&target, text),
            }
        }
    }
}

/// A closed pipe (`smpsim ... | head`) is not an error: stop quietly.
fn to_stdout(text: &str) -> Result<(), String> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| format!("stdout: {e}")),
    }
}

/// The path a write to `path` should land on: the final target of a
/// symlink chain (which may not exist yet), or `path` itself.
fn follow_symlinks(path: &Path) -> Result<PathBuf, String> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(format!(
        "{}: too many levels of symbolic links",
        path.display()
    ))
}

/// The temporary file being written, for the signal handler to remove.
static TEMP_PATH: std::sync::atomic::AtomicPtr<libc::c_char> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// SIGINT/SIGTERM while a result is being written: remove the temporary
/// file, then die of the signal as usual.
extern "C" fn remove_temp_and_die(sig: libc::c_int) {
    let p = TEMP_PATH.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: unlink, signal and raise are async-signal-safe; `p` is a
    // NUL-terminated path leaked for the length of the write.
    unsafe {
        if !p.is_null() {
            libc::unlink(p);
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// While alive, an interrupt removes `tmp` before the process dies.
struct TempGuard {
    old: [libc::sighandler_t; 2],
    path: *mut libc::c_char,
}

impl TempGuard {
    fn new(tmp: &Path) -> Self {
        let c = std::ffi::CString::new(tmp.as_os_str().as_encoded_bytes()).unwrap_or_default();
        let path = c.into_raw();
        TEMP_PATH.store(path, std::sync::atomic::Ordering::SeqCst);
        let handler = remove_temp_and_die as *const () as libc::sighandler_t;
        // SAFETY: installing a handler that only calls async-signal-safe
        // functions.
        let old = unsafe {
            [
                libc::signal(libc::SIGINT, handler),
                libc::signal(libc::SIGTERM, handler),
            ]
        };
        TempGuard { old, path }
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        // SAFETY: restoring the handlers saved in `new`; the path was made
        // by `CString::into_raw` and is no longer published.
        unsafe {
            libc::signal(libc::SIGINT, self.old[0]);
            libc::signal(libc::SIGTERM, self.old[1]);
            TEMP_PATH.store(std::ptr::null_mut(), std::sync::atomic::Ordering::SeqCst);
            drop(std::ffi::CString::from_raw(self.path));
        }
    }
}

fn replace_atomically(path: &Path, text: &str) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let _interrupt = TempGuard::new(&tmp);
    std::fs::write(&tmp, text).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", tmp.display())
    })?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// Prints an error and returns the bad-input exit code.
pub fn fail(message: impl std::fmt::Display) -> i32 {
    eprintln!("{message}");
    2
}

/// Parses `KEY=VALUE` arguments.
pub fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>, String> {
    sets.iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| {
                    format!("error: --set {s}: expected KEY=VALUE, e.g. --set scenario.duration=2s")
                })
        })
        .collect()
}
