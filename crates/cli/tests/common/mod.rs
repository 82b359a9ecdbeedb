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

/// A reproduce case `tiny` in a fresh directory: the mutex-contention
/// example (two variants) shortened for `--quick`, with `metrics` (its
/// `[[reproduce.metric]]` tables).
pub fn tiny_case(test: &str, metrics: &str) -> PathBuf {
    let d = dir(test);
    let text = std::fs::read_to_string(repo("scenarios/examples/mutex-contention.toml")).unwrap()
        + r#"
[reproduce]
case = "tiny"
quick = { "scenario.duration" = "4ms", "scenario.warmup" = "1ms" }
"# + metrics;
    std::fs::write(d.join("tiny.toml"), text).unwrap();
    d
}

/// `smpsim reproduce -q` over the cases in `d` with `extra`, on `threads`
/// threads if given: its stdout (success asserted).
pub fn reproduce_in(d: &Path, extra: &[&str], threads: Option<&str>) -> String {
    let mut cmd = smpsim();
    cmd.args(["reproduce", "-q", "--scenarios"])
        .arg(d)
        .args(extra);
    if let Some(n) = threads {
        cmd.env("RAYON_NUM_THREADS", n);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}
