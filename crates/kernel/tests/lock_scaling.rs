//! Spinning-lock behaviour that must come out of the coherence model, not
//! be written into it: ticket-lock handoffs slow down with more waiters
//! (on the Opteron by two data legs of a SOSP 2013 Table 2 transfer per
//! waiter), qspinlock handoffs do not, and
//! throughput against CPUs has the shape each design predicts.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// Acquisitions per second of `cpus` CPUs hammering one lock.
fn throughput(machine: &str, kind: &str, backoff: bool, cpus: u32) -> f64 {
    let options = LockOptions {
        backoff,
        ..LockOptions::default()
    };
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
/// number of waiters changes; the line's home as `home` says.
fn handoff_ns_at(kind: &str, waiters: u32, home: smpsim_machine::Home) -> f64 {
    let mut m = flat_machine(waiters + 1);
    m.coherence.home = home;
    // The mechanism with a home busy a few ns per request, whatever its
    // transfer (the global rules make it a transfer and more: then a
    // pipelined home serves re-fetches nearly one after another too).
    m.coherence.occupancy.ns = 2.0;
    m.coherence.occupancy_per_transfer = 0.0;
    let s = lock_scaling(
        m,
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

fn handoff_ns(kind: &str, waiters: u32) -> f64 {
    handoff_ns_at(kind, waiters, smpsim_machine::Home::Pipelined)
}

/// Every ticket waiter re-fetches the lock word after each release: at a
/// home that serves one request at a time the handoff grows with the
/// waiters about linearly; at a pipelined one it grows by an occupancy
/// per waiter, far less.
#[test]
fn ticket_handoff_time_grows_with_the_number_of_waiters() {
    use smpsim_machine::Home;
    let blocking = (
        handoff_ns_at("ticket", 8, Home::Blocking),
        handoff_ns_at("ticket", 32, Home::Blocking),
    );
    assert!(blocking.1 > 2.0 * blocking.0, "blocking home: {blocking:?}");
    let pipelined = (handoff_ns("ticket", 8), handoff_ns("ticket", 32));
    assert!(pipelined.1 > pipelined.0, "pipelined home: {pipelined:?}");
    assert!(
        pipelined.1 < 1.5 * pipelined.0,
        "pipelined home: {pipelined:?}"
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
        ("distributed_mutex", false),
    ] {
        let s = lock_scaling(
            preset_machine("opteron-6172-48"),
            kind,
            LockOptions {
                backoff,
                ..LockOptions::default()
            },
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

/// qspinlock's extra transactions on the lock word (the arrivals' failed
/// cmpxchg and `xchg_tail()`, the head's re-fetches) overlap with the
/// critical section once a queued request pays only the data leg: on the
/// 48-core Opteron it stays within 25% of a plain MCS lock past its knee.
/// The mechanism is checked with a queued request paying half a transfer
/// (the data-leg model): under the global rules, where it pays the whole
/// transfer, qspinlock's extra transactions cost more and it falls to
/// 0.61-0.7 of MCS (docs/contention.md, a prediction with no measured
/// curve of this machine to hold it to).
#[test]
fn qspinlock_stays_near_mcs_on_48_cores() {
    let rate = |kind: &str, n: u32| {
        let times = (Dist::Const(200), Dist::Exp { mean: US });
        let mut m = preset_machine("opteron-6172-48");
        m.coherence.forward_fraction = 0.5;
        let s = lock_scaling_with(m, kind, LockOptions::default(), n, times, 5 * MS);
        simulate(&s).counter("acquired").unwrap().rate
    };
    for n in [12, 24, 48] {
        let (q, mcs) = (rate("qspinlock", n), rate("mcs", n));
        let ratio = q / mcs;
        assert!(
            (0.75..=1.25).contains(&ratio),
            "{n} CPUs: qspinlock {q:.0}/s, mcs {mcs:.0}/s ({ratio:.2})"
        );
    }
}

/// Nanoseconds per acquisition of a ticket lock on the Opteron with the
/// CPUs `cpus` all contending: each loops take, `atomic_inc()` of the
/// protected line, release, and at once takes a ticket again, so every
/// CPU but the holder waits.
fn opteron_ticket_ns(cpus: Vec<u32>) -> f64 {
    use smpsim_kernel::program::{LockMode, LockingOp, ObjRef, Op};
    use smpsim_kernel::spec::{ObjectDecl, ObjectKind, Policy};
    let mut s = spec(preset_machine("opteron-6172-48"), 2 * MS);
    s.warmup = 200 * US;
    let lock = ObjRef {
        object: spinning_lock(&mut s, "lock", "ticket", LockOptions::default()),
        index: None,
    };
    s.objects.push(ObjectDecl {
        name: "protected".into(),
        kind: ObjectKind::Atomic,
        per_cpu: false,
    });
    let protected = ObjRef {
        object: s.objects.len() as u32 - 1,
        index: None,
    };
    let acquired = counter(&mut s, "acquired");
    let ops = vec![
        lock_op(&lock, LockMode::Exclusive, true),
        Op::Locking(LockingOp::AtomicRmw(protected)),
        lock_op(&lock, LockMode::Exclusive, false),
        Op::Count(acquired),
    ];
    forever(&mut s, "lockers", cpus, Policy::Normal, ops);
    1e9 / simulate(&s).counter("acquired").unwrap().rate
}

/// Least-squares slope of `y` against `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x / n, b + y / n));
    let sxy: f64 = points.iter().map(|&(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = points.iter().map(|&(x, _)| (x - mx) * (x - mx)).sum();
    sxy / sxx
}

/// The slope of a contended ticket lock on the 48-core Opteron, as the
/// model's own mechanism gives it. Per acquisition two writes to the word
/// reach every waiter, the release's `head++` and the next ticket's `xadd`
/// (head and tail share one `arch_spinlock_t` word), and each is followed
/// by one re-fetch per waiter, served one after another at the blocking
/// home, each a data leg (`forward_fraction` x transfer): the time per
/// acquisition grows by `2 x forward_fraction` transfers per waiter. The
/// preset's transfers are SOSP 2013 Table 2's loads of a Modified line
/// (opteron-6172-48.toml): 81 cycles on one die (38.6 ns); across the
/// machine the die, MCM, one-hop and two-hop figures. Asserted within 25%
/// on one die (2-5 waiters: with 1 the holder's critical path, not the
/// line, sets the pace) and over the whole machine (12-47 waiters).
///
/// Boyd-Wickizer et al. ("Non-scalable locks are dangerous", Linux
/// Symposium 2012) model one transfer per waiter on this machine. With the
/// assumed forward fraction of 0.5 the model gave exactly that; the
/// global rules fitted on contended curves (docs/contention.md) have a
/// queued request pay the whole transfer, so the model now gives two: a
/// difference between two models, neither measured on this machine's
/// ticket lock, written down in docs/contention.md.
#[test]
fn opteron_ticket_slope_is_two_data_legs_per_waiter() {
    let m = preset_machine("opteron-6172-48");
    let cost = smpsim_kernel::costs::CostNs::new(&m);
    let curve = |waiters: &[u32]| -> Vec<(f64, f64)> {
        waiters
            .iter()
            .map(|&k| (f64::from(k), opteron_ticket_ns((0..=k).collect())))
            .collect()
    };
    let die = curve(&[2, 3, 4, 5]);
    let same_die = m.costs.line_transfer.same_llc.ns;
    let machine = curve(&[12, 24, 36, 47]);
    let pairs: Vec<f64> = (0..48u32)
        .flat_map(|a| (0..48u32).filter(move |&b| b != a).map(move |b| (a, b)))
        .map(|(a, b)| cost.line_transfer(a, b) as f64)
        .collect();
    let mean_transfer = pairs.iter().sum::<f64>() / pairs.len() as f64;
    let (die_slope, machine_slope) = (slope(&die), slope(&machine));
    let legs = 2.0 * m.coherence.forward_fraction;
    let (same_die, mean_transfer) = (legs * same_die, legs * mean_transfer);
    eprintln!(
        "one die: {die:.0?}, {die_slope:.1} ns per waiter ({legs} x Table 2: {same_die:.1} ns)"
    );
    eprintln!(
        "whole machine: {machine:.0?}, {machine_slope:.1} ns per waiter ({legs} x mean transfer: {mean_transfer:.1} ns)"
    );
    assert!(
        (die_slope / same_die - 1.0).abs() <= 0.25,
        "one die: {die_slope:.1} ns per waiter, {legs} x Table 2 {same_die:.1} ns"
    );
    assert!(
        (machine_slope / mean_transfer - 1.0).abs() <= 0.25,
        "whole machine: {machine_slope:.1} ns per waiter, {legs} x mean transfer {mean_transfer:.1} ns"
    );
}
