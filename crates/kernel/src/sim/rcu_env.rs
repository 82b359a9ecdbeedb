//! The kernel as each mechanism of `rcu/`, `smp.rs`, `stop_machine.rs`,
//! `hotplug.rs`, `kthread.rs` and `cpumask.rs` sees it: their narrow env
//! traits implemented for [`Kernel`], each method a thin delegation to the
//! core or to another mechanism's verb (always by its full path, so that a
//! renamed verb cannot turn one into a call of itself), and the
//! mechanisms' entry points that the rest of the kernel calls on `Kernel`.

use smpsim_engine::Nanos;

use super::Kernel;
use crate::cpu::{Csd, PendingIrq};
use crate::event::{RcuCallback, RcuEvent};
use crate::hotplug::{Hotplug, HotplugEnv};
use crate::mechanism::Flow;
use crate::rcu::{Rcu, RcuEnv};
use crate::smp::{Smp, SmpEnv};
use crate::stop_machine::{StopEnv, StopMachine, Stoppers};
use crate::task::TaskId;

impl RcuEnv for Kernel<'_> {
    #[inline]
    fn rcu(&self) -> &Rcu {
        &self.rcu
    }
    #[inline]
    fn rcu_mut(&mut self) -> &mut Rcu {
        &mut self.rcu
    }
    #[inline]
    fn spec(&self) -> &crate::Spec {
        self.spec
    }
    #[inline]
    fn jiffy(&self) -> Nanos {
        self.sched.tick_ns()
    }
    fn wakeups_issued(&self) -> u64 {
        self.sched.wakeups_issued
    }
    fn wake_kthread(&mut self, t: TaskId, from: u32) {
        crate::kthread::Kthreads::wake_kthread(self, t, from)
    }
    fn charge_context(&mut self, c: u32, d: Nanos) {
        crate::hooks::Hooks::charge_hook(self, c, d)
    }
    fn set_need_resched(&mut self, c: u32) {
        self.cpus[c as usize].need_resched = true;
    }
    fn raise_rcu_softirq(&mut self, c: u32) {
        self.cpus[c as usize]
            .irq_pending
            .push(PendingIrq::RcuSoftirq);
        Smp::interrupt(self, c)
    }
    fn softirq_from(&mut self, c: u32, start: Nanos) {
        let cpu = &mut self.cpus[c as usize];
        cpu.softirq_from = cpu.softirq_from.min(start);
    }
    fn queue_csd(&mut self, target: u32, csd: Csd, at: Nanos, from: u32) {
        Smp::queue_csd(self, target, csd, at, from)
    }
    fn rcu_sync_func(&mut self, sem: u32) {
        Kernel::rcu_sync_func(self, sem)
    }
    fn object_rcu_callback(&mut self, object: u32, instance: u32) {
        <Self as crate::locking::object_type::ObjectTypeOps>::object_rcu_callback(
            self, object, instance,
        )
    }
    fn where_is(&self, t: TaskId) -> (String, u32, String) {
        Kernel::where_is(self, t)
    }
    fn preempt_enable_op(&mut self, c: u32, t: TaskId) -> Flow {
        Kernel::preempt_enable_op(self, c, t)
    }
}

/// RCU's entry points for the rest of the kernel.
impl Kernel<'_> {
    pub(crate) fn on_rcu_event(&mut self, e: RcuEvent) -> smpsim_engine::Handled {
        crate::rcu::RcuEvents::on_rcu_event(self, e)
    }
    pub(crate) fn rcu_note_context_switch(&mut self, c: u32) {
        crate::rcu::RcuTree::rcu_note_context_switch(self, c)
    }
    pub(crate) fn rcu_qs(&mut self, c: u32) {
        crate::rcu::RcuTree::rcu_qs(self, c)
    }
    pub(crate) fn rcu_urgent_qs_tick(&mut self, c: u32, in_kernel: bool) {
        crate::rcu::RcuTree::rcu_urgent_qs_tick(self, c, in_kernel)
    }
    pub(crate) fn rcu_check_cpu_stall(&mut self, c: u32) {
        crate::rcu::RcuStall::rcu_check_cpu_stall(self, c)
    }
    pub(crate) fn synchronize_rcu(&mut self, c: u32, t: TaskId, expedited: bool) {
        crate::rcu::RcuTree::synchronize_rcu(self, c, t, expedited)
    }
    pub(crate) fn call_rcu(&mut self, c: u32, cb: RcuCallback) {
        crate::rcu::RcuCallbacks::call_rcu(self, c, cb)
    }
    pub(crate) fn rcu_softirq(&mut self, c: u32, start: Nanos) -> Nanos {
        crate::rcu::RcuCallbacks::rcu_softirq(self, c, start)
    }
}

