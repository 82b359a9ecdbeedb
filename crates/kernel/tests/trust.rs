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
            Op::Preempt(PreemptOp::LocalIrqDisable),
            sleep_for(10 * US),
            Op::Preempt(PreemptOp::LocalIrqEnable),
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
            Op::Preempt(PreemptOp::LocalIrqDisable),
            Op::Rcu(RcuOp::SynchronizeRcu),
            Op::Preempt(PreemptOp::LocalIrqEnable),
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
        vec![sleep_for(10 * US), Op::Work(Dist::Const(10 * US))],
    );
    let r = simulate(&s);
    assert!(
        r.finding("sleeping_in_atomic").is_none(),
        "{:?}",
        r.findings
    );
}

/// Where each task of a result ran at the end and how much user time
/// each CPU had.
fn cpu_user(r: &RunResult) -> Vec<u64> {
    r.cpus.iter().map(|c| c.times.user).collect()
}

/// `set_cpu_offline(1); set_cpu_offline(0);` while a pinned task runs on
/// CPU 1: CPU 1 goes, its task is pushed off ("no longer affine"), and the
/// last online CPU is refused (-EBUSY).
#[test]
fn the_last_online_cpu_cannot_go_offline() {
    let mut s = spec(machine(2), MS);
    task_group(
        &mut s,
        "a",
        vec![0],
        Policy::Normal,
        0,
        vec![
            Op::Hotplug(HotplugOp::CpuOffline(Expr::Const(1))),
            Op::Hotplug(HotplugOp::CpuOffline(Expr::Const(0))),
            Op::Work(Dist::Const(10 * US)),
            Op::Jump(2),
        ],
    );
    forever(
        &mut s,
        "pinned",
        vec![1],
        Policy::Normal,
        vec![Op::Work(Dist::Const(10 * US))],
    );
    let r = simulate(&s);
    let f = r.finding("offline_last_cpu").expect("cpu_down refused");
    assert!(f.message.contains("-EBUSY"), "{f:?}");
    let user = cpu_user(&r);
    // CPU 1 ran its task only until it went offline at the start.
    assert!(user[1] < 50 * US, "{user:?}");
    assert!(user[0] > 900 * US, "{user:?}");
}

/// A task offlining its own CPU is migrated off it (takedown_cpu():
/// balance_push moves every task away from the dying CPU).
#[test]
fn a_task_offlining_its_own_cpu_moves_off_it() {
    let mut s = spec(machine(2), MS);
    task_group(
        &mut s,
        "a",
        vec![1],
        Policy::Normal,
        0,
        vec![
            Op::Hotplug(HotplugOp::CpuOffline(Expr::Const(1))),
            Op::Work(Dist::Const(10 * US)),
            Op::Jump(1),
        ],
    );
    let r = simulate(&s);
    let user = cpu_user(&r);
    assert!(user[1] < 20 * US, "{user:?}");
    assert!(user[0] > 900 * US, "{user:?}");
}

/// smp_call_function_single() to an offline CPU sends nothing
/// (generic_exec_single() returns -ENXIO): the error the scenario does not
/// look at is reported.
#[test]
fn a_cross_cpu_call_to_an_offline_cpu_is_reported() {
    let mut s = spec(machine(2), MS);
    task_group(
        &mut s,
        "a",
        vec![0],
        Policy::Normal,
        0,
        vec![
            Op::Hotplug(HotplugOp::CpuOffline(Expr::Const(1))),
            smp_call_function_single(Expr::Const(1), 100, true),
            Op::Exit,
        ],
    );
    let r = simulate(&s);
    let f = r
        .finding("ipi_offline_cpu")
        .expect("an IPI to an offline CPU");
    assert!(
        f.message.contains("CPU 1") || f.message.contains("CPU1"),
        "{f:?}"
    );
}

