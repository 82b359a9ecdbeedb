//! Files written in place rather than replaced (a sweep's results grow
//! point by point, and a torn last line is cut off), and private temporary
//! directories. Never through a link, never a FIFO or device (whose open
//! could block or act), never an input of the run.

use std::fs::File;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The flags every in-place open adds: no link followed at the final
/// path, no blocking on a FIFO, no controlling terminal acquired.
const FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;

fn checked(path: &Path, opened: std::io::Result<File>) -> Result<File, String> {
    let shown = path.display();
    let f = opened.map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => format!("{shown}: {}", crate::LINK_REFUSED),
        // O_NONBLOCK on a FIFO nobody reads.
        Some(libc::ENXIO) => format!("{shown}: is a FIFO or a socket, not a regular file"),
        _ => format!("{shown}: {e}"),
    })?;
    let meta = f.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{shown}: is not a regular file (a results file is appended to, point by point)"
        ));
    }
    crate::inputs::refuse_input_meta(path, &meta)?;
    Ok(f)
}

/// Opens `path` for appending (and reading), creating it if it is not
/// there: a regular file only, not through a link.
pub fn open_append(path: &Path) -> Result<File, String> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o666)
        .custom_flags(FLAGS)
        .open(path);
    checked(path, opened)
}

/// Opens the existing regular file `path` for writing in place (to cut
/// it short), not through a link.
pub fn open_existing(path: &Path) -> Result<File, String> {
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(FLAGS)
        .open(path);
    checked(path, opened)
}

/// A new directory only this user can enter, `PREFIX PID.XXXXXX` in the
/// temporary directory (`TMPDIR`), removed when the value drops. Those a
/// killed process left are removed first.
pub fn private_dir(prefix: &str) -> Result<tempfile::TempDir, String> {
    let tmp = std::env::temp_dir();
    crate::stale::remove_dirs(&tmp, prefix);
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}.", std::process::id()))
        .rand_bytes(6)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&tmp)
        .map_err(|e| {
            format!(
                "{}: cannot create a private directory: {}",
                tmp.display(),
                crate::without_path(&e)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_refuses_a_link_and_leaves_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("r.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = open_append(&link).unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
        let e = open_existing(&link).unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn appending_refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(open_append(&fifo).is_err());
    }

    #[test]
    fn a_private_dir_is_private() {
        let d = private_dir("smpsim-files-test-").unwrap();
        let mode = std::fs::metadata(d.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
