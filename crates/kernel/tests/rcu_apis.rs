//! RCU's other APIs (issue 41): `kfree_rcu()` batching frees every object,
//! and only after a grace period; the memory waiting for one grows with
//! the rate of `kfree_rcu()` and the drain delay; a polled state is done
//! only after a full grace period.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// `kfree_rcu(bytes)` inside a syscall.
fn kfree(bytes: i64) -> Vec<Op> {
    vec![
        Op::SyscallEnter,
        Op::Rcu(RcuOp::KfreeRcu {
            bytes: Expr::Const(bytes),
        }),
        Op::SyscallExit,
    ]
}

/// One task per CPU of `cpus` freeing `n` objects of `bytes`, `think`
/// apart, then sleeping past any run's end.
fn freer(s: &mut Spec, cpus: Vec<u32>, n: i64, bytes: i64, think: u64) {
    let mut ops = vec![Op::LoopCount {
        slot: 1,
        expr: Expr::Const(n),
    }];
    ops.push(Op::Work(Dist::Const(think)));
    ops.extend(kfree(bytes));
    ops.push(Op::LoopBack { slot: 1, target: 1 });
    ops.push(sleep_for(1_000_000 * MS));
    group(s, "freer", cpus, Policy::Normal, ops, 2);
}

fn kfree_stats(r: &RunResult) -> RcuStats {
    r.rcu.expect("a scenario calling kfree_rcu() uses RCU")
}

#[test]
fn kfree_rcu_frees_every_object_after_a_grace_period() {
    let mut s = spec(flat_machine(4), 1_000 * MS);
    s.knobs.kfree_drain_jiffies = Some(20);
    // 300 objects a CPU: under a page, so each CPU's monitor runs after
    // the drain delay.
    freer(&mut s, vec![0, 1, 2, 3], 300, 128, 20 * US);
    let r = simulate(&s);
    let k = kfree_stats(&r);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(k.kfree_rcu_objects, 1_200, "{k:?}");
    assert_eq!(k.kfree_rcu_freed, k.kfree_rcu_objects, "{k:?}");
    assert!(k.kfree_rcu_batches >= 4, "{k:?}");
    assert!(k.grace_periods >= 1, "{k:?}");
    assert!(
        k.kfree_rcu_bytes_waiting_peak > 0 && k.kfree_rcu_bytes_waiting_peak <= 1_200 * 128,
        "{k:?}"
    );
    // Every byte was freed: the mean over the run is well below the peak.
    assert!(
        k.kfree_rcu_bytes_waiting_mean < k.kfree_rcu_bytes_waiting_peak / 4,
        "{k:?}"
    );
}

/// One object, queued at the start: it waits the drain delay, then a
/// grace period, and is freed only after both.
#[test]
fn an_object_is_not_freed_before_its_batch_has_waited_a_grace_period() {
    let freed_by = |duration: u64| {
        let mut s = spec(flat_machine(2), duration);
        s.knobs.kfree_drain_jiffies = Some(20);
        freer(&mut s, vec![0], 1, 64, US);
        kfree_stats(&simulate(&s))
    };
    // Before the monitor (20 jiffies at HZ=1000): queued, not batched.
    let k = freed_by(15 * MS);
    assert_eq!(
        (k.kfree_rcu_objects, k.kfree_rcu_batches, k.kfree_rcu_freed),
        (1, 0, 0),
        "{k:?}"
    );
    assert_eq!(k.kfree_rcu_bytes_waiting_peak, 64);
    // The monitor has run and queued the batch behind a grace period,
    // which has not ended yet: still not freed.
    let k = freed_by(20 * MS + 200 * US);
    assert_eq!((k.kfree_rcu_batches, k.kfree_rcu_freed), (1, 0), "{k:?}");
    assert_eq!(k.grace_periods, 0, "{k:?}");
    // After it: freed by the kworker.
    let k = freed_by(100 * MS);
    assert_eq!((k.kfree_rcu_batches, k.kfree_rcu_freed), (1, 1), "{k:?}");
    assert!(k.grace_periods >= 1, "{k:?}");
}

