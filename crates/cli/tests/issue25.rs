//! The reproducers of issue 25 ("results you can trust") that belong to
//! the scenario crate and the command line, each as the user typed it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn smpsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smpsim"))
}

/// A fresh directory for one test.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("smpsim-issue25-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const HEADER: &str = "[scenario]\nname = \"c\"\nduration = \"1ms\"\n[machine]\npreset = \"generic-x86\"\n[machine.topology]\ncores_per_llc = 1\n";

/// Writes `HEADER` + `rest` as `name` in `d`.
fn scenario(d: &Path, name: &str, rest: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, format!("{HEADER}{rest}")).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2 with `want` in the error text.
fn refused(o: &Output, want: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains(want), "expected `{want}` in:\n{e}");
}

// Item 2: a handler that names a handler.

const HANDLER_CYCLES: &[(&str, &str, &str)] = &[
    (
        "direct",
        "[functions]\nh = '''smp_call_function_single(0, handler = h);'''\n",
        "h.toml:9:46: error: a cross-CPU call's handler sends a cross-CPU call that reaches it again: h -> (handler) h",
    ),
    (
        "call",
        "[functions]\nh = '''g();'''\ng = '''smp_call_function_single(0, handler = h);'''\n",
        "reaches it again: h -> g -> (handler) h",
    ),
    (
        "many",
        "[functions]\nh = '''smp_call_function_many(\"all\", handler = h);'''\n",
        "reaches it again: h -> (handler) h",
    ),
    (
        "if",
        "[functions]\nh = '''if (cpu() == 0) { smp_call_function_single(0, handler = h); }'''\n",
        "reaches it again: h -> (handler) h",
    ),
];

