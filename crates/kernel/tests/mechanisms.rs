//! Behaviour of the kernel mechanisms on small hand-built systems.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// The caller of `smp_call_function_single(wait=1)` waits while the target
/// has IRQs off, and is released only when they come back on.
#[test]
fn ipi_to_irqs_off_cpu_is_handled_when_irqs_return() {
    let run = |irq_off: bool| {
        let mut s = spec(flat_machine(2), 50 * MS);
        let h = histogram(&mut s, "call");
        let body = if irq_off {
            vec![
                Op::Preempt(PreemptOp::LocalIrqDisable),
                Op::Work(Dist::Const(2 * MS)),
                Op::Preempt(PreemptOp::LocalIrqEnable),
                Op::Work(Dist::Const(10 * US)),
            ]
        } else {
            vec![Op::Work(Dist::Const(2 * MS))]
        };
        group(&mut s, "target", vec![1], Policy::Normal, body, 0);
        group(
            &mut s,
            "caller",
            vec![0],
            Policy::Normal,
            vec![
                Op::Mark(0),
                smp_call_function_single(Expr::Const(1), 100, true),
                Op::RecordSince { hist: h, slot: 0 },
                sleep_for(700 * US),
            ],
            1,
        );
        simulate(&s)
    };
    let fast = run(false);
    let slow = run(true);
    let f = fast.histogram("call").unwrap();
    let w = slow.histogram("call").unwrap();
    assert!(
        f.max < 5 * US,
        "IRQs on: a call takes an IPI round trip, got {f:?}"
    );
    assert!(
        w.max > MS,
        "IRQs off for 2 ms: some call waits for them, got {w:?}"
    );
    // The waiting caller had preemption disabled all along.
    assert!(slow.cpus[0].max_preempt_off_ns >= w.max - 2 * US);
    assert!(slow.cpus[1].max_irq_off_ns >= 2 * MS);
}

fn lockers(spin: bool, owner_sleeps: bool) -> RunResult {
    let mut s = spec(flat_machine(4), 100 * MS);
    let m = mutex(&mut s, "m", spin, false);
    let lock = ObjRef {
        object: m,
        index: None,
    };
    let hold = if owner_sleeps {
        sleep_for(200 * US)
    } else {
        Op::Work(Dist::Exp { mean: 5 * US })
    };
    group(
        &mut s,
        "lockers",
        vec![0, 1, 2, 3],
        Policy::Normal,
        vec![
            Op::mutex_lock(lock.clone()),
            hold,
            Op::mutex_unlock(lock),
            Op::Work(Dist::Exp { mean: 5 * US }),
        ],
        0,
    );
    simulate(&s)
}

#[test]
fn no_spin_mutex_never_spins() {
    let r = lockers(false, false);
    let l = r.lock("m").unwrap();
    assert!(l.contentions > 100, "{l:?}");
    assert_eq!(l.spin_total_ns, 0);
    assert_eq!(r.task_groups[0].total.spin, 0);
    assert!(r.task_groups[0].total.sleep > 0);
}

#[test]
fn waiters_spin_on_a_running_owner() {
    let r = lockers(true, false);
    let l = r.lock("m").unwrap();
    assert!(
        l.spin_total_ns > 10 * MS,
        "contended short holds are spun on: {l:?}"
    );
}

#[test]
fn waiters_do_not_spin_on_a_sleeping_owner() {
    let r = lockers(true, true);
    let g = &r.task_groups[0].total;
    let l = r.lock("m").unwrap();
    assert!(l.contentions > 50, "{l:?}");
    // The owner sleeps while holding: spinners give up at once and sleep.
    assert!(
        g.spin * 100 < g.sleep,
        "spin {} vs sleep {}",
        g.spin,
        g.sleep
    );
}

/// A SCHED_FIFO task waking from an hrtimer preempts a CFS CPU hog at once.
#[test]
fn fifo_wakeup_preempts_cfs() {
    let mut s = spec(flat_machine(1), 50 * MS);
    let h = histogram(&mut s, "late");
    group(
        &mut s,
        "hog",
        vec![0, 0],
        Policy::Normal,
        vec![Op::Work(Dist::Const(10 * MS))],
        0,
    );
    group(
        &mut s,
        "rt",
        vec![0],
        Policy::Fifo(20),
        vec![Op::Sleep {
            dist: Dist::Const(500 * US),
            overshoot: Some(h),
        }],
        0,
    );
    let r = simulate(&s);
    let late = r.histogram("late").unwrap();
    assert!(late.count > 50);
    let c = &s.machine.costs;
    // The hrtimer interrupt, its try_to_wake_up() (charged to the
    // interrupt), the switch.
    let expect = (c.irq_entry_exit.ns + c.wakeup.ns + c.context_switch.ns) as u64;
    assert!(late.max <= expect + 100, "{late:?} vs {expect}");
}

