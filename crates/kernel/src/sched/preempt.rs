//! The preemption and local-interrupt ops (include/linux/preempt.h,
//! include/linux/irqflags.h): a task's `preempt_disable()` /
//! `preempt_enable()` and `local_irq_disable()` / `local_irq_enable()`.
//! The counts themselves, and what ending a section does (a reschedule, a
//! pending interrupt), are the scheduler's and the CPU's.

use crate::mechanism::{Flow, MechanismOp};
use crate::program::PreemptOp;
use crate::task::{Resume, TaskId};

use super::{SchedEnv, Scheduler};

impl<'s, K: SchedEnv<'s>> MechanismOp<K> for PreemptOp {
    fn run(&self, k: &mut K, c: u32, t: TaskId, _: Resume) -> Flow {
        match self {
            PreemptOp::PreemptDisable => {
                k.preempt_disable(t);
                k.advance(t);
                Flow::Next
            }
            PreemptOp::PreemptEnable => preempt_enable_op(k, c, t),
            PreemptOp::LocalIrqDisable => {
                k.tasks_mut()[t as usize].irq.irqs_off = true;
                k.irq_off_begin(c);
                k.advance(t);
                Flow::Next
            }
            PreemptOp::LocalIrqEnable => {
                k.tasks_mut()[t as usize].irq.irqs_off = false;
                k.irq_off_end(c);
                k.advance(t);
                if k.cpus()[c as usize].has_pending_irq() {
                    k.enter_irq(c);
                    return Flow::Stop;
                }
                Flow::Next
            }
        }
    }
}

/// `preempt_enable()` as an op (also the end of `rcu_read_unlock()`):
/// the task moves on, and reschedules here if it was asked to.
pub(crate) fn preempt_enable_op<'s, K: SchedEnv<'s> + ?Sized>(
    k: &mut K,
    c: u32,
    t: TaskId,
) -> Flow {
    let resched = k.preempt_enable(t);
    k.advance(t);
    if resched {
        k.schedule(c);
        return Flow::Stop;
    }
    Flow::Next
}
