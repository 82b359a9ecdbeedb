//! The scheduler's, the mm's and the checks' views of the kernel
//! ([`SchedEnv`], [`crate::mm::MmEnv`], [`crate::check::CheckEnv`]), and
//! their entry points for the rest of the kernel: thin delegations,
//! each by its full path (a bare `self.same_name()` here could recurse
//! into itself).

use smpsim_engine::{Handled, Nanos};

use super::Kernel;
use crate::cpu::Csd;
use crate::hooks::{HookEvent, HookRun};
use crate::mechanism::Flow;
use crate::mm::MmOps;
use crate::program::Program;
use crate::sched::prelude::*;
use crate::sched::SchedParts;
use crate::task::TaskId;

impl<'s> SchedEnv<'s> for Kernel<'s> {
    fn spec(&self) -> &'s crate::spec::Spec {
        self.spec
    }
    fn sched(&self) -> &crate::sched::Sched<'s> {
        &self.sched
    }
    fn sched_mut(&mut self) -> &mut crate::sched::Sched<'s> {
        &mut self.sched
    }
    fn sched_parts(&mut self) -> SchedParts<'_, 's> {
        SchedParts {
            cpus: &mut self.cpus,
            tasks: &mut self.tasks,
            sched: &mut self.sched,
        }
    }
    fn enter_irq(&mut self, c: u32) {
        Kernel::enter_irq(self, c)
    }
    fn interrupt(&mut self, c: u32) {
        Kernel::interrupt(self, c)
    }
    fn wake_idle_latency(&self, c: u32, from: u32) -> Nanos {
        Kernel::wake_idle_latency(self, c, from)
    }
    fn queue_csd(&mut self, target: u32, csd: Csd, at: Nanos, from: u32) {
        Kernel::queue_csd(self, target, csd, at, from)
    }
    fn call_single_queue_add(&mut self, owner: u32, by: u32, at: Nanos) -> Nanos {
        self.sched.ttwu.lines[owner as usize].rmw_void(&self.cost, by, at)
    }
    fn on_cpu_event(&mut self, c: u32, gen: u32) -> Handled {
        Kernel::on_cpu_event(self, c, gen)
    }
    fn on_spin_end(&mut self, t: TaskId, gen: u32) -> Handled {
        Kernel::on_spin_end(self, t, gen)
    }
    fn rcu_note_context_switch(&mut self, c: u32) {
        Kernel::rcu_note_context_switch(self, c)
    }
    fn rcu_qs(&mut self, c: u32) {
        Kernel::rcu_qs(self, c)
    }
    fn rcu_urgent_qs_tick(&mut self, c: u32, in_kernel: bool) {
        Kernel::rcu_urgent_qs_tick(self, c, in_kernel)
    }
    fn rcu_check_cpu_stall(&mut self, c: u32) {
        Kernel::rcu_check_cpu_stall(self, c)
    }
    fn rcu_eqs_enter(&mut self, c: u32) {
        self.rcu.eqs_enter(c)
    }
    fn sleeping_owner_leaves_cpu(&mut self, prev: TaskId) {
        Kernel::sleeping_owner_leaves_cpu(self, prev)
    }
    fn mm_switch_start(&mut self, c: u32, prev: TaskId, next: TaskId) -> Nanos {
        <Self as MmOps>::mm_switch_start(self, c, prev, next)
    }
    fn mm_switch_finish(&mut self, c: u32, next: TaskId) -> Nanos {
        <Self as MmOps>::mm_switch_finish(self, c, next)
    }
    fn hook(&self, ev: HookEvent) -> Option<&'s Program> {
        crate::hooks::Hooks::hook(self, ev)
    }
    fn run_hook(&mut self, c: u32, h: &Program, at: Nanos) -> Nanos {
        crate::hooks::Hooks::run_hook(self, c, h, at)
    }
    fn switch_hook(
        &mut self,
        c: u32,
        ev: HookEvent,
        subject: crate::hooks::HookSubject,
        cost: Nanos,
        run: &mut Option<Box<HookRun<'s>>>,
    ) -> Nanos {
        crate::hooks::Hooks::switch_hook(self, c, ev, subject, cost, run)
    }
    fn wake_hook(&mut self, on: u32, ev: HookEvent, p: TaskId) {
        crate::hooks::Hooks::wake_hook(self, on, ev, p)
    }
    fn hook_takes_locks(&self, ev: HookEvent) -> bool {
        crate::hooks::Hooks::hook_takes_locks(self, ev)
    }
    fn charge_hook(&mut self, c: u32, d: Nanos) {
        crate::hooks::Hooks::charge_hook(self, c, d)
    }
    fn take_hook_debt(&mut self, c: u32) -> Nanos {
        crate::hooks::Hooks::take_hook_debt(self, c)
    }
    fn start_switch_run(&mut self, c: u32, next: TaskId, cost: Nanos, run: Box<HookRun<'s>>) {
        crate::hooks::Hooks::start_switch_run(self, c, next, cost, run)
    }
    fn hook_run_waiting(&self, c: u32) -> bool {
        crate::hooks::Hooks::hook_run_waiting(self, c)
    }
    fn drive_hook_run(&mut self, c: u32) {
        crate::hooks::Hooks::drive_hook_run(self, c)
    }
}

