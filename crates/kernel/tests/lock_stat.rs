//! `lock_stat` books wait time as the kernel's lockdep does: only for an
//! acquisition that went through `lock_contended()`. `__lock_acquired()`
//! computes a waittime only when `hlock->waittime_stamp` is set, and only
//! `__lock_contended()` sets it; the uncontended fast path's atomic (its
//! cache-line transfer included) is no wait. So a lock nobody contends
//! shows contentions 0 and waittime 0, and a contended one both.

use smpsim_kernel::locking::LOCK_KINDS;
use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// `cpus` CPUs loop on one lock of spinning kind `kind` (its write side
/// for an rwlock), holding it `hold` and working `think` outside.
fn spinning(kind: &str, cpus: u32, hold: u64, think: u64) -> LockStat {
    let info = LOCK_KINDS.iter().find(|k| k.name == kind).unwrap();
    let mode = *info.modes().last().unwrap();
    let mut s = spec(flat_machine(4), 5 * MS);
    let lock = ObjRef {
        object: spinning_lock(&mut s, "lock", kind, LockOptions::default()),
        index: None,
    };
    let ops = vec![
        Op::SyscallEnter,
        lock_op(&lock, mode, true),
        Op::Work(Dist::Const(hold)),
        lock_op(&lock, mode, false),
        Op::SyscallExit,
        Op::Work(Dist::Const(think)),
        // assumed: jitter, so the CPUs do not run in lockstep.
        Op::Work(Dist::Exp { mean: 100 }),
    ];
    forever(&mut s, "lockers", (0..cpus).collect(), Policy::Normal, ops);
    simulate(&s).lock("lock").unwrap().clone()
}

/// `cpus` CPUs loop on one sleeping lock (`mutex`, or `rt_mutex`).
fn sleeping(kind: ObjectKind, cpus: u32) -> LockStat {
    let mut s = spec(flat_machine(4), 5 * MS);
    s.objects.push(ObjectDecl {
        name: "lock".into(),
        kind,
        per_cpu: false,
    });
    let lock = ObjRef {
        object: 0,
        index: None,
    };
    forever(
        &mut s,
        "lockers",
        (0..cpus).collect(),
        Policy::Normal,
        vec![
            Op::mutex_lock(lock.clone()),
            Op::Work(Dist::Exp { mean: 2 * US }),
            Op::mutex_unlock(lock),
            Op::Work(Dist::Exp { mean: US }),
        ],
    );
    simulate(&s).lock("lock").unwrap().clone()
}

fn uncontended_waits_nothing(what: &str, l: &LockStat) {
    assert!(l.acquisitions > 100, "{what}: {l:?}");
    assert_eq!(l.contentions, 0, "{what}: {l:?}");
    assert_eq!(
        (l.wait_total_ns, l.wait_max_ns),
        (0, 0),
        "{what}: wait time with no contention: {l:?}"
    );
}

fn contended_waits(what: &str, l: &LockStat) {
    assert!(l.contentions > 100, "{what}: {l:?}");
    assert!(
        l.wait_total_ns > 0 && l.wait_max_ns > 0 && l.wait_max_ns <= l.wait_total_ns,
        "{what}: {l:?}"
    );
}

#[test]
fn every_spinning_kind_books_wait_time_only_for_contended_acquisitions() {
    for kind in LOCK_KINDS {
        // One CPU: every acquisition takes the fast path.
        uncontended_waits_nothing(kind.name, &spinning(kind.name, 1, 200, 500));
        // Four CPUs holding it longer than they work outside: contended.
        contended_waits(kind.name, &spinning(kind.name, 4, 2 * US, 200));
    }
}

#[test]
fn mutex_and_rt_mutex_book_wait_time_only_for_contended_acquisitions() {
    let kinds = [
        ("mutex", ObjectKind::Mutex { spin: true }),
        (
            "rt_mutex",
            ObjectKind::Sleeping {
                kind: "rt_mutex".into(),
                spin: true,
            },
        ),
    ];
    for (name, kind) in kinds {
        uncontended_waits_nothing(name, &sleeping(kind.clone(), 1));
        contended_waits(name, &sleeping(kind, 4));
    }
}
