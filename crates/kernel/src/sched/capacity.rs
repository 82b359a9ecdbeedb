//! CPU capacity: CPUs that run the same work at different speeds.
//!
//! - **Core types.** An asymmetric machine (arm64 big.LITTLE, hybrid x86
//!   P/E cores) gives each CPU a capacity, `arch_scale_cpu_capacity()`,
//!   on the kernel's scale where the fastest CPU is 1024
//!   (`SCHED_CAPACITY_SCALE`). A task's `work` of `d` on a CPU of capacity
//!   `cap` takes `d * 1024 / cap`: `work` is written as time on the
//!   fastest CPU.
//! - **SMT co-run.** Two hardware threads of one core share its pipeline:
//!   `work` planned on a thread while a sibling is busy (running a task,
//!   an interrupt or a switch; not idle) takes `smt_corun.factor` times as
//!   long.
//!
//! Both apply to `work` ops of tasks (not to the machine's fixed costs,
//! which were measured as they are, nor to handler programs), and are
//! decided when the task plans the work: a batch cut short and resumed
//! elsewhere, or a sibling going idle or busy within it, does not change
//! what was planned.
//!
//! **Wake-up placement** on a machine of unequal capacities
//! (`sched_asym_cpucap_active()`): `select_idle_sibling()` takes the
//! target or the previous CPU only if it is idle and the task fits it
//! (`asym_fits_cpu()`), else `select_idle_capacity()` scans the
//! `sd_asym_cpucapacity` domain (here: the whole machine, the lowest
//! domain spanning every capacity on the machines modelled) from the
//! target for an idle CPU the task fits (`util_fits_cpu()`:
//! `fits_capacity(util, cap)`, util × 1280 < cap × 1024, the 20% margin),
//! else the idle CPU of the largest capacity, else the target.
//!
//! The task's utilization stands in for PELT's `task_util_est()`: the
//! share of its life so far it spent running (user and sys), times 1024.
//! PELT decays it with a 32 ms half-life and makes it capacity-invariant;
//! this average does neither (a task that ran on a small CPU looks bigger
//! than it is), which is close for tasks whose behaviour is steady.

use super::prelude::*;
use smpsim_engine::Nanos;

use crate::cpu::Activity;
use crate::program::MAX_SPAN;

/// Work scaled by capacity and SMT co-run, and wake-up placement by
/// capacity; for every scheduler env.
pub(crate) trait Capacity<'s>: SchedEnv<'s> {
    /// How long `ns` of `work` (time on the fastest CPU, running alone on
    /// its core) takes on CPU `c` now, planned to start at `vt`.
    fn scale_work(&mut self, c: u32, ns: Nanos, vt: Nanos) -> Nanos {
        // Counted where the work runs in the measured part of the run (a
        // task may plan work past its end).
        let measuring = self.metrics().measuring(vt) && vt < self.spec().duration;
        let cap = self.cost().capacity_of(c) as u128;
        let mut x = ns as u128 * smpsim_machine::SCHED_CAPACITY_SCALE as u128 / cap;
        if self.cost().smt_corun_1024 != 0 && self.sibling_busy(c) {
            x = x * self.cost().smt_corun_1024 as u128 / 1024;
            if measuring {
                self.sched_mut().capacity_stats.smt_corun_work += 1;
            }
        }
        let out = x.min(MAX_SPAN as u128) as Nanos;
        if measuring {
            self.sched_mut().capacity_stats.stretch_ns += out.saturating_sub(ns);
        }
        out
    }

    /// A hardware sibling of `c` is doing something (not idle).
    fn sibling_busy(&self, c: u32) -> bool {
        self.cost().siblings[c as usize]
            .iter()
            .any(|&s| self.cpus()[s as usize].activity != Activity::Idle)
    }

    /// `task_util_est()` stand-in: the share of its life task `t` spent
    /// running, on the 1024 scale.
    fn task_util(&self, t: crate::task::TaskId) -> u64 {
        let tm = &self.tasks()[t as usize].times;
        let ran = tm.user + tm.sys;
        let life = ran + tm.sleep + tm.runnable + tm.irq;
        if life == 0 {
            return 0;
        }
        (ran as u128 * 1024 / life as u128) as u64
    }

    /// `util_fits_cpu()` without uclamp: `fits_capacity()`.
    fn fits(&self, util: u64, c: u32) -> bool {
        util * 1280 < self.cost().capacity_of(c) as u64 * 1024
    }

    /// `select_idle_sibling()` under `sched_asym_cpucap_active()`.
    fn select_idle_sibling_asym(&mut self, t: crate::task::TaskId, target: u32, prev: u32) -> u32 {
        let util = self.task_util(t);
        let ok = |k: &Self, c: u32| k.cpus()[c as usize].online && k.cpu_allowed(t, c);
        let idle = |k: &Self, c: u32| {
            let cpu = &k.cpus()[c as usize];
            cpu.online && cpu.curr == crate::task::NO_TASK && cpu.nr_running == 0
        };
        if idle(self, target) && self.fits(util, target) {
            return target;
        }
        if prev != target && ok(self, prev) && idle(self, prev) && self.fits(util, prev) {
            return prev;
        }
        // select_idle_capacity(): for_each_cpu_wrap() from the target.
        let measuring = self.metrics().measuring(self.now());
        let n = self.nr_cpus();
        let mut best: Option<(u32, u32)> = None;
        for i in 0..n {
            let c = (target + i) % n;
            if !ok(self, c) || !idle(self, c) {
                continue;
            }
            if self.fits(util, c) {
                if measuring {
                    self.sched_mut().capacity_stats.select_idle_capacity += 1;
                }
                return c;
            }
            let cap = self.cost().capacity_of(c);
            if best.is_none_or(|(_, b)| cap > b) {
                best = Some((c, cap));
            }
        }
        match best {
            Some((c, _)) => {
                if measuring {
                    self.sched_mut().capacity_stats.select_idle_capacity += 1;
                    self.sched_mut().capacity_stats.no_fit += 1;
                }
                c
            }
            None => target,
        }
    }
}

impl<'s, K: SchedEnv<'s> + ?Sized> Capacity<'s> for K {}
