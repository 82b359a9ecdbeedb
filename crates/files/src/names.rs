//! The names of temporaries: `.NAME.PID.XXXXXX.tmp` beside an output,
//! `PREFIX PID.XXXXXX` for a private directory (`XXXXXX` random). The PID
//! lets the next run tell a dead process's leftovers from a live one's.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// The file name bytes a temporary keeps of its target's name: with the
/// rest of it, the temporary's name stays within `NAME_MAX` (255).
const NAME_KEPT: usize = 200;

/// The temporary's name before its random part: `.NAME.PID.`.
pub(crate) fn temp_prefix(name: &OsStr, pid: u32) -> OsString {
    let kept = &name.as_bytes()[..name.len().min(NAME_KEPT)];
    let mut p = OsString::from(".");
    p.push(OsStr::from_bytes(kept));
    p.push(format!(".{pid}."));
    p
}

pub(crate) const TEMP_SUFFIX: &str = ".tmp";

/// The random part's length and alphabet, as `tempfile` makes it.
pub(crate) const RAND_LEN: usize = 6;

/// The PID in `name` when it is `PREFIX PID . RANDOM SUFFIX`.
pub(crate) fn pid_in(name: &[u8], prefix: &[u8], suffix: &[u8]) -> Option<libc::pid_t> {
    let rest = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    let dot = rest.iter().position(|&b| b == b'.')?;
    let (pid, rand) = (&rest[..dot], &rest[dot + 1..]);
    let rand_ok = rand.len() == RAND_LEN && rand.iter().all(u8::is_ascii_alphanumeric);
    let pid_ok = !pid.is_empty() && pid.iter().all(u8::is_ascii_digit);
    if !(rand_ok && pid_ok) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_parsed_strictly() {
        let p = |n: &str| pid_in(n.as_bytes(), b".r.json.", b".tmp");
        assert_eq!(p(".r.json.123.aB3xYz.tmp"), Some(123));
        assert_eq!(p(".r.json.123.aB3xY.tmp"), None);
        assert_eq!(p(".r.json.x.aB3xYz.tmp"), None);
        assert_eq!(p(".r.json.1.2.aB3xYz.tmp"), None);
        assert_eq!(p(".r.json.123.aB3xYz"), None);
        assert_eq!(
            pid_in(b"smpsim-compare-77.abcdef", b"smpsim-compare-", b""),
            Some(77)
        );
    }
}
