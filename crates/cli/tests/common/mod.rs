//! Helpers shared by the CLI's integration tests (`mod common;` in each).

#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `smpsim` binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_smpsim"))
}

/// A command running the `smpsim` binary under test.
pub fn smpsim() -> Command {
    Command::new(bin())
}

/// A path in the repository (scenarios, docs, test data).
pub fn repo(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(path)
}

/// A fresh, empty directory for one test.
pub fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("smpsim-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A scenario header: one CPU, 1 ms, generic-x86.
pub const HEADER: &str = "[scenario]\nname = \"c\"\nduration = \"1ms\"\n[machine]\npreset = \"generic-x86\"\n[machine.topology]\ncores_per_llc = 1\n";

/// One task doing 1 µs of work.
pub const TASK: &str = "[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''work(1us);'''\n";

/// Writes `HEADER` + `rest` as `name` in `d`.
pub fn scenario(d: &Path, name: &str, rest: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, format!("{HEADER}{rest}")).unwrap();
    p
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2 with `want` in the error text.
pub fn refused(o: &Output, want: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains(want), "expected `{want}` in:\n{e}");
}

/// Runs the shipped scenario `path` for `duration` after `warmup` and
/// returns its JSON result (exit status 0 asserted).
pub fn run_example(path: &str, duration: &str, warmup: &str) -> serde_json::Value {
    let out = smpsim()
        .args(["run"])
        .arg(repo(path))
        .args(["--set", &format!("scenario.duration={duration}")])
        .args(["--set", &format!("scenario.warmup={warmup}")])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}
