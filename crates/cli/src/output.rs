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
