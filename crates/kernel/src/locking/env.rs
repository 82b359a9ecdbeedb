//! What the locking mechanisms need from the rest of the kernel
//! ([`LockingEnv`]): the core's time, costs, CPUs, tasks, accounting and
//! event sink, preemption and IRQ state and the interpreter's `advance`
//! (all [`crate::env::CoreEnv`]), the scheduler's sleep and wakeup
//! ([`crate::env::SchedVerbs`]), locking's own state
//! ([`super::Locking`]), and the verbs of the other mechanisms a lock
//! operation reaches (RCU for `percpu_rwsem` and `percpu_ref`, the hooks'
//! spinlocks, the interrupt entry).
//!
//! Each lock file's methods are an extension trait over it, implemented
//! for every env (`SeqcountOps`, `MutexOps`, `SpinningLocks`, ...); the
//! one implementation, for the kernel, is in `sim/locking_env.rs`.
//! Monomorphised: no run-time cost.

use smpsim_engine::Nanos;

use crate::costs::CostNs;
use crate::env::{CoreEnv, SchedVerbs};
use crate::event::RcuCallback;
use crate::metrics::Metrics;
use crate::program::ObjRef;
use crate::task::{Task, TaskId};

/// Locking's view of the kernel: the core ([`CoreEnv`]: time, costs, CPUs,
/// tasks, accounting, the event sink, preemption and IRQ state, the
/// interpreter's `advance`) and the scheduler's verbs ([`SchedVerbs`]),
/// plus what only locking needs.
pub(crate) trait LockingEnv: CoreEnv + SchedVerbs + Sized {
    /// The compiled scenario.
    fn spec(&self) -> &crate::spec::Spec;
    /// Locking's own state.
    fn locking(&self) -> &super::Locking;
    /// Locking's own state, to change.
    fn locking_mut(&mut self) -> &mut super::Locking;
    /// Locking's state, the tasks, the costs and the accounting at once
    /// (disjoint borrows for a lock operation).
    fn locking_parts(&mut self) -> LockingParts<'_>;

    /// The instance an object reference names for task `t` (the
    /// interpreter).
    fn instance(&mut self, t: TaskId, r: &ObjRef) -> u32;
    /// Takes the interrupt pending on CPU `c` (`smp.rs`).
    fn enter_irq(&mut self, c: u32);

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
