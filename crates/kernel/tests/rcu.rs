//! RCU grace periods and cpu_hotplug_lock's rcu_sync.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// Times one op in a loop: mark, op, record, then a pause.
fn timed(s: &mut Spec, name: &str, cpu: u32, op: Op, pause: u64) {
    let h = histogram(s, name);
    group(
        s,
        name,
        vec![cpu],
        Policy::Normal,
        vec![
            Op::Mark(0),
            op,
            Op::RecordSince { hist: h, slot: 0 },
            sleep_for(pause),
        ],
        1,
    );
}

#[test]
fn a_grace_period_waits_for_a_read_side_critical_section() {
    let mut s = spec(flat_machine(4), 2_000 * MS);
    s.knobs.hz = 250;
    // CPU 1 sits in a 100 ms read-side critical section now and then.
    group(
        &mut s,
        "reader",
        vec![1],
        Policy::Normal,
        vec![
            Op::SyscallEnter,
            Op::Preempt(PreemptOp::PreemptDisable),
            Op::Work(Dist::Const(100 * MS)),
            Op::Preempt(PreemptOp::PreemptEnable),
            Op::SyscallExit,
            sleep_for(50 * MS),
        ],
        0,
    );
    timed(&mut s, "gp", 0, Op::Rcu(RcuOp::SynchronizeRcu), 7 * MS);
    let r = simulate(&s);
    let gp = r.histogram("gp").unwrap();
    assert!(gp.count > 20, "{gp:?}");
    // Some synchronize_rcu() calls start inside the 100 ms section and must
    // outlast what is left of it.
    assert!(gp.max > 60 * MS, "{gp:?}");
    // With no section in the way, a grace period takes a few jiffies.
    assert!(gp.min < 30 * MS, "{gp:?}");
}

#[test]
fn an_idle_machine_waits_for_the_fqs_scan() {
    let mut s = spec(flat_machine(8), 1_000 * MS);
    s.knobs.hz = 100;
    // The GP kthread shares CPU 0 with the caller: one scan per grace
    // period (where_the_gp_kthread_runs_sets_the_number_of_fqs_scans).
    s.knobs.rcu_gp_kthread_cpu = Some(0);
    timed(&mut s, "gp", 0, Op::Rcu(RcuOp::SynchronizeRcu), 13 * MS);
    let r = simulate(&s);
    let gp = r.histogram("gp").unwrap();
    // Idle CPUs are reported by the FQS scans, each 1 jiffy (10 ms) at
    // HZ=100 with 8 CPUs, which the timer wheel turns into a wait to the
    // tick after jiffies + 1 (`calc_index()` rounds a level-0 expiry up):
    // 10-20 ms per wait; then the callback waits for a tick.
    assert!(gp.min >= 20 * MS, "{gp:?}");
    assert!(gp.max <= 45 * MS, "{gp:?}");
}

#[test]
fn expedited_is_shorter_and_waits_for_every_non_idle_cpu() {
    let run = |irqs_off: bool, expedited: bool| {
        let mut s = spec(flat_machine(4), 1_000 * MS);
        s.knobs.hz = 100;
        let mut body = vec![Op::SyscallEnter];
        if irqs_off {
            body.extend([
                Op::Preempt(PreemptOp::LocalIrqDisable),
                Op::Work(Dist::Const(20 * MS)),
                Op::Preempt(PreemptOp::LocalIrqEnable),
            ]);
        } else {
            body.push(Op::Work(Dist::Const(20 * MS)));
        }
        body.push(Op::SyscallExit);
        body.push(Op::Work(Dist::Const(10 * US)));
        group(&mut s, "busy", vec![1, 2, 3], Policy::Normal, body, 0);
        let op = if expedited {
            Op::Rcu(RcuOp::SynchronizeRcuExpedited)
        } else {
            Op::Rcu(RcuOp::SynchronizeRcu)
        };
        timed(&mut s, "gp", 0, op, 9 * MS);
        simulate(&s).histogram("gp").unwrap().clone()
    };
    let normal = run(false, false);
    let fast = run(false, true);
    let blocked = run(true, true);
    assert!(fast.max < 100 * US, "expedited {fast:?}");
    assert!(
        normal.min > 10 * fast.max,
        "normal {normal:?} vs expedited {fast:?}"
    );
    // With IRQs off on the busy CPUs the IPIs wait: the expedited GP too.
    assert!(blocked.max > 5 * MS, "{blocked:?}");
}

