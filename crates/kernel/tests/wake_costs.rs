//! Issue 41: a wakeup costs the context that issues it the same
//! `try_to_wake_up()` time (`cost.wakeup`) whether a task's op issues it
//! (`up()` of a semaphore), an RCU callback in the softirq or in an
//! `rcuop` kthread (`wakeme_after_rcu()`), the GP kthread's cleanup
//! (`rcu_sr_normal_gp_cleanup()`), or a `sched_tick` hook's `up()` (a
//! hardirq, as an hrtimer's wakeup); and the same for the GP kthread's own
//! wake (`rcu_gp_kthread_wake()`, from a task or `rcu_core()`) and the
//! expedited grace period's waiters (`rcu_exp_wait_wake()`).

use smpsim_kernel::program::*;
use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const DURATION: u64 = 200_000_000;
/// The task's wakeups.
const WAKES: u64 = 500;

fn base(wakeup_ns: f64) -> Spec {
    let mut s = spec(flat_machine(2), DURATION);
    s.machine.costs.wakeup.ns = wakeup_ns;
    // No tree pass costs: the GP kthread's only CPU time is its wakeups.
    s.knobs.rcu_node_cost = 0;
    s
}

/// One task on CPU 0 calling `synchronize_rcu()` in a loop; CPU 1 busy.
fn syncer(s: &mut Spec) {
    let syncs = counter(s, "syncs");
    forever(
        s,
        "syncer",
        vec![0],
        Policy::Normal,
        vec![Op::Rcu(RcuOp::SynchronizeRcu), Op::Count(syncs)],
    );
    forever(
        s,
        "busy",
        vec![1],
        Policy::Normal,
        vec![Op::Work(Dist::Const(100_000))],
    );
}

fn sys_of(r: &RunResult, prefix: &str) -> u64 {
    r.task_groups
        .iter()
        .filter(|g| g.name.contains(prefix))
        .map(|g| g.total.sys)
        .sum()
}

/// A task on CPU 1 sleeping in `down()` on a semaphore, and the waking
/// context `waker` adds to `up()` it: the run, whose `woken` counter
/// counts the wakeups.
fn a_sleeper_woken_by(wakeup_ns: f64, waker: impl FnOnce(&mut Spec, ObjRef)) -> RunResult {
    let mut s = base(wakeup_ns);
    s.objects.push(ObjectDecl {
        name: "sem".into(),
        kind: ObjectKind::Semaphore { initial: 0 },
        per_cpu: false,
    });
    let sem = ObjRef {
        object: s.objects.len() as u32 - 1,
        index: None,
    };
    let woken = counter(&mut s, "woken");
    forever(
        &mut s,
        "waiter",
        vec![1],
        Policy::Normal,
        vec![Op::Locking(LockingOp::Down(sem.clone())), Op::Count(woken)],
    );
    waker(&mut s, sem);
    simulate(&s)
}

/// (CPU time the waking context was charged, wakeups it issued).
fn from_a_task(wakeup_ns: f64) -> (u64, u64) {
    let r = a_sleeper_woken_by(wakeup_ns, |s, sem| {
        // WAKES up()s 200 us apart, the first once the waiter sleeps, then
        // exit: the same number of wakeups whatever a wakeup costs.
        let mut ops = Vec::new();
        for _ in 0..WAKES {
            ops.push(Op::Work(Dist::Const(200_000)));
            ops.push(Op::Locking(LockingOp::Up(sem.clone())));
        }
        ops.push(Op::Exit);
        task_group(s, "waker", vec![0], Policy::Normal, 99, ops);
    });
    (sys_of(&r, "waker"), r.counter("woken").unwrap().count)
}

/// A `sched_tick` hook `up()`s the semaphore a task on CPU 1 sleeps on,
/// at every tick of CPU 0 (busy, so its tick runs): (CPU 0's irq time,
/// wakeups).
fn from_a_hook(wakeup_ns: f64) -> (u64, u64) {
    let r = a_sleeper_woken_by(wakeup_ns, |s, sem| {
        forever(
            s,
            "busy",
            vec![0],
            Policy::Normal,
            vec![Op::Work(Dist::Const(100_000))],
        );
        s.hooks[HookEvent::SchedTick as usize] = Some(Program {
            ops: vec![Op::Locking(LockingOp::Up(sem))],
            slots: 0,
            init: Vec::new(),
        });
    });
    (r.cpus[0].times.irq, r.counter("woken").unwrap().count)
}

fn from_the_softirq(wakeup_ns: f64) -> (u64, u64) {
    let mut s = base(wakeup_ns);
    syncer(&mut s);
    let r = simulate(&s);
    let softirq = r.cpus.iter().map(|c| c.times.softirq).sum();
    (softirq, r.counter("syncs").unwrap().count)
}

fn from_rcuop(wakeup_ns: f64) -> (u64, u64) {
    let mut s = base(wakeup_ns);
    s.knobs.rcu_nocbs = vec![0];
    syncer(&mut s);
    let r = simulate(&s);
    (sys_of(&r, "rcuop"), r.counter("syncs").unwrap().count)
}

fn from_gp_cleanup(wakeup_ns: f64) -> (u64, u64) {
    let mut s = base(wakeup_ns);
    s.knobs.rcu_normal_wake_from_gp = true;
    syncer(&mut s);
    let r = simulate(&s);
    (sys_of(&r, "rcu_sched"), r.rcu.unwrap().wakeups_from_gp)
}

