//! Detectors that end a run which could otherwise never end.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

/// A loop whose ops take no time would never let simulated time reach the
/// end of the run: it is reported as a soft lockup naming the op, and the
/// run stops.
#[test]
fn a_loop_without_time_is_a_soft_lockup_and_stops_the_run() {
    let mut s = spec(flat_machine(2), 1_000_000_000);
    let c = counter(&mut s, "c");
    forever(
        &mut s,
        "spinner",
        vec![0],
        Policy::Normal,
        vec![Op::Count(c)],
    );
    let r = simulate(&s);
    let f = r
        .findings
        .iter()
        .find(|f| f.detector == "soft_lockup")
        .expect("a soft lockup");
    assert!(
        f.message.contains("spinner/0") && f.message.contains("Count"),
        "{f:?}"
    );
    assert!(r.stats.simulated_ns < 1_000_000, "{}", r.stats.simulated_ns);
}

/// A loop that takes time, however little, is not one.
#[test]
fn a_loop_with_time_runs_to_the_end() {
    let mut s = spec(flat_machine(2), 2_000_000);
    let c = counter(&mut s, "c");
    forever(
        &mut s,
        "worker",
        vec![0],
        Policy::Normal,
        vec![Op::Count(c), Op::Work(Dist::Const(1))],
    );
    let r = simulate(&s);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(r.stats.simulated_ns, 2_000_000);
}

/// A per-CPU index outside `[0, nr_cpu_ids)` is reported, not wrapped onto
/// another CPU's instance.
#[test]
fn a_per_cpu_index_out_of_range_is_reported_and_stops_the_run() {
    let mut s = spec(flat_machine(4), 1_000_000);
    let m = mutex(&mut s, "pm", true, true);
    let lock = ObjRef {
        object: m,
        index: Some(Expr::Const(-7)),
    };
    forever(
        &mut s,
        "t",
        vec![0],
        Policy::Normal,
        vec![
            Op::mutex_lock(lock.clone()),
            Op::mutex_unlock(lock),
            Op::Work(Dist::Const(100)),
        ],
    );
    let r = simulate(&s);
    let f = r
        .findings
        .iter()
        .find(|f| f.detector == "bad_percpu_index")
        .expect("a bad per-CPU index finding");
    assert!(
        f.message.contains("`pm`") && f.message.contains("-7"),
        "{f:?}"
    );
    assert!(r.stats.simulated_ns < 1_000_000);
}

/// An unbalanced `preempt_enable()` is the kernel's preempt_count_sub()
/// warning, not a panic or a wrapped count that never lets the CPU be
/// preempted again.
#[test]
fn preempt_enable_without_disable_is_reported() {
    let mut s = spec(flat_machine(2), 2_000_000);
    forever(
        &mut s,
        "t",
        vec![0],
        Policy::Normal,
        vec![Op::PreemptEnable, Op::Work(Dist::Const(1_000))],
    );
    let r = simulate(&s);
    let f = r
        .findings
        .iter()
        .find(|f| f.detector == "preempt_count_underflow")
        .expect("a preempt_count underflow finding");
    assert!(f.message.contains("t/0") && f.occurrences > 1, "{f:?}");
    assert_eq!(r.stats.simulated_ns, 2_000_000);
}
