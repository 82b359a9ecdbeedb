//! Issue 28: CPU capacity and SMT co-run (`sched::capacity`), broadcast
//! TLB invalidation (`mm::broadcast_tlb_flush`), and CFS bandwidth slack,
//! burst and slice expiry (`sched::cfs_bandwidth`): bad input is located,
//! and each mechanism does what the kernel does.

mod common;
use common::*;

use std::path::Path;

use smpsim_kernel::{simulate, RunResult};
use smpsim_scenario::parse;

fn header(machine: &str) -> String {
    format!("[scenario]\nname = \"t\"\nduration = \"20ms\"\n\n[machine]\npreset = \"generic-x86\"\n{machine}\n")
}

const WORKER: &str = r#"
[[tasks]]
name = "w"
count = 2
code = [ { op = "work", time = "1us" } ]
"#;

fn located(text: &str, want_line: usize, want_under: &str, want_msg: &str) {
    let e = err(text);
    let (line, _, under) = at(&e);
    assert_eq!(line, want_line, "{e}");
    assert!(
        under.contains(want_under),
        "under the caret: {under:?}\n{e}"
    );
    assert!(e.message.contains(want_msg), "{e}");
}

#[test]
fn a_capacity_of_zero_is_located() {
    let text = header(
        "[machine.topology]\ncores_per_llc = 4\n[[machine.topology.core_types]]\nname = \"E\"\ncpus = \"2-3\"\ncapacity = 0\nsource = \"x\"\n",
    ) + WORKER;
    located(&text, 12, "0", "between 1 and 1024");
    let over = text.replace("capacity = 0", "capacity = 2048");
    located(&over, 12, "2048", "between 1 and 1024");
}

#[test]
fn core_type_cpus_must_exist_and_not_overlap() {
    let m = "[machine.topology]\ncores_per_llc = 4\n[[machine.topology.core_types]]\nname = \"E\"\ncpus = \"2-7\"\ncapacity = 512\nsource = \"x\"\n";
    located(&(header(m) + WORKER), 11, "2-7", "CPU 4 does not exist");
    let two = m.replace("2-7", "2-3").to_string()
        + "[[machine.topology.core_types]]\nname = \"F\"\ncpus = \"3\"\ncapacity = 256\nsource = \"x\"\n";
    located(&(header(&two) + WORKER), 16, "3", "already has a core type");
}

#[test]
fn smt_corun_factor_below_one_is_located() {
    let m =
        "[machine.topology]\nthreads_per_core = 2\nsmt_corun = { factor = 0.5, source = \"x\" }\n";
    located(&(header(m) + WORKER), 9, "0.5", "between 1");
}