/// A CPU stuck with preemption disabled delays the RT wakeup: the
/// preempt-disabled section is what the latency tracker sees.
#[test]
fn preempt_off_section_delays_rt_wakeup() {
    let mut s = spec(flat_machine(1), 50 * MS);
    let h = histogram(&mut s, "late");
    group(
        &mut s,
        "kernel",
        vec![0],
        Policy::Normal,
        vec![
            Op::Preempt(PreemptOp::PreemptDisable),
            Op::Work(Dist::Const(3 * MS)),
            Op::Preempt(PreemptOp::PreemptEnable),
            Op::Work(Dist::Const(US)),
        ],
        0,
    );
    group(
        &mut s,
        "rt",
        vec![0],
        Policy::Fifo(50),
        vec![Op::Sleep {
            dist: Dist::Const(700 * US),
            overshoot: Some(h),
        }],
        0,
    );
    let r = simulate(&s);
    assert!(r.histogram("late").unwrap().max > MS);
    assert!(r.cpus[0].max_preempt_off_ns >= 3 * MS);
}

#[test]
fn runs_are_deterministic() {
    let s = global_mutex_bench(32, US, 20 * US, 20 * MS);
    assert_eq!(simulate(&s), simulate(&s));
    let mut other = s.clone();
    other.seed = 2;
    assert_ne!(simulate(&s).counters, simulate(&other).counters);
}

/// A run stopped at arbitrary simulated times and resumed (a pilot that
/// is the start of the run it prices) gives the result of one that ran
/// through, to the byte.
#[test]
fn a_run_stopped_and_resumed_is_the_run_that_ran_through() {
    let s = global_mutex_bench(32, US, 20 * US, 20 * MS);
    let mut sim = Simulation::new(&s);
    for stop in [1, 777, 3 * MS + 17, 3 * MS + 17, 11 * MS] {
        assert!(!sim.advance(stop));
        assert_eq!(sim.reached(), stop);
    }
    assert!(sim.advance(u64::MAX));
    assert!(sim.advance(u64::MAX), "over stays over");
    assert_eq!(sim.finish(), simulate(&s));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Whatever the load, every CPU's time adds up to the run's duration,
    /// tasks never get more CPU than the CPUs gave, and every acquisition
    /// of the lock is matched by the counter of completed critical sections.
    #[test]
    fn cpu_time_is_conserved(cpus in 1u32..12, hold in 100u64..5_000, think in 100u64..50_000, spin in proptest::bool::ANY) {
        let mut s = global_mutex_bench(cpus, hold, think, 5 * MS);
        if !spin {
            s.objects[0].kind = ObjectKind::Mutex { spin: false };
        }
        let r = simulate(&s);
        let mut busy = 0;
        for c in &r.cpus {
            proptest::prop_assert_eq!(c.times.total(), s.duration);
            busy += c.times.user + c.times.sys + c.times.spin;
        }
        let t = &r.task_groups[0].total;
        proptest::prop_assert!(t.user + t.sys <= busy);
        let acquired = r.lock("global").unwrap().acquisitions;
        let done = r.counter("acquired").unwrap().count;
        proptest::prop_assert!(acquired >= done && acquired <= done + cpus as u64);
    }
}