impl<'s> SmpEnv<'s> for Kernel<'s> {
    #[inline]
    fn spec(&self) -> &'s crate::Spec {
        self.spec
    }
    #[inline]
    fn handler_stream(&mut self, c: u32) -> &mut smpsim_engine::Rng {
        Kernel::handler_stream(self, c)
    }
    fn csd_line(&mut self, owner: u32, by: u32, store: bool, at: Nanos) -> Option<Nanos> {
        let object = self.spec.layout.csd_line?;
        let objects = self.locking.objects_mut();
        let line = objects.atomic_line(objects.first_instance(object) + owner);
        Some(if store {
            line.store(&self.cost, by, at)
        } else {
            line.read(&self.cost, by, at)
        })
    }
    fn cfs_period_timer(&mut self, c: u32, pool: u32, t: Nanos) -> Nanos {
        Kernel::cfs_period_timer(self, c, pool, t)
    }
    fn cfs_slack_timer(&mut self, c: u32, pool: u32, t: Nanos) -> Nanos {
        Kernel::cfs_slack_timer(self, c, pool, t)
    }
    fn cfsb_csd_unthrottle(&mut self, c: u32, t: Nanos) -> Nanos {
        Kernel::cfsb_csd_unthrottle(self, c, t)
    }
    fn has_group_hooks(&self) -> bool {
        Kernel::has_group_hooks(self)
    }
    fn run_group_hooks(
        &mut self,
        on: u32,
        t: TaskId,
        site: crate::sched::tg_load_avg::UpdateSite,
        at: Nanos,
    ) -> Nanos {
        Kernel::run_group_hooks(self, on, t, site, at)
    }
    fn hook(&self, ev: crate::hooks::HookEvent) -> Option<&'s crate::program::Program> {
        crate::hooks::Hooks::hook(self, ev)
    }
    fn run_hook(&mut self, c: u32, hook: &crate::program::Program, t: Nanos) -> Nanos {
        crate::hooks::Hooks::run_hook(self, c, hook, t)
    }
    fn tick_hook_locks(&self) -> bool {
        crate::hooks::Hooks::tick_hook_locks(self)
    }
    fn start_irq_hook_run(
        &mut self,
        c: u32,
        t: Nanos,
        ttwu_activate: Option<Nanos>,
        tick: bool,
        softirq: bool,
    ) {
        crate::hooks::Hooks::start_irq_hook_run(self, c, t, ttwu_activate, tick, softirq)
    }
    fn sched_ttwu_pending(&mut self, c: u32, t: Nanos) -> (Nanos, Option<Nanos>) {
        Kernel::sched_ttwu_pending(self, c, t)
    }
    #[inline]
    fn take_hook_debt(&mut self, c: u32) -> Nanos {
        crate::hooks::Hooks::take_hook_debt(self, c)
    }
    #[inline]
    fn hook_run_waiting(&self, c: u32) -> bool {
        crate::hooks::Hooks::hook_run_waiting(self, c)
    }
    fn drive_hook_run(&mut self, c: u32) {
        crate::hooks::Hooks::drive_hook_run(self, c)
    }
    fn rcu_softirq(&mut self, c: u32, start: Nanos) -> Nanos {
        crate::rcu::RcuCallbacks::rcu_softirq(self, c, start)
    }
    fn rcu_exp_handler(&mut self, c: u32) {
        crate::rcu::RcuExp::rcu_exp_handler(self, c)
    }
    fn lockdep_usage_settled(&self, class: u32, in_hardirq: bool) -> bool {
        self.locking.lockdep_usage_settled(class, in_hardirq)
    }
    fn lockdep_usage(&mut self, c: u32, class: u32, in_hardirq: bool, site: String) {
        Kernel::lockdep_usage(self, c, class, in_hardirq, site)
    }
    fn shoot_lazy_tlb(&mut self, c: u32, mm: u32) {
        Kernel::shoot_lazy_tlb(self, c, mm)
    }
    fn flush_by_broadcast(&self, t: TaskId) -> bool {
        Kernel::flush_by_broadcast(self, t)
    }
    fn broadcast_tlb_flush(&mut self, t: TaskId, pages: u64) -> u64 {
        Kernel::broadcast_tlb_flush(self, t, pages)
    }
    fn count_tlb_flush_ipis(&mut self, n: u64) {
        self.mm.count_tlb_flush_ipis(n)
    }
    fn tlb_broadcast_on(&self) -> bool {
        Kernel::tlb_broadcast_on(self)
    }
    fn consider_global_asid(&mut self, t: TaskId) {
        Kernel::consider_global_asid(self, t)
    }
    fn tlb_flush_targets(&mut self, t: TaskId, freed_tables: bool, out: &mut Vec<u32>) {
        Kernel::tlb_flush_targets(self, t, freed_tables, out)
    }
    fn tlb_flush_mask_targets(&mut self, t: TaskId, slot: u16, out: &mut Vec<u32>) {
        Kernel::tlb_flush_mask_targets(self, t, slot, out)
    }
    #[inline]
    fn mm_cpumask_has(&self, mm: u32, c: u32) -> bool {
        self.mm.mm(mm).mask.contains(c)
    }
    fn report_negative(&mut self, t: TaskId, what: &str, n: i64) {
        Kernel::report_negative(self, t, what, n)
    }
    fn bad_cpu(&mut self, c: u32, op: &str, cpu: i64) {
        Hotplug::bad_cpu(self, c, op, cpu)
    }
}