/// What a context is charged per wakeup beyond what it is charged
/// anyway, from runs with two wakeup costs: the same number of wakeups
/// in both runs, and the charge grows by exactly the cost's difference
/// for each of them.
fn charge_per_wakeup(context: fn(f64) -> (u64, u64)) -> (u64, u64) {
    let (low, n_low) = context(300.0);
    let (high, n_high) = context(1300.0);
    assert_eq!(n_low, n_high, "the same wakeups at either cost");
    assert!(n_low > 10, "{n_low} wakeups");
    assert_eq!((high - low) % n_low, 0, "{high} - {low} over {n_low}");
    ((high - low) / n_low, n_low)
}

#[test]
fn a_wakeup_costs_its_context_the_same_from_a_task_a_callback_gp_cleanup_and_a_hook() {
    let (task, n) = charge_per_wakeup(from_a_task);
    assert_eq!(n, WAKES, "every up() woke the waiter");
    assert_eq!(task, 1000, "a task's up() is charged cost.wakeup");
    let (softirq, _) = charge_per_wakeup(from_the_softirq);
    let (rcuop, _) = charge_per_wakeup(from_rcuop);
    let (gp, _) = charge_per_wakeup(from_gp_cleanup);
    let (hook, hook_wakes) = charge_per_wakeup(from_a_hook);
    // CPU 0 ticks at HZ through the 200 ms: a wakeup at nearly every tick.
    assert!(
        hook_wakes > 150,
        "{hook_wakes} wakeups from the tick's hook"
    );
    assert_eq!(
        [softirq, rcuop, gp, hook],
        [task; 4],
        "softirq callback, rcuop callback, GP cleanup, sched_tick hook vs a task"
    );
}

/// In the softirq nothing else runs here: its whole time is the wakeups.
#[test]
fn the_softirq_time_is_the_callbacks_wakeups() {
    let (softirq, n) = from_the_softirq(300.0);
    assert!(n > 10);
    assert_eq!(softirq, n * 300);
}

/// `syncs` calls of `op` by a task on CPU 0, 200 us apart, then exit;
/// CPU 1 busy in user mode.
fn fixed_syncer(s: &mut Spec, op: RcuOp, syncs: u64) {
    let done = counter(s, "syncs");
    let mut ops = Vec::new();
    for _ in 0..syncs {
        ops.push(Op::Work(Dist::Const(200_000)));
        ops.push(Op::Rcu(op.clone()));
        ops.push(Op::Count(done));
    }
    ops.push(Op::Exit);
    task_group(s, "syncer", vec![0], Policy::Normal, 99, ops);
    forever(
        s,
        "busy",
        vec![1],
        Policy::Normal,
        vec![Op::Work(Dist::Const(100_000))],
    );
}

/// The expedited grace period's end (`rcu_exp_wait_wake()`) wakes the
/// caller; CPU 1's IPI handler reports the last quiescent state (CPU 0 is
/// idle while its caller waits) and is charged the wakeup.
fn from_the_expedited_end(wakeup_ns: f64) -> (u64, u64) {
    let mut s = base(wakeup_ns);
    fixed_syncer(&mut s, RcuOp::SynchronizeRcuExpedited, 50);
    let r = simulate(&s);
    let gps = r.rcu.as_ref().unwrap().expedited_grace_periods;
    assert_eq!(gps, r.counter("syncs").unwrap().count, "one GP a call");
    (r.cpus[1].times.irq, gps)
}

/// `synchronize_rcu()` with `rcu_normal_wake_from_gp`: the caller's
/// `start_poll_synchronize_rcu()` wakes the sleeping GP kthread, in the
/// caller's time.
fn from_the_requesting_task(wakeup_ns: f64) -> (u64, u64) {
    let mut s = base(wakeup_ns);
    s.knobs.rcu_normal_wake_from_gp = true;
    // Its grace periods are longer: fewer calls fit in the run.
    fixed_syncer(&mut s, RcuOp::SynchronizeRcu, 20);
    let r = simulate(&s);
    (sys_of(&r, "syncer"), r.counter("syncs").unwrap().count)
}

/// `synchronize_rcu()` through `call_rcu()`: CPU 0's `rcu_core()` at its
/// tick wakes the GP kthread twice a grace period, to start it (its
/// callback asks for one) and to clean it up (CPU 0's quiescent state,
/// noted at its context switch, is the last). CPU 0 is idle then, so
/// the charge is paid at its next switch, in CPU 0's sys.
fn from_the_tick_softirq(wakeup_ns: f64) -> (u64, u64) {
    let mut s = base(wakeup_ns);
    fixed_syncer(&mut s, RcuOp::SynchronizeRcu, 50);
    let r = simulate(&s);
    let gps = r.rcu.as_ref().unwrap().grace_periods;
    assert_eq!(gps, r.counter("syncs").unwrap().count, "one GP a call");
    (r.cpus[0].times.sys, 2 * gps)
}

#[test]
fn the_rcu_kthreads_and_expedited_wakeups_cost_their_context_as_a_tasks_wakeup_does() {
    let (task, _) = charge_per_wakeup(from_a_task);
    let (exp, n) = charge_per_wakeup(from_the_expedited_end);
    assert_eq!(n, 50);
    let (request, n) = charge_per_wakeup(from_the_requesting_task);
    assert_eq!(n, 20);
    let (tick, n) = charge_per_wakeup(from_the_tick_softirq);
    assert_eq!(n, 100);
    assert_eq!(
        [exp, request, tick],
        [task; 3],
        "expedited GP end, a task's GP request, rcu_core()'s GP kthread wakes vs a task"
    );
}