/// A big machine of one process starts all at once: every CPU's first task
/// is running from t = 0 (no first switch serialised on the mm's cpumask
/// line), and code that never disables IRQs has no IRQ-off section as long
/// as the run.
#[test]
fn a_big_machine_starts_every_cpu_at_once() {
    let cpus = 512;
    let mut s = spec(machine(cpus), 20 * US);
    task_group(
        &mut s,
        "t",
        (0..cpus).collect(),
        Policy::Normal,
        0,
        vec![Op::Work(Dist::Const(US)), Op::Jump(0)],
    );
    let r = simulate(&s);
    for c in &r.cpus {
        assert!(c.times.user >= 19 * US, "CPU{}: {:?}", c.cpu, c.times);
        assert!(c.max_irq_off_ns < US, "CPU{}: {}", c.cpu, c.max_irq_off_ns);
    }
}

/// An rwsem object `name` whose writers spin.
fn rwsem(s: &mut Spec, name: &str) -> ObjRef {
    s.objects.push(ObjectDecl {
        name: name.into(),
        kind: ObjectKind::Rwsem {
            spin: true,
            reader_spin: false,
        },
        per_cpu: false,
    });
    ObjRef {
        object: s.objects.len() as u32 - 1,
        index: None,
    }
}

/// An rwsem's lock_stat rows: wait time comes with contentions (the
/// kernel's lock_stat records wait time only for an acquisition that was
/// contended), on the write row and the read row alike.
#[test]
fn rwsem_wait_time_comes_with_contentions() {
    let mut s = spec(machine(8), 5 * MS);
    let lock = rwsem(&mut s, "sem");
    forever(
        &mut s,
        "readers",
        (0..6).collect(),
        Policy::Normal,
        vec![
            lock_op(&lock, LockMode::Read, true),
            Op::Work(Dist::Const(2 * US)),
            lock_op(&lock, LockMode::Read, false),
            Op::Work(Dist::Const(US)),
        ],
    );
    forever(
        &mut s,
        "writers",
        vec![6, 7],
        Policy::Normal,
        vec![
            lock_op(&lock, LockMode::Write, true),
            Op::Work(Dist::Const(US)),
            lock_op(&lock, LockMode::Write, false),
            Op::Work(Dist::Const(5 * US)),
        ],
    );
    let r = simulate(&s);
    let row = &r.locks[0];
    assert!(row.wait_total_ns == 0 || row.contentions > 0, "{row:?}");
    let read = row.read.expect("a read row");
    assert!(read.wait_total_ns == 0 || read.contentions > 0, "{read:?}");
}

/// An rwsem nobody contends (one per CPU, each used by its CPU's task):
/// no contentions and no wait time, as lock_stat shows it.
#[test]
fn an_uncontended_rwsem_has_no_wait_time() {
    let mut s = spec(machine(4), 2 * MS);
    s.objects.push(ObjectDecl {
        name: "sem".into(),
        kind: ObjectKind::Rwsem {
            spin: true,
            reader_spin: false,
        },
        per_cpu: true,
    });
    let lock = ObjRef {
        object: 0,
        index: Some(Expr::ThisCpu),
    };
    forever(
        &mut s,
        "t",
        (0..4).collect(),
        Policy::Normal,
        vec![
            lock_op(&lock, LockMode::Write, true),
            Op::Work(Dist::Const(US)),
            lock_op(&lock, LockMode::Write, false),
            lock_op(&lock, LockMode::Read, true),
            Op::Work(Dist::Const(US)),
            lock_op(&lock, LockMode::Read, false),
        ],
    );
    let r = simulate(&s);
    let row = &r.locks[0];
    assert!(row.acquisitions > 1000, "{row:?}");
    assert_eq!((row.contentions, row.wait_total_ns), (0, 0), "{row:?}");
    let read = row.read.expect("a read row");
    assert_eq!((read.contentions, read.wait_total_ns), (0, 0), "{read:?}");
}