/// With the preemptible-wait series a waker of higher priority runs on the
/// CPU that waits in csd_lock_wait(); without it, it waits for the IPI.
#[test]
fn preemptible_csd_wait_lets_rt_task_run() {
    let run = |preemptible: bool| {
        let mut s = spec(flat_machine(2), 60 * MS);
        s.knobs.csd_wait_preemptible = preemptible;
        let late = histogram(&mut s, "rt_late");
        group(
            &mut s,
            "irqs_off",
            vec![1],
            Policy::Normal,
            vec![
                Op::Preempt(PreemptOp::LocalIrqDisable),
                Op::Work(Dist::Const(5 * MS)),
                Op::Preempt(PreemptOp::LocalIrqEnable),
                Op::Work(Dist::Const(10 * US)),
            ],
            0,
        );
        group(
            &mut s,
            "caller",
            vec![0],
            Policy::Normal,
            vec![Op::Smp(SmpOp::SmpCallFunctionMany {
                cpus: CpuSet::List(vec![Expr::Const(1)]),
                func: call_func(200),
                wait: true,
            })],
            0,
        );
        group(
            &mut s,
            "rt",
            vec![0],
            Policy::Fifo(99),
            vec![
                Op::Sleep {
                    dist: Dist::Const(700 * US),
                    overshoot: Some(late),
                },
                Op::Work(Dist::Const(5 * US)),
            ],
            0,
        );
        simulate(&s)
    };
    let off = run(false);
    let on = run(true);
    let (l_off, l_on) = (
        off.histogram("rt_late").unwrap(),
        on.histogram("rt_late").unwrap(),
    );
    assert!(
        l_off.max > MS,
        "preempt-off wait delays the RT task: {l_off:?}"
    );
    assert!(l_on.max < 10 * US, "preemptible wait lets it run: {l_on:?}");
    assert!(off.cpus[0].max_preempt_off_ns > MS);
    assert!(
        on.cpus[0].max_preempt_off_ns < 10 * US,
        "{}",
        on.cpus[0].max_preempt_off_ns
    );
}

/// smp_call_function_many waits for the slowest target; mm_cpumask picks
/// the CPUs running the caller's mm.
#[test]
fn call_many_waits_for_every_target_of_the_mm() {
    let mut s = spec(flat_machine(4), 20 * MS);
    let h = histogram(&mut s, "flush");
    // CPU 1 and 2 run threads of the caller's mm, CPU 3 another process.
    group(
        &mut s,
        "sibling",
        vec![1, 2],
        Policy::Normal,
        vec![Op::Work(Dist::Const(MS))],
        0,
    );
    s.task_groups.last_mut().unwrap().mm = 100;
    group(
        &mut s,
        "other",
        vec![3],
        Policy::Normal,
        vec![Op::Work(Dist::Const(MS))],
        0,
    );
    group(
        &mut s,
        "caller",
        vec![0],
        Policy::Normal,
        vec![
            Op::Mark(0),
            Op::Smp(SmpOp::SmpCallFunctionMany {
                cpus: CpuSet::MmCpumask,
                func: CallFunc {
                    cost: Dist::Const(100),
                    units: Some(Expr::Const(33)),
                    handler: None,
                },
                wait: true,
            }),
            Op::RecordSince { hist: h, slot: 0 },
            sleep_for(100 * US),
        ],
        1,
    );
    s.task_groups.last_mut().unwrap().mm = 100;
    let r = simulate(&s);
    let flush = r.histogram("flush").unwrap();
    // Two targets: send costs, one IPI latency, 33 x 100 ns of flushing.
    let c = &s.machine.costs;
    let floor = (c.ipi_latency.ns + c.irq_entry_exit.ns) as u64 + 3_300;
    assert!(flush.min >= floor, "{flush:?} vs {floor}");
    assert!(flush.max < floor + 2 * US, "{flush:?}");
    // CPU 3 never saw an IPI: no irq time there.
    assert_eq!(r.cpus[3].times.irq, 0);
    assert!(r.cpus[1].times.irq > 0 && r.cpus[2].times.irq > 0);
}

