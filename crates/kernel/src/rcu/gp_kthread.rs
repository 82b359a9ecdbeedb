//! `rcu_gp_kthread()` (kernel/rcu/tree.c): the loop the `rcu_sched`
//! kthread runs, one step each time it has the CPU.
//!
//! ```text
//! for (;;) {
//!     swait_event_idle_exclusive(gp_wq, gp_flags & RCU_GP_FLAG_INIT);
//!     rcu_gp_init();                      // one pass over the rcu_node tree
//!     rcu_gp_fqs_loop():
//!         j = jiffies_till_first_fqs;
//!         for (;;) {
//!             swait_event_idle_timeout_exclusive(gp_wq, gp done, j);
//!             if (!root->qsmask) break;
//!             rcu_gp_fqs(first);          // scan the holdout CPUs
//!             j = jiffies_till_next_fqs;
//!         }
//!     rcu_gp_cleanup();                   // one pass over the tree
//! }
//! ```
//!
//! The tree passes and the scan are CPU time of the kthread; a wait ends
//! on the timer-wheel timeout or when the last quiescent state wakes it.

use super::*;
use crate::kthread::KthreadStep;

/// Where the GP kthread is in its loop: the work of a state is done when
/// it is next asked to step, and the state's effect then happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Waiting for a grace period to be requested.
    WaitRequest,
    /// `rcu_gp_init()` ran.
    Init,
    /// Waiting for the FQS time or the end of the grace period.
    FqsWait,
    /// `rcu_gp_fqs()`'s scan ran.
    Fqs,
    /// `rcu_gp_cleanup()` ran.
    Cleanup,
}

/// The GP kthread's loop, for any kernel RCU runs in.
pub(crate) trait RcuGpKthread: RcuEnv {
    /// One step of the GP kthread, current on CPU `c`.
    fn rcu_gp_kthread(&mut self, _c: u32) -> KthreadStep {
        loop {
            match self.rcu().kthread {
                State::WaitRequest => {
                    if self.rcu().phase != GpPhase::Starting {
                        return KthreadStep::Sleep { timeout: None };
                    }
                    self.rcu_mut().kthread = State::Init;
                    return KthreadStep::Work(self.rcu_tree_cost());
                }
                State::Init => {
                    self.rcu_gp_init();
                    self.rcu_mut().fqs_first = true;
                    let j = self.fqs_first() / self.jiffy();
                    self.rcu_mut().fqs_at = self.jiffies_timeout(self.now(), j);
                    self.rcu_mut().kthread = State::FqsWait;
                }
                State::FqsWait => {
                    if self.rcu().remaining == 0 {
                        self.rcu_mut().kthread = State::Cleanup;
                        return KthreadStep::Work(self.rcu_tree_cost());
                    }
                    if self.now() < self.rcu().fqs_at {
                        let timeout = Some(self.rcu().fqs_at);
                        return KthreadStep::Sleep { timeout };
                    }
                    self.rcu_mut().kthread = State::Fqs;
                    // force_qs_rnp(): each leaf rcu_node with holdouts.
                    return KthreadStep::Work(self.rcu_tree_cost());
                }
                State::Fqs => {
                    self.rcu_gp_fqs();
                    let j = self.fqs_next() / self.jiffy();
                    self.rcu_mut().fqs_at = self.jiffies_timeout(self.now(), j);
                    self.rcu_mut().kthread = State::FqsWait;
                }
                State::Cleanup => {
                    let before = self.wakeups_issued();
                    self.rcu_gp_end();
                    self.rcu_mut().kthread = State::WaitRequest;
                    // What rcu_gp_cleanup() woke (synchronize_rcu()
                    // callers with rcu_normal_wake_from_gp, rcuop
                    // kthreads): try_to_wake_up() each, in this kthread's
                    // time, as a task's wakeup costs it.
                    let woke = self.wakeups_issued() - before;
                    if woke > 0 {
                        return KthreadStep::Work(woke * self.cost().wakeup);
                    }
                }
            }
        }
    }
}
impl<K: RcuEnv + ?Sized> RcuGpKthread for K {}

/// `rcu_sched`, when the scenario uses RCU.
pub const KTHREAD: crate::kthread::KthreadInfo = crate::kthread::KthreadInfo {
    name: "rcu_sched",
    used_by: super::used_by,
    spawn: crate::kthread::Spawn::One {
        cpu: super::gp_kthread_cpu,
    },
    step: |k, c, _| k.rcu_gp_kthread(c),
    started: |k, ids| k.rcu_mut().gp_kthread = ids[0],
};
