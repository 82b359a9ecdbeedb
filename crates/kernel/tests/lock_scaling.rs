//! Spinning-lock behaviour that must come out of the coherence model, not
//! be written into it: ticket-lock handoffs slow down with more waiters,
//! qspinlock handoffs do not, and throughput against CPUs has the shape
//! each design predicts.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// Acquisitions per second of `cpus` CPUs hammering one lock.
fn throughput(machine: &str, kind: &str, backoff: bool, cpus: u32) -> f64 {
    let options = LockOptions { backoff };
    let s = lock_scaling(
        preset_machine(machine),
        kind,
        options,
        cpus,
        200,
        US,
        5 * MS,
    );
    simulate(&s).counter("acquired").unwrap().rate
}

#[test]
#[ignore = "exploration: prints the scaling table"]
fn print_scaling_table() {
    for kind in ["qspinlock", "ticket", "tas", "tas+backoff"] {
        let (k, b) = match kind {
            "tas+backoff" => ("tas", true),
            k => (k, false),
        };
        let row: Vec<String> = [1, 2, 4, 6, 8, 12, 16, 24, 32, 40, 48]
            .iter()
            .map(|&n| format!("{:.2}", throughput("opteron-6172-48", k, b, n) / 1e6))
            .collect();
        eprintln!("{kind:12} {}", row.join(" "));
    }
}

/// Nanoseconds per acquisition with `waiters + 1` CPUs of a flat machine
/// (every pair of CPUs one LLC apart) all contending, so that only the
/// number of waiters changes.
fn handoff_ns(kind: &str, waiters: u32) -> f64 {
    let s = lock_scaling(
        flat_machine(waiters + 1),
        kind,
        LockOptions::default(),
        waiters + 1,
        100,
        100,
        4 * MS,
    );
    let r = simulate(&s);
    let acquired = r.counter("acquired").unwrap().count;
    4.0 * MS as f64 / acquired as f64
}

#[test]
fn ticket_handoff_time_grows_with_the_number_of_waiters() {
    let (few, many) = (handoff_ns("ticket", 8), handoff_ns("ticket", 32));
    assert!(
        many > 2.0 * few,
        "ticket: {few:.0} ns per handoff with 8 waiters, {many:.0} ns with 32"
    );
}

#[test]
fn qspinlock_handoff_time_does_not_grow_with_waiters() {
    let (few, many) = (handoff_ns("qspinlock", 8), handoff_ns("qspinlock", 32));
    assert!(
        many < 1.15 * few,
        "qspinlock: {few:.0} ns per handoff with 8 waiters, {many:.0} ns with 32"
    );
}

/// On the 4-socket, 48-core Opteron a ticket lock peaks and collapses; a
/// qspinlock keeps most of its throughput past its knee.
#[test]
fn ticket_collapses_and_qspinlock_holds_on_48_cores() {
    let m = "opteron-6172-48";
    let ticket: Vec<f64> = [4, 8, 48]
        .iter()
        .map(|&n| throughput(m, "ticket", false, n))
        .collect();
    let q: Vec<f64> = [16, 48]
        .iter()
        .map(|&n| throughput(m, "qspinlock", false, n))
        .collect();
    assert!(ticket[2] < 0.25 * ticket[0], "ticket {ticket:?}");
    assert!(ticket[2] < ticket[1], "ticket {ticket:?}");
    assert!(q[1] > 0.8 * q[0], "qspinlock {q:?}");
    assert!(
        q[1] > 5.0 * ticket[2],
        "qspinlock {q:?} vs ticket {ticket:?}"
    );
}

#[test]
fn every_kind_hands_the_lock_to_everyone() {
    for (kind, backoff) in [
        ("qspinlock", false),
        ("ticket", false),
        ("tas", false),
        ("tas", true),
        ("mcs", false),
    ] {
        let s = lock_scaling(
            preset_machine("opteron-6172-48"),
            kind,
            LockOptions { backoff },
            12,
            200,
            500,
            2 * MS,
        );
        let r = simulate(&s);
        let per_task: Vec<u64> = r.task_groups[0]
            .per_task
            .iter()
            .map(|t| t.times.sys)
            .collect();
        assert!(per_task.iter().all(|&s| s > 0), "{kind}: {per_task:?}");
        let l = r.lock("lock").unwrap();
        assert!(l.contentions > 0 && l.acquisitions > 100, "{kind}: {l:?}");
    }
}
