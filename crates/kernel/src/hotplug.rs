//! CPUs leaving and joining the system. The hotplug state machine itself
//! (which callbacks run, which locks and grace periods they wait for) is
//! written in the scenario; this is the step where `cpu_online_mask`
//! changes and every mechanism stops or starts counting the CPU.

use crate::mechanism::{Flow, MechanismOp};
use crate::program::HotplugOp;
use crate::task::{Resume, TaskId, NO_TASK};

impl<'s> MechanismOp<crate::Kernel<'s>> for HotplugOp {
    fn run(&self, k: &mut crate::Kernel<'s>, c: u32, t: TaskId, _: Resume) -> Flow {
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
        let own = !online && target == c as i64 && !k.cpus[c as usize].online;
        if own && k.tasks[t as usize].preemptible() {
            k.schedule(c);
            return Flow::Stop;
        }
        Flow::Next
    }
}

impl crate::Kernel<'_> {
    /// An op named a CPU that does not exist: the kernel would return an
    /// error (`-EINVAL`, `-ENXIO`) the scenario does not look at.
    pub(crate) fn bad_cpu(&mut self, c: u32, op: &str, cpu: i64) {
        let nr = self.nr_cpus();
        self.metrics.bad_cpu(c, self.now, op, cpu, nr);
    }

    /// Marks `target` offline or online, from a task on CPU `c`.
    pub(crate) fn set_cpu_online(&mut self, c: u32, target: i64, online: bool) {
        if target < 0 || target >= self.nr_cpus() as i64 {
            let op = if online { "cpu_up" } else { "cpu_down" };
            self.bad_cpu(c, op, target);
            return;
        }
        let t = target as u32;
        if self.cpus[t as usize].online == online {
            return;
        }
        // cpu_down_maps_locked(): the last online CPU cannot go
        // (num_online_cpus() == 1 gives -EBUSY).
        if !online && self.cpus.iter().filter(|k| k.online).count() == 1 {
            self.metrics.offline_last_cpu(c, self.now, t);
            return;
        }
        self.cpus[t as usize].online = online;
        if online {
            return;
        }
        // sched_cpu_deactivate() / balance_push(): queued tasks leave now,
        // the running one at its next switch, sleepers when they wake.
        self.migrate_tasks_off(t, c);
        if self.cpus[t as usize].curr != NO_TASK {
            self.resched_cpu(t, c);
        }
        // smpcfd_dying_cpu(): run what is still queued for it.
        if !self.cpus[t as usize].csd_queue.is_empty() {
            self.cpus[t as usize].ipi_pending = false;
            self.flush_call_function_queue(t, self.now);
        }
        // rcutree_report_cpu_dead(): it no longer holds up grace periods.
        self.rcu_cpu_offline(t);
    }
}