/// The IPI layer's and hardirq entry's entry points for the rest of the
/// kernel.
impl Kernel<'_> {
    pub(crate) fn on_smp_event(&mut self, e: crate::event::SmpEvent) -> smpsim_engine::Handled {
        Smp::on_smp_event(self, e)
    }
    pub(crate) fn interrupt(&mut self, c: u32) {
        Smp::interrupt(self, c)
    }
    pub(crate) fn enter_irq(&mut self, c: u32) {
        Smp::enter_irq(self, c)
    }
    pub(crate) fn exit_irq(&mut self, c: u32) {
        Smp::exit_irq(self, c)
    }
    pub(crate) fn queue_csd(&mut self, target: u32, csd: Csd, at: Nanos, from: u32) {
        Smp::queue_csd(self, target, csd, at, from)
    }
    pub(crate) fn wake_idle_latency(&self, c: u32, from: u32) -> Nanos {
        Smp::wake_idle_latency(self, c, from)
    }
    pub(crate) fn smp_call_done(&mut self, c: u32, t: TaskId) -> Flow {
        Smp::smp_call_done(self, c, t)
    }
}

impl StopEnv for Kernel<'_> {
    #[inline]
    fn stop(&self) -> &Stoppers {
        &self.stop
    }
    #[inline]
    fn stop_mut(&mut self) -> &mut Stoppers {
        &mut self.stop
    }
    #[inline]
    fn stop_parts(&mut self) -> (&mut Stoppers, &crate::costs::CostNs) {
        (&mut self.stop, &self.cost)
    }
    #[inline]
    fn cpu_online(&self, c: u32) -> bool {
        self.cpus[c as usize].online
    }
    fn irq_off_from(&mut self, c: u32, since: Nanos) {
        let cpu = &mut self.cpus[c as usize];
        if cpu.irq_off_since.is_none() {
            cpu.irq_off_since = Some(since);
        }
    }
    fn bad_cpu(&mut self, c: u32, op: &str, cpu: i64) {
        Hotplug::bad_cpu(self, c, op, cpu)
    }
}

/// `stop_machine()`'s entry points for the rest of the kernel and its
/// tests.
impl Kernel<'_> {
    /// Keeps the timeline of every `stop_machine` call from now on.
    pub fn log_stop_machine(&mut self) {
        StopMachine::log_stop_machine(self)
    }
    /// The calls logged since [`Self::log_stop_machine`].
    pub fn stop_machine_log(&self) -> &[crate::stop_machine::StopRecord] {
        StopMachine::stop_machine_log(self)
    }
    pub(crate) fn on_stop_event(&mut self, e: crate::event::StopEvent) -> smpsim_engine::Handled {
        StopMachine::on_stop_event(self, e)
    }
}

impl HotplugEnv for Kernel<'_> {
    fn num_online_cpus(&self) -> usize {
        self.cpus.iter().filter(|k| k.online).count()
    }
    fn mark_cpu_online(&mut self, c: u32, online: bool) {
        self.cpus[c as usize].online = online;
    }
    fn migrate_tasks_off(&mut self, dying: u32, c: u32) {
        Kernel::migrate_tasks_off(self, dying, c)
    }
    fn smpcfd_dying_cpu(&mut self, c: u32) {
        Smp::smpcfd_dying_cpu(self, c)
    }
    fn rcu_cpu_offline(&mut self, c: u32) {
        crate::rcu::RcuTree::rcu_cpu_offline(self, c)
    }
}

impl crate::cpumask::CpumaskEnv for Kernel<'_> {
    fn mm_cpumask_has(&self, mm: u32, c: u32) -> bool {
        self.mm.mm(mm).mask.contains(c)
    }
    fn percpu_value(&self, object: u32, c: u32) -> i64 {
        let objects = self.locking.objects();
        objects.variable(objects.first_instance(object) + c)
    }
}

impl crate::kthread::KthreadEnv for Kernel<'_> {
    fn kthread_step(
        &mut self,
        which: crate::kthread::Kthread,
        c: u32,
        t: TaskId,
    ) -> crate::kthread::KthreadStep {
        (Kernel::kthread_info(self, which).step)(self, c, t)
    }
    fn resume_batch(&mut self, c: u32, t: TaskId) -> bool {
        Kernel::resume_batch(self, c, t)
    }
}

/// Kernel threads' entry point for the core.
impl Kernel<'_> {
    pub(crate) fn run_kthread(&mut self, c: u32, t: TaskId) {
        crate::kthread::Kthreads::run_kthread(self, c, t)
    }
}