#[test]
fn rcu_sync_lets_a_closely_following_writer_skip_the_grace_period() {
    let mut s = spec(flat_machine(4), 1_000 * MS);
    s.knobs.hz = 100;
    let first = histogram(&mut s, "first");
    let second = histogram(&mut s, "second");
    let late = histogram(&mut s, "late");
    let ops = vec![
        Op::Mark(0),
        Op::Locking(LockingOp::CpusWriteLock),
        Op::RecordSince {
            hist: first,
            slot: 0,
        },
        Op::Work(Dist::Const(100 * US)),
        Op::Locking(LockingOp::CpusWriteUnlock),
        // Right away: rcu_sync is in GP_EXIT, no grace period needed.
        Op::Mark(0),
        Op::Locking(LockingOp::CpusWriteLock),
        Op::RecordSince {
            hist: second,
            slot: 0,
        },
        Op::Locking(LockingOp::CpusWriteUnlock),
        // Long after: back to GP_IDLE, a grace period again.
        sleep_for(200 * MS),
        Op::Mark(0),
        Op::Locking(LockingOp::CpusWriteLock),
        Op::RecordSince {
            hist: late,
            slot: 0,
        },
        Op::Locking(LockingOp::CpusWriteUnlock),
        sleep_for(200 * MS),
    ];
    group(&mut s, "writer", vec![0], Policy::Normal, ops, 1);
    let r = simulate(&s);
    let (f, sec, l) = (
        r.histogram("first").unwrap(),
        r.histogram("second").unwrap(),
        r.histogram("late").unwrap(),
    );
    assert!(
        f.min > 5 * MS,
        "the first writer waits a grace period: {f:?}"
    );
    assert!(sec.max < 100 * US, "a writer right after skips it: {sec:?}");
    assert!(l.min > 5 * MS, "a writer long after waits again: {l:?}");
}

#[test]
fn readers_block_while_a_writer_holds_cpu_hotplug_lock() {
    let mut s = spec(flat_machine(2), 500 * MS);
    s.knobs.hz = 1000;
    group(
        &mut s,
        "writer",
        vec![0],
        Policy::Normal,
        vec![
            sleep_for(10 * MS),
            Op::Locking(LockingOp::CpusWriteLock),
            sleep_for(50 * MS),
            Op::Locking(LockingOp::CpusWriteUnlock),
            sleep_for(1000 * MS),
        ],
        0,
    );
    timed(&mut s, "read", 1, Op::Locking(LockingOp::CpusReadLock), MS);
    s.task_groups
        .last_mut()
        .unwrap()
        .program
        .ops
        .insert(3, Op::Locking(LockingOp::CpusReadUnlock));
    let r = simulate(&s);
    let read = r.histogram("read").unwrap();
    assert!(read.max > 40 * MS, "{read:?}");
    assert!(read.p50 < 10 * US, "{read:?}");
}

#[test]
fn a_reader_blocked_past_120_s_is_a_hung_task() {
    let mut s = spec(flat_machine(2), 200_000 * MS);
    s.knobs.hz = 100;
    forever(
        &mut s,
        "writer",
        vec![0],
        Policy::Normal,
        vec![
            Op::Locking(LockingOp::CpusWriteLock),
            sleep_for(130_000 * MS),
            Op::Locking(LockingOp::CpusWriteUnlock),
            Op::Exit,
        ],
    );
    forever(
        &mut s,
        "reader",
        vec![1],
        Policy::Normal,
        vec![
            sleep_for(1_000 * MS),
            Op::Locking(LockingOp::CpusReadLock),
            Op::Locking(LockingOp::CpusReadUnlock),
            Op::Exit,
        ],
    );
    let r = simulate(&s);
    let hung: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.detector == "hung_task")
        .collect();
    assert_eq!(hung.len(), 1, "{:?}", r.findings);
    assert!(hung[0].message.contains("reader/0"), "{}", hung[0].message);
    // The writer's own 130 s hrtimer sleep is interruptible: not reported.
    assert!(!hung[0].message.contains("writer"));
}

