//! A declared `struct percpu_rw_semaphore`: the same model as
//! `cpu_hotplug_lock`, with its own `lock_stat` rows.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn sleep(ns: u64) -> Op {
    sleep_for(ns)
}

/// A writer on CPU 0 holding the lock 50 ms once; a reader on CPU 1
/// timing each read acquisition, 1 ms apart. `take`/`release` are the
/// ops for (read, write) on the lock under test.
fn writer_and_reader(take: fn(LockMode) -> Op, release: fn(LockMode) -> Op) -> Spec {
    let mut s = spec(flat_machine(2), 500 * MS);
    s.knobs.hz = 1000;
    group(
        &mut s,
        "writer",
        vec![0],
        Policy::Normal,
        vec![
            sleep(10 * MS),
            take(LockMode::Write),
            sleep(50 * MS),
            release(LockMode::Write),
            sleep(1000 * MS),
        ],
        0,
    );
    let h = histogram(&mut s, "read");
    group(
        &mut s,
        "reader",
        vec![1],
        Policy::Normal,
        vec![
            Op::Mark(0),
            take(LockMode::Read),
            Op::RecordSince { hist: h, slot: 0 },
            release(LockMode::Read),
            sleep(MS),
        ],
        1,
    );
    s
}

fn declared(s: &mut Spec) -> ObjRef {
    s.objects.push(ObjectDecl {
        name: "tg_rwsem".into(),
        kind: ObjectKind::Sleeping {
            kind: smpsim_kernel::locking::percpu_rwsem::KIND.handle(),
            spin: false,
        },
        per_cpu: false,
    });
    ObjRef {
        object: s.objects.len() as u32 - 1,
        index: None,
    }
}

fn on_declared(mode: LockMode, take: bool) -> Op {
    lock_op(
        &ObjRef {
            object: 0,
            index: None,
        },
        mode,
        take,
    )
}

/// Readers sleep while the writer holds it, and pay nothing otherwise; a
/// declared one behaves exactly as `cpu_hotplug_lock` does.
#[test]
fn a_declared_percpu_rwsem_is_the_cpu_hotplug_lock_model() {
    let mut s = writer_and_reader(|m| on_declared(m, true), |m| on_declared(m, false));
    declared(&mut s);
    let r = simulate(&s);
    let read = r.histogram("read").unwrap();
    assert!(
        read.max > 40 * MS,
        "a reader waits out the writer: {read:?}"
    );
    assert!(read.p50 < 10 * US, "the fast path is free: {read:?}");

    let hotplug = writer_and_reader(
        |m| match m {
            LockMode::Read => Op::Locking(LockingOp::CpusReadLock),
            _ => Op::Locking(LockingOp::CpusWriteLock),
        },
        |m| match m {
            LockMode::Read => Op::Locking(LockingOp::CpusReadUnlock),
            _ => Op::Locking(LockingOp::CpusWriteUnlock),
        },
    );
    let h = simulate(&hotplug);
    assert_eq!(
        h.histogram("read"),
        r.histogram("read"),
        "the same model as cpu_hotplug_lock"
    );
}

/// `lock_stat` shows the read side as its own class: one contended read
/// (the one that came while the writer held it), one write acquisition
/// that waited a grace period.
#[test]
fn lock_stat_splits_readers_and_the_writer() {
    let mut s = writer_and_reader(|m| on_declared(m, true), |m| on_declared(m, false));
    declared(&mut s);
    let r = simulate(&s);
    let stat = r.lock("tg_rwsem").unwrap();
    let read = stat.read.expect("a read side");
    assert_eq!(read.contentions, 1, "{stat:?}");
    assert!(read.acquisitions > 400, "{stat:?}");
    assert_eq!(stat.acquisitions, 1, "{stat:?}");
    // rcu_sync_enter() from GP_IDLE: the writer waited a grace period.
    assert!(stat.wait_total_ns > MS, "{stat:?}");
    assert!(stat.hold_total_ns >= 50 * MS, "{stat:?}");
}

/// An up_write by a task that does not hold it is the kernel's bad-unlock
/// report, not a silent release.
#[test]
fn releasing_what_is_not_held_is_reported() {
    let mut s = spec(flat_machine(2), 10 * MS);
    let l = declared(&mut s);
    group(
        &mut s,
        "stray",
        vec![0],
        Policy::Normal,
        vec![lock_op(&l, LockMode::Write, false), sleep(MS)],
        0,
    );
    let r = simulate(&s);
    assert!(
        r.findings
            .iter()
            .any(|f| f.message.contains("percpu_up_write")),
        "{:?}",
        r.findings
    );
}
