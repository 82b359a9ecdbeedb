//! A `[hooks]` spinlock costs what the lock's own implementation says:
//! taken where nobody else wants it, the hook pays the uncontended path
//! (the lock word's atomic on a line the CPU already owns, and the
//! releasing store), no more, and lock_stat sees no contention.

use smpsim_kernel::costs::CostNs;
use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const MS: u64 = 1_000_000;

/// Four CPUs, each running one task that never sleeps (no switches), and
/// a `sched_tick` hook of `ops`; per-CPU spinlock `l` (object 0).
fn ticking(ops: Vec<Op>) -> Spec {
    let mut s = spec(flat_machine(4), 20 * MS);
    s.warmup = 2 * MS;
    spinning_lock(&mut s, "l", "qspinlock", LockOptions::default());
    s.objects[0].per_cpu = true;
    forever(
        &mut s,
        "w",
        (0..4).collect(),
        Policy::Normal,
        vec![Op::Work(Dist::Const(MS / 3))],
    );
    s.hooks[HookEvent::SchedTick as usize] = Some(Program {
        ops,
        slots: 0,
        init: Vec::new(),
    });
    s
}

fn irq(r: &RunResult) -> u64 {
    r.cpus.iter().map(|c| c.times.irq).sum()
}

#[test]
fn an_uncontended_hook_lock_costs_the_fast_path() {
    let own = ObjRef {
        object: 0,
        index: Some(Expr::ThisCpu),
    };
    let locked = ticking(vec![
        lock_op(&own, LockMode::Exclusive, true),
        lock_op(&own, LockMode::Exclusive, false),
    ]);
    let bare = ticking(Vec::new());
    let (with, without) = (simulate(&locked), simulate(&bare));
    let cost = CostNs::new(&locked.machine);
    // The bare hook is the tick's interrupt entry and exit alone.
    let ticks = irq(&without) / cost.irq_entry_exit;
    assert_eq!(irq(&without), ticks * cost.irq_entry_exit);
    assert!(ticks >= 4 * 17, "{ticks} ticks");
    // qspinlock's fast path: the cmpxchg on the lock word, in this CPU's
    // cache after its first tick; queued_spin_unlock()'s store, the same.
    let local = cost.line_transfer(0, 0);
    let fast_path = (local + cost.atomic) + local;
    assert_eq!(irq(&with), ticks * (cost.irq_entry_exit + fast_path));
    let l = with.lock("l").unwrap();
    assert_eq!((l.acquisitions, l.contentions), (ticks, 0));
    assert_eq!(l.wait_total_ns, 0);
    // The tasks lose exactly that time, nothing else moves.
    for (a, b) in with.cpus.iter().zip(&without.cpus) {
        assert_eq!(a.times.total(), b.times.total());
        assert_eq!(a.times.user + a.times.irq, b.times.user + b.times.irq);
    }
}

/// A producer on CPU 0 `up()`s a semaphore a consumer on CPU 1 sleeps in
/// `down()` on, so each `up()` is a wakeup from a task; a third task on
/// CPU 2 holds spinlock `g` (object 1) 20 us at a time. The
/// `try_to_wake_up` hook is `hook` (on the waking CPU, CPU 0).
fn producer_consumer(hook: Vec<Op>) -> Spec {
    const US: u64 = 1_000;
    let mut s = spec(flat_machine(4), 20 * MS);
    s.warmup = 2 * MS;
    s.knobs.load_balance = false;
    s.objects.push(ObjectDecl {
        name: "sem".into(),
        kind: ObjectKind::Semaphore { initial: 0 },
        per_cpu: false,
    });
    let sem = ObjRef {
        object: 0,
        index: None,
    };
    let g = ObjRef {
        object: spinning_lock(&mut s, "g", "qspinlock", LockOptions::default()),
        index: None,
    };
    let ups = counter(&mut s, "ups");
    forever(
        &mut s,
        "producer",
        vec![0],
        Policy::Normal,
        vec![
            Op::Locking(LockingOp::Up(sem.clone())),
            Op::Count(ups),
            Op::Work(Dist::Const(5 * US)),
        ],
    );
    forever(
        &mut s,
        "consumer",
        vec![1],
        Policy::Normal,
        vec![Op::Locking(LockingOp::Down(sem))],
    );
    forever(
        &mut s,
        "holder",
        vec![2],
        Policy::Normal,
        vec![
            lock_op(&g, LockMode::Exclusive, true),
            Op::Work(Dist::Const(20 * US)),
            lock_op(&g, LockMode::Exclusive, false),
            Op::Work(Dist::Const(US)),
        ],
    );
    s.hooks[HookEvent::TryToWakeUp as usize] = Some(Program {
        ops: hook,
        slots: 0,
        init: Vec::new(),
    });
    s
}

/// The waking task waits while its `try_to_wake_up` hook spins on a lock
/// held elsewhere: the producer's loop, which wakes the consumer at every
/// `up()`, slows down by about the holder's hold, lock_stat sees the
/// hook's contentions, and the wait is the waking CPU's sys time.
#[test]
fn a_waking_task_is_held_up_while_its_wakeup_hook_spins() {
    let g = ObjRef {
        object: 1,
        index: None,
    };
    let locked = producer_consumer(vec![
        lock_op(&g, LockMode::Exclusive, true),
        lock_op(&g, LockMode::Exclusive, false),
    ]);
    let bare = producer_consumer(Vec::new());
    let (with, without) = (simulate(&locked), simulate(&bare));
    let ups = |r: &RunResult| r.counter("ups").unwrap().count;
    // Without the hook, one up() per ~5 us; with it, each wakeup waits
    // for the rest of a 20 us hold on average ~half of one.
    assert!(ups(&without) > 2_500, "{}", ups(&without));
    assert!(
        ups(&with) * 2 < ups(&without),
        "{} vs {}",
        ups(&with),
        ups(&without)
    );
    let l = with.lock("g").unwrap();
    let holder_only = without.lock("g").unwrap();
    assert_eq!(holder_only.contentions, 0);
    // Every wakeup found the lock held (the producer falls into step with
    // the holder), and each is one more acquisition than the holder's.
    assert!(l.contentions > 500, "{l:?}");
    let takers = ups(&with) + holder_only.acquisitions;
    assert!(l.acquisitions.abs_diff(takers) <= 4, "{l:?} vs {takers}");
    // The producer's CPU spends the wait in the kernel, IRQs off.
    assert!(
        with.cpus[0].times.sys > without.cpus[0].times.sys + 5 * MS,
        "{} vs {}",
        with.cpus[0].times.sys,
        without.cpus[0].times.sys
    );
    for r in [&with, &without] {
        for c in &r.cpus {
            assert_eq!(c.times.total(), locked.duration - locked.warmup);
        }
    }
}
