//! Bounds on what a scenario may ask for, so that no input reads, holds
//! or compiles without end. Each bound that a real workload might reach is
//! an environment variable, named in the error that refuses it.

use std::io::Read;
use std::path::Path;

use crate::error::{Location, ScenarioError};

/// A bound and the variable that raises it.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    pub var: &'static str,
    pub default: u64,
}

/// Bytes of one scenario or included file (a shipped one is under 12 KB).
pub const SCENARIO_BYTES: Limit = Limit {
    var: "SMPSIM_MAX_SCENARIO_BYTES",
    default: 4 << 20,
};
/// `[functions]` entries, included ones counted.
pub const FUNCTIONS: Limit = Limit {
    var: "SMPSIM_MAX_FUNCTIONS",
    default: 10_000,
};
/// Bytes of one `code` string, before it is parsed.
pub const CODE_BYTES: Limit = Limit {
    var: "SMPSIM_MAX_CODE_BYTES",
    default: 1 << 20,
};
/// Seeds of `run --seeds` and `sweep --seeds` (each held as a compiled
/// run until it is simulated).
pub const SEEDS: Limit = Limit {
    var: "SMPSIM_MAX_SEEDS",
    default: 100_000,
};
/// Schedules of `run --explore` (each registered before it runs).
pub const SCHEDULES: Limit = Limit {
    var: "SMPSIM_MAX_SCHEDULES",
    default: 100_000,
};
/// Points of one sweep (variants x CPU counts x settings x seeds).
pub const SWEEP_POINTS: Limit = Limit {
    var: "SMPSIM_MAX_SWEEP_POINTS",
    default: 1_000_000,
};
/// Files one scenario includes (included files include nothing).
pub const MAX_INCLUDES: usize = 64;

impl Limit {
    /// The bound in force: the variable's value if set, else the default.
    /// A value that is not a number is an error, not silently ignored.
    pub fn get(&self) -> Result<u64, String> {
        match std::env::var(self.var) {
            Err(_) => Ok(self.default),
            Ok(v) => v.trim().parse::<u64>().map_err(|_| {
                format!(
                    "{}={v:?} is not a number (the default is {})",
                    self.var, self.default
                )
            }),
        }
    }

    /// "(at most N; raise it with VAR=...)", for an error message.
    pub fn explain(&self, max: u64) -> String {
        format!("at most {max}; set {}=N to raise it", self.var)
    }
}

/// Reads a scenario or included file as text: it must be a regular file
/// no larger than [`SCENARIO_BYTES`], in UTF-8. `what` names it
/// ("scenario", "included file"). Never reads more than the bound. The
/// file read is noted as an input of the run, which no output may replace.
pub fn read_text(path: &Path, what: &str) -> Result<String, ScenarioError> {
    read_text_checked(path, what, |_| true)
}

/// [`read_text`], reading only if `allowed` accepts the file once it is
/// open (and before a byte of it is read).
pub(crate) fn read_text_checked(
    path: &Path,
    what: &str,
    allowed: impl FnOnce(&std::fs::File) -> bool,
) -> Result<String, ScenarioError> {
    use std::os::unix::fs::OpenOptionsExt;
    let err = |m: String| ScenarioError::file(path, m);
    let max = SCENARIO_BYTES.get().map_err(err)?;
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read {what}: {e}")))?;
    if !meta.is_file() {
        let kind = file_kind(&meta);
        return Err(err(format!(
            "cannot read {what}: it is {kind}, not a regular file"
        )));
    }
    if meta.len() > max {
        return Err(err(format!(
            "the {what} is {} bytes, more than a scenario may be ({})",
            meta.len(),
            SCENARIO_BYTES.explain(max)
        )));
    }
    // Without blocking, should a FIFO have been swapped in since the check.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| err(format!("cannot read {what}: {e}")))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(err(format!("cannot read {what}: not a regular file")));
    }
    if !allowed(&file) {
        return Err(err(format!("not read: the {what} is not allowed")));
    }
    smpsim_files::note_input(&file, path, &format!("the {what}"));
    let mut bytes = Vec::new();
    // The file may grow after the check: read one byte past the bound.
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read {what}: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(err(format!(
            "the {what} is more than {max} bytes, more than a scenario may be ({})",
            SCENARIO_BYTES.explain(max)
        )));
    }
    String::from_utf8(bytes).map_err(|e| not_utf8(path, e))
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Invalid UTF-8, located at its line, column and byte offset.
fn not_utf8(path: &Path, e: std::string::FromUtf8Error) -> ScenarioError {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.as_bytes();
    let good = std::str::from_utf8(&bytes[..at]).expect("valid prefix");
    let line_start = good.rfind('\n').map_or(0, |i| i + 1);
    let line = good.matches('\n').count() + 1;
    let column = good[line_start..].chars().count() + 1;
    let line_end = bytes[line_start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| line_start + i);
    let line_text = String::from_utf8_lossy(&bytes[line_start..line_end])
        .trim_end_matches('\r')
        .to_string();
    ScenarioError {
        message: format!(
            "invalid UTF-8 at byte offset {at} (byte 0x{:02x}); a scenario is UTF-8 text",
            bytes[at]
        ),
        location: Location::Text {
            name: path.display().to_string(),
            line,
            column,
            line_text,
            width: 1,
        },
        help: None,
    }
}