/// One `synchronize_rcu()` caller on CPU 3 of an otherwise idle machine,
/// with a random pause between calls.
fn idle_machine(cpus: u32, hz: u32) -> Spec {
    let mut s = spec(flat_machine(cpus), 1_500 * MS);
    s.knobs.hz = hz;
    let h = histogram(&mut s, "sync");
    group(
        &mut s,
        "caller",
        vec![3],
        Policy::Normal,
        vec![
            Op::Mark(0),
            Op::Rcu(RcuOp::SynchronizeRcu),
            Op::RecordSince { hist: h, slot: 0 },
            Op::Sleep {
                dist: Dist::Uniform { lo: MS, hi: 3 * MS },
                overshoot: None,
            },
        ],
        1,
    );
    s
}

/// On an idle machine every grace period takes two FQS scans, as
/// `rcu_gp_fqs()` does: the first snapshots the idle CPUs (the GP
/// kthread's own CPU is busy scanning), the second sees the kthread's CPU
/// idle since. Each wait is `rcu_init_geometry()`'s
/// `jiffies_till_{first,next}_fqs` plus the timer wheel's rounding.
#[test]
fn fqs_scans_per_grace_period_follow_rcu_init_geometry() {
    for (cpus, hz) in [(32, 1000), (32, 100), (400, 1000), (400, 100)] {
        let r = simulate(&idle_machine(cpus, hz));
        let rcu = r.rcu.expect("RCU stats");
        assert!(rcu.grace_periods > 10, "{cpus} CPUs HZ={hz}: {rcu:?}");
        // (The grace period under way when the run ends has had some.)
        let two_each = 2 * rcu.grace_periods..=2 * rcu.grace_periods + 2;
        assert!(
            two_each.contains(&rcu.fqs_scans),
            "{cpus} CPUs HZ={hz}: {rcu:?}"
        );
        let jiffy = 1_000_000_000 / hz as u64;
        let j = rcu::default_fqs_jiffies(hz, cpus);
        let gp = r.histogram(rcu::GP_HISTOGRAM).unwrap();
        let expected = (2 * (j + 1) * jiffy) as f64;
        let within = |x: u64| (x as f64 / expected - 1.0).abs() < 0.01;
        assert!(
            within(gp.min) && within(gp.max),
            "{cpus} CPUs HZ={hz}: {gp:?}"
        );
        // What the caller sees is a distribution: its call falls anywhere
        // in a jiffy, and the callback waits for the next tick.
        let sync = r.histogram("sync").unwrap();
        assert!(
            sync.max - sync.min >= jiffy / 10,
            "{cpus} CPUs HZ={hz}: {sync:?}"
        );
    }
}

/// The GP kthread is a CFS task: with its CPU taken by a SCHED_FIFO hog
/// and no load balancing to move it, `synchronize_rcu()` waits for the hog
/// (the grace period starts, and its scans run, only when the kthread
/// gets the CPU).
#[test]
fn a_busy_gp_kthread_cpu_delays_the_grace_period() {
    let run = |hog: bool, load_balance: bool| {
        let mut s = idle_machine(8, 1000);
        s.knobs.load_balance = load_balance;
        s.knobs.rcu_gp_kthread_cpu = Some(0);
        if hog {
            // The kthread starts on CPU 0.
            group(
                &mut s,
                "hog",
                vec![0],
                Policy::Fifo(10),
                vec![Op::Work(Dist::Const(40 * MS)), sleep_for(10 * MS)],
                0,
            );
        }
        simulate(&s).histogram("sync").unwrap().max
    };
    let quiet = run(false, false);
    let busy = run(true, false);
    assert!(busy > quiet + 10 * MS, "{quiet} {busy}");
    // Woken, it is placed on an idle CPU instead.
    assert!(run(true, true) <= quiet + MS);
}

