//! The OSQ's head-role passes in the result: a mutex's `locks` entry has
//! `osq_within_node` and `osq_across_nodes` (the model's counts of
//! `osq_unlock()` handing the head role to a spinner on the same NUMA
//! node or another), for the kernel's OSQ and `numa_osq`, and the text
//! report lists them under the lock_stat table.

mod common;

use common::{repo, run_example_with, smpsim, stderr};

/// (variant, within node, across nodes) of the numa-osq example's
/// `big_lock`.
fn passes() -> Vec<(String, u64, u64)> {
    let v = run_example_with("scenarios/examples/numa-osq.toml", &[]);
    v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let l = r["locks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["name"] == "big_lock")
                .unwrap();
            let n = |k: &str| l.get(k).map_or(0, |x| x.as_u64().unwrap());
            let variant = r["variant"].as_str().unwrap().to_string();
            (variant, n("osq_within_node"), n("osq_across_nodes"))
        })
        .collect()
}

/// On the example's two sockets the kernel's OSQ passes its head role
/// across nodes about as often as within (arrival order); `numa_osq`
/// keeps it on a node almost always.
#[test]
fn the_json_result_counts_osq_passes_within_and_across_nodes() {
    let p = passes();
    let get = |name: &str| p.iter().find(|(v, _, _)| v == name).unwrap().clone();
    let (_, fifo_in, fifo_out) = get("osq");
    let (_, numa_in, numa_out) = get("numa-osq");
    assert!(
        fifo_in > 1000 && fifo_out > 1000,
        "osq: {fifo_in} / {fifo_out}"
    );
    assert!(numa_in > 1000, "numa-osq: {numa_in} within");
    let share = |a: u64, b: u64| a as f64 / (a + b) as f64;
    assert!(
        share(fifo_in, fifo_out) < 0.75,
        "osq: {fifo_in} / {fifo_out}"
    );
    assert!(
        share(numa_in, numa_out) > 0.95,
        "numa-osq: {numa_in} / {numa_out}"
    );
}

/// A lock without an OSQ (a spinlock) has neither field; the text
/// report's line gives the mutex's counts per variant.
#[test]
fn only_an_osq_reports_passes_and_the_text_report_lists_them() {
    let out = smpsim()
        .arg("run")
        .arg(repo("scenarios/examples/numa-osq.toml"))
        .args(["--set", "scenario.duration=10ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("osq passes (within node / across nodes): "))
        .unwrap_or_else(|| panic!("no osq passes line in\n{text}"));
    assert!(line.contains("big_lock [osq] "), "{line}");
    assert!(line.contains("big_lock [numa-osq] "), "{line}");

    let v = common::run_example("scenarios/examples/false-sharing.toml", "1ms", "100us");
    for r in v["variants"].as_array().unwrap() {
        for l in r["locks"].as_array().unwrap() {
            assert!(l.get("osq_within_node").is_none(), "{l}");
            assert!(l.get("osq_across_nodes").is_none(), "{l}");
        }
    }
}
