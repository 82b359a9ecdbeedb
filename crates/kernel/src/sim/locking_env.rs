//! Locking's view of the kernel ([`LockingEnv`]) and locking's entry
//! points for the rest of the kernel: thin delegations, each by its full
//! path (a bare `self.same_name()` here could recurse into itself).

use smpsim_engine::Nanos;

use super::Kernel;
use crate::event::RcuCallback;
use crate::locking::sleeping::SleepingLocks;
use crate::locking::spinning::{HookSpinlocks, SpinningLocks};
use crate::locking::{LockdepOps, Locking, LockingEnv, LockingParts};
use crate::program::{LockMode, ObjRef};
use crate::task::TaskId;

impl LockingEnv for Kernel<'_> {
    #[inline]
    fn spec(&self) -> &crate::spec::Spec {
        self.spec
    }
    #[inline]
    fn locking(&self) -> &Locking {
        &self.locking
    }
    #[inline]
    fn locking_mut(&mut self) -> &mut Locking {
        &mut self.locking
    }
    #[inline]
    fn locking_parts(&mut self) -> LockingParts<'_> {
        LockingParts {
            now: self.now,
            locking: &mut self.locking,
            tasks: &mut self.tasks,
            cost: &self.cost,
            metrics: &mut self.metrics,
        }
    }
    #[inline]
    fn instance(&mut self, t: TaskId, r: &ObjRef) -> u32 {
        Kernel::instance(self, t, r)
    }
    fn enter_irq(&mut self, c: u32) {
        Kernel::enter_irq(self, c)
    }
    fn call_rcu(&mut self, c: u32, cb: RcuCallback) {
        Kernel::call_rcu(self, c, cb)
    }
    fn synchronize_rcu(&mut self, c: u32, t: TaskId, expedited: bool) {
        Kernel::synchronize_rcu(self, c, t, expedited)
    }
    fn hook_spin_since(&self, c: u32) -> Nanos {
        crate::hooks::Hooks::hook_spin_since(self, c)
    }
    fn hook_lock_granted(&mut self, c: u32, at: Nanos) {
        crate::hooks::Hooks::hook_lock_granted(self, c, at)
    }
}

/// Locking's entry points for the rest of the kernel, by the names their
/// callers have always used.
impl Kernel<'_> {
    pub(crate) fn rcu_sync_func(&mut self, sem: u32) {
        <Self as crate::locking::percpu_rwsem::PercpuRwsemOps>::rcu_sync_func(self, sem)
    }
    pub(crate) fn on_lock_event(&mut self, e: crate::event::LockEvent) -> smpsim_engine::Handled {
        <Self as SpinningLocks>::on_lock_event(self, e)
    }
    pub(crate) fn book_spinning_waits(&mut self) {
        <Self as crate::locking::spinning::SpinningWaits>::book_spinning_waits(self)
    }
    pub(crate) fn hook_spin_lock(&mut self, c: u32, l: u32, mode: LockMode) -> Option<Nanos> {
        <Self as HookSpinlocks>::hook_spin_lock(self, c, l, mode)
    }
    pub(crate) fn hook_semaphore_up(
        &mut self,
        c: u32,
        s: u32,
        t: Nanos,
    ) -> (Nanos, Option<TaskId>) {
        crate::locking::semaphore::up_in_irq(self.locking.objects_mut(), &self.cost, c, s, t)
    }
    pub(crate) fn hook_spin_unlock(&mut self, c: u32, l: u32, mode: LockMode) -> Nanos {
        <Self as HookSpinlocks>::hook_spin_unlock(self, c, l, mode)
    }
    pub(crate) fn lockdep_usage(&mut self, c: u32, class: u32, in_hardirq: bool, site: String) {
        <Self as LockdepOps>::lockdep_usage(self, c, class, in_hardirq, site)
    }
    pub(crate) fn lockdep_sys_exit(&mut self, c: u32, t: TaskId, at: Nanos) {
        <Self as LockdepOps>::lockdep_sys_exit(self, c, t, at)
    }
    pub(crate) fn sleeping_owner_leaves_cpu(&mut self, prev: TaskId) {
        <Self as SleepingLocks>::sleeping_owner_leaves_cpu(self, prev)
    }
    pub(crate) fn sleeping_spin_need_resched(&mut self, c: u32, t: TaskId, kind: u8, l: u32) {
        <Self as SleepingLocks>::sleeping_spin_need_resched(self, c, t, kind, l)
    }
    pub(crate) fn sleeping_spin_finished(&mut self, c: u32, t: TaskId, kind: u8, l: u32) -> bool {
        <Self as SleepingLocks>::sleeping_spin_finished(self, c, t, kind, l)
    }
}