/// Per-CPU and per-task times cover the measured part of the run only,
/// like lock_stat and counters: each CPU's times add up to the duration
/// less the warm-up, and a task group's to its tasks' share of it.
#[test]
fn cpu_and_task_times_exclude_the_warm_up() {
    let mut s = spec(machine(4), 6 * MS);
    s.warmup = 2 * MS;
    let lock = rwsem(&mut s, "sem");
    forever(
        &mut s,
        "t",
        (0..4).collect(),
        Policy::Normal,
        vec![
            lock_op(&lock, LockMode::Write, true),
            Op::Work(Dist::Exp { mean: 3 * US }),
            lock_op(&lock, LockMode::Write, false),
            Op::Sleep {
                dist: Dist::Exp { mean: 5 * US },
                overshoot: None,
            },
        ],
    );
    let r = simulate(&s);
    for c in &r.cpus {
        assert_eq!(c.times.total(), 4 * MS, "CPU{}: {:?}", c.cpu, c.times);
    }
    let g = &r.task_groups[0].total;
    let task_total = g.user + g.sys + g.sleep + g.runnable + g.irq;
    // Context switches are the CPU's (sys), no task's: a little is missing.
    assert!(task_total <= 4 * 4 * MS, "{g:?}");
    assert!(task_total >= 4 * 4 * MS * 8 / 10, "{g:?}");
    let on_cpu: u64 = r.cpus.iter().map(|c| c.times.user).sum();
    assert_eq!(on_cpu, g.user);
}

/// Issue 37, item 10: 32 tasks each `sleep(999999999s)` in a 10^9 s run.
/// Their summed sleep (3.2e19 ns) exceeds u64: the group's total
/// saturates and says so, instead of wrapping to 423,539,246 s per task;
/// each task's own figure is exact, and the mean wall time is not wrapped.
#[test]
fn group_totals_saturate_and_say_so_instead_of_wrapping() {
    const S: u64 = 1_000_000_000;
    let mut s = spec(flat_machine(2), 1_000_000_000 * S);
    let placement = (0..32).map(|i| i % 2).collect();
    task_group(
        &mut s,
        "a",
        placement,
        Policy::Normal,
        0,
        vec![sleep_for(999_999_999 * S), Op::Exit],
    );
    let r = simulate(&s);
    let g = &r.task_groups[0];
    assert!(g.total_saturated, "{g:?}");
    assert_eq!(g.total.sleep, u64::MAX);
    let per_task: u128 = g.per_task.iter().map(|t| u128::from(t.times.sleep)).sum();
    assert!(per_task > u128::from(u64::MAX), "{per_task}");
    assert!(g
        .per_task
        .iter()
        .all(|t| t.times.sleep >= 999_999_999 * S - S));
    assert_eq!(g.exited, 32);
    assert!(g.wall_mean_ns >= 999_999_999 * S, "{}", g.wall_mean_ns);
}

/// Issue 37, item 17: 2 ms samples read min 1,999,872 and max 2,000,895
/// from the buckets. The exact smallest and largest samples are kept
/// beside them, and the quantiles stay within that range.
#[test]
fn histograms_keep_their_exact_min_and_max() {
    let mut s = spec(flat_machine(2), 20 * MS);
    let h = histogram(&mut s, "h");
    group(
        &mut s,
        "t",
        vec![0],
        Policy::Normal,
        vec![
            Op::Mark(0),
            Op::Work(Dist::Const(2 * MS)),
            Op::RecordSince { hist: h, slot: 0 },
            Op::Mark(0),
            Op::Work(Dist::Const(2 * MS + 7)),
            Op::RecordSince { hist: h, slot: 0 },
        ],
        1,
    );
    let r = simulate(&s);
    let h = r.histogram("h").unwrap();
    assert!(h.count >= 8, "{h:?}");
    assert_eq!((h.min, h.max), (2 * MS, 2 * MS + 7), "{h:?}");
    for q in [h.p50, h.p90, h.p99, h.p999] {
        assert!((h.min..=h.max).contains(&q), "{h:?}");
    }
}