/// A CPU kept in `preempt_disable()` past `rcu_cpu_stall_timeout` (21 s)
/// holds up a grace period: its own tick reports the stall, once.
#[test]
fn a_cpu_in_preempt_disable_past_the_timeout_is_an_rcu_stall() {
    let mut s = spec(flat_machine(2), 23_000 * MS);
    group(
        &mut s,
        "stuck",
        vec![0],
        Policy::Normal,
        vec![
            Op::SyscallEnter,
            Op::Preempt(PreemptOp::PreemptDisable),
            Op::Work(Dist::Const(30_000 * MS)),
            Op::Preempt(PreemptOp::PreemptEnable),
            Op::SyscallExit,
        ],
        0,
    );
    timed(&mut s, "gp", 1, Op::Rcu(RcuOp::SynchronizeRcu), MS);
    let r = simulate(&s);
    let f = r.finding("rcu_stall").expect("a stall");
    assert!(
        f.message
            .starts_with("INFO: rcu_sched self-detected stall on CPU")
            && f.message.contains("\t0-...."),
        "{f:?}"
    );
    assert_eq!(f.occurrences, 1);
    assert!(f.time_ns >= 21_000 * MS && f.time_ns < 21_100 * MS, "{f:?}");

    // The same machine with a short section: no stall.
    let mut s = spec(flat_machine(2), 3_000 * MS);
    s.knobs.rcu_cpu_stall_timeout = 1_000 * MS;
    timed(&mut s, "gp", 1, Op::Rcu(RcuOp::SynchronizeRcu), MS);
    assert!(simulate(&s).findings.is_empty());
}

/// The RCU guarantee checker: a reader that sleeps inside
/// `rcu_read_lock()` (a bug without PREEMPT_RCU: its CPU passes a
/// quiescent state) lets a grace period end under it; a reader that only
/// works does not.
#[test]
fn a_grace_period_ending_under_a_reader_is_reported() {
    let run = |sleeps: bool| {
        let mut s = spec(flat_machine(2), 200 * MS);
        // Longer than a grace period (about 8 ms here).
        let inside = if sleeps {
            sleep_for(20 * MS)
        } else {
            Op::Work(Dist::Const(20 * MS))
        };
        group(
            &mut s,
            "reader",
            vec![0],
            Policy::Normal,
            vec![
                Op::SyscallEnter,
                Op::Rcu(RcuOp::RcuReadLock),
                inside,
                Op::Rcu(RcuOp::RcuReadUnlock),
                Op::SyscallExit,
                sleep_for(MS),
            ],
            0,
        );
        timed(&mut s, "gp", 1, Op::Rcu(RcuOp::SynchronizeRcu), MS);
        simulate(&s)
    };
    let r = run(true);
    let f = r.finding("rcu").expect("a grace period under a reader");
    assert!(
        f.message.contains("reader/0's rcu_read_lock() section"),
        "{f:?}"
    );
    assert!(r.finding("sleeping_in_atomic").is_some());
    assert!(run(false).finding("rcu").is_none());
}

/// A CPU that holds a grace period up in the kernel is not sent a
/// reschedule IPI at `jiffies_till_sched_qs`: the FQS scan sets its
/// `rcu_urgent_qs` and its own next tick asks for the reschedule
/// (`rcu_watching_snap_recheck()`, `rcu_sched_clock_irq()`); `resched_cpu()`
/// comes only past half the stall timeout.
#[test]
fn a_holdout_gets_rcu_urgent_qs_not_an_ipi() {
    let run = |stall_timeout: u64| {
        let mut s = spec(flat_machine(2), 400 * MS);
        s.knobs.hz = 250;
        s.knobs.rcu_cpu_stall_timeout = stall_timeout;
        group(
            &mut s,
            "kernel_loop",
            vec![1],
            Policy::Normal,
            vec![
                Op::SyscallEnter,
                Op::Preempt(PreemptOp::PreemptDisable),
                Op::Work(Dist::Const(100 * MS)),
                Op::Preempt(PreemptOp::PreemptEnable),
                Op::SyscallExit,
                Op::Work(Dist::Const(MS)),
            ],
            0,
        );
        timed(&mut s, "gp", 0, Op::Rcu(RcuOp::SynchronizeRcu), 7 * MS);
        simulate(&s)
    };
    let r = run(21_000 * MS);
    let rcu = r.rcu.as_ref().expect("RCU ran");
    assert_eq!(rcu.fqs_resched_ipis, 0, "{rcu:?}");
    assert!(rcu.grace_periods > 0, "{rcu:?}");
    // With a stall timeout short enough that half of it passes inside one
    // grace period, the scan falls back to resched_cpu().
    let r = run(40 * MS);
    let rcu = r.rcu.as_ref().expect("RCU ran");
    assert!(rcu.fqs_resched_ipis > 0, "{rcu:?}");
}