/// Spinlock waiters spin with preemption off; with irqsave an IPI to a
/// waiting or holding CPU waits too.
#[test]
fn spinlock_contention_is_preempt_off_and_irqsave_delays_ipis() {
    let mut s = spec(flat_machine(3), 30 * MS);
    let l = s.objects.len() as u32;
    s.objects.push(ObjectDecl {
        name: "zone".into(),
        kind: ObjectKind::Spinlock {
            kind: smpsim_kernel::locking::qspinlock::KIND.handle(),
            options: Default::default(),
        },
        per_cpu: false,
    });
    let h = histogram(&mut s, "ipi");
    let lock = ObjRef {
        object: l,
        index: None,
    };
    group(
        &mut s,
        "holders",
        vec![0, 1],
        Policy::Normal,
        vec![
            Op::Locking(LockingOp::Lock {
                lock: lock.clone(),
                mode: LockMode::Exclusive,
                irqsave: true,
            }),
            Op::Work(Dist::Const(300 * US)),
            Op::Locking(LockingOp::Unlock {
                lock,
                mode: LockMode::Exclusive,
                irqrestore: true,
            }),
            Op::Work(Dist::Const(10 * US)),
        ],
        0,
    );
    group(
        &mut s,
        "caller",
        vec![2],
        Policy::Normal,
        vec![
            Op::Mark(0),
            smp_call_function_single(Expr::Const(1), 100, true),
            Op::RecordSince { hist: h, slot: 0 },
            sleep_for(77 * US),
        ],
        1,
    );
    let r = simulate(&s);
    let zone = r.lock("zone").unwrap();
    assert!(zone.contentions > 10, "{zone:?}");
    // Each holder waits for the other's 300 us hold: sections of ~600 us.
    assert!(
        r.cpus[0].max_preempt_off_ns >= 550 * US,
        "{}",
        r.cpus[0].max_preempt_off_ns
    );
    assert!(r.cpus[1].max_irq_off_ns >= 550 * US);
    // CPU 1 is almost always IRQs-off: the caller waits hundreds of us.
    assert!(r.histogram("ipi").unwrap().p50 > 100 * US);
    assert!(
        zone.wait_max_ns <= 320 * US,
        "FIFO: at most one hold ahead: {zone:?}"
    );
}

/// The lazy mm_count line is a bottleneck shared by every CPU; without
/// lazy references the same ping-pong runs per pair, and the final
/// __mmdrop() of an exiting process shoots down its lazy users.
#[test]
fn lazy_refcount_serializes_switches_and_shootdown_sends_ipis() {
    let run = |mode: LazyTlb| {
        let mut s = spec(flat_machine(8), 20 * MS);
        s.knobs.lazy_tlb = mode;
        s.warmup = 2 * MS;
        let sem = |s: &mut Spec, name: &str| {
            s.objects.push(ObjectDecl {
                name: name.into(),
                kind: ObjectKind::Semaphore { initial: 0 },
                per_cpu: true,
            });
            s.objects.len() as u32 - 1
        };
        let (ab, ba) = (sem(&mut s, "ab"), sem(&mut s, "ba"));
        let r = |o: u32| ObjRef {
            object: o,
            index: Some(Expr::TaskIndex),
        };
        for (name, cpus, ops) in [
            (
                "ping",
                vec![0, 2, 4, 6],
                vec![
                    Op::Locking(LockingOp::Up(r(ab))),
                    Op::Locking(LockingOp::Down(r(ba))),
                ],
            ),
            (
                "pong",
                vec![1, 3, 5, 7],
                vec![
                    Op::Locking(LockingOp::Down(r(ab))),
                    Op::Locking(LockingOp::Up(r(ba))),
                ],
            ),
        ] {
            forever(&mut s, name, cpus, Policy::Normal, ops);
            s.task_groups.last_mut().unwrap().mm = 0;
        }
        simulate(&s)
    };
    let refcount = run(LazyTlb::Refcount);
    let shootdown = run(LazyTlb::Shootdown);
    assert!(refcount.mm.lazy_refcount_ops > 1000);
    assert_eq!(shootdown.mm.lazy_refcount_ops, 0);
    assert!(
        shootdown.context_switches > refcount.context_switches,
        "{} vs {}",
        shootdown.context_switches,
        refcount.context_switches
    );
    assert_eq!(refcount.mm.violations + shootdown.mm.violations, 0);

    // Exit: a process whose threads sleep on other CPUs dies; shootdown IPIs.
    let mut s = spec(flat_machine(4), 5 * MS);
    s.knobs.lazy_tlb = LazyTlb::Shootdown;
    task_group(
        &mut s,
        "app",
        vec![0, 1, 2, 3],
        Policy::Normal,
        0,
        vec![Op::Work(Dist::Const(100 * US)), Op::Exit],
    );
    let r = simulate(&s);
    assert_eq!(r.mm.mms_freed, 1);
    assert!(r.mm.shootdown_ipis >= 1, "{:?}", r.mm);
    assert_eq!(r.mm.violations, 0, "{:?}", r.findings);
}

