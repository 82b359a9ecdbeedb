//! The reproducers of issue 19 ("bad input gets a clear error, never a
//! panic, a hang, an abort or a silently wrong number") that the other
//! test files do not already run, each as the user typed it.

use std::path::PathBuf;
use std::process::{Command, Output};

fn smpsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smpsim"))
}

fn repo(path: &str) -> String {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join(path)
        .to_string_lossy()
        .into_owned()
}

/// Runs `smpsim run FILE ARGS... --format json` on a scenario made of the
/// shared header and `rest`.
fn run_text(name: &str, rest: &str, args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("smpsim-issue19-{}", std::process::id()));
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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
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

/// Item 5: a variant-scoped `--set` applies to that variant (it was
/// silently ignored); a misspelt variant is an error.
#[test]
fn variant_scoped_set_applies_or_is_refused() {
    let s = repo("scenarios/examples/mutex-contention.toml");
    let out = smpsim()
        .args(["run", &s, "--format", "json"])
        .args(["--set", "variant.spin.scenario.duration=30ms"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let simulated: Vec<u64> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["stats"]["simulated_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(simulated, vec![30_000_000, 200_000_000]);

    let out = smpsim()
        .args(["run", &s, "--set", "variant.spn.scenario.duration=1ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown variant `spn`"),
        "{}",
        stderr(&out)
    );
}

/// Item 9: `--set scenario.duration=20ms` on a shipped scenario with a
/// longer warm-up says what else to set.
#[test]
fn a_shorter_duration_says_to_shorten_the_warmup() {
    let s = repo("scenarios/membarrier-percpu.toml");
    let out = smpsim()
        .args(["run", &s, "--set", "scenario.duration=20ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--set scenario.warmup=0s"),
        "{}",
        stderr(&out)
    );
}

/// Item 5: what can be known at compile time is a located error.
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
                    "{ op = \"spin_lock_irqsave\", lock = \"l\" }, { op = \"spin_unlock\", lock = \"l\" }, { op = \"work\", time = \"1us\" }"
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

/// Item 5: what is known only at run time is a finding naming the op.
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

/// Items 5 and 9: time arithmetic near 2^64 ns neither wraps (a sleep
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
        let woke = var["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "woke")
            .map_or(0, |c| c["count"].as_u64().unwrap());
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
