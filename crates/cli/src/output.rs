//! Writing results: to stdout, or to a file atomically (a temporary file
//! renamed into place), so a failed run never leaves a half-written result.

use std::io::Write;
use std::path::Path;

pub fn emit(text: &str, output: Option<&Path>) -> Result<(), String> {
    match output {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .map_err(|e| format!("stdout: {e}"))
        }
        Some(path) => {
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
            std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
            std::fs::rename(&tmp, path).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("{}: {e}", path.display())
            })
        }
    }
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