/// The mean memory waiting for a grace period, with every CPU freeing
/// 256-byte objects `think` apart, the monitor `drain` jiffies after the
/// first.
fn waiting(think: u64, drain: u64) -> u64 {
    let mut s = spec(flat_machine(4), 1_000 * MS);
    s.warmup = 100 * MS;
    s.knobs.kfree_drain_jiffies = Some(drain);
    freer(&mut s, vec![0, 1, 2, 3], i64::MAX, 256, think);
    let k = kfree_stats(&simulate(&s));
    assert!(k.kfree_rcu_freed > 0, "{k:?}");
    k.kfree_rcu_bytes_waiting_mean
}

#[test]
fn memory_waiting_grows_with_the_rate_and_the_drain_delay() {
    // 5,000 objects a second a CPU: under a page per drain delay, so the
    // monitor runs at the delay.
    let slow = waiting(200 * US, 10);
    let fast = waiting(100 * US, 10);
    assert!(
        fast > slow * 3 / 2,
        "twice the rate: {slow} -> {fast} bytes"
    );
    let long = waiting(200 * US, 40);
    assert!(
        long > slow * 2,
        "4x the drain delay: {slow} -> {long} bytes"
    );
}

/// A task on CPU 0 takes a state, polls it at once, waits for a grace
/// period with `synchronize_rcu()`, polls it again, and calls
/// `cond_synchronize_rcu()` on it (which must not wait) and on a fresh
/// state (which must).
#[test]
fn a_polled_state_is_done_only_after_a_full_grace_period() {
    let mut s = spec(flat_machine(4), 500 * MS);
    let early = counter(&mut s, "done_at_once");
    let after = counter(&mut s, "done_after_sync");
    let rounds = counter(&mut s, "rounds");
    let no_wait = histogram(&mut s, "cond_after_gp");
    let wait = histogram(&mut s, "cond_fresh");
    let ops = vec![
        Op::SyscallEnter,
        Op::Set {
            slot: 0,
            expr: Expr::RcuGetState,
        },
        // 2: if (poll_state_synchronize_rcu(s)) count(done_at_once);
        Op::JumpUnless(Cond::RcuPollState(Expr::Var(0)), 4),
        Op::Count(early),
        // 4
        Op::Rcu(RcuOp::SynchronizeRcu),
        Op::JumpUnless(Cond::RcuPollState(Expr::Var(0)), 7),
        Op::Count(after),
        // 7: cond_synchronize_rcu(s) after a grace period: at once.
        Op::Mark(1),
        Op::Rcu(RcuOp::CondSynchronizeRcu(Expr::Var(0))),
        Op::RecordSince {
            hist: no_wait,
            slot: 1,
        },
        // cond_synchronize_rcu() of a fresh state: a grace period.
        Op::Set {
            slot: 0,
            expr: Expr::RcuGetState,
        },
        Op::Mark(1),
        Op::Rcu(RcuOp::CondSynchronizeRcu(Expr::Var(0))),
        Op::RecordSince {
            hist: wait,
            slot: 1,
        },
        Op::SyscallExit,
        Op::Count(rounds),
        sleep_for(3 * MS),
    ];
    group(&mut s, "poller", vec![0], Policy::Normal, ops, 2);
    // Other CPUs keep grace periods going with callbacks.
    group(
        &mut s,
        "caller",
        vec![1, 2, 3],
        Policy::Normal,
        [
            vec![Op::Work(Dist::Exp { mean: 50 * US })],
            call_rcu_in_syscall(US, false),
        ]
        .concat(),
        1,
    );
    let r = simulate(&s);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    let n = r.counter("rounds").unwrap().count;
    assert!(n > 20, "{n} rounds");
    assert_eq!(r.counter("done_at_once").map_or(0, |c| c.count), 0);
    let after = r.counter("done_after_sync").unwrap().count;
    assert!(
        after >= n,
        "{after} of {n} states done after synchronize_rcu()"
    );
    let no_wait = r.histogram("cond_after_gp").unwrap();
    assert!(no_wait.max < US, "{no_wait:?}");
    let wait = r.histogram("cond_fresh").unwrap();
    assert!(wait.min > 500 * US, "{wait:?}");
}
