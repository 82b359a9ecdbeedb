//! Issue 28 (capacity, broadcast TLB invalidation, CFS bandwidth slack):
//! bad input is located, exits 2 and writes no result file; the examples
//! run and report their counters.

mod common;

use common::{repo, smpsim};

const GOOD: &str = r#"[scenario]
name = "t"
duration = "1ms"
[machine]
preset = "generic-x86"
[machine.topology]
cores_per_llc = 4
[kernel]
hz = 1000
[[cgroup]]
name = "g"
cpu_max = { quota = "2ms", period = "10ms" }
[[tasks]]
name = "a"
per_cpu = 1
cgroup = "g"
code = [ { op = "work", time = "1us" } ]
"#;

#[test]
fn bad_input_is_located_and_exits_2_without_output() {
    let cases = [
        (
            "capacity-zero",
            GOOD.replace(
                "cores_per_llc = 4\n",
                "cores_per_llc = 4\n[[machine.topology.core_types]]\nname = \"E\"\ncpus = \"2-3\"\ncapacity = 0\nsource = \"x\"\n",
            ),
            11,
        ),
        (
            "negative-slice",
            GOOD.replace("hz = 1000", "cfs_bandwidth_slice = \"-5ms\""),
            9,
        ),
        (
            "broadcast-without-feature",
            GOOD.replace("hz = 1000", "tlb_broadcast = true"),
            9,
        ),
        (
            "burst-over-quota",
            GOOD.replace("period = \"10ms\"", "period = \"10ms\", burst = \"5ms\""),
            12,
        ),
    ];
    let dir = common::dir("s28");
    // Any message: the location is the point.
    common::refused_variants(
        &dir,
        GOOD,
        cases.map(|(name, text, line)| (name, text, line, "")),
    );
    common::runs(&dir, "good", GOOD);
}

#[test]
fn the_examples_report_their_counters() {
    let out = smpsim()
        .args(["run"])
        .arg(repo("scenarios/examples/tlb-broadcast.toml"))
        .args([
            "--set",
            "scenario.duration=5ms",
            "--set",
            "scenario.warmup=1ms",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bc = &v["variants"][1];
    assert_eq!(bc["variant"], "broadcast");
    assert!(
        bc["mm"]["tlb_broadcast_flushes"].as_u64().unwrap() > 0,
        "{bc}"
    );
    assert!(v["variants"][0]["mm"]
        .get("tlb_broadcast_flushes")
        .is_none());
    let out = smpsim()
        .args(["run"])
        .arg(repo("scenarios/examples/hybrid-cpus.toml"))
        .args([
            "--set",
            "scenario.duration=50ms",
            "--set",
            "scenario.warmup=5ms",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["variants"][0]["capacity"]["stretch_ns"]
        .as_u64()
        .is_some());
}
