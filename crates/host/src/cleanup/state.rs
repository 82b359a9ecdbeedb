//! The state record: what this run has changed on the host, on disk, so
//! that a run killed outright (SIGKILL) can be restored by the next one.
//!
//! One file per process, `PID.state`, in a private directory: `/run/smpsim`
//! as root (a tmpfs: a reboot clears the record along with the changes it
//! lists), else `$XDG_RUNTIME_DIR/smpsim`, else `TMPDIR/smpsim-UID`. The
//! directory must be ours, a real directory (not a link) and closed to
//! everyone else (mode 0700); anything else is refused, and so is every
//! change that would need a record. The file is created with
//! `O_EXCL|O_NOFOLLOW`, mode 0600, and holds an exclusive `flock` for the
//! life of the process: the kernel drops it when the process dies, however
//! it dies, so "the lock is free" is "its run is dead" (no PID reuse race).
//!
//! Lines: a header, then `+ STEP` before each change and `- STEP` once it
//! is undone ([`Undo`]'s lines). When nothing is outstanding the file goes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{cpu_online_file, leftovers, mounts, no_links, Undo};

const HEADER: &str = "smpsim host state record 1";

/// This process's record while it lists anything.
struct Record {
    file: File,
    path: PathBuf,
    open: Vec<Undo>,
}

static RECORD: Mutex<Option<Record>> = Mutex::new(None);

/// Where the records live for this user.
pub fn state_dir() -> PathBuf {
    // SAFETY: no arguments.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return PathBuf::from("/run/smpsim");
    }
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() => d.join("smpsim"),
        _ => std::env::temp_dir().join(format!("smpsim-{uid}")),
    }
}

/// Creates `dir` (mode 0700) if missing, then checks it is a directory,
/// not a link, owned by us and closed to group and others.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("state directory {}: {e}", dir.display())),
    }
    check_private_dir(dir)
}

fn check_private_dir(dir: &Path) -> Result<(), String> {
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("state directory {}: {e}", dir.display()))?;
    // SAFETY: no arguments.
    let uid = unsafe { libc::geteuid() };
    let why = if m.file_type().is_symlink() {
        "is a symbolic link"
    } else if !m.is_dir() {
        "is not a directory"
    } else if m.uid() != uid {
        "is not owned by us"
    } else if m.mode() & 0o077 != 0 {
        "is open to other users (mode is not 0700)"
    } else {
        return Ok(());
    };
    Err(format!(
        "state directory {} {why}: refusing to keep the record of host changes there; remove it (or fix it) and run again",
        dir.display()
    ))
}

/// Writes `u` to this process's record, creating it on first use.
pub fn record(u: &Undo) -> Result<(), String> {
    record_in(&state_dir(), u)
}

fn record_in(dir: &Path, u: &Undo) -> Result<(), String> {
    let mut slot = RECORD.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        *slot = Some(create(dir)?);
    }
    let rec = slot.as_mut().expect("created above");
    rec.file
        .write_all(format!("+ {u}\n").as_bytes())
        .map_err(|e| format!("state record {}: {e}", rec.path.display()))?;
    rec.open.push(u.clone());
    Ok(())
}

fn create(dir: &Path) -> Result<Record, String> {
    private_dir(dir)?;
    let path = dir.join(format!("{}.state", std::process::id()));
    let mut file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| match e.kind() {
            // A dead run with our PID whose record could not be restored.
            std::io::ErrorKind::AlreadyExists => format!(
                "state record {} already exists (an earlier run with this PID left changes that could not be restored: see the `not restored:` lines above); refusing to change the host until it is dealt with",
                path.display()
            ),
            _ => format!("state record {}: {e}", path.display()),
        })?;
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        let _ = std::fs::remove_file(&path);
        return Err(format!("state record {}: flock: {e}", path.display()));
    }
    writeln!(file, "{HEADER}\npid {}", std::process::id())
        .map_err(|e| format!("state record {}: {e}", path.display()))?;
    Ok(Record {
        file,
        path,
        open: Vec::new(),
    })
}

/// Marks `u` undone; removes the record once nothing is outstanding.
pub fn forget(u: &Undo) {
    let mut slot = RECORD.lock().unwrap_or_else(|p| p.into_inner());
    let Some(rec) = slot.as_mut() else { return };
    let Some(i) = rec.open.iter().position(|o| o == u) else {
        return;
    };
    rec.open.remove(i);
    let _ = rec.file.write_all(format!("- {u}\n").as_bytes());
    if rec.open.is_empty() {
        let _ = std::fs::remove_file(&rec.path);
        *slot = None; // closing the file drops the lock
    }
}

