//! CPUs leaving and joining the system. The hotplug state machine itself
//! (which callbacks run, which locks and grace periods they wait for) is
//! written in the scenario; this is the step where `cpu_online_mask`
//! changes and every mechanism stops or starts counting the CPU.

use crate::env::{CoreEnv, SchedVerbs};
use crate::mechanism::{Flow, MechanismOp};
use crate::program::HotplugOp;
use crate::task::{Resume, TaskId, NO_TASK};

/// What taking a CPU offline or online needs from the rest of the
/// kernel: the CPUs (read), the one write of `cpu_online_mask`, the
/// accounting, and the verbs each mechanism runs for a dying CPU.
/// Implemented for the kernel in `sim/rcu_env.rs`.
pub(crate) trait HotplugEnv: CoreEnv + SchedVerbs {
    /// `num_online_cpus()`.
    fn num_online_cpus(&self) -> usize;
    /// `set_cpu_online(c, online)`: the one place a CPU's `online` changes.
    fn mark_cpu_online(&mut self, c: u32, online: bool);
    // What each mechanism does for a dying CPU.
    /// `balance_push()`: the scheduler moves CPU `dying`'s queued tasks
    /// away (from CPU `c`).
    fn migrate_tasks_off(&mut self, dying: u32, c: u32);
    /// `smpcfd_dying_cpu()`: the IPI layer runs what is queued for it.
    fn smpcfd_dying_cpu(&mut self, c: u32);
    /// `rcutree_report_cpu_dead()`.
    fn rcu_cpu_offline(&mut self, c: u32);
    // The ops' needs.
}

impl<K: HotplugEnv> MechanismOp<K> for HotplugOp {
    fn run(&self, k: &mut K, c: u32, t: TaskId, _: Resume) -> Flow {
        let (e, online) = match self {
            HotplugOp::CpuOffline(e) => (e, false),
            HotplugOp::CpuOnline(e) => (e, true),
        };
        let target = k.eval(t, e);
        k.set_cpu_online(c, target, online);
        k.advance(t);
        // cpu_down() of the caller's own CPU: the caller sleeps in
        // takedown_cpu() while the dying CPU pushes its tasks away
        // (balance_push), so it leaves the CPU now, not at the end of
        // whatever it plans next.
        let own = !online && target == c as i64 && !k.cpu(c).online;
        if own && k.task(t).preemptible() {
            k.schedule(c);
            return Flow::Stop;
        }
        Flow::Next
    }
}

/// CPU hotplug, for any kernel.
pub(crate) trait Hotplug: HotplugEnv {
    /// An op named a CPU that does not exist: the kernel would return an
    /// error (`-EINVAL`, `-ENXIO`) the scenario does not look at.
    fn bad_cpu(&mut self, c: u32, op: &str, cpu: i64) {
        let (nr, now) = (self.nr_cpus(), self.now());
        self.metrics_mut().bad_cpu(c, now, op, cpu, nr);
    }

    /// Marks `target` offline or online, from a task on CPU `c`.
    fn set_cpu_online(&mut self, c: u32, target: i64, online: bool) {
        if target < 0 || target >= self.nr_cpus() as i64 {
            let op = if online { "cpu_up" } else { "cpu_down" };
            self.bad_cpu(c, op, target);
            return;
        }
        let t = target as u32;
        if self.cpu(t).online == online {
            return;
        }
        // cpu_down_maps_locked(): the last online CPU cannot go
        // (num_online_cpus() == 1 gives -EBUSY).
        if !online && self.num_online_cpus() == 1 {
            let now = self.now();
            self.metrics_mut().offline_last_cpu(c, now, t);
            return;
        }
        self.mark_cpu_online(t, online);
        if online {
            return;
        }
        // sched_cpu_deactivate() / balance_push(): queued tasks leave now,
        // the running one at its next switch, sleepers when they wake.
        self.migrate_tasks_off(t, c);
        if self.cpu(t).curr != NO_TASK {
            self.resched_cpu(t, c);
        }
        // smpcfd_dying_cpu(): run what is still queued for it.
        self.smpcfd_dying_cpu(t);
        // rcutree_report_cpu_dead(): it no longer holds up grace periods.
        self.rcu_cpu_offline(t);
    }
}
impl<K: HotplugEnv + ?Sized> Hotplug for K {}
