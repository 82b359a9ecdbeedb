//! Outputs that are streams, not files to replace: a FIFO or a character
//! device named as such (`-o /dev/null`), and a link to a descriptor this
//! process holds (`-o /dev/stdout`, `-o >(gzip > r.gz)`).

use std::io::Write;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The descriptor of this process, open for writing, that `path` (a
/// symlink) leads to, if any. The link is followed by the kernel
/// (`stat`), so `fs.protected_symlinks` applies; nothing is opened.
pub(crate) fn own_descriptor(path: &Path) -> Option<RawFd> {
    let target = std::fs::metadata(path).ok()?;
    let fds: Vec<RawFd> = match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => vec![1, 2],
    };
    fds.into_iter().find(|&fd| {
        // SAFETY: fstat and fcntl on a descriptor number only read its
        // state; one closed since the listing fails harmlessly.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 {
                return false;
            }
            let flags = libc::fcntl(fd, libc::F_GETFL);
            let writable = flags >= 0 && (flags & libc::O_ACCMODE) != libc::O_RDONLY;
            writable && st.st_dev as u64 == target.dev() && st.st_ino as u64 == target.ino()
        }
    })
}

/// Writes `bytes` to the descriptor `fd`, which stays open.
pub(crate) fn write_to(fd: RawFd, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: `fd` is open (found by `own_descriptor`); ManuallyDrop keeps
    // this `File` from closing it.
    let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    match (&*f).write_all(bytes) {
        // A reader that went away (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Writes into the FIFO or character device `path`, opened without
/// following a link; if a regular file was swapped in meanwhile, it is
/// replaced atomically instead.
pub(crate) fn write_through(path: &Path, bytes: &[u8], refuse_inputs: bool) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
        .map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    let t = meta.file_type();
    if t.is_file() {
        drop(f); // opened without O_TRUNC: nothing was changed
        if refuse_inputs {
            crate::inputs::refuse_input_meta(path, &meta)?;
        }
        return crate::atomic::replace(path, bytes);
    }
    if t.is_block_device() || t.is_dir() {
        return Err(format!(
            "{}: is not a file, a pipe or a character device",
            path.display()
        ));
    }
    f.write_all(bytes).map_err(err)
}
