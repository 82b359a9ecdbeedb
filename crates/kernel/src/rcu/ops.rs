//! RCU's ops: read-side critical sections, `synchronize_rcu()` and
//! `cond_synchronize_rcu()`, the expedite switch and `call_rcu()`. Without `CONFIG_PREEMPT_RCU` a
//! read-side critical section is a preempt-disabled region.

use smpsim_engine::Nanos;

use super::{RcuCallbacks, RcuEnv, RcuKfree, RcuTree};
use crate::mechanism::{Flow, MechanismOp};
use crate::program::RcuOp;
use crate::task::{Resume, TaskId};

impl<K: RcuEnv> MechanismOp<K> for RcuOp {
    fn local(&self) -> bool {
        // The expedite switch is a count the task's next grace period
        // reads: set inside the batch, as it always was.
        matches!(self, RcuOp::RcuExpediteGp | RcuOp::RcuUnexpediteGp)
    }

    fn run(&self, k: &mut K, c: u32, t: TaskId, resume: Resume) -> Flow {
        match self {
            RcuOp::RcuReadLock => {
                k.rcu_read_lock(t);
                k.preempt_disable(t);
                k.advance(t);
                Flow::Next
            }
            RcuOp::RcuReadUnlock if k.task(t).irq.preempt_count == 0 => {
                // rcu_read_unlock() outside any read-side critical section:
                // lockdep's rcu_lock_release() reports it first.
                let (name, c, _) = k.where_is(t);
                let now = k.now();
                k.metrics_mut()
                    .bad_unlock(c, now, &name, "rcu_read_unlock", "rcu_read_lock");
                k.advance(t);
                Flow::Next
            }
            RcuOp::RcuReadUnlock => {
                k.rcu_read_unlock(t);
                k.preempt_enable_op(c, t)
            }
            RcuOp::SynchronizeRcu | RcuOp::SynchronizeRcuExpedited => {
                if resume != Resume::SynchronizeRcu {
                    k.task_mut(t).resume = Resume::SynchronizeRcu;
                    let expedited = matches!(self, RcuOp::SynchronizeRcuExpedited);
                    k.synchronize_rcu(c, t, expedited);
                    return Flow::Stop;
                }
                k.advance(t);
                Flow::Next
            }
            RcuOp::CondSynchronizeRcu(oldstate) => {
                // cond_synchronize_rcu(): synchronize_rcu() unless
                // poll_state_synchronize_rcu(oldstate) (rcu/poll.rs).
                if resume != Resume::SynchronizeRcu {
                    let oldstate = k.eval(t, oldstate);
                    if !k.rcu().poll_state_synchronize_rcu(oldstate) {
                        k.task_mut(t).resume = Resume::SynchronizeRcu;
                        k.synchronize_rcu(c, t, false);
                        return Flow::Stop;
                    }
                }
                k.advance(t);
                Flow::Next
            }
            RcuOp::KfreeRcu { bytes } => {
                let mut n = k.eval(t, bytes);
                if n < 0 {
                    let (name, c, at) = k.where_is(t);
                    let now = k.now();
                    k.metrics_mut()
                        .negative_count(c, now, &name, "kfree_rcu bytes", n, &at);
                    n = 0;
                }
                let cost = k.kvfree_call_rcu(c, n as u64);
                let task = k.task_mut(t);
                let mode = task.mode;
                task.batch.push(mode, cost);
                k.advance(t);
                Flow::Next
            }
            RcuOp::RcuExpediteGp => {
                k.rcu_mut().expedite_nesting += 1;
                k.task_mut(t).pc += 1;
                Flow::Next
            }
            RcuOp::RcuUnexpediteGp => {
                let rcu = k.rcu_mut();
                rcu.expedite_nesting = rcu.expedite_nesting.saturating_sub(1);
                k.task_mut(t).pc += 1;
                Flow::Next
            }
            RcuOp::CallRcu { func, lazy } => {
                let cost: Nanos = func.sample(&mut k.task_mut(t).rng);
                k.call_rcu_op(c, cost, *lazy);
                k.advance(t);
                Flow::Next
            }
        }
    }
}
