//! Issue 41: `cpu_max.phase`, a CFS period timer's phase. Bad input is
//! located, exits 2 and writes no result file; the example's aligned and
//! interleaved timers both run within the cgroups' quotas.

mod common;

use common::{dir, repo, smpsim};

const GOOD: &str = r#"[scenario]
name = "t"
duration = "30ms"
[machine]
preset = "generic-x86"
[machine.topology]
cores_per_llc = 2
[[cgroup]]
name = "g"
cpu_max = { quota = "2ms", period = "10ms", phase = "4ms" }
[[tasks]]
name = "a"
per_cpu = 1
cgroup = "g"
code = [ { op = "work", time = "1us" } ]
"#;

#[test]
fn a_bad_phase_is_located_and_exits_2_without_output() {
    let cases = [
        (
            "phase-equals-period",
            "phase = \"10ms\"",
            "less than `period`",
        ),
        (
            "phase-over-period",
            "phase = \"25ms\"",
            "less than `period`",
        ),
        ("negative-phase", "phase = \"-1ms\"", "negative"),
        (
            "phase-not-a-duration",
            "phase = \"soon\"",
            "expected a duration",
        ),
        ("phase-a-number", "phase = 4", "string"),
    ];
    let d = dir("cfs-phase");
    common::refused_variants(
        &d,
        GOOD,
        cases.map(|(name, phase, says)| (name, GOOD.replace("phase = \"4ms\"", phase), 10, says)),
    );
    common::runs(&d, "good", GOOD);
}

#[test]
fn the_phase_example_compares_aligned_and_interleaved_timers() {
    let out = smpsim()
        .arg("run")
        .arg(repo("scenarios/examples/cfs-period-phase.toml"))
        .args([
            "--set",
            "scenario.duration=200ms",
            "--set",
            "scenario.warmup=20ms",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let variants = json["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2);
    // Aligned timers pinned to one CPU run their hardirqs back to back:
    // the longest IRQs-off stretch is longer than with interleaved ones.
    let max_irq_off = |v: &serde_json::Value| {
        v["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["max_irq_off_ns"].as_u64().unwrap())
            .max()
            .unwrap()
    };
    let (aligned, interleaved) = (max_irq_off(&variants[0]), max_irq_off(&variants[1]));
    assert!(interleaved * 3 < aligned * 2, "{aligned} vs {interleaved}");
    for v in variants {
        let pools = v["cfs_bandwidth"].as_array().unwrap();
        assert_eq!(pools.len(), 4, "{v}");
        for p in pools {
            // Throttled in most periods, never more than quota per period
            // (plus one op's overrun per CPU).
            let periods = p["nr_periods"].as_u64().unwrap();
            assert!(p["nr_throttled"].as_u64().unwrap() * 2 > periods, "{p}");
            let usage = p["usage_ns"].as_u64().unwrap();
            assert!(usage <= (periods + 1) * 15_000_000 + 8_000_000, "{p}");
        }
    }
}