#[test]
fn handler_cycles_are_located_errors_in_run_fmt_and_sweep() {
    let d = dir("handlers");
    for (what, functions, want) in HANDLER_CYCLES {
        let p = scenario(
            &d,
            "h.toml",
            &format!("{functions}[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''smp_call_function_single(0, handler = h);'''\n"),
        );
        let run = smpsim().arg("run").arg(&p).output().unwrap();
        refused(&run, want);
        let fmt = smpsim().arg("fmt").arg(&p).output().unwrap();
        refused(&fmt, want);
        let out = d.join("s.jsonl");
        let sweep = smpsim()
            .arg("sweep")
            .arg(&p)
            .args(["--seeds", "2", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        refused(&sweep, want);
        assert!(!out.exists(), "{what}: a refused sweep wrote its output");
    }
}

#[test]
fn a_handler_naming_another_handler_is_refused() {
    let d = dir("handler-chain");
    let p = scenario(
        &d,
        "h.toml",
        "[functions]\na = '''work(1us);'''\nh = '''smp_call_function_single(0, handler = a);'''\n[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''smp_call_function_single(0, handler = h);'''\n",
    );
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    refused(
        &o,
        "h.toml:10:46: error: handler `h` sends a cross-CPU call (to handler `a`)",
    );
}

// Item 7: limits, each named with the knob that raises it.

const TASK: &str = "[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''work(1us);'''\n";

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
    let o = smpsim().arg("run").arg(&p).output().unwrap();
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

// Item 8: outputs.

#[test]
fn an_output_never_replaces_an_input_or_another_output() {
    let d = dir("outputs");
    let p = scenario(&d, "s.toml", TASK);
    let before = std::fs::read(&p).unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("-o")
        .arg(&p)
        .output()
        .unwrap();
    refused(&o, "is the scenario");
    assert_eq!(
        std::fs::read(&p).unwrap(),
        before,
        "the scenario was replaced"
    );
    // An included file, named another way.
    std::fs::write(d.join("lib.toml"), "[functions]\nf = '''work(1us);'''\n").unwrap();
    let inc = d.join("inc.toml");
    std::fs::write(&inc, format!("include = [\"lib.toml\"]\n{HEADER}{TASK}")).unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&inc)
        .arg("-o")
        .arg(d.join(".").join("lib.toml"))
        .output()
        .unwrap();
    refused(&o, "is the included file");
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .arg("-o")
        .arg(&p)
        .output()
        .unwrap();
    refused(&o, "is the scenario");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // Two outputs on one path: the trace would be lost.
    let x = d.join("x.json");
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("--trace")
        .arg(&x)
        .arg("-o")
        .arg(&x)
        .output()
        .unwrap();
    refused(&o, "are the same file: one would be lost");
    assert!(!x.exists());
    // Devices take any number of outputs.
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--trace", "/dev/null", "-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn write_errors_name_the_path_asked_for_and_stale_temporaries_go() {
    let d = dir("writes");
    let p = scenario(&d, "s.toml", TASK);
    let out = d.join("missing-dir").join("r.txt");
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains(&format!("{}:", out.display())), "{e}");
    assert!(!e.contains(".tmp"), "the error names the temporary: {e}");
    // A temporary left by a process that is gone (SIGKILL) is removed by
    // the next write of the same path; a live process's is kept.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = d.join(format!(".r.txt.tmp{dead}"));
    let live = d.join(format!(".r.txt.tmp{}", std::process::id()));
    std::fs::write(&stale, "x".repeat(1000)).unwrap();
    std::fs::write(&live, "x").unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("-o")
        .arg(d.join("r.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stale.exists(), "the stale temporary is still there");
    assert!(live.exists(), "a live process's temporary was removed");
}

#[test]
fn a_torn_last_line_is_named_by_report_and_plot_and_repaired_by_sweep() {
    let d = dir("torn");
    let p = scenario(&d, "s.toml", TASK);
    let full = d.join("r.jsonl");
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .args(["--seeds", "3", "-q", "-o"])
        .arg(&full)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = std::fs::read(&full).unwrap();
    let torn = d.join("torn.jsonl");
    std::fs::write(&torn, &whole[..whole.len() - 40]).unwrap();
    let o = smpsim()
        .arg("report")
        .arg(&torn)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("torn.jsonl:3: the last line is torn"),
        "{}",
        stderr(&o)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    let o = smpsim()
        .arg("plot")
        .arg(&torn)
        .args(["--x", "seed", "--y", "counter.x.rate", "-o"])
        .arg(d.join("p.svg"))
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("torn.jsonl:3: the last line is torn"),
        "{}",
        stderr(&o)
    );
    // A torn line elsewhere is an error naming it.
    let mut mid = whole[..whole.len() - 40].to_vec();
    mid.extend_from_slice(b"\n");
    mid.extend_from_slice(&whole[whole.len() - 40..]);
    std::fs::write(&torn, &mid).unwrap();
    let o = smpsim().arg("report").arg(&torn).output().unwrap();
    refused(&o, "torn.jsonl:3: not a sweep result");
    // The sweep resumed: the torn point runs again, the file is whole.
    std::fs::write(&torn, &whole[..whole.len() - 40]).unwrap();
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .args(["--seeds", "3", "-q", "-o"])
        .arg(&torn)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&torn).unwrap(), whole);
}

// Item 9: what a run says about itself.

#[test]
fn the_header_shows_each_variants_cpus_and_a_short_window_is_warned() {
    let d = dir("header");
    let p = scenario(
        &d,
        "v.toml",
        &format!("{TASK}[variant.one]\ndescription = \"1 CPU\"\n[variant.big]\nmachine.topology.cores_per_llc = 4\n"),
    );
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with("c on generic-x86 (CPUs: one 1, big 4), 1.00ms simulated"),
        "{out}"
    );
    // 1 ms measured at HZ=1000: shorter than two ticks.
    assert!(
        stderr(&o).contains(
            "warning: one: the measured window (1 ms) is shorter than two scheduler ticks (1 ms at HZ=1000)"
        ),
        "{}",
        stderr(&o)
    );
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--set", "scenario.duration=10ms"])
        .output()
        .unwrap();
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
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
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    refused(&o, "s.toml:5:11: error: `/dev/zero`: cannot read machine profile: it is a character device, not a regular file");
}
