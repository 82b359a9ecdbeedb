//! Issue 28 items 3 (cpumask values) and 5 (RCU callbacks with a cost).
//! Bad input for each new construct is a located error (exit 2, no
//! result file); the examples' variants differ as their docs say; `smpsim
//! fmt` round-trips the examples.

mod common;

use common::{repo, smpsim};

const GOOD: &str = r#"[scenario]
name = "t"
duration = "5ms"
[machine]
preset = "x86-16"
[kernel]
rcu_blimit = 10
[objects]
flag = { type = "variable", per_cpu = true }
[[tasks]]
name = "w"
per_cpu = 1
mm = "app"
code = '''
    for (;;) {
        work(10us);
        syscall(munmap) {
            cpumask(m, and(mm_cpumask, flag(flag)));
            n = 1;
            call_rcu(1us);
            flush_tlb_mm_range(100ns, cpus = m);
        }
    }
'''
"#;

/// Runs `text` as a scenario, writing JSON to a result file; returns the
/// output and whether the result file was written.
fn run(name: &str, text: &str) -> (std::process::Output, std::path::PathBuf, bool) {
    let dir = common::dir(&format!("masks-rcu-{name}"));
    let path = dir.join("t.toml");
    std::fs::write(&path, text).unwrap();
    let out_file = dir.join("t.json");
    let out = smpsim()
        .args(["run", path.to_str().unwrap(), "--format", "json", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let written = out_file.exists();
    (out, path, written)
}

#[test]
fn the_good_scenario_runs() {
    let (out, _, written) = run("good", GOOD);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(written);
}

#[test]
fn bad_masks_and_callbacks_are_located_and_exit_2_without_output() {
    let cases = [
        (
            "mask-as-number",
            GOOD.replace("n = 1;", "n = m + 1;"),
            "`m` is a cpumask, not a number",
        ),
        (
            "number-as-mask",
            GOOD.replace("and(mm_cpumask, flag(flag))", "and(mm_cpumask, n)"),
            "`n` is a number, not a cpumask",
        ),
        (
            "number-to-flush",
            GOOD.replace("cpus = m)", "cpus = n)"),
            "`n` is a number, not a cpumask",
        ),
        (
            "unknown-source",
            GOOD.replace("mm_cpumask,", "mm_cpumsk,"),
            "unknown cpumask `mm_cpumsk`",
        ),
        (
            "zero-blimit",
            GOOD.replace("rcu_blimit = 10", "rcu_blimit = 0"),
            "`rcu_blimit` must be a number of callbacks",
        ),
        (
            "negative-blimit",
            GOOD.replace("rcu_blimit = 10", "rcu_blimit = -3"),
            "`rcu_blimit` must be a number of callbacks",
        ),
        (
            "cost-not-a-duration",
            GOOD.replace("call_rcu(1us)", "call_rcu(fast)"),
            "expected a duration",
        ),
        (
            "cost-a-number",
            GOOD.replace("call_rcu(1us)", "call_rcu(12)"),
            "expected a string, not integer `12`",
        ),
    ];
    for (name, text, says) in cases {
        assert_ne!(text, GOOD, "{name}: the replacement applies");
        let path = common::dir(&format!("masks-rcu-{name}")).join("t.toml");
        std::fs::write(&path, &text).unwrap();
        common::refused_at(name, &path, common::At::Located, says);
    }
}

fn example(path: &str) -> serde_json::Value {
    let out = smpsim()
        .args(["run", repo(path).to_str().unwrap(), "--format", "json"])
        .args(["--set", "scenario.duration=20ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn variant<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["variant"] == name)
        .unwrap()
}

fn sum(v: &serde_json::Value, k: &str) -> u64 {
    v["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[k].as_u64().unwrap_or(0))
        .sum()
}

/// A mask built before the zap misses CPUs that started running the mm
/// since and interrupts CPUs that stopped; one built at the flush does
/// neither.
#[test]
fn an_early_mask_is_stale_and_a_late_one_is_not() {
    let v = example("scenarios/examples/cpumask-snapshot.toml");
    let (early, late) = (&variant(&v, "early")["mm"], &variant(&v, "at-flush")["mm"]);
    assert!(early["mask_flush_missed"].as_u64().unwrap() > 0);
    assert!(early["mask_flush_ipis_not_running"].as_u64().unwrap() > 0);
    assert!(late.get("mask_flush_missed").is_none(), "{late}");
    assert!(late.get("mask_flush_ipis_not_running").is_none(), "{late}");
    assert!(late["mask_flush_ipis"].as_u64().unwrap() > 0);
}

/// In the softirq the callbacks' time is softirq time on the CPUs; with
/// rcu_nocbs it is the rcuop kthreads' sys time, and no CPU runs a
/// softirq. Every callback is invoked either way (none before its grace
/// period: debug builds check it on each).
#[test]
fn callbacks_run_in_softirq_or_in_rcuop() {
    let v = example("scenarios/examples/rcu-callbacks.toml");
    let (soft, nocb) = (variant(&v, "softirq"), variant(&v, "nocbs"));
    assert!(sum(soft, "softirq") > 0);
    assert_eq!(sum(nocb, "softirq"), 0);
    let rcuop = nocb["task_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "[rcuop]")
        .unwrap();
    assert!(rcuop["total"]["sys"].as_u64().unwrap() > 0);
    for r in [soft, nocb] {
        let queued = r["rcu"]["callbacks_queued"].as_u64().unwrap();
        let invoked = r["rcu"]["callbacks_invoked"].as_u64().unwrap();
        assert!(invoked > queued * 9 / 10, "{}", r["rcu"]);
    }
    assert_eq!(
        nocb["rcu"]["callbacks_invoked"],
        nocb["rcu"]["callbacks_invoked_offloaded"]
    );
}

/// With rcu_normal_wake_from_gp the GP kthread wakes synchronize_rcu()
/// callers, not a callback in the softirq behind the others.
#[test]
fn wake_from_gp_wakes_from_the_gp_kthread() {
    let out = smpsim()
        .args(["run"])
        .arg(repo("scenarios/examples/rcu-callbacks.toml"))
        .args(["--format", "json", "--variant", "softirq"])
        .args(["--set", "scenario.duration=20ms"])
        .args(["--set", "kernel.rcu_normal_wake_from_gp=true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["variants"][0]["rcu"]["wakeups_from_gp"].as_u64().unwrap() > 0);
}

/// `smpsim fmt` leaves both examples (written as code) as they are, and
/// their TOML form runs to the same results.
#[test]
fn fmt_round_trips_the_examples() {
    for path in [
        "scenarios/examples/cpumask-snapshot.toml",
        "scenarios/examples/rcu-callbacks.toml",
    ] {
        let path = repo(path);
        let text = std::fs::read_to_string(&path).unwrap();
        let out = smpsim()
            .args(["fmt"])
            .arg(&path)
            .args(["--to", "code"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
        let out = smpsim()
            .args(["fmt"])
            .arg(&path)
            .args(["--to", "toml"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let dir = common::dir("masks-rcu-fmt");
        let toml = dir.join("t.toml");
        std::fs::write(&toml, &out.stdout).unwrap();
        // The TOML form (its comments as `#` comments) runs to the same results.
        let result = |p: &std::path::Path| {
            let out = smpsim()
                .args(["run", p.to_str().unwrap(), "--format", "json"])
                .args([
                    "--set",
                    "scenario.duration=3ms",
                    "--set",
                    "scenario.warmup=1ms",
                ])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
            let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            for var in v["variants"].as_array_mut().unwrap() {
                var["stats"].as_object_mut().unwrap().remove("wall_seconds");
            }
            v["variants"].to_string()
        };
        assert_eq!(result(&toml), result(&path));
    }
}
