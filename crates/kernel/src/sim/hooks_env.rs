//! The hooks' view of the kernel ([`HooksEnv`]): thin delegations, each
//! by its full path (a bare `self.same_name()` here could recurse into
//! itself).

use smpsim_engine::Nanos;

use super::Kernel;
use crate::hooks::{HookAt, HookState, HooksEnv};
use crate::program::LockMode;
use crate::task::TaskId;

impl<'s> HooksEnv<'s> for Kernel<'s> {
    fn spec(&self) -> &'s crate::Spec {
        self.spec
    }
    fn hooks(&self) -> &HookState<'s> {
        self.sched.hooks()
    }
    fn hooks_mut(&mut self) -> &mut HookState<'s> {
        self.sched.hooks_mut()
    }
    fn hook_stream(&mut self, c: u32) -> &mut smpsim_engine::Rng {
        Kernel::hook_stream(self, c)
    }
    fn scale_work(&mut self, c: u32, ns: Nanos, t: Nanos) -> Nanos {
        Kernel::scale_work(self, c, ns, t)
    }
    fn first_instance(&self, object: u32) -> u32 {
        self.locking.objects().first_instance(object)
    }
    fn hook_atomic(&mut self, c: u32, l: u32, rmw: bool, t: Nanos) -> Nanos {
        let line = self.locking.objects_mut().atomic_line(l);
        if rmw {
            line.rmw_void(&self.cost, c, t)
        } else {
            line.read(&self.cost, c, t)
        }
    }
    fn hook_semaphore_up(&mut self, c: u32, s: u32, t: Nanos) -> (Nanos, Option<TaskId>) {
        Kernel::hook_semaphore_up(self, c, s, t)
    }
    fn hook_spin_lock(&mut self, c: u32, l: u32, mode: LockMode) -> Option<Nanos> {
        Kernel::hook_spin_lock(self, c, l, mode)
    }
    fn hook_spin_unlock(&mut self, c: u32, l: u32, mode: LockMode) -> Nanos {
        Kernel::hook_spin_unlock(self, c, l, mode)
    }
    fn spinlock_object(&self, l: u32) -> u32 {
        self.locking.objects().spinlocks()[l as usize].object
    }
    fn lockdep_hardirq_settled(&self, class: u32) -> bool {
        self.locking.lockdep_usage_settled(class, true)
    }
    fn lockdep_usage(&mut self, c: u32, class: u32, in_hardirq: bool, site: String) {
        Kernel::lockdep_usage(self, c, class, in_hardirq, site)
    }
    fn rcu_softirq(&mut self, c: u32, t: Nanos) -> Nanos {
        Kernel::rcu_softirq(self, c, t)
    }
    fn hook_bad_index(&mut self, c: u32, t: Nanos, hook: &crate::Program, object: u32, index: i64) {
        if self.metrics.in_run(t) {
            let who = hook_name(self, hook);
            Kernel::report_bad_index(self, c, t, &who, object, index);
            Kernel::halt(self);
        }
    }
    fn hook_divide_error(&mut self, c: u32, at: HookAt<'_>, a: i64, b: i64) {
        // Once: an expression's other operand may divide by zero too.
        if self.metrics.in_run(at.t) && !Kernel::halted(self) {
            let who = hook_name(self, at.hook);
            self.metrics.divide_error(c, at.t, &who, at.pc as u32, a, b);
            Kernel::halt(self);
        }
    }
    fn run_halted(&self) -> bool {
        Kernel::halted(self)
    }
}

/// A hook as a finding names it, where a task's names the task: by its
/// event, "the `sched_tick` hook".
fn hook_name(k: &Kernel<'_>, hook: &crate::Program) -> String {
    let event = k
        .spec
        .hooks
        .iter()
        .position(|h| h.as_ref().is_some_and(|p| std::ptr::eq(p, hook)))
        .map_or("?", |ev| crate::hooks::HOOK_NAMES[ev]);
    format!("the `{event}` hook")
}
