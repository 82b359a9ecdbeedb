//! Which files a scenario may read: its own directory tree (the directory
//! of the scenario file named on the command line, and below), and the
//! paths its user names with `--allow-path`. A scenario is often a file
//! from someone else (a patch author); an `include` or a machine `profile`
//! elsewhere (`/proc/self/environ`, `~/.ssh/...`) is refused before it is
//! opened, with an error that names the path and the option, and so no
//! error ever quotes a file the user did not ask for.
//!
//! Paths are checked by where they really are: `..` and symlinks (a link
//! inside the tree that points out of it) are resolved first, and the file
//! actually opened is checked again (through `/proc/self/fd`), so a link
//! swapped in between the check and the open does not get through either.

use std::path::{Component, Path, PathBuf};

use crate::error::ScenarioError;

/// The directories (and files) a scenario may read below.
#[derive(Clone, Debug)]
pub struct Access {
    /// The scenario's directory, resolved.
    home: PathBuf,
    /// `--allow-path` paths, resolved.
    allowed: Vec<PathBuf>,
}

/// Why a file was not read.
pub(crate) enum Refused {
    /// Outside the tree and the allowed paths: the message to give.
    Outside(String),
    /// Inside, but unreadable (missing, too big, not UTF-8, ...).
    Unreadable(ScenarioError),
}

impl Access {
    /// The tree of `scenario`'s directory, and the `allowed` paths (files
    /// or directories: each allows itself and what is below it).
    pub fn new(scenario: &Path, allowed: &[PathBuf]) -> Access {
        let dir = scenario
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Access {
            home: resolve(dir),
            allowed: allowed.iter().map(|p| resolve(p)).collect(),
        }
    }

    fn permits(&self, real: &Path) -> bool {
        real.starts_with(&self.home) || self.allowed.iter().any(|a| real.starts_with(a))
    }

    /// Why `real` (the resolved form of `path`) may not be read.
    fn outside(&self, path: &Path, real: &Path, what: &str) -> String {
        let shown = if real == path {
            format!("`{}`", path.display())
        } else {
            format!("`{}` (really `{}`)", path.display(), real.display())
        };
        // The directory as the scenario names it (`/proc/self`, not the
        // `/proc/PID` it resolves to).
        let named = lexical(path);
        let allow = named.parent().unwrap_or(&named);
        format!(
            "the {what} {shown} is outside the scenario's directory `{}`: a scenario reads only files in its own directory tree and under the paths given with --allow-path; if this file is meant to be read, run with --allow-path {}",
            self.home.display(),
            allow.display()
        )
    }

    /// Reads `path` (`what`: "included file", "machine profile") if the
    /// scenario may read it.
    pub(crate) fn read(&self, path: &Path, what: &str) -> Result<String, Refused> {
        let real = resolve(path);
        if !self.permits(&real) {
            return Err(Refused::Outside(self.outside(path, &real, what)));
        }
        let mut outside = None;
        let text = crate::limits::read_text_checked(path, what, |file| {
            // What was opened, wherever the path led by then.
            let Some(opened) = opened_path(file) else {
                return true;
            };
            if self.permits(&opened) {
                return true;
            }
            outside = Some(self.outside(path, &opened, what));
            false
        });
        match (text, outside) {
            (_, Some(m)) => Err(Refused::Outside(m)),
            (Ok(t), None) => Ok(t),
            (Err(e), None) => Err(Refused::Unreadable(e)),
        }
    }
}

/// The path of an open file, as the kernel knows it; `None` without
/// `/proc` (the check before the open stands alone then).
fn opened_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// `path` made absolute, `.` and `..` taken away by name (no link
/// resolved).
fn lexical(path: &Path) -> PathBuf {
    let mut out = absolute(path);
    let components: Vec<_> = out.components().map(|c| c.as_os_str().to_owned()).collect();
    out = PathBuf::new();
    for c in components {
        match c.to_str() {
            Some(".") => {}
            Some("..") => {
                out.pop();
            }
            _ => out.push(c),
        }
    }
    out
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    }
}

/// `path` made absolute with `..` and every symlink resolved; the part
/// that does not exist yet (a missing file) is resolved by its names.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = absolute(path);
    // The longest part that exists, resolved by the kernel...
    let mut existing = absolute.as_path();
    let real = loop {
        if let Ok(r) = std::fs::canonicalize(existing) {
            break r;
        }
        match existing.parent() {
            Some(p) => existing = p,
            None => break PathBuf::from("/"),
        }
    };
    // ...and the rest by its names.
    let rest = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
    let mut out = real;
    for c in rest.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_links_are_resolved() {
        let d = std::env::temp_dir().join(format!("smpsim-access-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("scn/lib")).unwrap();
        std::os::unix::fs::symlink("/etc", d.join("scn/lib/out")).unwrap();
        let a = Access::new(&d.join("scn/s.toml"), &[]);
        let ok = |p: &str| a.permits(&resolve(&d.join("scn").join(p)));
        assert!(ok("lib/x.toml"));
        assert!(ok("lib/missing/../x.toml"));
        assert!(!ok("../x.toml"));
        assert!(!ok("lib/out/passwd"));
        assert!(!ok("lib/../../scn2/x.toml"));
        assert!(!a.permits(&resolve(Path::new("/proc/self/environ"))));
        let a = Access::new(&d.join("scn/s.toml"), &[PathBuf::from("/etc")]);
        assert!(a.permits(&resolve(&d.join("scn/lib/out/passwd"))));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
