//! What the locking mechanisms need from the rest of the kernel
//! ([`LockingEnv`]): the core's time, costs, CPUs, tasks, accounting and
//! event sink, locking's own state ([`super::Locking`]), and the verbs of
//! the other mechanisms a lock operation reaches (the interpreter's
//! `advance`, the scheduler's sleep and wakeup, preemption and IRQ state,
//! RCU for `percpu_rwsem` and `percpu_ref`, the hooks' spinlocks).
//!
//! Each lock file's methods are an extension trait over it, implemented
//! for every env (`SeqcountOps`, `MutexOps`, `SpinningLocks`, ...); the
//! one implementation, for the kernel, is in `sim/locking_env.rs`.
//! Monomorphised: no run-time cost.

use smpsim_engine::Nanos;

use crate::costs::CostNs;
use crate::cpu::Cpu;
use crate::event::{Event, RcuCallback};
use crate::mechanism::Flow;
use crate::metrics::Metrics;
use crate::program::ObjRef;
use crate::task::{Resume, Task, TaskId};

/// Locking's view of the kernel.
pub(crate) trait LockingEnv: Sized {
    /// The compiled scenario.
    fn spec(&self) -> &crate::spec::Spec;
    /// The current event's time.
    fn now(&self) -> Nanos;
    /// The machine's costs.
    fn cost(&self) -> &CostNs;
    /// CPU `c`.
    fn cpu(&self, c: u32) -> &Cpu;
    /// Every task, by id.
    fn tasks(&self) -> &[Task];
    /// Every task, to change its wait, batch and lock fields.
    fn tasks_mut(&mut self) -> &mut [Task];
    /// The accounting, to record into (`lock_stat`, the reports).
    fn metrics_mut(&mut self) -> &mut Metrics;
    /// Locking's own state.
    fn locking(&self) -> &super::Locking;
    /// Locking's own state, to change.
    fn locking_mut(&mut self) -> &mut super::Locking;
    /// Locking's state, the tasks, the costs and the accounting at once
    /// (disjoint borrows for a lock operation).
    fn locking_parts(&mut self) -> LockingParts<'_>;

    /// A task as reports name it.
    fn task_name(&self, t: TaskId) -> String;
    /// Schedules an event.
    fn at(&mut self, t: Nanos, e: Event);
    /// Charges CPU `c`'s time up to now.
    fn settle(&mut self, c: u32);
    /// Moves task `t` to its next op (the interpreter).
    fn advance(&mut self, t: TaskId);
    /// The instance an object reference names for task `t` (the
    /// interpreter).
    fn instance(&mut self, t: TaskId, r: &ObjRef) -> u32;

    /// `preempt_disable()` of task `t`.
    fn preempt_disable(&mut self, t: TaskId);
    /// `preempt_enable()` of task `t`: whether it should reschedule now.
    fn preempt_enable(&mut self, t: TaskId) -> bool;
    /// CPU `c` starts an IRQs-off stretch.
    fn irq_off_begin(&mut self, c: u32);
    /// CPU `c` ends an IRQs-off stretch.
    fn irq_off_end(&mut self, c: u32);
    /// Takes the interrupt pending on CPU `c` (`smp.rs`).
    fn enter_irq(&mut self, c: u32);

    /// Wakes task `t` from CPU `from` (the scheduler).
    fn wake_up(&mut self, t: TaskId, from: u32);
    /// CPU `c` picks its next task (the scheduler).
    fn schedule(&mut self, c: u32);
    /// Task `t` on CPU `c` blocks (the scheduler).
    fn block(&mut self, c: u32, t: TaskId);
    /// Task `t` on CPU `c` sleeps until woken, then resumes at `resume`
    /// (the scheduler).
    fn sleep_until_woken(&mut self, c: u32, t: TaskId, resume: Resume) -> Flow;

    /// `call_rcu()` from CPU `c` (RCU).
    fn call_rcu(&mut self, c: u32, cb: RcuCallback);
    /// `synchronize_rcu()` by task `t` on CPU `c` (RCU).
    fn synchronize_rcu(&mut self, c: u32, t: TaskId, expedited: bool);

    /// When the hook on CPU `c` began to spin for its lock (`hooks.rs`).
    fn hook_spin_since(&self, c: u32) -> Nanos;
    /// The lock CPU `c`'s hook spins on is its from `at` (`hooks.rs`).
    fn hook_lock_granted(&mut self, c: u32, at: Nanos);
}

/// Locking's state with the core's tasks, costs and accounting, borrowed
/// at once ([`LockingEnv::locking_parts`]).
pub(crate) struct LockingParts<'a> {
    pub(crate) now: Nanos,
    pub(crate) locking: &'a mut super::Locking,
    pub(crate) tasks: &'a mut [Task],
    pub(crate) cost: &'a CostNs,
    pub(crate) metrics: &'a mut Metrics,
}