/// Restores the steps outstanding in the records of dead runs, newest
/// first, and removes each record whose steps were all restored.
pub fn restore_dead_runs() -> Vec<String> {
    let dir = state_dir();
    if !dir.exists() {
        return Vec::new();
    }
    if let Err(e) = check_private_dir(&dir) {
        return vec![format!("not restored: {e}")];
    }
    restore_in(&dir)
}

fn restore_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<_> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            n.strip_suffix(".state")
                .is_some_and(|p| p.parse::<u32>().is_ok())
        })
        .collect();
    names.sort();
    let mut lines = Vec::new();
    for name in names {
        restore_record(&dir.join(name), &mut lines);
    }
    lines
}

/// One record: taken only if its lock is free (its run is dead) and it is
/// a regular file of ours still linked in the directory.
fn restore_record(path: &Path, lines: &mut Vec<String>) {
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    else {
        return;
    };
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return; // its run is alive (or another run is restoring it)
    }
    // SAFETY: no arguments.
    let uid = unsafe { libc::geteuid() };
    // Checked after the lock: a record another run has just restored and
    // removed is unlinked (nlink 0) and must not be replayed.
    match file.metadata() {
        Ok(m) if m.is_file() && m.uid() == uid && m.nlink() > 0 => {}
        _ => return,
    }
    let Ok(text) = std::io::read_to_string(&file) else {
        return;
    };
    let Some((pid, steps)) = parse_record(&text) else {
        lines.push(format!(
            "not restored: {} is not a state record; remove it by hand",
            path.display()
        ));
        return;
    };
    let mut all = true;
    for u in steps.iter().rev() {
        match restore_step(u, pid) {
            Ok(Some(line)) => lines.push(line),
            Ok(None) => {}
            Err(line) => {
                all = false;
                lines.push(line);
            }
        }
    }
    if all {
        let _ = std::fs::remove_file(path);
    }
}

/// The record's PID and the steps it did not undo, in the order made.
fn parse_record(text: &str) -> Option<(u32, Vec<Undo>)> {
    let mut lines = text.lines();
    (lines.next()? == HEADER).then_some(())?;
    let pid = lines.next()?.strip_prefix("pid ")?.parse().ok()?;
    let mut open: Vec<Undo> = Vec::new();
    for line in lines {
        match line.split_at_checked(2) {
            Some(("+ ", s)) => open.extend(Undo::parse(s)),
            Some(("- ", s)) => {
                if let Some(i) = Undo::parse(s).and_then(|u| open.iter().rposition(|o| *o == u)) {
                    open.remove(i);
                }
            }
            _ => {} // a line cut short by a crash: the steps before it stand
        }
    }
    Some((pid, open))
}

