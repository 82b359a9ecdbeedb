//! The events of the kernel model, grouped by the mechanism that handles
//! them. Each is small and `Copy`; the engine stores them inline, so
//! scheduling one never allocates.

use crate::ids::TaskId;

/// A point where the state of the simulated system changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Sched(SchedEvent),
    Smp(SmpEvent),
    Cfs(CfsEvent),
    Rcu(RcuEvent),
    Mm(MmEvent),
    Lock(LockEvent),
    Stop(StopEvent),
    Run(RunEvent),
}

/// CPUs, tasks, and the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedEvent {
    /// The CPU's current activity (a work segment, an interrupt handler, a
    /// context switch) ends. Stale if the CPU's generation moved on.
    Cpu { cpu: u32, gen: u32 },
    /// A reschedule IPI (remote wakeup) reaches `cpu`.
    Resched { cpu: u32 },
    /// The scheduler tick on `cpu`.
    Tick { cpu: u32 },
    /// A sleeping task's hrtimer expires.
    Timer { task: u32, gen: u32 },
    /// A NOHZ idle-balance kick reaches idle `cpu`.
    NohzBalance { cpu: u32 },
    /// A spinning task observes the condition it spins on (a CSD unlocked,
    /// a lock handed to it, its mutex owner gone off-CPU).
    SpinEnd { task: u32, gen: u32 },
}

/// Cross-CPU function calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmpEvent {
    /// A function-call IPI reaches `cpu`.
    Ipi { cpu: u32 },
}

/// CFS bandwidth control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfsEvent {
    /// The period timer of a bandwidth pool expires.
    Period { pool: u32 },
    /// The slack timer of a bandwidth pool expires (`sched_cfs_slack_timer()`).
    Slack { pool: u32 },
}

/// RCU grace periods and callbacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcuEvent {
    /// `rcu_gp_kthread_wake()` from `from`'s softirq or IRQ context.
    WakeGpKthread { from: u32 },
    /// The expedited-GP worker selects CPUs and sends IPIs.
    ExpStart,
    /// `rcu_core()` (RCU_SOFTIRQ) on `cpu` at its tick: new callbacks ask
    /// for a grace period.
    Core { cpu: u32 },
    /// An expedited grace period's waiter is woken on `cpu`.
    Callback { cpu: u32, cb: RcuCallback },
    /// `RCU_SOFTIRQ` on `cpu` at its tick: `rcu_core()` invokes the ready
    /// callbacks (`rcu_do_batch()`).
    Softirq { cpu: u32 },
    /// The lazy-callback flush timer of no-CBs `cpu` (`jiffies_lazy_flush`);
    /// stale unless `gen` is its current generation.
    LazyFlush { cpu: u32, gen: u32 },
    /// `kfree_rcu_monitor()`'s delayed work on `cpu` is due; stale unless
    /// `gen` is its current generation (`rcu/kfree.rs`).
    KfreeMonitor { cpu: u32, gen: u32 },
}

/// Work queued to run after a grace period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcuCallback {
    /// `wakeme_after_rcu()`: the `synchronize_rcu()` caller.
    Wake { task: TaskId, gen: u32 },
    /// `rcu_sync_func()` of a percpu_rw_semaphore (instance `sem`).
    RcuSync { sem: u32 },
    /// A scenario's `call_rcu()`: its cost is kept with it in the queue.
    Func,
    /// The RCU callback of a registered object type (its entry's
    /// `rcu_callback` in `locking::OBJECT_TYPES`, e.g. a killed
    /// percpu_ref's `percpu_ref_switch_to_atomic_rcu()`) for `instance` of
    /// declared object `object`.
    Object { object: u32, instance: u32 },
    /// `rcu_work_rcufn()` of `queue_rcu_work()`: batch `slot` of `cpu`'s
    /// `kfree_rcu()` objects has waited its grace period.
    KfreeRcuWork { cpu: u32, slot: u32 },
}

/// Address spaces and lazy TLB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmEvent {
    /// The naive cpumask-refcount protocol looks at an mm's mask and users.
    Check { mm: u32 },
    /// `__mmdrop()` frees an mm.
    Free { mm: u32 },
}

/// Locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockEvent {
    /// A timer a spinning lock asked for (a backoff running out).
    Timer { lock: u32 },
}

/// `stop_machine()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopEvent {
    /// `wake_up_q()` in `cpu_stop_queue_work()` wakes `migration/cpu`.
    Wake { cpu: u32 },
}