/// The scheduler's verbs as the other mechanisms' envs see them
/// ([`crate::env::SchedVerbs`]).
impl crate::env::SchedVerbs for Kernel<'_> {
    fn wake_up(&mut self, t: TaskId, from: u32) {
        <Self as Scheduler>::wake_up(self, t, from)
    }
    fn wake_up_from(&mut self, t: TaskId, waker: u32, softirq: bool) {
        <Self as Scheduler>::wake_up_from(self, t, waker, softirq)
    }
    fn block(&mut self, c: u32, t: TaskId) {
        <Self as Scheduler>::block(self, c, t)
    }
    fn schedule(&mut self, c: u32) {
        <Self as Scheduler>::schedule(self, c)
    }
    fn resched_cpu(&mut self, c: u32, from: u32) {
        <Self as Scheduler>::resched_cpu(self, c, from)
    }
    fn sleep_until_woken(&mut self, c: u32, t: TaskId, resume: crate::task::Resume) -> Flow {
        <Self as Scheduler>::sleep_until_woken(self, c, t, resume)
    }
}

/// The scheduler's entry points for the rest of the kernel, by the names
/// its callers have always used.
impl<'s> Kernel<'s> {
    pub(crate) fn schedule(&mut self, c: u32) {
        <Self as Scheduler>::schedule(self, c)
    }
    pub(crate) fn finish_switch(&mut self, c: u32, next: TaskId) {
        <Self as Scheduler>::finish_switch(self, c, next)
    }
    pub(crate) fn block(&mut self, c: u32, t: TaskId) {
        <Self as Scheduler>::block(self, c, t)
    }
    pub(crate) fn enqueue_task(&mut self, t: TaskId) {
        <Self as Scheduler>::enqueue_task(self, t)
    }
    pub(crate) fn check_hung_task(&mut self, t: TaskId) {
        <Self as Scheduler>::check_hung_task(self, t)
    }
    pub(crate) fn on_sched_event(&mut self, e: crate::event::SchedEvent) -> Handled {
        <Self as Scheduler>::on_sched_event(self, e)
    }
    pub(crate) fn preempt_enable_op(&mut self, c: u32, t: TaskId) -> Flow {
        crate::sched::preempt::preempt_enable_op(self, c, t)
    }
    pub(crate) fn scale_work(&mut self, c: u32, ns: Nanos, vt: Nanos) -> Nanos {
        <Self as Capacity>::scale_work(self, c, ns, vt)
    }
    pub(crate) fn has_group_hooks(&self) -> bool {
        <Self as TgLoadAvg>::has_group_hooks(self)
    }
    pub(crate) fn run_group_hooks(
        &mut self,
        on: u32,
        t: TaskId,
        site: crate::sched::tg_load_avg::UpdateSite,
        at: Nanos,
    ) -> Nanos {
        <Self as TgLoadAvg>::run_group_hooks(self, on, t, site, at)
    }
    pub(crate) fn migrate_tasks_off(&mut self, c: u32, from: u32) {
        <Self as Balancer>::migrate_tasks_off(self, c, from)
    }
    pub(crate) fn sched_ttwu_pending(&mut self, c: u32, t: Nanos) -> (Nanos, Option<Nanos>) {
        <Self as TtwuQueueing>::sched_ttwu_pending(self, c, t)
    }
    pub(crate) fn on_cfs_event(&mut self, e: crate::event::CfsEvent) -> Handled {
        <Self as CfsBandwidth>::on_cfs_event(self, e)
    }
    pub(crate) fn cfs_period_timer(&mut self, c: u32, p: u32, t: Nanos) -> Nanos {
        <Self as CfsBandwidth>::cfs_period_timer(self, c, p, t)
    }
    pub(crate) fn cfs_slack_timer(&mut self, c: u32, p: u32, t: Nanos) -> Nanos {
        <Self as CfsBandwidth>::cfs_slack_timer(self, c, p, t)
    }
    pub(crate) fn cfsb_csd_unthrottle(&mut self, c: u32, t: Nanos) -> Nanos {
        <Self as CfsBandwidth>::cfsb_csd_unthrottle(self, c, t)
    }
}

