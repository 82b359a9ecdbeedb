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
}

/// Work queued to run after a grace period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcuCallback {
    /// `wakeme_after_rcu()`: the `synchronize_rcu()` caller.
    Wake { task: TaskId, gen: u32 },
    /// `rcu_sync_func()` of `cpu_hotplug_lock`.
    RcuSync,
    /// A scenario's `call_rcu()`: its cost is kept with it in the queue.
    Func,
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

#[cfg(test)]
mod tests {
    #[test]
    fn events_stay_small() {
        // Stored inline in the engine's heap: keep them within 16 bytes.
        assert!(std::mem::size_of::<super::Event>() <= 16);
    }
}
