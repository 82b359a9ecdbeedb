//! The files this process read as inputs of its run, so that no output
//! replaces one of them, whichever path names it.
//!
//! The scenario crate notes each file it reads (the scenario, its included
//! files, a machine profile) by device and inode, taken from the open file.
//! The commands check their outputs against the inputs they know before
//! they run; this is the check at the moment of writing, which also holds
//! for an input only read while compiling (`--set machine.profile=...`).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One input: what it is ("the scenario", "the machine profile") and the
/// path it was read by.
struct Input {
    what: String,
    path: PathBuf,
}

/// Inputs by (device, inode).
static INPUTS: Mutex<BTreeMap<(u64, u64), Input>> = Mutex::new(BTreeMap::new());

/// Notes that `file`, opened as `path`, is an input of this run (`what`:
/// "the scenario", "the included file", "the machine profile").
pub fn note_input(file: &std::fs::File, path: &Path, what: &str) {
    let Ok(m) = file.metadata() else { return };
    let mut inputs = INPUTS.lock().unwrap_or_else(|p| p.into_inner());
    inputs.entry((m.dev(), m.ino())).or_insert_with(|| Input {
        what: what.to_string(),
        path: path.to_path_buf(),
    });
}

/// The input `meta` is, if it is one: what it is and its path.
pub fn input_of(meta: &std::fs::Metadata) -> Option<(String, PathBuf)> {
    let inputs = INPUTS.lock().unwrap_or_else(|p| p.into_inner());
    inputs
        .get(&(meta.dev(), meta.ino()))
        .map(|i| (i.what.clone(), i.path.clone()))
}

/// Refuses to write `path` when the file there is an input of this run.
pub(crate) fn refuse_input(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(()); // nothing there yet: not an input
    };
    refuse_input_meta(path, &meta)
}

pub(crate) fn refuse_input_meta(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    match input_of(meta) {
        Some((what, input)) => Err(format!(
            "{}: is {what} {} of this run; writing there would replace it: give the output another path",
            path.display(),
            input.display()
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noted_input_is_found_by_another_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("prof.toml");
        std::fs::write(&p, "x").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        note_input(&f, &p, "the machine profile");
        let other = dir.path().join(".").join("prof.toml");
        let e = refuse_input(&other).unwrap_err();
        assert!(e.contains("is the machine profile"), "{e}");
        assert!(refuse_input(&dir.path().join("new.toml")).is_ok());
    }
}