impl crate::mm::MmEnv for Kernel<'_> {
    fn spec(&self) -> &crate::spec::Spec {
        self.spec
    }
    fn mm(&self) -> &crate::mm::MmState {
        &self.mm
    }
    fn mm_mut(&mut self) -> &mut crate::mm::MmState {
        &mut self.mm
    }
    fn mm_parts(&mut self) -> crate::mm::MmParts<'_> {
        crate::mm::MmParts {
            mm: &mut self.mm,
            cpus: &mut self.cpus,
            tasks: &mut self.tasks,
            cost: &self.cost,
        }
    }
    fn queue_csd(&mut self, target: u32, csd: Csd, at: Nanos, from: u32) {
        Kernel::queue_csd(self, target, csd, at, from)
    }
    fn sched_booting(&self) -> bool {
        self.sched.booting()
    }
}

/// The mm's entry points for the rest of the kernel, by the names its
/// callers have always used.
impl Kernel<'_> {
    pub(crate) fn tlb_flush_targets(&mut self, t: TaskId, freed_tables: bool, out: &mut Vec<u32>) {
        <Self as MmOps>::tlb_flush_targets(self, t, freed_tables, out)
    }
    pub(crate) fn tlb_flush_mask_targets(&mut self, t: TaskId, slot: u16, out: &mut Vec<u32>) {
        <Self as MmOps>::tlb_flush_mask_targets(self, t, slot, out)
    }
    pub(crate) fn tlb_broadcast_on(&self) -> bool {
        <Self as MmOps>::tlb_broadcast_on(self)
    }
    pub(crate) fn consider_global_asid(&mut self, t: TaskId) {
        <Self as MmOps>::consider_global_asid(self, t)
    }
    pub(crate) fn flush_by_broadcast(&self, t: TaskId) -> bool {
        <Self as MmOps>::flush_by_broadcast(self, t)
    }
    pub(crate) fn broadcast_tlb_flush(&mut self, t: TaskId, pages: u64) -> u64 {
        <Self as MmOps>::broadcast_tlb_flush(self, t, pages)
    }
    pub(crate) fn mm_exit(&mut self, c: u32, t: TaskId) -> u64 {
        <Self as MmOps>::mm_exit(self, c, t)
    }
    pub(crate) fn shoot_lazy_tlb(&mut self, c: u32, mm: u32) {
        <Self as MmOps>::shoot_lazy_tlb(self, c, mm)
    }
    pub(crate) fn mm_check_leaks(&mut self) {
        <Self as MmOps>::mm_check_leaks(self)
    }
    pub(crate) fn on_mm_event(&mut self, e: crate::event::MmEvent) -> Handled {
        <Self as MmOps>::on_mm_event(self, e)
    }
}

impl crate::check::CheckEnv for Kernel<'_> {
    fn duration(&self) -> Nanos {
        self.spec.duration
    }
    fn perturber(&mut self) -> Option<&mut crate::check::Perturber> {
        self.sched.perturb.as_mut()
    }
    fn cond(&mut self, t: TaskId, c: &crate::program::Cond) -> bool {
        Kernel::cond(self, t, c)
    }
    fn instance(&mut self, t: TaskId, r: &crate::program::ObjRef) -> u32 {
        Kernel::instance(self, t, r)
    }
    fn set_variable(&mut self, i: u32, v: i64) {
        self.locking.objects_mut().set_variable(i, v)
    }
}

/// The checks' entry point for the interpreter.
impl Kernel<'_> {
    pub(crate) fn perturb_delay(&mut self) -> Option<Nanos> {
        crate::check::perturb_delay(self)
    }
}
