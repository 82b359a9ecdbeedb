//! Offloaded callbacks (kernel/rcu/tree_nocb.h): on a CPU listed in
//! `rcu_nocbs=` the callbacks are not invoked in its softirq but by a
//! kthread, `rcuop/N`, a normal CFS task the scheduler places like any
//! other (so its time is the kthread's sys time, it can be preempted, and
//! it can run on another CPU).
//!
//! Lifecycle: when a grace period ends, `rcu_gp_cleanup()` wakes the
//! `rcuog` kthread of the CPU's group (`nocb_gp_wait()`), which advances
//! the CPU's callbacks and wakes `rcuop/N` (`nocb_cb_wait()`); `rcuop/N`
//! runs `rcu_do_batch()` over every ready callback (in kthread context
//! `blimit` does not stop it: it calls `cond_resched_tasks_rcu_qs()`
//! between callbacks instead), then sleeps until the next ones are ready.
//! The `rcuog` hop is folded into the wakeup of `rcuop/N` here (its own
//! cost and wakeup latency are not modelled).

use super::*;
use crate::kthread::KthreadStep;
use crate::spec::Spec;
use crate::task::TaskId;

/// Whether a scenario has no-CBs CPUs and uses RCU.
fn used_by(spec: &Spec) -> bool {
    !spec.knobs.rcu_nocbs.is_empty() && super::used_by(spec)
}

/// The no-CBs CPUs the machine has.
fn nocb_cpus(spec: &Spec) -> Vec<u32> {
    let nr = spec.machine.nr_cpus() as u32;
    spec.knobs
        .rcu_nocbs
        .iter()
        .copied()
        .filter(|&c| c < nr)
        .collect()
}

/// The `rcuop/N` kthreads, for any kernel RCU runs in.
pub(crate) trait RcuNocb: RcuEnv {
    /// Wakes `rcuop/c`: callbacks of no-CBs CPU `c` are ready.
    fn rcuop_wake(&mut self, c: u32) {
        let t = self.rcu().rcuop[c as usize];
        let from = self.task(self.rcu().gp_kthread).cpu;
        self.wake_kthread(t, from);
    }

    /// One step of `rcuop/c` (`nocb_cb_wait()`), task `t`: the batch it
    /// worked through is invoked, then it takes every ready callback as
    /// its next piece of work, or sleeps.
    fn rcuop_step(&mut self, t: TaskId) -> KthreadStep {
        let c = self.task(t).index as usize;
        let batch = std::mem::take(&mut self.rcu_mut().rcuop_batch[c]);
        let mut woke = 0;
        for (gp, cb) in batch {
            woke += self.rcu_invoke(gp, cb, self.now());
        }
        if woke > 0 {
            // The wakeups the callbacks issued, in rcuop's time.
            return KthreadStep::Work(woke);
        }
        if self.rcu().done[c].is_empty() {
            return KthreadStep::Sleep { timeout: None };
        }
        let ready: Vec<_> = self.rcu_mut().done[c].drain(..).collect();
        let cost = ready.iter().map(|(_, cb)| cb.cost).sum::<u64>();
        self.rcu_mut().rcuop_batch[c] = ready;
        KthreadStep::Work(cost)
    }
}
impl<K: RcuEnv + ?Sized> RcuNocb for K {}

/// `rcuop/N`, one per no-CBs CPU.
pub const KTHREAD: crate::kthread::KthreadInfo = crate::kthread::KthreadInfo {
    name: "rcuop",
    used_by,
    spawn: crate::kthread::Spawn::ForCpus { cpus: nocb_cpus },
    step: |k, _, t| k.rcuop_step(t),
    started: |k, ids| {
        let cpus = nocb_cpus(k.spec());
        for (cpu, id) in cpus.into_iter().zip(ids) {
            k.rcu_mut().rcuop[cpu as usize] = id;
        }
    },
};
