//! RCU CPU stall detection (kernel/rcu/tree_stall.h): a grace period
//! older than `rcu_cpu_stall_timeout` is reported once, from a tick, in the
//! kernel's words.

use super::*;

/// Stall detection, for any kernel RCU runs in.
pub(crate) trait RcuStall: RcuEnv {
    /// `check_cpu_stall()` from CPU `c`'s tick: a grace period older than
    /// `rcu_cpu_stall_timeout` is reported once, self-detected if `c` is a
    /// holdout, else with the holdout CPUs listed.
    fn rcu_check_cpu_stall(&mut self, c: u32) {
        let gp = self.rcu().completed + 1;
        let age = self.now().saturating_sub(self.rcu().gp_start);
        if self.rcu().phase != GpPhase::Running
            || age < self.metrics().thresholds.rcu_stall
            || self.rcu().stall_reported == gp
        {
            return;
        }
        self.rcu_mut().stall_reported = gp;
        let jiffies = age / self.jiffy();
        let holdouts: Vec<u32> = (0..self.nr_cpus())
            .filter(|&x| self.rcu().qs_pending[x as usize])
            .collect();
        let report = if self.rcu().qs_pending[c as usize] {
            format!(
                "INFO: rcu_sched self-detected stall on CPU\n\t{c}-....: (t={jiffies} jiffies g={gp} q={})",
                holdouts.len()
            )
        } else {
            let list: Vec<String> = holdouts.iter().map(|x| format!("\t{x}-....")).collect();
            format!(
                "INFO: rcu_sched detected stalls on CPUs/tasks:\n{}\n\t(detected by {c}, t={jiffies} jiffies, g={gp})",
                list.join("\n")
            )
        };
        let now = self.now();
        self.metrics_mut().rcu_stall(c, now, report);
    }
}
impl<K: RcuEnv + ?Sized> RcuStall for K {}
