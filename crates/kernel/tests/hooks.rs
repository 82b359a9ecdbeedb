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
