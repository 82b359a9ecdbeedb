//! Writing results: to stdout (no path, or `-`), or to a file through
//! [`smpsim_files::write_output`], the workspace's one writer: atomic (a
//! failed or interrupted run leaves no half-written result), never through
//! a symlink at the output path (refused, unless it leads to a descriptor
//! this process holds, as `/dev/stdout` does), never over an input of the
//! run; a character device or FIFO (`/dev/null`, a named pipe) is written
//! through, never replaced.

use std::io::Write;
use std::path::{Path, PathBuf};

pub fn emit(text: &str, output: Option<&Path>) -> Result<(), String> {
    emit_bytes(text.as_bytes(), output)
}

/// [`emit`] for bytes that need not be text (a PNG).
pub fn emit_bytes(text: &[u8], output: Option<&Path>) -> Result<(), String> {
    match output {
        None => to_stdout(text),
        Some(path) if path.as_os_str() == "-" => to_stdout(text),
        Some(path) => smpsim_files::write_output(path, text),
    }
}

pub use smpsim_files::open_append;

/// A closed pipe (`smpsim ... | head`) is not an error: stop quietly.
fn to_stdout(text: &[u8]) -> Result<(), String> {
    match std::io::stdout().lock().write_all(text) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| format!("stdout: {e}")),
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
            // Nothing there yet (or a dangling link, which the writer
            // refuses): its directory, resolved, and its name.
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let dir = std::fs::canonicalize(dir).ok()?;
            Some(Identity::Path(dir.join(path.file_name()?)))
        }
    }
}

/// Refuses an output that is one of the inputs (it would be replaced by
/// what is written) or that another output also names (one would be
/// lost). Each path comes with how the command line named it (`-o`,
/// `--trace`, "the scenario").
pub fn check_outputs(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<(), String> {
    for (what, out) in outputs {
        if out.as_os_str() != "-" {
            smpsim_files::check_output(out).map_err(|e| format!("error: {what} {e}"))?;
        }
    }
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

/// The scenario file, the files it includes and the machine profiles it
/// names, as inputs for [`check_outputs`]. (A profile named only by a
/// `--set` is caught when the output is written: the writer refuses any
/// file the run read.)
pub fn scenario_inputs(s: &smpsim_scenario::Scenario) -> Vec<(&'static str, &Path)> {
    let mut v: Vec<(&'static str, &Path)> = vec![("the scenario", s.path.as_path())];
    v.extend(
        s.includes
            .iter()
            .map(|i| ("the included file", i.path.as_path())),
    );
    v.extend(
        s.profiles
            .iter()
            .map(|p| ("the machine profile", p.as_path())),
    );
    v
}

/// Checks the `--allow-path` paths (each must exist) and returns them
/// resolved, for [`smpsim_scenario::load_allowing`].
pub fn allow_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    paths
        .iter()
        .map(|p| {
            std::fs::canonicalize(p)
                .map_err(|e| format!("error: --allow-path {}: {e}", p.display()))
        })
        .collect()
}

/// Loads a scenario that may also read under the `--allow-path` paths.
pub fn load_scenario(path: &Path, allow: &[PathBuf]) -> Result<smpsim_scenario::Scenario, String> {
    let allow = allow_paths(allow)?;
    smpsim_scenario::load_allowing(path, &allow).map_err(|e| e.to_string())
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
