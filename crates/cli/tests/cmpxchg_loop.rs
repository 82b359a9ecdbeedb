//! The compare-and-exchange retry loop (`atomic_read(x, old)`,
//! `atomic_try_cmpxchg(x, old) { ... }`, `cpu_relax()`): what the shipped
//! example gives as CPUs are added, and bad input as a located error,
//! exit 2 and no result file.

mod common;

use common::{run_example, run_example_with, smpsim, stderr};

/// The `gets` done and the failed attempts on `d_lockref` of each
/// variant of the lockref example on `cpus` CPUs.
fn lockref(cpus: u32) -> Vec<(String, u64, u64)> {
    let v = run_example_with(
        "scenarios/examples/lockref-loop.toml",
        &["--set", &format!("machine.topology.cores_per_llc={cpus}")],
    );
    v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let gets = common::counter(r, "gets");
            let lock = &r["locks"][0];
            assert_eq!(lock["name"], "d_lockref");
            let fails = lock["cmpxchg_fails"].as_u64().unwrap_or(0);
            (r["variant"].as_str().unwrap().to_string(), gets, fails)
        })
        .collect()
}

/// More CPUs on one lockref: more failed attempts per reference taken
/// (none on one CPU, where no other CPU writes the word). What the model
/// gives for `cpu_relax()` after a failed attempt: about the same gets
/// (within 10%) while a few CPUs share the line, and fewer once many do
/// (at 8 CPUs about a third as many: 5,649 against 16,426), because a
/// CPU that retries at once can still find the word in the window it
/// keeps after its own write's line left it (docs/contention.md, every
/// lender's window), and one that pauses first has lost it. That is the
/// direction of the 2019 commit that took `cpu_relax()` out of the loop
/// ("lockref: stop doing cpu_relax in the cmpxchg loop"); the size is
/// the model's. Never more gets with `cpu_relax()`.
#[test]
fn more_cpus_on_one_lockref_fail_more_attempts_per_get() {
    let mut last = [-1.0f64; 2];
    for cpus in [1, 2, 4, 8] {
        let runs = lockref(cpus);
        assert_eq!(runs.len(), 2);
        for (i, (variant, gets, fails)) in runs.iter().enumerate() {
            assert!(*gets > 0, "{variant} on {cpus} CPUs took no reference");
            if cpus == 1 {
                assert_eq!(*fails, 0, "{variant}: a lone CPU's attempt failed");
            }
            let per_get = *fails as f64 / *gets as f64;
            assert!(
                per_get > last[i],
                "{variant} on {cpus} CPUs: {per_get:.3} failed attempts per get, not more than {:.3} with fewer CPUs",
                last[i]
            );
            last[i] = per_get;
        }
        let ((_, g0, _), (_, g1, _)) = (&runs[0], &runs[1]);
        let ratio = *g1 as f64 / *g0 as f64;
        let expected = if cpus <= 4 { 0.9..1.1 } else { 0.0..0.9 };
        assert!(
            expected.contains(&ratio),
            "{cpus} CPUs: cpu_relax/no_relax gets {ratio:.3}, expected in {expected:?}"
        );
    }
    assert!(
        last[0] > 1.0,
        "8 CPUs: {:.3} failed attempts per get",
        last[0]
    );
}

/// The failures show in the text report under the lock_stat table.
#[test]
fn the_text_report_lists_the_failed_attempts() {
    let out = smpsim()
        .arg("run")
        .arg(common::repo("scenarios/examples/lockref-loop.toml"))
        .args([
            "--set",
            "scenario.duration=500us",
            "--set",
            "scenario.warmup=100us",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("cmpxchg failures: "))
        .unwrap_or_else(|| panic!("no cmpxchg failures line in\n{text}"));
    assert!(line.contains("d_lockref [no_relax] "), "{line}");
    assert!(line.contains("d_lockref [cpu_relax] "), "{line}");
}

/// A plain atomic counter has no failures to report: no field in JSON.
#[test]
fn an_rmw_counter_reports_no_cmpxchg_failures() {
    let v = run_example("scenarios/examples/false-sharing.toml", "1ms", "100us");
    for r in v["variants"].as_array().unwrap() {
        for l in r["locks"].as_array().unwrap() {
            assert!(l.get("cmpxchg_fails").is_none(), "{l}");
        }
    }
}

#[test]
fn retry_loop_mistakes_are_located_errors_without_a_result() {
    let task = |code: &str| {
        format!(
            "[objects]\nx = {{ type = \"atomic\" }}\ny = {{ type = \"atomic\" }}\nm = {{ type = \"mutex\" }}\n[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''for (;;) {{ {code} }}'''\n"
        )
    };
    common::refused_snippets(
        "cmpxchg-loop",
        &[
            (
                "try_cmpxchg on a mutex",
                task("atomic_read(x, old); atomic_try_cmpxchg(m, old) { cpu_relax(); }"),
                "m, old)",
                "`m` is a mutex",
            ),
            (
                "atomic_read into a mutex",
                task("atomic_read(m, old);"),
                "m, old)",
                "`m` is a mutex",
            ),
            (
                "old is an expression",
                task("atomic_read(x, old); atomic_try_cmpxchg(x, old + 1);"),
                "old + 1",
                "`old + 1` is not a variable",
            ),
            (
                "old is a number",
                task("atomic_read(x, old); atomic_try_cmpxchg(x, 5);"),
                "5)",
                "expected a string, not integer `5`",
            ),
            (
                "old never read",
                task("old = 0; atomic_try_cmpxchg(x, old);"),
                "old);",
                "`old` was never read from `x`",
            ),
            (
                "old read from another word",
                task("atomic_read(y, old); atomic_try_cmpxchg(x, old);"),
                "old); }",
                "`old` was never read from `x`",
            ),
            (
                "try_cmpxchg without old",
                task("atomic_try_cmpxchg(x);"),
                "atomic_try_cmpxchg(x)",
                "op `atomic_try_cmpxchg` needs `var`",
            ),
            (
                "cpu_relax with an argument",
                task("cpu_relax(40ns);"),
                "40ns",
                "`cpu_relax` takes no positional arguments",
            ),
            (
                "cpu_relax with a body",
                task("cpu_relax() { work(1ns); }"),
                "{ work(1ns)",
                "expected `;` after `cpu_relax(...)`",
            ),
        ],
    );
}
