//! Bad input gets a clear error, never a panic, a hang, an abort or a
//! silently wrong number: what can be known when the scenario is compiled
//! is a located error, what is known only at run time is a finding naming
//! the op; each case as the user typed it.

mod common;

use std::process::Output;

use common::{dir, refused, scenario, smpsim, stderr};

/// Runs `smpsim run FILE ARGS... --format json` on a scenario made of the
/// shared header and `rest`.
fn run_text(name: &str, rest: &str, args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("smpsim-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        "[scenario]\nname = \"{name}\"\nduration = \"2ms\"\n\n[machine]\npreset = \"generic-x86\"\n[machine.topology]\ncores_per_llc = 4\n\n{rest}"
    );
    std::fs::write(&path, text).unwrap();
    let out = smpsim()
        .arg("run")
        .arg(&path)
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    out
}

/// The findings of the first variant of a JSON report.
fn findings(o: &Output) -> Vec<(String, String)> {
    assert!(o.status.success(), "{}", stderr(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["variants"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["detector"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn task(code: &str) -> String {
    format!("[[tasks]]\nname = \"t\"\ncount = 1\ncode = [ {code} ]\n")
}

fn forever(body: &str) -> String {
    task(&format!(
        "{{ op = \"loop\", count = \"forever\", body = [ {body} ] }}"
    ))
}

/// What can be known at compile time is a located error.
#[test]
fn constant_mistakes_are_located_errors() {
    for (name, code, says) in [
        (
            "div0",
            task("{ op = \"set\", var = \"x\", value = \"5 / 0\" }"),
            "division by zero",
        ),
        (
            "negloop",
            task("{ op = \"loop\", count = \"2 - 5\", body = [ { op = \"work\", time = \"1us\" } ] }"),
            "loop count cannot be negative (got -3)",
        ),
        (
            "ipi",
            forever("{ op = \"smp_call_function_single\", cpu = 100, func = \"1us\" }"),
            "CPU 100 does not exist",
        ),
        (
            "offline",
            task("{ op = \"set_cpu_offline\", cpu = \"nr_cpus\" }"),
            "CPU 4 does not exist",
        ),
        (
            "irqsave",
            format!(
                "[objects]\nl = {{ type = \"spinlock\" }}\n{}",
                forever(
                    "{ op = \"syscall\", name = \"s\", body = [ { op = \"spin_lock_irqsave\", lock = \"l\" }, { op = \"spin_unlock\", lock = \"l\" } ] }, { op = \"work\", time = \"1us\" }"
                )
            ),
            "interrupts off after the lock is released",
        ),
    ] {
        let out = run_text(name, &code, &[]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(e.contains(says), "{name}: {e}");
        assert!(e.contains(&format!("{name}.toml:")), "{name}: not located: {e}");
    }
}

/// What is known only at run time is a finding naming the op.
#[test]
fn run_time_mistakes_are_findings() {
    for (name, code, detector, says) in [
        (
            "div0rt",
            task("{ op = \"set\", var = \"x\", value = \"5 / task_index\" }, { op = \"work\", time = \"1us\" }"),
            "divide_error",
            "computed 5 / 0 at op 0",
        ),
        (
            "negrt",
            task("{ op = \"loop\", count = \"task_index - 3\", body = [ { op = \"work\", time = \"1us\" } ] }"),
            "negative_count",
            "loop count is negative (-3)",
        ),
        (
            "ipirt",
            forever("{ op = \"smp_call_function_single\", cpu = \"nr_cpus + task_index\", func = \"1us\" }, { op = \"work\", time = \"1us\" }"),
            "bad_cpu",
            "smp_call_function_single(4): no such CPU",
        ),
        (
            "rcu",
            task("{ op = \"rcu_read_unlock\" }, { op = \"work\", time = \"1us\" }"),
            "bad_unlock_balance",
            "(rcu_read_lock) with rcu_read_unlock()",
        ),
    ] {
        let f = findings(&run_text(name, &code, &[]));
        assert!(
            f.iter().any(|(d, m)| d == detector && m.contains(says)),
            "{name}: {f:?}"
        );
        assert!(
            !f.iter().any(|(d, _)| d == "sleeping_in_atomic"),
            "{name}: {f:?}"
        );
    }
}

/// Time arithmetic near 2^64 ns neither wraps (a sleep
/// that woke 475k times a second, `func` x `units` giving ~0) nor hangs
/// (the same call to the caller's own CPU).
#[test]
fn huge_times_neither_wrap_nor_hang() {
    for (name, body) in [
        ("sleep", "{ op = \"sleep\", time = \"18446744073709551000ns\" }"),
        (
            "units",
            "{ op = \"smp_call_function_single\", cpu = 1, func = \"1000s\", units = \"9223372036854775807\" }",
        ),
        (
            "units_self",
            "{ op = \"smp_call_function_single\", cpu = \"this_cpu()\", func = \"1000s\", units = \"9223372036854775807\" }",
        ),
    ] {
        let code = forever(&format!("{body}, {{ op = \"count\", counter = \"woke\" }}"));
        let out = run_text(name, &code, &[]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let var = &v["variants"][0];
        assert_eq!(var["stats"]["simulated_ns"], 2_000_000, "{name}");
        let woke = common::find_counter(var, "woke").unwrap_or(0);
        assert!(woke <= 1, "{name}: {woke}");
    }
}

/// Item 9: `cost.idle_exit` (which `calibrate` writes) is a known cost,
/// 0 on a preset that leaves it out.
#[test]
fn idle_exit_is_a_known_cost() {
    let out = run_text(
        "idle",
        &task("{ op = \"work\", time = \"cost.idle_exit\" }, { op = \"work\", time = \"cost.atomic\" }"),
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

// A handler that names a handler.

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

/// The `sleeper` option of a `ttas` lock (folly's `detail::Sleeper`):
/// every mistake is a located error, exit 2, and no result file.
#[test]
fn sleeper_option_mistakes_are_located_errors_without_a_result() {
    let d = dir("sleeper");
    let good = r#"max_active_spin = 4000, pause = "4ns", sleep = "550us""#;
    for (what, lock, says) in [
        (
            "negative count",
            r#"kind = "ttas", sleeper = { max_active_spin = -1, pause = "4ns", sleep = "550us" }"#,
            "`max_active_spin` must be a count of pauses from 0 to 4294967295, not -1",
        ),
        (
            "zero pause",
            r#"kind = "ttas", sleeper = { max_active_spin = 4000, pause = "0ns", sleep = "550us" }"#,
            "`pause` must be greater than zero",
        ),
        (
            "zero sleep",
            r#"kind = "ttas", sleeper = { max_active_spin = 4000, pause = "4ns", sleep = "0us" }"#,
            "`sleep` must be greater than zero",
        ),
        (
            "negative sleep",
            r#"kind = "ttas", sleeper = { max_active_spin = 4000, pause = "4ns", sleep = "-1us" }"#,
            "a duration cannot be negative",
        ),
        (
            "pause without a unit",
            r#"kind = "ttas", sleeper = { max_active_spin = 4000, pause = 4, sleep = "550us" }"#,
            "`pause` expects a string, not integer `4`",
        ),
        (
            "count as a string",
            r#"kind = "ttas", sleeper = { max_active_spin = "4000", pause = "4ns", sleep = "550us" }"#,
            "`max_active_spin` expects an integer",
        ),
        (
            "not a table",
            r#"kind = "ttas", sleeper = true"#,
            "`sleeper` expects a table",
        ),
        (
            "missing field",
            r#"kind = "ttas", sleeper = { pause = "4ns", sleep = "550us" }"#,
            "`sleeper` needs `max_active_spin`",
        ),
        (
            "unknown field",
            &format!(r#"kind = "ttas", sleeper = {{ {good}, spins = 1 }}"#),
            "unknown field `spins`",
        ),
        (
            "a kind without it",
            &format!(r#"kind = "tas", sleeper = {{ {good} }}"#),
            "kind `tas` has no `sleeper` option; only `ttas` take it",
        ),
        (
            "the default kind",
            &format!(r#"sleeper = {{ {good} }}"#),
            "kind `qspinlock` (the default spinlock) has no `sleeper` option",
        ),
    ] {
        let p = scenario(
            &d,
            "s.toml",
            &format!(
                "[objects]\nl = {{ type = \"spinlock\", {lock} }}\n[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''spin_guard(l) {{ work(1us); }}'''\n"
            ),
        );
        // Located: file:line:col of the objects entry (line 9 of the file).
        common::refused_at(what, &p, common::At::Line(9), says);
    }
    // An atomic has no lock kind, so no sleeper either.
    let p = scenario(
        &d,
        "a.toml",
        &format!(
            "[objects]\nl = {{ type = \"atomic\", sleeper = {{ {good} }} }}\n{}",
            common::TASK
        ),
    );
    refused(
        &smpsim().arg("run").arg(&p).output().unwrap(),
        "`sleeper` is not a field of a `atomic` object",
    );
    // And the same table on a `ttas` lock runs.
    let p = scenario(
        &d,
        "ok.toml",
        &format!(
            "[objects]\nl = {{ type = \"spinlock\", kind = \"ttas\", sleeper = {{ {good} }} }}\n[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''spin_guard(l) {{ work(1us); }}'''\n"
        ),
    );
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}