#[test]
fn broadcast_on_a_machine_without_it_is_located() {
    let text = header("") + "[kernel]\ntlb_broadcast = true\n" + WORKER;
    located(&text, 9, "true", "no broadcast TLB invalidation");
    // Saying no is always fine.
    let ok = header("") + "[kernel]\ntlb_broadcast = false\n" + WORKER;
    parse(Path::new("t.toml"), ok).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_negative_slice_or_burst_is_located() {
    let cg = "[[cgroup]]\nname = \"g\"\ncpu_max = { quota = \"2ms\", period = \"10ms\" }\n";
    let text = header("") + "[kernel]\ncfs_bandwidth_slice = \"-5ms\"\n" + WORKER;
    located(&text, 9, "-5ms", "negative");
    let zero = header("") + "[kernel]\ncfs_bandwidth_slice = \"0ms\"\n" + WORKER;
    located(&zero, 9, "0ms", "greater than zero");
    let burst = header("")
        + &cg.replace("period = \"10ms\"", "period = \"10ms\", burst = \"-1ms\"")
        + WORKER;
    located(&burst, 10, "-1ms", "negative");
    let big = header("")
        + &cg.replace("period = \"10ms\"", "period = \"10ms\", burst = \"3ms\"")
        + WORKER;
    located(&big, 10, "3ms", "cannot be more than `quota`");
}

fn run(text: &str, variant: Option<&str>) -> RunResult {
    let scn = parse(Path::new("t.toml"), text.to_string()).unwrap_or_else(|e| panic!("{e}"));
    simulate(&scn.compile(variant, &[]).unwrap())
}

fn rate(r: &RunResult, name: &str) -> u64 {
    r.counters.iter().find(|c| c.name == name).unwrap().count
}

/// Two pinned loops of 100 us of work, one on a full CPU and one on a CPU
/// of capacity `cap`.
fn two_cpus(cap: u32, extra: &str) -> String {
    header(&format!(
        "[machine.topology]\ncores_per_llc = 2\n{extra}[[machine.topology.core_types]]\nname = \"small\"\ncpus = \"1\"\ncapacity = {cap}\nsource = \"x\"\n"
    )) + r#"
[[tasks]]
name = "big"
per_cpu = 1
cpus = "0"
code = [ { op = "loop", count = "forever", body = [ { op = "work", time = "100us" }, { op = "count", counter = "big" } ] } ]

[[tasks]]
name = "small"
per_cpu = 1
cpus = "1"
code = [ { op = "loop", count = "forever", body = [ { op = "work", time = "100us" }, { op = "count", counter = "small" } ] } ]
"#
}

#[test]
fn work_takes_longer_on_a_smaller_cpu() {
    let r = run(&two_cpus(256, ""), None);
    let (big, small) = (rate(&r, "big"), rate(&r, "small"));
    assert_eq!(big, 200, "20 ms of 100 us");
    assert_eq!(small, 50, "a quarter of the speed");
    let cap = r.capacity.expect("capacity stats");
    assert_eq!(cap.stretch_ns, 50 * 300_000, "{cap:?}");
    // A machine with every CPU at 1024 is no different from one without
    // core types.
    let full = run(&two_cpus(1024, ""), None);
    assert!(full.capacity.is_none());
    assert_eq!(rate(&full, "small"), 200);
}

#[test]
fn smt_siblings_slow_each_other_only_when_both_are_busy() {
    let m = |factor: &str| {
        header(&format!(
            "[machine.topology]\ncores_per_llc = 1\nthreads_per_core = 2\nsmt_corun = {{ factor = {factor}, source = \"x\" }}\n"
        ))
    };
    let both = r#"
[[tasks]]
name = "a"
per_cpu = 1
cpus = "0-1"
code = [ { op = "loop", count = "forever", body = [ { op = "work", time = "100us" }, { op = "count", counter = "done" } ] } ]
"#;
    let r = run(&(m("1.25") + both), None);
    // 2 threads x 20 ms / 125 us.
    assert_eq!(rate(&r, "done"), 320, "{:?}", r.capacity);
    assert!(r.capacity.unwrap().smt_corun_work >= 318);
    let alone = both.replace("cpus = \"0-1\"", "cpus = \"0\"");
    let r = run(&(m("1.25") + &alone), None);
    assert_eq!(rate(&r, "done"), 200, "a sibling idle: full speed");
    assert_eq!(r.capacity.unwrap().smt_corun_work, 0);
}

fn example(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/examples/{name}.toml")),
    )
    .unwrap()
}

#[test]
fn capacity_aware_placement_keeps_busy_tasks_on_big_cpus() {
    let text = example("hybrid-cpus").replace("duration = \"400ms\"", "duration = \"200ms\"");
    let aware = run(&text, Some("capacity_aware"));
    let blind = run(&text, Some("capacity_blind"));
    let (a, b) = (aware.capacity.unwrap(), blind.capacity.unwrap());
    assert!(
        a.select_idle_capacity > 0 && b.select_idle_capacity == 0,
        "{a:?} {b:?}"
    );
    assert!(a.stretch_ns * 2 < b.stretch_ns, "{a:?} {b:?}");
    assert!(rate(&aware, "bursts") > rate(&blind, "bursts"));
}

