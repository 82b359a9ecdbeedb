//! Results to trust (issue 25): nothing counted past the end of the run,
//! the kernel's own complaints where it would complain, hotplug as the
//! kernel allows it, no artificial start-up window, and figures in one
//! result that agree with each other.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// A one-CPU-per-LLC generic-x86 machine of `cpus` CPUs.
fn machine(cpus: u32) -> smpsim_machine::Machine {
    flat_machine(cpus)
}

/// `for (;;) { work(100us); count(x); }` in a 1 ms run: at most 10
/// iterations fit, so at most 10 counts (the loop is planned far ahead of
/// simulated time, but a count is credited only when it happens).
#[test]
fn counts_planned_past_the_end_of_the_run_are_not_counted() {
    for duration in [500 * US, MS, 3 * MS] {
        let mut s = spec(machine(1), duration);
        let x = counter(&mut s, "x");
        forever(
            &mut s,
            "a",
            vec![0],
            Policy::Normal,
            vec![Op::Work(Dist::Const(100 * US)), Op::Count(x)],
        );
        let r = simulate(&s);
        let count = r.counters[0].count;
        let fit = duration / (100 * US);
        assert!(count <= fit, "{count} counts in {duration} ns");
        assert!(count + 1 >= fit, "{count} counts in {duration} ns");
    }
}

/// The same with `mark`/`record`: the histogram's samples, each 100 us,
/// total no more than the run.
#[test]
fn samples_planned_past_the_end_of_the_run_are_not_recorded() {
    let mut s = spec(machine(1), MS);
    let h = histogram(&mut s, "lat");
    forever(
        &mut s,
        "a",
        vec![0],
        Policy::Normal,
        vec![
            Op::Mark(0),
            Op::Work(Dist::Const(100 * US)),
            Op::RecordSince { hist: h, slot: 0 },
        ],
    );
    let r = simulate(&s);
    let hist = &r.histograms[0];
    assert!(hist.count <= 10, "{} samples", hist.count);
    assert!(
        hist.total <= MS as f64 * 1.01,
        "{} ns of samples",
        hist.total
    );
}

/// A count that falls in the warm-up is not a measured one, wherever it
/// was planned.
#[test]
fn counts_in_the_warm_up_are_not_counted() {
    let mut s = spec(machine(1), 2 * MS);
    s.warmup = MS;
    let x = counter(&mut s, "x");
    forever(
        &mut s,
        "a",
        vec![0],
        Policy::Normal,
        vec![Op::Work(Dist::Const(100 * US)), Op::Count(x)],
    );
    let r = simulate(&s);
    // Counts at 1.1 .. 2.0 ms (the one at exactly 1 ms is measured too).
    assert!(
        (10..=11).contains(&r.counters[0].count),
        "{}",
        r.counters[0].count
    );
}

/// `local_irq_disable(); sleep(10us); local_irq_enable();`: the kernel's
/// `__might_sleep()` checks `irqs_disabled()` as well as `in_atomic()`.
#[test]
fn sleeping_with_irqs_disabled_is_reported() {
    let mut s = spec(machine(2), MS);
    forever(
        &mut s,
        "t",
        vec![0],
        Policy::Normal,
        vec![
            Op::LocalIrqDisable,
            Op::Sleep {
                dist: Dist::Const(10 * US),
                overshoot: None,
            },
            Op::LocalIrqEnable,
            Op::Work(Dist::Const(10 * US)),
        ],
    );
    let r = simulate(&s);
    let f = r
        .finding("sleeping_in_atomic")
        .expect("a might_sleep splat");
    assert!(
        f.message
            .contains("BUG: sleeping function called from invalid context")
            && f.message.contains("irqs_disabled(): 1"),
        "{f:?}"
    );
}

/// `local_irq_disable(); synchronize_rcu();` is the same bug.
#[test]
fn synchronize_rcu_with_irqs_disabled_is_reported() {
    let mut s = spec(machine(2), 50 * MS);
    task_group(
        &mut s,
        "t",
        vec![0],
        Policy::Normal,
        0,
        vec![
            Op::LocalIrqDisable,
            Op::SynchronizeRcu,
            Op::LocalIrqEnable,
            Op::Exit,
        ],
    );
    let r = simulate(&s);
    let f = r
        .finding("sleeping_in_atomic")
        .expect("a might_sleep splat");
    assert!(f.message.contains("irqs_disabled(): 1"), "{f:?}");
}

/// Sleeping with IRQs on and preemption on is fine.
#[test]
fn sleeping_in_process_context_is_not_reported() {
    let mut s = spec(machine(2), MS);
    forever(
        &mut s,
        "t",
        vec![0],
        Policy::Normal,
        vec![
            Op::Sleep {
                dist: Dist::Const(10 * US),
                overshoot: None,
            },
            Op::Work(Dist::Const(10 * US)),
        ],
    );
    let r = simulate(&s);
    assert!(
        r.finding("sleeping_in_atomic").is_none(),
        "{:?}",
        r.findings
    );
}
