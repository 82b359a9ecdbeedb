//! Issue 41 item 2 (the CSD's line): `line = "csd_data"` puts per-CPU
//! objects on each CPU's csd line, which the IPI model then reads and
//! writes. Bad input is located, exits 2 and writes no result file; the
//! csd-line example shows the line moving between caller and target.

mod common;

use common::{counter, lock_row};

const GOOD: &str = r#"[scenario]
name = "t"
duration = "1ms"
[machine]
preset = "generic-x86"
[objects]
pcp = { type = "atomic", per_cpu = true, line = "csd_data" }
global = { type = "atomic" }
[[tasks]]
name = "a"
per_cpu = 1
cpus = "0"
code = '''
    for (;;) {
        smp_call_function_single(1, func = 100ns, wait = true);
        atomic_inc(pcp[this_cpu()]);
        atomic_inc(global);
        work(1us);
    }
'''
"#;

#[test]
fn a_csd_line_that_cannot_be_is_located() {
    let cases = [
        // csd_data is per-CPU: a global object cannot share it.
        (
            "global-on-csd",
            GOOD.replace(
                "global = { type = \"atomic\" }",
                "global = { type = \"atomic\", line = \"csd_data\" }",
            )
            .replace("per_cpu = true, line = \"csd_data\" }", "per_cpu = true }"),
            8,
            "is not per-CPU",
        ),
        // Only a lock on it: the model reaches the line through an atomic.
        (
            "lock-only",
            GOOD.replace(
                "pcp = { type = \"atomic\", per_cpu",
                "pcp = { type = \"spinlock\", per_cpu",
            )
            .replace("atomic_inc(pcp[this_cpu()]);", ""),
            7,
            "needs a per-CPU `atomic`",
        ),
    ];
    let dir = common::dir("csd-line");
    common::refused_variants(&dir, GOOD, cases);
}

fn bounces(variant: &serde_json::Value, name: &str) -> u64 {
    lock_row(variant, name)["bounces"].as_u64().unwrap()
}

/// On the csd's line, each call moves the counter's line to the target
/// and back: the counter's line moves several times per call, where on
/// a line of its own it never leaves its CPU; and the calls are slower.
#[test]
fn the_csd_line_example_moves_the_counter_line_on_every_call() {
    let v = common::run_example("scenarios/examples/csd-line.toml", "5ms", "1ms");
    let (aligned, shared) = (&v["variants"][0], &v["variants"][1]);
    assert_eq!(aligned["variant"], "aligned");
    assert_eq!(shared["variant"], "shared");
    assert!(
        bounces(aligned, "pcp_count") <= 8,
        "{}",
        bounces(aligned, "pcp_count")
    );
    let calls = counter(shared, "calls");
    assert!(
        bounces(shared, "pcp_count") >= 2 * calls,
        "{} bounces, {calls} calls",
        bounces(shared, "pcp_count")
    );
    assert!(
        calls < counter(aligned, "calls"),
        "{calls} vs {}",
        counter(aligned, "calls")
    );
}