#[test]
fn broadcast_flushes_interrupt_no_one() {
    let text = example("tlb-broadcast").replace("duration = \"50ms\"", "duration = \"10ms\"");
    let ipi = run(&text, Some("ipi"));
    let bc = run(&text, Some("broadcast"));
    assert_eq!(ipi.mm.tlb_broadcast_flushes, 0);
    assert!(ipi.mm.tlb_flush_ipis > 1000, "{:?}", ipi.mm);
    assert_eq!(bc.mm.global_asids, 1, "{:?}", bc.mm);
    assert!(bc.mm.tlb_broadcast_flushes > 1000, "{:?}", bc.mm);
    // 4 pages: one INVLPGB each (invlpgb_count_max = 8).
    assert_eq!(bc.mm.invlpgb, bc.mm.tlb_broadcast_flushes);
    // Before the global ASID, flushes went by IPI; after, none.
    assert!(
        bc.mm.tlb_flush_ipis < ipi.mm.tlb_flush_ipis / 5,
        "{:?}",
        bc.mm
    );
    let irq = |r: &RunResult| r.cpus.iter().map(|c| c.times.irq).sum::<u64>();
    assert!(irq(&bc) * 10 < irq(&ipi), "{} vs {}", irq(&bc), irq(&ipi));
    // Above tlb_single_page_flush_ceiling (33 pages): one INVLPGB for the PCID.
    let many = text.replace("units = 4", "units = 40");
    let bc = run(&many, Some("broadcast"));
    assert_eq!(bc.mm.invlpgb, bc.mm.tlb_broadcast_flushes);
    let some = text.replace("units = 4", "units = 20");
    let bc = run(&some, Some("broadcast"));
    assert_eq!(
        bc.mm.invlpgb,
        3 * bc.mm.tlb_broadcast_flushes,
        "20 pages / 8"
    );
}

#[test]
fn slack_burst_and_expiry_move_runtime_as_the_kernel_does() {
    let text = example("cfs-slack");
    let get = |v: &str| run(&text, Some(v)).cfs_bandwidth[0].clone();
    let base = get("no_slack");
    let slack = get("slack");
    let burst = get("burst");
    let expiry = get("expiry");
    assert_eq!(base.slack_returned_ns, 0);
    assert!(
        slack.slack_returned_ns > 0 && slack.slack_distributions > 0,
        "{slack:?}"
    );
    // A finding, not the kernel's intent (docs/cfs-slack.md): in the
    // model, returning slack does not make a cgroup throttle less. The
    // comparison once asserted here held for seed 1 of the single
    // event-order stream only (158 -> 140; seeds 2 and 3: 133 -> 194,
    // 113 -> 214); over seeds, slack throttles more. Asserted over three
    // seeds, so that a change of the model that fixes it fails here.
    for seed in 1..=3 {
        let sets = [("scenario.seed".to_string(), seed.to_string())];
        let at = |v: &str| {
            let scn = parse(Path::new("t.toml"), text.clone()).unwrap_or_else(|e| panic!("{e}"));
            simulate(&scn.compile(Some(v), &sets).unwrap()).cfs_bandwidth[0].clone()
        };
        let (b, s) = (at("no_slack"), at("slack"));
        assert!(
            s.throttle_events > b.throttle_events,
            "seed {seed}: {s:?} {b:?}"
        );
    }
    // Burst carries runtime over: fewer throttles than without.
    assert!(
        burst.throttle_events < slack.throttle_events,
        "{burst:?} {slack:?}"
    );
    // Expiring slices strand runtime: less CPU time, more throttling.
    assert!(
        expiry.usage_ns * 10 < base.usage_ns * 9,
        "{expiry:?} {base:?}"
    );
    assert!(expiry.throttle_events > base.throttle_events);
    // Never more than quota per period, plus the burst.
    let periods = base.nr_periods;
    assert!(base.usage_ns <= (periods + 1) * 20_000_000, "{base:?}");
}
