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

/// Where the error of a refused scenario must point.
#[derive(Clone, Copy, Debug)]
pub enum At<'a> {
    /// Some line and column of the file (the error's first line starts
    /// `file:LINE:COL`).
    Located,
    /// This line (`file:line:`).
    Line(usize),
    /// This line and column (`file:line:col: error`).
    LineCol(usize, usize),
    /// The first place this text stands in the file, as `LineCol`.
    Text(&'a str),
}

/// Line and column (from 1, the column in characters) of the first place
/// `text` stands in the file `path`.
pub fn position(path: &Path, text: &str) -> (usize, usize) {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find(text).map(|c| (i + 1, l[..c].chars().count() + 1)))
        .unwrap_or_else(|| panic!("`{text}` is not in {}", path.display()))
}

/// Runs the bad scenario `path` to a JSON result file beside it and checks
/// the bad-input rule: exit status 2, an error located `at` in `path` that
/// says `says` (`""`: any message), no panic, and no result file written.
/// `what` names the case in failure messages.
pub fn refused_at(what: &str, path: &Path, at: At, says: &str) {
    let out_file = path.with_extension("json");
    let out = smpsim()
        .args(["run", path.to_str().unwrap(), "--format", "json", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(!out_file.exists(), "{what}: a refused run wrote its result");
    let file = path.display();
    let expect = |loc: String| assert!(err.contains(&loc), "{what}: expected {loc} in:\n{err}");
    match at {
        At::Located => {
            let loc = format!("{file}:");
            let located = err
                .lines()
                .next()
                .and_then(|l| l.strip_prefix(&loc))
                .is_some_and(|rest| {
                    let mut it = rest.split(':');
                    it.next().is_some_and(|l| l.parse::<u32>().is_ok())
                        && it.next().is_some_and(|c| c.parse::<u32>().is_ok())
                });
            assert!(located, "{what}: expected {loc}LINE:COL in:\n{err}");
        }
        At::Line(line) => expect(format!("{file}:{line}:")),
        At::LineCol(line, col) => expect(format!("{file}:{line}:{col}: error")),
        At::Text(text) => {
            let (line, col) = position(path, text);
            expect(format!("{file}:{line}:{col}: error"));
        }
    }
    assert!(err.contains(says), "{what}: expected `{says}` in:\n{err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
}

/// Each case `(name, text, line, says)`, a variant of the scenario `good`,
/// written as `name.toml` in `d`: it differs from `good`, and is refused
/// with an error at `line` that says `says`.
pub fn refused_variants<'a>(
    d: &Path,
    good: &str,
    cases: impl IntoIterator<Item = (&'a str, String, usize, &'a str)>,
) {
    for (name, text, line, says) in cases {
        assert_ne!(text, good, "{name}: the case changes nothing");
        let path = d.join(format!("{name}.toml"));
        std::fs::write(&path, &text).unwrap();
        refused_at(name, &path, At::Line(line), says);
    }
}

/// Each case `(what, rest, text at the error, says)`, written as `HEADER`
/// followed by `rest` in a fresh directory for `test`: it is refused with
/// an error at the line and column of that text that says `says`.
pub fn refused_snippets(test: &str, cases: &[(&str, String, &str, &str)]) {
    let d = dir(test);
    for (what, rest, bad, says) in cases {
        let p = scenario(&d, "s.toml", rest);
        refused_at(what, &p, At::Text(bad), says);
    }
}

/// Writes `text` as `name.toml` in `d` and runs it to JSON on stdout:
/// exit status 0 asserted.
pub fn runs(d: &Path, name: &str, text: &str) {
    let path = d.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let out = smpsim()
        .args(["run", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
}

/// The count of counter `name` in a result variant (JSON).
pub fn counter(variant: &serde_json::Value, name: &str) -> u64 {
    find_counter(variant, name).unwrap_or_else(|| panic!("no counter {name}"))
}

/// The count of counter `name` in a result variant, `None` when it has
/// no such counter (one never counted is not listed).
pub fn find_counter(variant: &serde_json::Value, name: &str) -> Option<u64> {
    variant["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .map(|c| c["count"].as_u64().unwrap())
}

/// The lock_stat row of lock `name` in a result variant (JSON).
pub fn lock_row<'a>(variant: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    variant["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no lock_stat row {name} in {variant}"))
}

/// Runs the shipped scenario `path` for `duration` after `warmup` and
/// returns its JSON result (exit status 0 asserted).
pub fn run_example(path: &str, duration: &str, warmup: &str) -> serde_json::Value {
    run_example_with(
        path,
        &[
            "--set",
            &format!("scenario.duration={duration}"),
            "--set",
            &format!("scenario.warmup={warmup}"),
        ],
    )
}

/// Runs the shipped scenario `path` with `args` (`--set` overrides, say)
/// and returns its JSON result (exit status 0 asserted).
pub fn run_example_with(path: &str, args: &[&str]) -> serde_json::Value {
    let out = smpsim()
        .args(["run"])
        .arg(repo(path))
        .args(args)
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

/// Runs `text` (a scenario) to JSON in a fresh directory named for
/// `test`, expecting exit 0 and exactly one finding of `detector`:
/// returns its (message, CPU, time) and how far the run got
/// (`simulated_ns`).
pub fn the_finding(test: &str, detector: &str, text: &str) -> (String, u64, u64, u64) {
    let d = dir(test);
    let p = d.join("s.toml");
    std::fs::write(&p, text).unwrap();
    let out = smpsim()
        .args(["run", p.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{test}: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["variants"][0];
    let f: Vec<&serde_json::Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["detector"] == detector)
        .collect();
    assert_eq!(f.len(), 1, "{test}: {:?}", r["findings"]);
    let simulated = r["stats"]["simulated_ns"].as_u64().unwrap_or(u64::MAX);
    (
        f[0]["message"].as_str().unwrap().to_string(),
        f[0]["cpu"].as_u64().unwrap(),
        f[0]["time_ns"].as_u64().unwrap(),
        simulated,
    )
}
