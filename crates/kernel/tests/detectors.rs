//! Detectors that end a run which could otherwise never end.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

/// One looping task of normal policy on CPU 0.
fn on_cpu0(s: &mut Spec, name: &str, ops: Vec<Op>) {
    forever(s, name, vec![0], Policy::Normal, ops);
}

/// A loop whose ops take no time would never let simulated time reach the
/// end of the run: it is reported as a soft lockup naming the op, and the
/// run stops.
#[test]
fn a_loop_without_time_is_a_soft_lockup_and_stops_the_run() {
    let mut s = spec(flat_machine(2), 1_000_000_000);
    let c = counter(&mut s, "c");
    on_cpu0(&mut s, "spinner", vec![Op::Count(c)]);
    let r = simulate(&s);
    let f = r.finding("soft_lockup").expect("a soft lockup");
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
    on_cpu0(
        &mut s,
        "worker",
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
    on_cpu0(
        &mut s,
        "t",
        vec![
            Op::mutex_lock(lock.clone()),
            Op::mutex_unlock(lock),
            Op::Work(Dist::Const(100)),
        ],
    );
    let r = simulate(&s);
    let f = r
        .finding("bad_percpu_index")
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
    on_cpu0(
        &mut s,
        "t",
        vec![
            Op::Preempt(PreemptOp::PreemptEnable),
            Op::Work(Dist::Const(1_000)),
        ],
    );
    let r = simulate(&s);
    let f = r
        .finding("preempt_count_underflow")
        .expect("a preempt_count underflow finding");
    assert!(f.message.contains("t/0") && f.occurrences > 1, "{f:?}");
    assert_eq!(r.stats.simulated_ns, 2_000_000);
}

/// Taking a lock the task already holds is lockdep's "possible recursive
/// locking detected" (and, as in the kernel, a deadlock); a recursive read
/// of an rwlock is allowed.
#[test]
fn recursive_locking_is_reported_but_recursive_reads_are_not() {
    let run = |kind: &str, first: LockMode, second: LockMode| {
        let mut s = spec(flat_machine(2), 2_000_000);
        let lock = ObjRef {
            object: if kind == "mutex" {
                mutex(&mut s, "l", true, false)
            } else {
                spinning_lock(&mut s, "l", kind, LockOptions::default())
            },
            index: None,
        };
        let take = |mode| {
            Op::Locking(LockingOp::Lock {
                lock: lock.clone(),
                mode,
                irqsave: false,
            })
        };
        let drop = |mode| {
            Op::Locking(LockingOp::Unlock {
                lock: lock.clone(),
                mode,
                irqrestore: false,
            })
        };
        on_cpu0(
            &mut s,
            "t",
            vec![
                take(first),
                take(second),
                drop(second),
                drop(first),
                Op::Work(Dist::Const(100)),
            ],
        );
        simulate(&s)
            .finding("recursive_locking")
            .map(|f| f.message.clone())
    };
    let x = LockMode::Exclusive;
    let m = run("qspinlock", x, x).expect("spinlock taken twice");
    assert!(m.contains("spin_lock") && m.contains("(l)"), "{m}");
    assert!(run("mutex", x, x).unwrap().contains("mutex_lock"));
    assert!(run("qrwlock", LockMode::Write, LockMode::Read).is_some());
    assert_eq!(run("qrwlock", LockMode::Read, LockMode::Read), None);
}

/// Dividing by zero in an expression is the kernel's divide error: reported
/// with the op, and the run stops.
#[test]
fn a_division_by_zero_is_a_divide_error() {
    let mut s = spec(flat_machine(2), 1_000_000);
    on_cpu0(
        &mut s,
        "t",
        vec![
            Op::Set {
                slot: 0,
                expr: Expr::Bin(
                    BinOp::Div,
                    Box::new(Expr::Const(10)),
                    Box::new(Expr::Var(1)),
                ),
            },
            Op::Work(Dist::Const(100)),
        ],
    );
    let r = simulate(&s);
    let f = r.finding("divide_error").expect("a divide error");
    assert!(
        f.message.contains("10 / 0") && f.message.contains("t/0"),
        "{f:?}"
    );
    assert!(r.stats.simulated_ns < 1_000_000);
}

/// A CPU that does not exist, named by `cpu_down()` or a cross-CPU call, is
/// reported with the op rather than skipped in silence.
#[test]
fn ops_on_a_cpu_that_does_not_exist_are_reported() {
    for op in [
        Op::Hotplug(HotplugOp::CpuOffline(Expr::Const(9))),
        smp_call_function_single(Expr::Const(-4), 100, true),
    ] {
        let mut s = spec(flat_machine(2), 1_000_000);
        on_cpu0(&mut s, "t", vec![op, Op::Work(Dist::Const(100_000))]);
        let r = simulate(&s);
        let f = r.finding("bad_cpu").expect("a bad CPU");
        assert!(f.message.contains("no such CPU"), "{f:?}");
    }
}

/// Absurd durations saturate: time never wraps, and the run ends at its
/// horizon instead of looping.
#[test]
fn durations_near_two_to_the_64_do_not_wrap_time() {
    for ops in [
        vec![
            Op::Work(Dist::Const(u64::MAX)),
            Op::Work(Dist::Const(u64::MAX)),
        ],
        vec![Op::Work(Dist::Const(1_000)), sleep_for(u64::MAX)],
    ] {
        let mut s = spec(flat_machine(2), 1_000_000);
        on_cpu0(&mut s, "t", ops);
        let r = simulate(&s);
        assert_eq!(r.stats.simulated_ns, 1_000_000);
    }
}

/// A loop count or `units` that comes out negative runs no times, and says
/// so.
#[test]
fn negative_counts_are_reported() {
    let mut s = spec(flat_machine(2), 1_000_000);
    on_cpu0(
        &mut s,
        "t",
        vec![
            Op::LoopCount {
                slot: 0,
                expr: Expr::Const(-3),
            },
            Op::Smp(SmpOp::SmpCallFunctionSingle {
                cpu: Expr::Const(1),
                func: CallFunc {
                    cost: Dist::Const(100),
                    units: Some(Expr::Const(-2)),
                    handler: None,
                },
                wait: true,
            }),
            Op::Work(Dist::Const(100)),
        ],
    );
    s.task_groups[0].program.slots = 1;
    let r = simulate(&s);
    let f = r.finding("negative_count").expect("a negative count");
    assert!(f.message.contains("loop count is negative (-3)"), "{f:?}");
    assert!(f.occurrences > 1, "{f:?}");
    assert_eq!(r.stats.simulated_ns, 1_000_000);
}

/// `spin_lock_irqsave()` paired with plain `spin_unlock()` leaves IRQs
/// off and the saved flags piling up: no overflow of the nesting record.
#[test]
fn irqsave_without_irqrestore_does_not_overflow() {
    let mut s = spec(flat_machine(2), 1_000_000);
    let lock = ObjRef {
        object: spinning_lock(&mut s, "l", "qspinlock", LockOptions::default()),
        index: None,
    };
    on_cpu0(
        &mut s,
        "t",
        vec![
            Op::Locking(LockingOp::Lock {
                lock: lock.clone(),
                mode: LockMode::Exclusive,
                irqsave: true,
            }),
            Op::Locking(LockingOp::Unlock {
                lock,
                mode: LockMode::Exclusive,
                irqrestore: false,
            }),
            Op::Work(Dist::Const(100)),
        ],
    );
    let r = simulate(&s);
    assert_eq!(r.stats.simulated_ns, 1_000_000);
}

/// An `rcu_read_unlock()` outside a read-side critical section is what
/// lockdep says about it, not a sleeping-in-atomic or preempt_enable()
/// report.
#[test]
fn rcu_read_unlock_without_lock_is_lockdeps_bad_unlock_balance() {
    let mut s = spec(flat_machine(2), 1_000_000);
    on_cpu0(
        &mut s,
        "t",
        vec![Op::Rcu(RcuOp::RcuReadUnlock), Op::Work(Dist::Const(1_000))],
    );
    let r = simulate(&s);
    let f = r
        .finding("bad_unlock_balance")
        .expect("a bad unlock balance");
    assert!(
        f.message.contains("(rcu_read_lock) with rcu_read_unlock()"),
        "{f:?}"
    );
    assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
}

/// Issue 37, item 5: `x = task_index; work(1us); y = 5 / x; work(100us);
/// count(c); for (;;) { work(10us); count(d); }`. The division is planned
/// ahead of the batch (1 us of work before it) yet happens at 1 us: the
/// divide error is dated there, the run ends there, and nothing after the
/// division is counted.
#[test]
fn a_divide_error_ahead_of_the_batch_stops_the_run_when_it_happens() {
    let mut s = spec(flat_machine(2), 1_000_000);
    let c = counter(&mut s, "c");
    let d = counter(&mut s, "d");
    on_cpu0(
        &mut s,
        "a",
        vec![
            Op::Set {
                slot: 0,
                expr: Expr::TaskIndex,
            },
            Op::Work(Dist::Const(1_000)),
            Op::Set {
                slot: 1,
                expr: Expr::Bin(BinOp::Div, Box::new(Expr::Const(5)), Box::new(Expr::Var(0))),
            },
            Op::Work(Dist::Const(100_000)),
            Op::Count(c),
            Op::Work(Dist::Const(10_000)),
            Op::Count(d),
        ],
    );
    s.task_groups[0].program.slots = 2;
    let r = simulate(&s);
    let f = r.finding("divide_error").expect("a divide error");
    assert!(f.message.contains("5 / 0"), "{f:?}");
    assert_eq!(f.time_ns, 1_000, "{f:?}");
    assert_eq!(r.stats.simulated_ns, 1_000);
    assert_eq!(r.counter("c").unwrap().count, 0);
    assert_eq!(r.counter("d").unwrap().count, 0);
    // Each CPU's time is the run's 1 us, the task's user time its 1 us.
    for cpu in &r.cpus {
        assert_eq!(cpu.times.total(), 1_000, "CPU {}", cpu.cpu);
    }
}

/// A divide error in a task's first op, with nothing planned before it,
/// stops the run at time zero.
#[test]
fn a_divide_error_at_boot_stops_the_run_at_zero() {
    let mut s = spec(flat_machine(2), 1_000_000);
    let c = counter(&mut s, "c");
    on_cpu0(
        &mut s,
        "a",
        vec![
            Op::Set {
                slot: 0,
                expr: Expr::Bin(
                    BinOp::Rem,
                    Box::new(Expr::Const(5)),
                    Box::new(Expr::Const(0)),
                ),
            },
            Op::Count(c),
            Op::Work(Dist::Const(10_000)),
        ],
    );
    let r = simulate(&s);
    assert_eq!(
        r.finding("divide_error").expect("a divide error").time_ns,
        0
    );
    assert_eq!(r.stats.simulated_ns, 0);
    assert_eq!(r.counter("c").unwrap().count, 0);
}

/// A negative loop count planned after 3 us of work is dated at 3 us, when
/// the task reaches it, not when its batch was planned (0 ns).
#[test]
fn a_negative_count_is_dated_when_it_happens() {
    let mut s = spec(flat_machine(2), 1_000_000);
    on_cpu0(
        &mut s,
        "t",
        vec![
            Op::Work(Dist::Const(3_000)),
            Op::LoopCount {
                slot: 0,
                expr: Expr::Const(-3),
            },
            Op::Work(Dist::Const(100_000)),
        ],
    );
    s.task_groups[0].program.slots = 1;
    let r = simulate(&s);
    let f = r.finding("negative_count").expect("a negative count");
    assert_eq!(f.time_ns, 3_000, "{f:?}");
}

/// Issue 37, item 17: IRQs off from 1 ms for 50 ms with `watchdog_thresh`
/// at 10 ms. The NMI watchdog sees the hard lockup when the section
/// crosses the threshold (11 ms), not when it ends (51 ms); the soft
/// lockup (twice the threshold, preemption off as well) at 21 ms.
#[test]
fn lockups_are_dated_when_the_threshold_is_crossed() {
    let mut s = spec(flat_machine(2), 100 * 1_000_000);
    s.knobs.watchdog_thresh = 10_000_000;
    task_group(
        &mut s,
        "t",
        vec![0],
        Policy::Normal,
        0,
        vec![
            Op::Work(Dist::Const(1_000_000)),
            Op::SyscallEnter,
            Op::Preempt(PreemptOp::PreemptDisable),
            Op::Preempt(PreemptOp::LocalIrqDisable),
            Op::Work(Dist::Const(50_000_000)),
            Op::Preempt(PreemptOp::LocalIrqEnable),
            Op::Preempt(PreemptOp::PreemptEnable),
            Op::SyscallExit,
            Op::Exit,
        ],
    );
    let r = simulate(&s);
    let hard = r.finding("hard_lockup").expect("a hard lockup");
    assert!((11_000_000..11_010_000).contains(&hard.time_ns), "{hard:?}");
    let soft = r.finding("soft_lockup").expect("a soft lockup");
    assert!((21_000_000..21_010_000).contains(&soft.time_ns), "{soft:?}");
}
