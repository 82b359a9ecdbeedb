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
