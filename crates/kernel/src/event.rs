//! The events of the kernel model. Each is small and `Copy`; the engine
//! stores them inline, so scheduling one never allocates.

/// A point where the state of the simulated system changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The CPU's current activity (a work segment, an interrupt handler, a
    /// context switch) ends. Stale if the CPU's generation moved on.
    Cpu { cpu: u32, gen: u32 },
    /// A function-call IPI reaches `cpu`.
    Ipi { cpu: u32 },
    /// A reschedule IPI (remote wakeup) reaches `cpu`.
    Resched { cpu: u32 },
    /// The scheduler tick on `cpu`.
    Tick { cpu: u32 },
    /// A sleeping task's hrtimer expires.
    Timer { task: u32, gen: u32 },
    /// The period timer of a CFS bandwidth pool expires.
    CfsPeriod { pool: u32 },
    /// A spinning task observes the condition it spins on (a CSD unlocked,
    /// a mutex handed to it, its mutex owner gone off-CPU).
    SpinEnd { task: u32, gen: u32 },
    /// A timer a spinning lock asked for (a backoff running out).
    LockTimer { lock: u32 },
    /// The RCU GP kthread starts a grace period (`rcu_gp_init()`).
    RcuGpStart,
    /// A force-quiescent-state scan of grace period `gen`.
    RcuFqs { gen: u32 },
    /// `rcu_gp_cleanup()` done.
    RcuGpEnd,
    /// The expedited-GP worker selects CPUs and sends IPIs.
    RcuExpStart,
    /// `rcu_core()` (RCU_SOFTIRQ) on `cpu` at its tick: new callbacks ask
    /// for a grace period.
    RcuCore { cpu: u32 },
    /// The naive cpumask-refcount protocol looks at an mm's mask and users.
    MmCheck { mm: u32 },
    /// The warm-up ends: counters that are not sampled per operation take
    /// their baseline.
    WarmupEnd,
    /// Every task exited a while ago: end the run.
    AllExited,
    /// `__mmdrop()` frees an mm.
    MmFree { mm: u32 },
    /// An RCU callback runs (RCU_SOFTIRQ on `cpu`).
    RcuCallback {
        cpu: u32,
        cb: crate::rcu::RcuCallback,
    },
}
