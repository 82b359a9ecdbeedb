//! Expedited grace periods (kernel/rcu/tree_exp.h).
//!
//! Expedited grace periods (`synchronize_rcu_expedited()`, or any
//! `synchronize_rcu()` under `rcu_expedite_gp()`) are driven from a
//! workqueue (modelled as timed steps that use no CPU): IPIs go to every
//! online CPU that is not idle, leaf rcu_node by leaf rcu_node in parallel;
//! `rcu_exp_handler()` reports a quiescent state at once unless the CPU is
//! in a preempt-disabled region, in which case it comes at the CPU's next
//! context switch.

use super::*;
use crate::cpu::{Activity, Csd};
use crate::event::*;
use crate::task::*;

/// Expedited grace periods, for any kernel RCU runs in.
pub(crate) trait RcuExp: RcuEnv {
    fn synchronize_rcu_expedited(&mut self, c: u32, t: TaskId) {
        let target = match self.rcu().exp_phase {
            GpPhase::Idle => {
                self.rcu_mut().exp_phase = GpPhase::Starting;
                // queue_work() + a kworker switching in.
                let kick = self.cost().wakeup + self.cost().context_switch;
                self.at(self.now() + kick, Event::Rcu(RcuEvent::ExpStart));
                self.rcu().exp_completed + 1
            }
            GpPhase::Starting => self.rcu().exp_completed + 1,
            GpPhase::Running => {
                self.rcu_mut().exp_requested = true;
                self.rcu().exp_completed + 2
            }
        };
        let gen = self.task(t).gen.wrapping_add(1);
        self.rcu_mut().exp_waiters.push((target, t, gen));
        self.block(c, t);
        self.task_mut(t).gen = gen;
    }

    /// `sync_rcu_exp_select_cpus()`: IPI every online, non-idle CPU, leaf
    /// rcu_node by leaf rcu_node in parallel.
    fn rcu_exp_start(&mut self) {
        self.rcu_mut().exp_phase = GpPhase::Running;
        self.rcu_mut().exp_requested = false;
        self.rcu_mut().exp_remaining = 0;
        let fanout = self.spec().knobs.rcu_fanout_leaf.max(1);
        let mut in_leaf = 0u64;
        let mut leaf = u32::MAX;
        for c in 0..self.nr_cpus() {
            let cpu = self.cpu(c);
            let idle = cpu.curr == NO_TASK && cpu.activity == Activity::Idle;
            let need = cpu.online && !idle;
            self.rcu_mut().exp_pending[c as usize] = need;
            if !need {
                continue;
            }
            if c / fanout != leaf {
                leaf = c / fanout;
                in_leaf = 0;
            }
            in_leaf += 1;
            self.rcu_mut().exp_remaining += 1;
            let sent = self.now() + in_leaf * self.cost().ipi_send;
            // Sent by the workqueue worker of the leaf's first CPU.
            self.queue_csd(c, Csd::RcuExp, sent, leaf * fanout);
        }
        if self.rcu().exp_remaining == 0 {
            // No CPU to wait for: the worker that would have sent leaf 0's
            // IPIs, on its first CPU, ends it.
            self.rcu_exp_end(0);
        }
    }

    /// `rcu_exp_handler()` on CPU `c`, in its IPI handler.
    fn rcu_exp_handler(&mut self, c: u32) {
        let cpu = self.cpu(c);
        let t = if cpu.interrupted != NO_TASK {
            cpu.interrupted
        } else {
            cpu.curr
        };
        let in_read_side = t != NO_TASK && self.task(t).irq.preempt_count > 0;
        if in_read_side {
            self.rcu_mut().exp_deferred[c as usize] = true;
            self.set_need_resched(c);
        } else {
            self.rcu_exp_qs(c);
        }
    }

    fn rcu_exp_qs(&mut self, c: u32) {
        if self.rcu().exp_phase == GpPhase::Running && self.rcu().exp_pending[c as usize] {
            self.rcu_mut().exp_pending[c as usize] = false;
            self.rcu_mut().exp_remaining -= 1;
            if self.rcu().exp_remaining == 0 {
                self.rcu_exp_end(c);
            }
        }
    }

    /// The expedited grace period ends with CPU `c`'s quiescent state:
    /// `rcu_exp_wait_wake()` wakes its waiters (`wake_up_all()` on each
    /// rcu_node's `exp_wq`, kernel/rcu/tree_exp.h). The worker that does
    /// it is not a task here (the expedited machinery uses no CPU), so its
    /// `try_to_wake_up()`s, `cost.wakeup` each as a task's wakeup costs
    /// the task, are charged to the context whose report ended the grace
    /// period (the IPI handler, or the switch or tick that reported it),
    /// which in the kernel wakes that worker.
    fn rcu_exp_end(&mut self, c: u32) {
        self.rcu_mut().exp_completed += 1;
        if self.metrics().measuring(self.now()) {
            self.rcu_mut().stats.expedited_grace_periods += 1;
        }
        let done = self.rcu().exp_completed;
        let mut waiters = std::mem::take(&mut self.rcu_mut().exp_waiters);
        let mut woken = 0;
        waiters.retain(|&(target, t, gen)| {
            if target > done {
                return true;
            }
            let task = self.task(t);
            if task.gen == gen && task.state == TaskState::Sleeping {
                woken += 1;
                self.at(
                    self.now() + self.cost().wakeup,
                    Event::Rcu(RcuEvent::Callback {
                        cpu: task.cpu,
                        cb: RcuCallback::Wake { task: t, gen },
                    }),
                );
            }
            false
        });
        self.rcu_mut().exp_waiters = waiters;
        let wakeups = woken * self.cost().wakeup;
        self.charge_context(c, wakeups);
        if self.rcu().exp_requested || !self.rcu().exp_waiters.is_empty() {
            self.rcu_mut().exp_phase = GpPhase::Starting;
            let kick = self.cost().wakeup + self.cost().context_switch;
            self.at(self.now() + kick, Event::Rcu(RcuEvent::ExpStart));
        } else {
            self.rcu_mut().exp_phase = GpPhase::Idle;
        }
    }
}
impl<K: RcuEnv + ?Sized> RcuExp for K {}
