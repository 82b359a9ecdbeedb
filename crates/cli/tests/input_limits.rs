//! Limits on input, each named with the knob that raises it: scenarios,
//! includes and machine profiles must be regular files, and sizes, code,
//! call depth, seeds and sweep points are bounded.

mod common;

use common::{dir, refused, scenario, smpsim, HEADER, TASK};

#[test]
fn scenario_and_include_must_be_regular_files() {
    let o = smpsim().args(["run", "/dev/zero"]).output().unwrap();
    refused(
        &o,
        "/dev/zero: error: cannot read scenario: it is a character device, not a regular file",
    );
    let o = smpsim().args(["fmt", "/dev/zero"]).output().unwrap();
    refused(&o, "it is a character device");
    let d = dir("regular");
    let p = d.join("inc.toml");
    std::fs::write(&p, format!("include = [\"/dev/zero\"]\n{HEADER}{TASK}")).unwrap();
    // Outside the scenario's tree: allowed here, to reach the file check.
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--allow-path", "/dev"])
        .output()
        .unwrap();
    refused(
        &o,
        "inc.toml:1:12: error: `/dev/zero`: cannot read included file: it is a character device",
    );
    let o = smpsim().arg("run").arg(&d).output().unwrap();
    refused(&o, "it is a directory, not a regular file");
}

#[test]
fn scenario_size_is_bounded_by_a_knob() {
    let d = dir("size");
    let p = scenario(&d, "s.toml", TASK);
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .env("SMPSIM_MAX_SCENARIO_BYTES", "100")
        .output()
        .unwrap();
    refused(
        &o,
        "more than a scenario may be (at most 100; set SMPSIM_MAX_SCENARIO_BYTES=N to raise it)",
    );
    // An included file too.
    let lib = d.join("lib.toml");
    std::fs::write(
        &lib,
        format!("[functions]\nf = '''{}'''\n", "work(1us); ".repeat(20)),
    )
    .unwrap();
    let p = d.join("inc.toml");
    std::fs::write(&p, format!("include = [\"lib.toml\"]\n{HEADER}{TASK}")).unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .env("SMPSIM_MAX_SCENARIO_BYTES", "200")
        .output()
        .unwrap();
    refused(&o, "inc.toml:1:12: error: `");
    refused(&o, "the included file is 243 bytes");
}

#[test]
fn functions_code_strings_and_call_depth_are_bounded() {
    let d = dir("functions");
    let many: String = (0..10_001)
        .map(|i| format!("f{i} = \"work(1us);\"\n"))
        .collect();
    let p = scenario(&d, "f.toml", &format!("[functions]\n{many}{TASK}"));
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    refused(&o, "f.toml:10009:1: error: too many functions: 10001 (at most 10000; set SMPSIM_MAX_FUNCTIONS=N to raise it)");
    let code = "work(1us);".repeat(110_000);
    let p = scenario(
        &d,
        "c.toml",
        &format!("[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''{code}'''\n"),
    );
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    refused(&o, "c.toml:11:8: error: this code string is 1100000 bytes (at most 1048576; set SMPSIM_MAX_CODE_BYTES=N to raise it)");
    // A chain of 9,000 functions once overflowed the stack.
    let chain: String = (0..9_000)
        .map(|i| format!("f{i} = \"f{}();\"\n", i + 1))
        .collect();
    let p = scenario(
        &d,
        "chain.toml",
        &format!("[functions]\n{chain}f9000 = \"work(1us);\"\n[[tasks]]\nname = \"t\"\ncount = 1\ncode = \"f0();\"\n"),
    );
    for cmd in ["run", "fmt"] {
        let o = smpsim().arg(cmd).arg(&p).output().unwrap();
        refused(
            &o,
            "functions nest more than 100 deep: f0 -> f1 -> f2 -> ... -> f98 -> f99 -> f100",
        );
    }
}

