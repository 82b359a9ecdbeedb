//! How smpsim creates files: every result, trace, plot, page, profile and
//! temporary file of the workspace is made here, so that one set of rules
//! holds for all of them.
//!
//! - A result is written atomically ([`write_output`]): into a temporary
//!   file with a random name beside it, created with `O_CREAT|O_EXCL` (an
//!   existing name, a planted symlink included, is never opened), then
//!   renamed over the path. A failed or interrupted write leaves the old
//!   file, or none, and no temporary ([`atomic`]).
//! - A symbolic link at the output path is refused: smpsim never writes
//!   into a link's target, since a link planted in a shared directory could
//!   point at any file. The one exception is a link to a descriptor this
//!   process already holds open for writing (`/dev/stdout`, `/dev/fd/N` of
//!   a shell's `>(...)`): that descriptor is written, nothing is opened
//!   (`streams`).
//! - No output replaces a file the run read as an input (the scenario, an
//!   included file, a machine profile), whatever path names it ([`inputs`]).
//! - Files appended to in place (a sweep's results) and private temporary
//!   directories are opened here too, never through a link ([`open`]).
//!
//! The kernel's interfaces (sysfs, cgroupfs, tracefs) that the host tests
//! write are not output files and are not written here.

pub mod atomic;
pub mod inputs;
mod names;
pub mod open;
mod stale;
mod streams;

use std::path::Path;

pub use inputs::note_input;
pub use open::{open_append, open_existing, private_dir};

/// Writes `bytes` as the output file `path` (see the crate docs for the
/// rules). Errors name `path`, never a temporary file.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write(path, bytes, true)
}

/// [`write_output`] for a command whose output *is* its input: `fmt
/// --write` rewriting the scenario it read.
pub fn rewrite_input(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write(path, bytes, false)
}

/// Whether `path` can take an output, checked before the work that makes
/// it (a long run, a calibration) rather than after: not a link (other
/// than to a descriptor this process holds), a directory or a disk. The
/// write checks again.
pub fn check_output(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() && streams::own_descriptor(path).is_none() => {
            Err(format!("{shown}: {LINK_REFUSED}"))
        }
        Ok(m) if m.is_dir() => Err(format!("{shown}: is a directory")),
        Ok(m) if m.file_type().is_block_device() => Err(format!("{shown}: {DISK_REFUSED}")),
        _ => Ok(()),
    }
}

/// Why a link at an output path is refused.
pub(crate) const LINK_REFUSED: &str = "is a symbolic link; smpsim does not write through a link at an output path (one planted there could point at any file): name the file itself, or remove the link";

const DISK_REFUSED: &str = "is a block device; smpsim writes results to files, pipes and character devices, never onto a disk";

fn write(path: &Path, bytes: &[u8], refuse_inputs: bool) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match streams::own_descriptor(path) {
            Some(fd) => streams::write_to(fd, bytes).map_err(|e| format!("{shown}: {e}")),
            None => Err(format!("{shown}: {LINK_REFUSED}")),
        },
        Ok(m) if m.is_dir() => Err(format!("{shown}: is a directory")),
        Ok(m) if m.file_type().is_block_device() => Err(format!("{shown}: {DISK_REFUSED}")),
        Ok(m) if !m.is_file() => streams::write_through(path, bytes, refuse_inputs),
        _ => {
            if refuse_inputs {
                inputs::refuse_input(path)?;
            }
            atomic::replace(path, bytes)
        }
    }
}

/// An I/O error's text without the path `tempfile` adds to it (`... at
/// path "..."`: the temporary's name, which means nothing to the user).
pub(crate) fn without_path(e: &std::io::Error) -> String {
    if let Some(code) = e.raw_os_error() {
        return std::io::Error::from_raw_os_error(code).to_string();
    }
    let text = e.to_string();
    match text.find(" at path ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_link_at_the_output_is_refused_and_its_target_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = write_output(&link, b"result").unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert!(check_output(&link).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_link_to_a_descriptor_of_this_process_is_written() {
        let mut fds = [0; 2];
        // SAFETY: pipe() fills two descriptors, owned by the Files below.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (mut reader, writer) = unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("fd");
        std::os::unix::fs::symlink(format!("/proc/self/fd/{}", fds[1]), &link).unwrap();
        check_output(&link).unwrap();
        write_output(&link, b"through the pipe").unwrap();
        drop(writer);
        let mut got = String::new();
        reader.read_to_string(&mut got).unwrap();
        assert_eq!(got, "through the pipe");
    }

    #[test]
    fn a_character_device_is_written_through() {
        write_output(Path::new("/dev/null"), b"x").unwrap();
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }
}
