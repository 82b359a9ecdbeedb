//! Writing results: to stdout (no path, or `-`), or to a file. A regular
//! file (or a path that does not exist yet) is written atomically, as a
//! temporary file renamed into place, so a failed run never leaves a
//! half-written result; a symlink is followed and its target replaced; a
//! character device or FIFO (`/dev/null`, a named pipe) is written through,
//! never replaced. A signal that ends the process while the temporary
//! file is written (Ctrl-C) removes it first.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

pub fn emit(text: &str, output: Option<&Path>) -> Result<(), String> {
    emit_bytes(text.as_bytes(), output)
}

/// [`emit`] for bytes that need not be text (a PNG).
pub fn emit_bytes(text: &[u8], output: Option<&Path>) -> Result<(), String> {
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
                        .and_then(|mut f| f.write_all(text))
                        .map_err(|e| format!("{}: {e}", target.display()))
                }
                Ok(meta) if meta.is_dir() => Err(format!("{}: is a directory", target.display())),
                _ => replace_atomically(&target, text),
            }
        }
    }
}

/// A closed pipe (`smpsim ... | head`) is not an error: stop quietly.
fn to_stdout(text: &[u8]) -> Result<(), String> {
    match std::io::stdout().lock().write_all(text) {
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

/// The temporary file being written, for the signal handler to remove
/// (a `CString` leaked while it is set); null when there is none.
static TMP_PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// SIGINT, SIGTERM or SIGHUP while a temporary file is written: remove
/// it, then die of the signal as if it had not been caught.
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

const CLEANUP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// While alive, a signal that ends the process removes `tmp` first. The
/// handlers in place before (the host tests' stop flag) come back on drop.
struct TmpGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl TmpGuard {
    fn new(tmp: &Path) -> TmpGuard {
        let c = std::ffi::CString::new(tmp.as_os_str().as_encoded_bytes()).unwrap_or_default();
        TMP_PATH.store(c.into_raw(), Ordering::SeqCst);
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
        let p = TMP_PATH.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: the pointer came from `CString::into_raw` in `new`.
            drop(unsafe { std::ffi::CString::from_raw(p) });
        }
    }
}

fn replace_atomically(path: &Path, text: &[u8]) -> Result<(), String> {
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
    remove_stale_tmps(dir, &name.to_string_lossy());
    let _cleanup = TmpGuard::new(&tmp);
    if let Some(delay) = std::env::var_os("SMPSIM_TEST_SLOW_WRITE") {
        // Tests: hold the temporary file open long enough to be signalled.
        let ms = delay.to_string_lossy().parse().unwrap_or(0);
        std::fs::write(&tmp, "").map_err(|e| format!("{}: {e}", path.display()))?;
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    // An error names the path asked for, not the hidden temporary.
    std::fs::write(&tmp, text).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// Removes the `.NAME.tmpPID` files that processes no longer alive left
/// beside `NAME` (SIGKILL gives no chance to clean up). Best effort: what
/// cannot be removed is left.
fn remove_stale_tmps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.tmp");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(prefix.as_str()))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let dead = pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if dead && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// What a path names, to tell whether two paths are one file: the
/// device and inode of an existing file, else the absolute path.
#[derive(PartialEq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    if path.as_os_str() == "-" {
        return None; // stdout
    }
    match std::fs::metadata(path) {
        // Devices and FIFOs (`/dev/null`) may take several outputs.
        Ok(m) if !m.is_file() => None,
        Ok(m) => Some(Identity::Inode(m.dev(), m.ino())),
        Err(_) => {
            let target = follow_symlinks(path).ok()?;
            let dir = target
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let dir = std::fs::canonicalize(dir).ok()?;
            Some(Identity::Path(dir.join(target.file_name()?)))
        }
    }
}

/// Refuses an output that is one of the inputs (it would be replaced by
/// what is written) or that another output also names (one would be
/// lost). Each path comes with how the command line named it (`-o`,
/// `--trace`, "the scenario").
pub fn check_outputs(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<(), String> {
    for (i, (what, out)) in outputs.iter().enumerate() {
        let Some(id) = identity(out) else { continue };
        for (input, path) in inputs {
            if identity(path).as_ref() == Some(&id) {
                return Err(format!(
                    "error: {what} {} is {input} {}: writing there would replace it; give {what} another path",
                    out.display(),
                    path.display()
                ));
            }
        }
        for (other, path) in &outputs[..i] {
            if identity(path).as_ref() == Some(&id) {
                return Err(format!(
                    "error: {other} {} and {what} {} are the same file: one would be lost; give each its own path",
                    path.display(),
                    out.display()
                ));
            }
        }
    }
    Ok(())
}

/// The scenario file and the files it includes, as inputs for
/// [`check_outputs`].
pub fn scenario_inputs(s: &smpsim_scenario::Scenario) -> Vec<(&'static str, &Path)> {
    let mut v: Vec<(&'static str, &Path)> = vec![("the scenario", s.path.as_path())];
    v.extend(
        s.includes
            .iter()
            .map(|i| ("the included file", i.path.as_path())),
    );
    v
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

/// Refuses a `--seeds` beyond [`smpsim_scenario::limits::SEEDS`].
pub fn check_seeds(n: u64) -> Result<(), String> {
    let limit = smpsim_scenario::limits::SEEDS;
    let max = limit.get().map_err(|e| format!("error: {e}"))?;
    if n > max {
        return Err(format!(
            "error: --seeds {n}: too many seeds ({})",
            limit.explain(max)
        ));
    }
    Ok(())
}
