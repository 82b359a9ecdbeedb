//! `rwlock_t` (qrwlock) and the bad-unlock detector, on hand-built specs.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

use smpsim_kernel::testkit::lock_op as op;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// `readers` CPUs hold the lock for read 10 us at a time, `writers` CPUs
/// for write; returns the run.
fn mixed(readers: u32, writers: u32) -> RunResult {
    let mut s = spec(flat_machine(readers + writers), 20 * MS);
    let l = spinning_lock(&mut s, "rw", "qrwlock", LockOptions::default());
    let (r, w) = (counter(&mut s, "reads"), counter(&mut s, "writes"));
    let lock = ObjRef {
        object: l,
        index: None,
    };
    for (name, cpus, mode, c) in [
        ("reader", 0..readers, LockMode::Read, r),
        ("writer", readers..readers + writers, LockMode::Write, w),
    ] {
        if cpus.is_empty() {
            continue;
        }
        forever(
            &mut s,
            name,
            cpus.collect(),
            Policy::Normal,
            vec![
                op(&lock, mode, true),
                Op::Work(Dist::Const(10 * US)),
                op(&lock, mode, false),
                Op::Count(c),
                Op::Work(Dist::Const(US)),
            ],
        );
    }
    simulate(&s)
}

#[test]
fn readers_share_the_lock() {
    let r = mixed(8, 0);
    // Eight readers at once: each completes a read every ~11 us.
    let reads = r.counter("reads").unwrap().count;
    assert!(reads > 8 * 20 * MS / (12 * US), "{reads}");
    assert_eq!(r.lock("rw").unwrap().contentions, 0);
}

#[test]
fn a_writer_excludes_readers_and_is_not_starved() {
    let r = mixed(7, 1);
    let writes = r.counter("writes").unwrap().count;
    let reads = r.counter("reads").unwrap().count;
    // The writer gets in (readers queue behind a waiting writer) ...
    assert!(writes > 100, "writes {writes}, reads {reads}");
    // ... and while it holds the lock nobody reads: fewer reads than alone.
    assert!(reads < mixed(7, 0).counter("reads").unwrap().count);
    assert!(r.lock("rw").unwrap().contentions > 0);
}

#[test]
fn two_writers_alternate() {
    let r = mixed(0, 2);
    let writes = r.counter("writes").unwrap().count;
    // Mutual exclusion: at most one 10 us hold at a time.
    assert!(writes <= 20 * MS / (10 * US) + 1, "{writes}");
    assert!(writes > 20 * MS / (12 * US), "{writes}");
}

#[test]
fn read_unlock_without_read_lock_is_reported_not_a_panic() {
    let mut s = spec(flat_machine(2), 2 * MS);
    let l = spinning_lock(&mut s, "rw", "qrwlock", LockOptions::default());
    let lock = ObjRef {
        object: l,
        index: None,
    };
    forever(
        &mut s,
        "bad",
        vec![0],
        Policy::Normal,
        vec![
            op(&lock, LockMode::Write, true),
            Op::Work(Dist::Const(US)),
            // Released in the wrong mode: the write hold stays.
            op(&lock, LockMode::Read, false),
            Op::Exit,
        ],
    );
    let message = bad_unlock_report(&s);
    assert!(
        message.contains("read_unlock") && message.contains("rw"),
        "{message}"
    );
}

/// The bad-unlock finding of a run, which must have one.
fn bad_unlock_report(s: &Spec) -> String {
    let r = simulate(s);
    let f = r.finding("bad_unlock_balance");
    f.expect("a bad-unlock finding").message.clone()
}

#[test]
fn mutex_unlock_by_a_non_owner_is_reported_not_a_panic() {
    let mut s = spec(flat_machine(2), 2 * MS);
    let m = mutex(&mut s, "m", true, false);
    let lock = ObjRef {
        object: m,
        index: None,
    };
    forever(
        &mut s,
        "twice",
        vec![0],
        Policy::Normal,
        vec![
            Op::mutex_lock(lock.clone()),
            Op::mutex_unlock(lock.clone()),
            Op::mutex_unlock(lock),
            Op::Exit,
        ],
    );
    let message = bad_unlock_report(&s);
    assert!(
        message.contains("mutex_unlock") && message.contains("twice/0"),
        "{message}"
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the implementation and the load, a lock is never held
        /// by two writers or by a writer and a reader (checked at every
        /// grant in debug builds), every CPU makes progress, and CPU time
        /// is conserved.
        #[test]
        fn ownership_is_sound_and_everyone_progresses(
            kind in prop::sample::select(vec!["qspinlock", "ticket", "tas", "tas+backoff", "mcs", "qrwlock"]),
            cpus in 2u32..12,
            hold in 50u64..3_000,
            think in 0u64..3_000,
            seed in 0u64..1_000,
        ) {
            let (name, backoff) = match kind {
                "tas+backoff" => ("tas", true),
                k => (k, false),
            };
            let mut s = spec(flat_machine(cpus), 2 * MS);
            s.seed = seed;
            let l = spinning_lock(&mut s, "l", name, LockOptions {
        backoff,
        ..LockOptions::default()
    });
            let lock = ObjRef { object: l, index: None };
            let c = counter(&mut s, "done");
            for cpu in 0..cpus {
                let mode = match (name, cpu % 3) {
                    ("qrwlock", 0) => LockMode::Write,
                    ("qrwlock", _) => LockMode::Read,
                    _ => LockMode::Exclusive,
                };
                forever(&mut s, &format!("t{cpu}"), vec![cpu], Policy::Normal, vec![
                    op(&lock, mode, true),
                    Op::Work(Dist::Exp { mean: hold }),
                    op(&lock, mode, false),
                    Op::Count(c),
                    Op::Work(Dist::Exp { mean: think.max(1) }),
                ]);
            }
            let r = simulate(&s);
            prop_assert!(r.findings.is_empty(), "{:?}", r.findings);
            for g in &r.task_groups {
                prop_assert!(g.total.sys > 0, "{} never ran its critical section", g.name);
            }
            for cpu in &r.cpus {
                let t = &cpu.times;
                prop_assert_eq!(t.total(), r.stats.simulated_ns);
            }
        }
    }
}

/// khungtaskd's threshold is the `hung_task_timeout_secs` knob: a waiter
/// blocked on a mutex past it is reported, and not with the default.
#[test]
fn hung_task_timeout_is_a_knob() {
    let run = |timeout: Option<u64>| {
        let mut s = spec(flat_machine(2), 20 * MS);
        if let Some(t) = timeout {
            s.knobs.hung_task_timeout = t;
        }
        let lock = ObjRef {
            object: mutex(&mut s, "m", false, false),
            index: None,
        };
        for (name, cpu, hold) in [("holder", 0, 10 * MS), ("waiter", 1, US)] {
            forever(
                &mut s,
                name,
                vec![cpu],
                Policy::Normal,
                vec![
                    Op::Work(Dist::Const(if cpu == 0 { 0 } else { US })),
                    Op::mutex_lock(lock.clone()),
                    Op::Work(Dist::Const(hold)),
                    Op::mutex_unlock(lock.clone()),
                    Op::Exit,
                ],
            );
        }
        simulate(&s).finding("hung_task").is_some()
    };
    assert!(run(Some(MS)));
    assert!(!run(None));
}