/// The run itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEvent {
    /// The warm-up ends: counters that are not sampled per operation take
    /// their baseline.
    WarmupEnd,
    /// Every task exited a while ago: end the run.
    AllExited,
}

/// What an event is, for the per-mechanism event counts of a run
/// ([`crate::result::EventCounts`]): the mechanism that handles it and,
/// for the end of a CPU's activity, which activity ended. An index into
/// [`EVENT_KINDS`], so counting one is an array increment.
pub type EventKind = usize;

/// The name of each [`EventKind`], `mechanism.what`.
pub const EVENT_KINDS: [&str; NR_EVENT_KINDS] = [
    "cpu.task",
    "cpu.idle",
    "cpu.irq_exit",
    "cpu.switch",
    "sched.resched_ipi",
    "sched.tick",
    "sched.hrtimer",
    "sched.nohz_balance",
    "sched.spin_end",
    "smp.ipi",
    "cfs.period",
    "cfs.slack",
    "rcu",
    "mm",
    "lock.timer",
    "stop_machine",
    "run",
];
pub const NR_EVENT_KINDS: usize = 17;

/// The name of each [`EventKind`]'s folded events (handled without the
/// queue: `Kernel::folds`).
pub const FOLDED_KINDS: [&str; NR_EVENT_KINDS] = [
    "fold.cpu.task",
    "fold.cpu.idle",
    "fold.cpu.irq_exit",
    "fold.cpu.switch",
    "fold.sched.resched_ipi",
    "fold.sched.tick",
    "fold.sched.hrtimer",
    "fold.sched.nohz_balance",
    "fold.sched.spin_end",
    "fold.smp.ipi",
    "fold.cfs.period",
    "fold.cfs.slack",
    "fold.rcu",
    "fold.mm",
    "fold.lock.timer",
    "fold.stop_machine",
    "fold.run",
];

/// [`EventKind`]s of the end of a CPU's activity, by what the CPU was doing.
pub const KIND_CPU_TASK: EventKind = 0;
pub const KIND_CPU_IDLE: EventKind = 1;
pub const KIND_CPU_IRQ_EXIT: EventKind = 2;
pub const KIND_CPU_SWITCH: EventKind = 3;

impl Event {
    /// The event's kind; `SchedEvent::Cpu` is [`KIND_CPU_TASK`] here, the
    /// kernel refines it by the CPU's activity.
    #[inline]
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Sched(e) => match e {
                SchedEvent::Cpu { .. } => KIND_CPU_TASK,
                SchedEvent::Resched { .. } => 4,
                SchedEvent::Tick { .. } => 5,
                SchedEvent::Timer { .. } => 6,
                SchedEvent::NohzBalance { .. } => 7,
                SchedEvent::SpinEnd { .. } => 8,
            },
            Event::Smp(_) => 9,
            Event::Cfs(CfsEvent::Period { .. }) => 10,
            Event::Cfs(CfsEvent::Slack { .. }) => 11,
            Event::Rcu(_) => 12,
            Event::Mm(_) => 13,
            Event::Lock(_) => 14,
            Event::Stop(_) => 15,
            Event::Run(_) => 16,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_stay_small() {
        // Stored inline in the engine's heap: keep them within 16 bytes.
        assert!(std::mem::size_of::<super::Event>() <= 16);
    }

    #[test]
    fn every_kind_has_a_distinct_name() {
        use super::*;
        let mut names = EVENT_KINDS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), NR_EVENT_KINDS);
        let ev = Event::Run(RunEvent::WarmupEnd);
        assert_eq!(EVENT_KINDS[ev.kind()], "run");
        let ev = Event::Sched(SchedEvent::Tick { cpu: 3 });
        assert_eq!(EVENT_KINDS[ev.kind()], "sched.tick");
    }

    /// The counts by kind add up to the engine's counts, and a lock
    /// benchmark's events are mostly task batches ending and ticks.
    #[test]
    fn counts_by_kind_add_up_to_the_engine_counts() {
        let spec = crate::testkit::global_mutex_bench(8, 1_000, 20_000, 5_000_000);
        let r = crate::simulate(&spec);
        let by_kind = r.stats.by_kind;
        assert_eq!(by_kind.done.iter().sum::<u64>(), r.stats.events);
        assert_eq!(by_kind.stale.iter().sum::<u64>(), r.stats.stale_events);
        let kinds = by_kind.nonzero();
        assert_eq!(kinds[0].0, "cpu.task", "{kinds:?}");
        assert!(kinds.iter().any(|k| k.0 == "sched.tick"), "{kinds:?}");
        assert!(kinds.windows(2).all(|w| w[0].1 >= w[1].1));
    }
}