/// The case of a caller on CPU 0 calling `synchronize_rcu()` back to back
/// on an idle 32-CPU machine at HZ=1000. Where the GP kthread runs decides
/// the number of FQS scans: on another CPU (the default, its last CPU),
/// that CPU is busy scanning at the first FQS and stops its tick when it
/// sleeps, so a second scan reports it: ~10 ms a call, as the kernel
/// measures. Sharing CPU 0 with the caller, whose callback keeps the tick,
/// its quiescent state is reported by a tick and one scan ends each grace
/// period: ~6 ms.
#[test]
fn where_the_gp_kthread_runs_sets_the_number_of_fqs_scans() {
    let run = |kthread_cpu: Option<u32>| {
        let mut s = spec(flat_machine(32), 1_000 * MS);
        s.knobs.hz = 1000;
        s.knobs.rcu_gp_kthread_cpu = kthread_cpu;
        let h = histogram(&mut s, "sync");
        group(
            &mut s,
            "caller",
            vec![0],
            Policy::Normal,
            vec![
                Op::Mark(0),
                Op::Rcu(RcuOp::SynchronizeRcu),
                Op::RecordSince { hist: h, slot: 0 },
            ],
            1,
        );
        let r = simulate(&s);
        let rcu = r.rcu.expect("RCU stats");
        let sync = r.histogram("sync").unwrap().clone();
        (rcu.fqs_scans as f64 / rcu.grace_periods as f64, sync)
    };
    let (scans, sync) = run(None);
    assert!((1.9..=2.1).contains(&scans), "{scans} scans per GP");
    let mean = sync.total / sync.count as f64;
    assert!((9.0e6..=11.0e6).contains(&mean), "{sync:?}");
    let (scans, sync) = run(Some(0));
    assert!((0.9..=1.1).contains(&scans), "{scans} scans per GP");
    let mean = sync.total / sync.count as f64;
    assert!((5.0e6..=7.0e6).contains(&mean), "{sync:?}");
}

/// Four CPUs each queue a 3 us callback every 20 us of work.
fn callback_flood(nocbs: bool) -> RunResult {
    let mut s = spec(flat_machine(4), 50 * MS);
    s.warmup = 5 * MS;
    if nocbs {
        s.knobs.rcu_nocbs = vec![0, 1, 2, 3];
    }
    group(
        &mut s,
        "w",
        vec![0, 1, 2, 3],
        Policy::Normal,
        [
            vec![Op::Work(Dist::Const(20 * US))],
            call_rcu_in_syscall(3 * US, true),
        ]
        .concat(),
        1,
    );
    simulate(&s)
}

/// Every callback is invoked after a grace period begun after it was
/// queued (debug builds check each one: `invariants::rcu_callback_after_gp`),
/// none is lost, and the invoking time is the CPUs' softirq time.
#[test]
fn callbacks_run_in_softirq_after_their_grace_period() {
    let r = callback_flood(false);
    let rcu = r.rcu.unwrap();
    assert!(rcu.grace_periods > 10, "{rcu:?}");
    assert!(rcu.callbacks_invoked > 1000, "{rcu:?}");
    // A callback queued in the last grace periods is not yet invoked.
    assert!(
        rcu.callbacks_invoked <= rcu.callbacks_queued + 4 * 200,
        "{rcu:?}"
    );
    let softirq: u64 = r.cpus.iter().map(|c| c.times.softirq).sum();
    // Each invoked callback's 3 us is softirq time (a batch under way at
    // the run's end adds some not yet counted as invoked).
    assert!(softirq >= rcu.callbacks_invoked * 3 * US, "{softirq}");
    assert!(
        softirq <= (rcu.callbacks_invoked + 4 * 100) * 3 * US,
        "{softirq}"
    );
    for c in &r.cpus {
        assert_eq!(c.times.total(), 45 * MS, "CPU time adds up with softirq");
    }
}

