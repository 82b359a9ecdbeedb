//! The mounts a test makes, found again by their source name.
//!
//! `mutex-readers` mounts tracefs with the source `smpsim-mutex-readers-PID`
//! (tracefs ignores the source; `/proc/self/mountinfo` shows it), so a
//! later run can tell a mount a killed run left from one the system made,
//! with or without a state record.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// The source name a run of `test` mounts with.
pub fn source_name(test: &str) -> String {
    format!("smpsim-{test}-{}", std::process::id())
}

/// The PID in a source name `smpsim-TEST-PID`, if it is one of ours.
pub fn source_pid(source: &str) -> Option<i32> {
    let (head, pid) = source.strip_prefix("smpsim-")?.rsplit_once('-')?;
    (!head.is_empty()).then_some(())?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub at: PathBuf,
    pub fstype: String,
    pub source: String,
}

/// The mount table, in mount order (a later mount on the same point
/// covers an earlier one).
pub fn mounts() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let at = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let (fstype, source) = (r.next()?, r.next()?);
            Some(Mount {
                at: PathBuf::from(unescape(at)),
                fstype: unescape(fstype),
                source: unescape(source),
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount on top at `at`, if anything is mounted there.
pub fn top_mount_at(at: &Path) -> Option<Mount> {
    mounts().into_iter().rev().find(|m| m.at == at)
}

/// Mounts tracefs at `at` under the source name `source`.
pub fn mount_tracefs(at: &Path, source: &str) -> std::io::Result<()> {
    let target = cstr(at)?;
    let source = CString::new(source).map_err(std::io::Error::other)?;
    // SAFETY: valid C strings; no data argument.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Unmounts `at`; when a file is still open on it (EBUSY), detaches it
/// (MNT_DETACH: gone from the tree now, freed when the last file closes).
pub fn umount(at: &Path) -> std::io::Result<()> {
    let c = cstr(at)?;
    // SAFETY: valid C string.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EBUSY) {
        return Err(e);
    }
    // SAFETY: as above.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    Err(std::io::Error::last_os_error())
}

fn cstr(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes()).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_point_type_and_source() {
        let text =
            "42 23 0:13 / /sys/kernel/tracing rw,relatime - tracefs smpsim-mutex-readers-77 rw\n\
                    36 25 0:31 / /sys/fs/cgroup/cpu rw,relatime shared:12 - cgroup cgroup rw,cpu\n\
                    50 23 0:40 / /mnt/a\\040b rw - tmpfs none rw\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].at, Path::new("/sys/kernel/tracing"));
        assert_eq!(
            (m[0].fstype.as_str(), m[0].source.as_str()),
            ("tracefs", "smpsim-mutex-readers-77")
        );
        assert_eq!(m[1].fstype, "cgroup");
        assert_eq!(m[2].at, Path::new("/mnt/a b"));
    }

    #[test]
    fn only_our_source_names_give_a_pid() {
        assert_eq!(source_pid("smpsim-mutex-readers-77"), Some(77));
        assert_eq!(source_pid("nodev"), None);
        assert_eq!(source_pid("tracefs"), None);
        assert_eq!(source_pid("smpsim-x-0"), None);
        assert_eq!(source_pid("smpsim--5"), None);
        assert_eq!(
            source_pid(&source_name("mutex-readers")),
            Some(std::process::id() as i32)
        );
    }
}