/// Undoes one step a dead run left: Ok(Some(line)) when something was
/// restored, Ok(None) when there was nothing left to do, Err(line) when it
/// could not be (the record stays, for the next run to retry).
fn restore_step(u: &Undo, pid: u32) -> Result<Option<String>, String> {
    let failed = |what: String, e: &dyn std::fmt::Display| {
        Err(format!(
            "not restored: {what} (left by smpsim pid {pid}): {e}"
        ))
    };
    match u {
        Undo::OnlineCpu(cpu) => {
            let file = cpu_online_file(*cpu);
            match std::fs::read_to_string(&file) {
                Ok(s) if s.trim() == "0" => match std::fs::write(&file, "1") {
                    Ok(()) => Ok(Some(format!(
                        "restored: cpu{cpu} online (left offline by smpsim pid {pid})"
                    ))),
                    Err(e) => failed(format!("cpu{cpu} online"), &e),
                },
                _ => Ok(None),
            }
        }
        Undo::RemoveCgroup(dir) => {
            // Only a tree of ours under the cgroup mount, whatever the file says.
            let ours = dir.starts_with("/sys/fs/cgroup")
                && dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("smpsim_"));
            if !ours {
                return failed(format!("cgroup {}", dir.display()), &"not an smpsim cgroup");
            }
            if !dir.exists() {
                return Ok(None);
            }
            if leftovers::holds_tasks(dir) {
                return failed(
                    format!("cgroup {} removed", dir.display()),
                    &"it still holds tasks",
                );
            }
            match leftovers::remove_cgroup(dir) {
                Ok(()) => Ok(Some(format!(
                    "restored: cgroup {} removed (left by smpsim pid {pid})",
                    dir.display()
                ))),
                Err(e) => failed(format!("cgroup {} removed", dir.display()), &e),
            }
        }
        Undo::UmountTracefs { at, source } => {
            let Some(top) = mounts::top_mount_at(at) else {
                return Ok(None);
            };
            if top.fstype != "tracefs" || top.source != *source {
                // Ours is gone, or covered by someone else's: leave both.
                return Ok(None);
            }
            match mounts::umount(at) {
                Ok(()) => Ok(Some(format!(
                    "restored: tracefs unmounted from {} (mounted by smpsim pid {pid})",
                    at.display()
                ))),
                Err(e) => failed(format!("tracefs unmounted from {}", at.display()), &e),
            }
        }
        Undo::RemoveFile(p) => {
            // SAFETY: no arguments.
            let uid = unsafe { libc::geteuid() };
            let Ok(m) = std::fs::symlink_metadata(p) else {
                return Ok(None);
            };
            // A regular file of ours, reached without any link: never
            // remove something a link planted since points at.
            let parent_ok = p.parent().is_some_and(no_links);
            if !m.is_file() || m.uid() != uid || !parent_ok {
                return failed(
                    format!("temporary file {} removed", p.display()),
                    &"not a regular file of ours reached without links; left alone",
                );
            }
            match std::fs::remove_file(p) {
                Ok(()) => Ok(Some(format!(
                    "restored: temporary file {} removed (left by smpsim pid {pid})",
                    p.display()
                ))),
                Err(e) => failed(format!("temporary file {} removed", p.display()), &e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("smpsim-state-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_directory_is_made_private_and_a_planted_one_is_refused() {
        let base = scratch("dir");
        std::fs::create_dir_all(&base).unwrap();
        let ok = base.join("ok");
        private_dir(&ok).unwrap();
        let m = std::fs::symlink_metadata(&ok).unwrap();
        assert_eq!(m.mode() & 0o777, 0o700);

        // A link planted at the directory's name, even to a private
        // directory of ours, is refused and not followed.
        let link = base.join("link");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        let e = private_dir(&link).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");

        let open = base.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(private_dir(&open).unwrap_err().contains("mode"));

        let file = base.join("file");
        std::fs::write(&file, "").unwrap();
        assert!(private_dir(&file).unwrap_err().contains("not a directory"));

        if crate::sys::is_root() {
            let theirs = base.join("theirs");
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&theirs)
                .unwrap();
            // SAFETY: valid C string; nobody's uid.
            let c = std::ffi::CString::new(theirs.as_os_str().as_encoded_bytes()).unwrap();
            assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
            assert!(private_dir(&theirs)
                .unwrap_err()
                .contains("not owned by us"));
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_record_is_written_before_and_removed_when_all_is_undone() {
        let dir = scratch("rec");
        let a = Undo::RemoveFile(dir.join("a"));
        let b = Undo::OnlineCpu(7);
        record_in(&dir, &a).unwrap();
        record_in(&dir, &b).unwrap();
        let path = dir.join(format!("{}.state", std::process::id()));
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600);
        let (pid, open) = parse_record(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            (pid, open),
            (std::process::id(), vec![a.clone(), b.clone()])
        );
        // Held by a live run: another restorer leaves it alone.
        let mut lines = Vec::new();
        restore_record(&path, &mut lines);
        assert!(lines.is_empty() && path.exists(), "{lines:?}");
        forget(&b);
        let (_, open) = parse_record(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(open, vec![a.clone()]);
        forget(&a);
        assert!(!path.exists(), "an empty record is removed");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_planted_record_name_is_refused_not_followed() {
        let dir = scratch("plant");
        private_dir(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let path = dir.join(format!("{}.state", std::process::id()));
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        assert!(create(&dir).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_dead_runs_record_is_replayed_and_removed() {
        let dir = scratch("dead");
        private_dir(&dir).unwrap();
        let tmp = dir.join("profile.toml");
        std::fs::write(&tmp, "x").unwrap();
        let done = dir.join("done.toml");
        let text = format!(
            "{HEADER}\npid 4242\n+ temp {}\n+ temp {}\n- temp {}\n+ cpu-offl",
            tmp.display(),
            done.display(),
            done.display()
        );
        std::fs::write(dir.join("4242.state"), text).unwrap();
        let lines = restore_in(&dir);
        assert_eq!(
            lines,
            vec![format!(
                "restored: temporary file {} removed (left by smpsim pid 4242)",
                tmp.display()
            )]
        );
        assert!(!tmp.exists() && !dir.join("4242.state").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_temporary_file_behind_a_link_is_left_alone() {
        let dir = scratch("link");
        private_dir(&dir).unwrap();
        let real = dir.join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(&real, dir.join("via")).unwrap();
        // The record names via/victim: a link in the path, so it is refused.
        let r = restore_step(&Undo::RemoveFile(dir.join("via/victim")), 9);
        assert!(r.is_err(), "{r:?}");
        assert!(real.join("victim").exists());
        // A link at the name itself is not a regular file: left too.
        std::os::unix::fs::symlink(real.join("victim"), dir.join("l")).unwrap();
        assert!(restore_step(&Undo::RemoveFile(dir.join("l")), 9).is_err());
        assert!(real.join("victim").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