/// A fire-and-forget call must not end a later spin (regression: its
/// completion used to look like the end of the caller's next spin).
#[test]
fn async_call_completion_does_not_end_a_later_spin() {
    let mut s = spec(flat_machine(3), 20 * MS);
    let l = s.objects.len() as u32;
    s.objects.push(ObjectDecl {
        name: "l".into(),
        kind: ObjectKind::Spinlock {
            kind: smpsim_kernel::locking::qspinlock::KIND.handle(),
            options: Default::default(),
        },
        per_cpu: false,
    });
    let lock = ObjRef {
        object: l,
        index: None,
    };
    group(
        &mut s,
        "holder",
        vec![0],
        Policy::Normal,
        vec![
            Op::Locking(LockingOp::Lock {
                lock: lock.clone(),
                mode: LockMode::Exclusive,
                irqsave: false,
            }),
            Op::Work(Dist::Const(MS)),
            Op::Locking(LockingOp::Unlock {
                lock: lock.clone(),
                mode: LockMode::Exclusive,
                irqrestore: false,
            }),
            Op::Work(Dist::Const(10 * US)),
        ],
        0,
    );
    group(
        &mut s,
        "caller",
        vec![1],
        Policy::Normal,
        vec![
            smp_call_function_single(Expr::Const(2), 300 * US, false),
            Op::Locking(LockingOp::Lock {
                lock: lock.clone(),
                mode: LockMode::Exclusive,
                irqsave: false,
            }),
            Op::Work(Dist::Const(10 * US)),
            Op::Locking(LockingOp::Unlock {
                lock,
                mode: LockMode::Exclusive,
                irqrestore: false,
            }),
            sleep_for(500 * US),
        ],
        0,
    );
    // A debug build asserts lock ownership on unlock; this must not panic.
    let r = simulate(&s);
    assert!(r.lock("l").unwrap().acquisitions > 10);
}

/// The target of smp_call_function_single is drawn once per call.
#[test]
fn a_random_call_target_is_evaluated_once() {
    let mut s = spec(flat_machine(4), 10 * MS);
    let minus2 = Expr::Const(-2);
    group(
        &mut s,
        "caller",
        vec![0],
        Policy::Normal,
        vec![
            smp_call_function_single(
                Expr::Uniform(Box::new(minus2), Box::new(Expr::Const(4))),
                100,
                true,
            ),
            Op::Work(Dist::Const(US)),
        ],
        0,
    );
    let r = simulate(&s);
    assert!(r.cpus[1].times.irq + r.cpus[2].times.irq + r.cpus[3].times.irq > 0);
}

/// x86's lazy `mm_cpumask`: a thread of the flusher's mm on CPU 1 sleeps
/// most of the time, leaving CPU 1 idle and lazily on the mm. A flush
/// does not IPI the lazy CPU: it flushes when it switches back (a deferred
/// flush). A flush after freeing page tables IPIs it anyway.
#[test]
fn a_tlb_flush_reaches_a_lazy_cpu() {
    let run = |freed_tables: bool| {
        let mut s = spec(flat_machine(2), 50 * MS);
        group(
            &mut s,
            "napper",
            vec![1],
            Policy::Normal,
            vec![Op::Work(Dist::Const(10 * US)), sleep_for(MS)],
            0,
        );
        s.task_groups.last_mut().unwrap().mm = 0;
        group(
            &mut s,
            "flusher",
            vec![0],
            Policy::Normal,
            vec![
                Op::Smp(SmpOp::SmpCallFunctionMany {
                    cpus: CpuSet::TlbFlush {
                        freed_tables,
                        mask: None,
                    },
                    func: call_func(500),
                    wait: true,
                }),
                sleep_for(50 * US),
            ],
            0,
        );
        s.task_groups.last_mut().unwrap().mm = 0;
        simulate(&s)
    };
    let lazy = run(false);
    // The napper switches back about once a millisecond, each time behind
    // the mm's flushes; the few IPIs are those that found it running.
    assert!(lazy.mm.deferred_tlb_flushes > 40, "{:?}", lazy.mm);
    let freed = run(true);
    assert_eq!(freed.mm.deferred_tlb_flushes, 0, "{:?}", freed.mm);
    // Every flush (about one per 50 us) now interrupts CPU 1, idle or not.
    assert!(
        freed.cpus[1].times.irq > 10 * lazy.cpus[1].times.irq,
        "{} vs {}",
        freed.cpus[1].times.irq,
        lazy.cpus[1].times.irq
    );
}
