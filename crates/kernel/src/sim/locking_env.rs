//! Locking's view of the kernel ([`LockingEnv`]) and locking's entry
//! points for the rest of the kernel: thin delegations, each by its full
//! path (a bare `self.same_name()` here could recurse into itself).

use smpsim_engine::Nanos;

use super::Kernel;
use crate::costs::CostNs;
use crate::cpu::Cpu;
use crate::event::{Event, RcuCallback};
use crate::locking::sleeping::SleepingLocks;
use crate::locking::spinning::{HookSpinlocks, SpinningLocks};
use crate::locking::{LockdepOps, Locking, LockingEnv, LockingParts};
use crate::mechanism::Flow;
use crate::metrics::Metrics;
use crate::program::{LockMode, ObjRef};
use crate::task::{Resume, Task, TaskId};

impl LockingEnv for Kernel<'_> {
    #[inline]
    fn spec(&self) -> &crate::spec::Spec {
        self.spec
    }
    #[inline]
    fn now(&self) -> Nanos {
        self.now
    }
    #[inline]
    fn cost(&self) -> &CostNs {
        &self.cost
    }
    #[inline]
    fn cpu(&self, c: u32) -> &Cpu {
        &self.cpus[c as usize]
    }
    #[inline]
    fn tasks(&self) -> &[Task] {
        &self.tasks
    }
    #[inline]
    fn tasks_mut(&mut self) -> &mut [Task] {
        &mut self.tasks
    }
    #[inline]
    fn metrics_mut(&mut self) -> &mut Metrics {
        &mut self.metrics
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
    fn task_name(&self, t: TaskId) -> String {
        Kernel::task_name(self, t)
    }
    #[inline]
    fn at(&mut self, t: Nanos, e: Event) {
        Kernel::at(self, t, e)
    }
    fn settle(&mut self, c: u32) {
        Kernel::settle(self, c)
    }
    #[inline]
    fn advance(&mut self, t: TaskId) {
        Kernel::advance(self, t)
    }
    #[inline]
    fn instance(&mut self, t: TaskId, r: &ObjRef) -> u32 {
        Kernel::instance(self, t, r)
    }
    #[inline]
    fn preempt_disable(&mut self, t: TaskId) {
        Kernel::preempt_disable(self, t)
    }
    #[inline]
    fn preempt_enable(&mut self, t: TaskId) -> bool {
        Kernel::preempt_enable(self, t)
    }
    fn irq_off_begin(&mut self, c: u32) {
        Kernel::irq_off_begin(self, c)
    }
    fn irq_off_end(&mut self, c: u32) {
        Kernel::irq_off_end(self, c)
    }
    fn enter_irq(&mut self, c: u32) {
        Kernel::enter_irq(self, c)
    }
    fn wake_up(&mut self, t: TaskId, from: u32) {
        Kernel::wake_up(self, t, from)
    }
    fn schedule(&mut self, c: u32) {
        Kernel::schedule(self, c)
    }
    fn block(&mut self, c: u32, t: TaskId) {
        Kernel::block(self, c, t)
    }
    fn sleep_until_woken(&mut self, c: u32, t: TaskId, resume: Resume) -> Flow {
        Kernel::sleep_until_woken(self, c, t, resume)
    }
    fn call_rcu(&mut self, c: u32, cb: RcuCallback) {
        Kernel::call_rcu(self, c, cb)
    }
    fn synchronize_rcu(&mut self, c: u32, t: TaskId, expedited: bool) {
        Kernel::synchronize_rcu(self, c, t, expedited)
    }
    fn hook_spin_since(&self, c: u32) -> Nanos {
        Kernel::hook_spin_since(self, c)
    }
    fn hook_lock_granted(&mut self, c: u32, at: Nanos) {
        Kernel::hook_lock_granted(self, c, at)
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
