//! The kernel as each mechanism of `rcu/`, `smp.rs`, `stop_machine.rs`,
//! `hotplug.rs`, `kthread.rs` and `cpumask.rs` sees it: their narrow env
//! traits implemented for [`Kernel`], each method a thin delegation to the
//! core or to another mechanism's verb (always by its full path, so that a
//! renamed verb cannot turn one into a call of itself), and the
//! mechanisms' entry points that the rest of the kernel calls on `Kernel`.

use smpsim_engine::Nanos;

use super::Kernel;
use crate::cpu::{Cpu, Csd, PendingIrq};
use crate::event::{Event, RcuCallback, RcuEvent};
use crate::mechanism::Flow;
use crate::metrics::Metrics;
use crate::rcu::{Rcu, RcuEnv};
use crate::task::{Task, TaskId};

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
    fn now(&self) -> Nanos {
        self.now
    }
    #[inline]
    fn spec(&self) -> &crate::Spec {
        self.spec
    }
    #[inline]
    fn nr_cpus(&self) -> u32 {
        Kernel::nr_cpus(self)
    }
    #[inline]
    fn jiffy(&self) -> Nanos {
        self.sched.tick_ns
    }
    #[inline]
    fn cost(&self) -> &crate::costs::CostNs {
        &self.cost
    }
    #[inline]
    fn cpu(&self, c: u32) -> &Cpu {
        &self.cpus[c as usize]
    }
    #[inline]
    fn task(&self, t: TaskId) -> &Task {
        &self.tasks[t as usize]
    }
    #[inline]
    fn task_mut(&mut self, t: TaskId) -> &mut Task {
        &mut self.tasks[t as usize]
    }
    #[inline]
    fn tasks(&self) -> &[Task] {
        &self.tasks
    }
    fn task_name(&self, t: TaskId) -> String {
        Kernel::task_name(self, t)
    }
    #[inline]
    fn metrics(&self) -> &Metrics {
        &self.metrics
    }
    #[inline]
    fn metrics_mut(&mut self) -> &mut Metrics {
        &mut self.metrics
    }
    #[inline]
    fn at(&mut self, t: Nanos, e: Event) {
        Kernel::at(self, t, e)
    }
    fn wake_up(&mut self, t: TaskId, from: u32) {
        Kernel::wake_up(self, t, from)
    }
    fn wake_kthread(&mut self, t: TaskId, from: u32) {
        Kernel::wake_kthread(self, t, from)
    }
    fn block(&mut self, c: u32, t: TaskId) {
        Kernel::block(self, c, t)
    }
    fn resched_cpu(&mut self, c: u32, from: u32) {
        Kernel::resched_cpu(self, c, from)
    }
    fn set_need_resched(&mut self, c: u32) {
        self.cpus[c as usize].need_resched = true;
    }
    fn raise_rcu_softirq(&mut self, c: u32) {
        self.cpus[c as usize]
            .irq_pending
            .push(PendingIrq::RcuSoftirq);
        Kernel::interrupt(self, c)
    }
    fn softirq_from(&mut self, c: u32, start: Nanos) {
        let cpu = &mut self.cpus[c as usize];
        cpu.softirq_from = cpu.softirq_from.min(start);
    }
    fn queue_csd(&mut self, target: u32, csd: Csd, at: Nanos, from: u32) {
        Kernel::queue_csd(self, target, csd, at, from)
    }
    fn rcu_sync_func(&mut self, sem: u32) {
        Kernel::rcu_sync_func(self, sem)
    }
    fn percpu_ref_switched(&mut self, r: u32) {
        Kernel::percpu_ref_switched(self, r)
    }
    fn where_is(&self, t: TaskId) -> (String, u32, String) {
        Kernel::where_is(self, t)
    }
    fn advance(&mut self, t: TaskId) {
        Kernel::advance(self, t)
    }
    fn preempt_disable(&mut self, t: TaskId) {
        Kernel::preempt_disable(self, t)
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
    pub(crate) fn rcu_cpu_offline(&mut self, c: u32) {
        crate::rcu::RcuTree::rcu_cpu_offline(self, c)
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
    pub(crate) fn rcu_exp_handler(&mut self, c: u32) {
        crate::rcu::RcuExp::rcu_exp_handler(self, c)
    }
}