/// With rcu_nocbs the rcuop kthreads invoke them: no softirq time.
#[test]
fn nocb_cpus_invoke_callbacks_in_rcuop() {
    let r = callback_flood(true);
    let rcu = r.rcu.unwrap();
    assert_eq!(rcu.callbacks_invoked, rcu.callbacks_invoked_offloaded);
    assert!(rcu.callbacks_invoked > 1000, "{rcu:?}");
    assert_eq!(r.cpus.iter().map(|c| c.times.softirq).sum::<u64>(), 0);
    let rcuop = r.task_groups.iter().find(|g| g.name == "[rcuop]").unwrap();
    assert_eq!(rcuop.tasks, 4);
    assert!(rcuop.total.sys >= rcu.callbacks_invoked * 3 * US);
}

#[test]
fn a_callback_before_its_grace_period_is_caught() {
    use smpsim_kernel::invariants::rcu_callback_after_gp;
    assert!(rcu_callback_after_gp(3, 3, 100, 50).is_ok());
    assert!(rcu_callback_after_gp(4, 3, 100, 50).is_err(), "not ended");
    assert!(rcu_callback_after_gp(3, 3, 40, 50).is_err(), "began before");
}

/// Issue 37, item 7: a task on CPU 1 in user mode with preemption or IRQs
/// off (loading refuses that in a scenario's code; a user-space spinlock
/// model still disables preemption) for 50 ms at a time. The tick must not
/// take user mode as a quiescent state there: every `synchronize_rcu()` on
/// CPU 0 that starts inside a section outlasts it, as inside a syscall.
#[test]
fn a_grace_period_does_not_end_through_a_user_mode_atomic_section() {
    for (off, on) in [
        (
            Op::Preempt(PreemptOp::PreemptDisable),
            Op::Preempt(PreemptOp::PreemptEnable),
        ),
        (
            Op::Preempt(PreemptOp::LocalIrqDisable),
            Op::Preempt(PreemptOp::LocalIrqEnable),
        ),
    ] {
        let mut s = spec(flat_machine(2), 400 * MS);
        s.knobs.hz = 1000;
        group(
            &mut s,
            "user",
            vec![1],
            Policy::Normal,
            vec![
                off.clone(),
                Op::Work(Dist::Const(50 * MS)),
                on.clone(),
                Op::Work(Dist::Const(10 * US)),
            ],
            0,
        );
        timed(&mut s, "gp", 0, Op::Rcu(RcuOp::SynchronizeRcu), 7 * MS);
        let gp = simulate(&s).histogram("gp").unwrap().clone();
        assert!(gp.count >= 2, "{off:?}: {gp:?}");
        // Each call waits at least for the rest of the section it started
        // in (the 10 us between sections rarely holds a tick): none ends
        // in the few jiffies a grace period takes with nothing in the way.
        assert!(gp.min > 40 * MS, "{off:?}: {gp:?}");
    }
}

/// CPUs 1-3 never sleep: each loops a short syscall (500 ns in the kernel)
/// and 2 us of user work, all local work planned as one batch of pieces,
/// so most ticks interrupt user mode, and a tick
/// that interrupts user mode is a quiescent state (`rcu_sched_clock_irq()`
/// -> `rcu_qs()` when `user_mode(regs)`). A grace period then takes the few
/// jiffies of its FQS waits; it must not wait for the holdout path
/// (`jiffies_till_sched_qs`, 100 ms at HZ=1000) that forces a context
/// switch. The tick used to read the mode of the batch's first piece (the
/// kernel's, up to the last accounting) and never saw user mode here.
#[test]
fn a_tick_in_user_mode_ends_the_grace_period_of_busy_cpus() {
    let mut s = spec(flat_machine(4), 400 * MS);
    s.knobs.hz = 1000;
    s.knobs.rcu_gp_kthread_cpu = Some(0);
    group(
        &mut s,
        "busy",
        vec![1, 2, 3],
        Policy::Normal,
        vec![
            Op::SyscallEnter,
            Op::Work(Dist::Const(500)),
            Op::SyscallExit,
            Op::Work(Dist::Const(2 * US)),
        ],
        0,
    );
    timed(&mut s, "gp", 0, Op::Rcu(RcuOp::SynchronizeRcu), 7 * MS);
    let r = simulate(&s);
    let gp = r.histogram("gp").unwrap();
    assert!(gp.count > 20, "{gp:?}");
    assert!(gp.max < 30 * MS, "{gp:?}");
}
