//! Locking's view of the kernel ([`LockingEnv`]) and locking's entry
//! points for the rest of the kernel: thin delegations, each by its full
//! path (a bare `self.same_name()` here could recurse into itself).

use smpsim_engine::Nanos;

use super::Kernel;
use crate::costs::CostNs;
use crate::cpu::Cpu;
use crate::event::{Event, RcuCallback};
use crate::locking::{Locking, LockingEnv, LockingParts};
use crate::mechanism::Flow;
use crate::metrics::Metrics;
use crate::program::ObjRef;
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
    fn nr_cpus(&self) -> u32 {
        Kernel::nr_cpus(self)
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