#[test]
fn seeds_and_sweep_points_are_bounded() {
    let d = dir("seeds");
    let p = scenario(&d, "s.toml", TASK);
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--seeds", "4294967296"])
        .output()
        .unwrap();
    refused(&o, "error: --seeds 4294967296: too many seeds (at most 100000; set SMPSIM_MAX_SEEDS=N to raise it)");
    let out = d.join("o.jsonl");
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .args(["--seeds", "4294967296", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    refused(&o, "too many seeds");
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .args([
            "--seeds",
            "100000",
            "--set",
            "scenario.seed=1,2,3,4,5,6,7,8,9,10,11",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    refused(&o, "the sweep has more than 1000000 points");
    refused(&o, "SMPSIM_MAX_SWEEP_POINTS");
    assert!(!out.exists());
}

#[test]
fn includes_are_one_level_deep_and_bounded_in_number() {
    let d = dir("include-depth");
    std::fs::write(d.join("inner.toml"), "[functions]\ng = '''work(1us);'''\n").unwrap();
    std::fs::write(
        d.join("lib.toml"),
        "include = [\"inner.toml\"]\n[functions]\nf = '''work(1us);'''\n",
    )
    .unwrap();
    let p = d.join("s.toml");
    std::fs::write(&p, format!("include = [\"lib.toml\"]\n{HEADER}{TASK}")).unwrap();
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    refused(&o, "lib.toml:1:1: error: an included file defines only [functions] and [objects], not `include`");
    let many = vec!["\"inner.toml\""; 65].join(", ");
    std::fs::write(&p, format!("include = [{many}]\n{HEADER}{TASK}")).unwrap();
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    refused(&o, "a scenario includes at most 64 files");
}

#[test]
fn a_machine_profile_must_be_a_regular_file_too() {
    let d = dir("profile");
    let p = d.join("s.toml");
    std::fs::write(
        &p,
        format!(
            "{}[machine]\nprofile = \"/dev/zero\"\n{TASK}",
            &HEADER[..HEADER.find("[machine]").unwrap()]
        ),
    )
    .unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--allow-path", "/dev"])
        .output()
        .unwrap();
    refused(&o, "s.toml:5:11: error: `/dev/zero`: cannot read machine profile: it is a character device, not a regular file");
}

/// Issue 37: every numeric option is bounded with a clear error, exit 2:
/// no panic (101), no abort on a huge allocation, no quiet substitute.
#[test]
fn every_numeric_option_is_bounded_with_a_clear_error() {
    let d = dir("numeric-options");
    let p = scenario(&d, "s.toml", TASK);
    let s = p.to_str().unwrap();
    let out = d.join("r.jsonl");
    let o = out.to_str().unwrap();
    let max = "18446744073709551615";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", s, "--explore", "2147483648"],
            "--explore 2147483648: too many schedules",
        ),
        (
            vec!["run", s, "--explore", max],
            "too many schedules (at most 100000; set SMPSIM_MAX_SCHEDULES",
        ),
        (vec!["run", s, "--seed", max], "--seed"),
        (
            vec!["run", s, "--seed", "9223372036854775807", "--seeds", "2"],
            "goes past the largest seed",
        ),
        (
            vec!["run", s, "--trace-limit", "0", "--trace", o],
            "--trace-limit",
        ),
        (vec!["bench", "--millis", max], "--millis"),
        (vec!["bench", "--millis", "0"], "--millis"),
        (vec!["bench", "--cpus", "4294967295"], "--cpus"),
        (vec!["reproduce", "--seeds", "0"], "--seeds"),
        (
            vec!["reproduce", "--seeds", "4294967295"],
            "--seeds 4294967295: too many seeds",
        ),
        (vec!["sweep", s, "--seeds", "0", "-o", o], "--seeds"),
        (
            vec!["sweep", s, "--cpus", "1..4294967295:+1", "-o", o],
            "more CPUs than a machine can have",
        ),
        (
            vec!["sweep", s, "--cpus", "4294967295", "-o", o],
            "more CPUs than a machine can have",
        ),
        (vec!["sweep", s, "--seeds", max, "-o", o], "too many"),
        (
            vec!["host", "run", "membarrier", "--seconds", "nan"],
            "--seconds",
        ),
        (
            vec!["host", "run", "membarrier", "--seconds", "inf"],
            "--seconds",
        ),
        (
            vec!["host", "run", "membarrier", "--seconds=-1"],
            "--seconds",
        ),
        (vec!["host", "run", "hotplug", "--reps", "0"], "--reps"),
        (
            vec!["host", "run", "ipi-latency", "--window", "1e300"],
            "--window",
        ),
        (
            vec!["host", "run", "mutex-readers", "--readers", "4294967295"],
            "--readers",
        ),
        (
            vec!["host", "compare", "membarrier", "--seconds", "0"],
            "--seconds",
        ),
        (vec!["plot", o, "--at", "nan"], "--at"),
    ];
    for (args, want) in cases {
        let out = smpsim().args(&args).output().unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: expected `{want}` in {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
    assert!(!out.exists(), "nothing written by a refused command");
}
