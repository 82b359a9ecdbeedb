//! CFS bandwidth control (kernel/sched/fair.c), for top-level cgroups.
//!
//! A cgroup with `cpu.max = quota period` has a global pool
//! (`cfs_bandwidth`) refilled to `quota` by a period timer, and one
//! `cfs_rq` per CPU with its local `runtime_remaining`:
//!
//! - `update_curr()` charges run time; at or below zero the cfs_rq takes up
//!   to `sched_cfs_bandwidth_slice` from the pool, and if it gets nothing
//!   the CPU reschedules;
//! - at `put_prev` (`check_cfs_rq_runtime()`) a cfs_rq still without
//!   runtime is throttled: `throttle_cfs_rq()` walks the cgroup's whole
//!   subtree (`walk_tg_tree_from(..., tg_throttle_down, ...)`) with the rq
//!   lock held and IRQs off, and the group leaves the runqueue;
//! - the period timer (hardirq, on the CPU that armed it) refills the pool
//!   and `distribute_cfs_runtime()` gives each throttled cfs_rq its deficit
//!   plus 1 ns in throttle order until the pool is dry, taking each remote
//!   rq lock; remote cfs_rqs are unthrottled by an async CSD
//!   (`__cfsb_csd_unthrottle`) whose handler walks the subtree again
//!   (`tg_unthrottle_up`) with IRQs off.
//!
//! - `cpu.max.burst`: the refill (`__refill_cfs_bandwidth_runtime()`)
//!   adds `quota` to what is left, up to `quota + burst`, so runtime a
//!   period left unused can be spent in a later one;
//! - with the `cfs_bandwidth_slack` knob, a cfs_rq whose group goes idle
//!   on its CPU (`dequeue_entity()` with nothing left queued) returns its
//!   runtime beyond `min_cfs_rq_runtime` (1 ms) to the pool
//!   (`return_cfs_rq_runtime()`); if the pool then holds more than a
//!   slice and cfs_rqs are throttled, the slack timer is armed
//!   (`start_cfs_slack_bandwidth()`: not when the period timer fires
//!   within `min_bandwidth_expiration`, 2 ms) and fires
//!   `cfs_bandwidth_slack_period` (5 ms) later on that CPU, where
//!   `do_sched_cfs_slack_timer()` distributes the pool as the period
//!   timer does, if it holds more than a slice;
//! - with the `cfs_slice_expiry` knob, runtime a cfs_rq took in one period
//!   is void in the next (`expire_cfs_rq_runtime()` before 5.4).
//!
//! Nested cgroups with their own quota are not modelled (scenario error).

use super::prelude::*;
/// `min_cfs_rq_runtime`: what a cfs_rq keeps when it returns runtime.
const MIN_CFS_RQ_RUNTIME: Nanos = 1_000_000;
/// `cfs_bandwidth_slack_period`.
const CFS_BANDWIDTH_SLACK_PERIOD: Nanos = 5_000_000;
/// `min_bandwidth_expiration`: no slack timer if the period timer is this close.
const MIN_BANDWIDTH_EXPIRATION: Nanos = 2_000_000;

use smpsim_engine::Nanos;

use crate::cpu::{CfsRq, Csd};
use crate::spec::Spec;

/// One top-level cgroup's runqueue on one CPU (its group entity).
pub struct GroupRq {
    pub cpu: u32,
    pub cfs: CfsRq,
    pub vruntime: u64,
    /// One of the group's tasks is the CPU's current task.
    pub running: bool,
    pub pool: Option<u32>,
    pub runtime_remaining: i64,
    pub throttled: bool,
    pub on_csd_list: bool,
    /// Task groups visited by a walk of this cgroup's subtree.
    pub subtree: u64,
    /// The pool's period its runtime was taken in (`expires_seq`).
    pub expires_seq: u64,
}

/// A cgroup's `cfs_bandwidth`.
pub struct Pool {
    pub quota: Nanos,
    pub period: Nanos,
    /// When the period timer first fires (0: at `period`).
    pub phase: Nanos,
    pub runtime: Nanos,
    /// CPU whose hrtimer fires the period timer (`HRTIMER_MODE_ABS_PINNED`).
    pub timer_cpu: u32,
    pub timer_armed_by_use: bool,
    /// Throttled group runqueues in throttle order.
    pub throttled: Vec<u32>,
    /// Periods that began with a cfs_rq throttled (`cpu.stat`'s).
    pub nr_throttled: u64,
    /// cfs_rq throttles (one per CPU and time a cfs_rq ran out).
    pub throttle_events: u64,
    pub nr_unthrottled: u64,
    pub nr_periods: u64,
    pub usage: u64,
    pub cgroup: usize,
    /// `cpu.max.burst`.
    pub burst: Nanos,
    /// When the period timer fires next.
    pub next_period: Nanos,
    /// `slack_started`: the slack timer is armed.
    pub slack_started: bool,
    /// The CPU it was armed on.
    pub slack_cpu: u32,
    /// Runtime given back by `return_cfs_rq_runtime()` (measured part).
    pub slack_returned: Nanos,
    /// Slack timer runs that distributed runtime.
    pub slack_distributions: u64,
    /// Periods begun (`expires_seq`).
    pub seq: u64,
}

/// When pool `p`'s period timer first fires: at its phase, or at one
/// period with none. Its expiry stays at `phase` modulo `period` from then
/// on, as `hrtimer_forward_now()` moves an hrtimer by whole periods
/// (kernel/sched/fair.c: `start_cfs_bandwidth()`, `sched_cfs_period_timer()`).
pub(crate) fn first_period(pool: &Pool) -> Nanos {
    if pool.phase > 0 {
        pool.phase
    } else {
        pool.period
    }
}

/// Builds group runqueues (top-level cgroup x CPU) and pools. Returns them
/// with, for every cgroup, the index of its top-level ancestor group.
pub(crate) fn build(spec: &Spec, nr_cpus: u32) -> (Vec<GroupRq>, Vec<Pool>, Vec<Option<u32>>) {
    let n = spec.cgroups.len();
    // Top-level ancestor of every cgroup.
    let mut top = vec![0usize; n];
    for (i, cg) in spec.cgroups.iter().enumerate() {
        let mut a = i;
        let mut parent = cg.parent;
        while let Some(p) = parent {
            a = p;
            parent = spec.cgroups[p].parent;
        }
        top[i] = a;
    }
    // Subtree sizes: declared descendants plus generated ones.
    let mut subtree = vec![0u64; n];
    for (i, cg) in spec.cgroups.iter().enumerate() {
        let mut a = Some(i);
        while let Some(x) = a {
            subtree[x] += 1 + if x == i { cg.generated_descendants } else { 0 };
            a = spec.cgroups[x].parent;
        }
    }
    // Only top-level cgroups that hold tasks (directly or below) get groups.
    let mut index: Vec<Option<u32>> = vec![None; n];
    let mut groups = Vec::new();
    let mut pools = Vec::new();
    let mut next = 0u32;
    for tg in &spec.task_groups {
        let Some(cg) = tg.cgroup else { continue };
        let tl = top[cg];
        if index[tl].is_some() {
            continue;
        }
        index[tl] = Some(next);
        next += 1;
        let pool = spec.cgroups[tl].bandwidth.map(|bw| {
            pools.push(Pool {
                quota: bw.quota,
                period: bw.period,
                phase: bw.phase,
                runtime: bw.quota,
                timer_cpu: 0,
                timer_armed_by_use: false,
                throttled: Vec::new(),
                nr_throttled: 0,
                throttle_events: 0,
                nr_unthrottled: 0,
                nr_periods: 0,
                usage: 0,
                cgroup: tl,
                burst: spec.cfs_burst.get(tl).copied().unwrap_or(0),
                // The first expiry with a phase; 0 without (as before).
                next_period: bw.phase,
                slack_started: false,
                slack_cpu: 0,
                slack_returned: 0,
                slack_distributions: 0,
                seq: 0,
            });
            pools.len() as u32 - 1
        });
        for cpu in 0..nr_cpus {
            groups.push(GroupRq {
                cpu,
                cfs: CfsRq::default(),
                vruntime: 0,
                running: false,
                pool,
                runtime_remaining: 0,
                throttled: false,
                on_csd_list: false,
                subtree: subtree[tl],
                expires_seq: 0,
            });
        }
    }
    let group_of_cgroup = (0..n).map(|i| index[top[i]]).collect();
    (groups, pools, group_of_cgroup)
}

/// CFS bandwidth control; for every scheduler env.
pub(crate) trait CfsBandwidth<'s>: SchedEnv<'s> {
    fn walk_cost(&self, g: u32) -> Nanos {
        let k = &self.spec().knobs;
        k.cfs_throttle_base_cost + k.tg_walk_cost * self.sched().groups[g as usize].subtree
    }

    /// `__assign_cfs_rq_runtime()`: tops the cfs_rq up towards `target`
    /// from the pool. Returns true if it now has runtime.
    fn assign_runtime(&mut self, g: u32, target: i64) -> bool {
        let sched = self.sched_mut();
        let gr = &mut sched.groups[g as usize];
        let Some(p) = gr.pool else { return true };
        let pool = &mut sched.pools[p as usize];
        if !pool.timer_armed_by_use {
            // start_cfs_bandwidth(): the timer is pinned where first needed.
            pool.timer_armed_by_use = true;
            pool.timer_cpu = gr.cpu;
        }
        let want = (target - gr.runtime_remaining).max(0) as u64;
        let amount = want.min(pool.runtime);
        pool.runtime -= amount;
        gr.runtime_remaining += amount as i64;
        gr.expires_seq = pool.seq;
        gr.runtime_remaining > 0
    }

    /// `account_cfs_rq_runtime()`: returns true if the CPU must reschedule.
    fn account_cfs_rq_runtime(&mut self, g: u32, delta: Nanos) -> bool {
        let warm = self.now() >= self.metrics().warmup;
        let expiry = self.spec().knobs.cfs_slice_expiry;
        let sched = self.sched_mut();
        let gr = &mut sched.groups[g as usize];
        let Some(p) = gr.pool else { return false };
        if warm {
            sched.pools[p as usize].usage += delta;
        }
        gr.runtime_remaining -= delta as i64;
        if expiry && gr.runtime_remaining > 0 && gr.expires_seq != sched.pools[p as usize].seq {
            // expire_cfs_rq_runtime(): the period it was taken in is over.
            gr.runtime_remaining = 0;
        }
        if gr.runtime_remaining > 0 || gr.throttled {
            return false;
        }
        let slice = self.spec().knobs.cfs_bandwidth_slice as i64;
        !self.assign_runtime(g, slice)
    }

    /// `check_cfs_rq_runtime()` at put_prev: throttles the group if it has
    /// no runtime left. Returns the time spent (with IRQs off).
    fn check_cfs_rq_runtime(&mut self, c: u32, g: u32) -> Nanos {
        let gr = &self.sched().groups[g as usize];
        let Some(p) = gr.pool else { return 0 };
        if gr.throttled || gr.runtime_remaining > 0 {
            return 0;
        }
        // throttle_cfs_rq(): one last 1 ns attempt, then throttle.
        if self.assign_runtime(g, 1) {
            return 0;
        }
        let cost = self.walk_cost(g);
        let now = self.now();
        self.sched_mut().groups[g as usize].throttled = true;
        let measuring = self.metrics().measuring(now);
        let pool = &mut self.sched_mut().pools[p as usize];
        pool.throttled.push(g);
        if measuring {
            pool.throttle_events += 1;
        }
        let ent = self.tasks().len() as u32 + g;
        let parts = self.sched_parts();
        if parts.sched.pos[ent as usize] != crate::cpu::NOT_QUEUED {
            parts.cpus[c as usize].cfs.remove(&mut parts.sched.pos, ent);
        }
        cost
    }

    /// The period timer handler on `c` starting at `t`: refill, then
    /// `distribute_cfs_runtime()`. Returns when the handler is done.
    fn cfs_period_timer(&mut self, c: u32, p: u32, t: Nanos) -> Nanos {
        let measuring = self.metrics().measuring(self.now());
        let pool = &mut self.sched_mut().pools[p as usize];
        // __refill_cfs_bandwidth_runtime(): up to quota + burst.
        pool.runtime = pool
            .runtime
            .saturating_add(pool.quota)
            .min(pool.quota.saturating_add(pool.burst));
        pool.seq += 1;
        if measuring {
            // do_sched_cfs_period_timer(): `throttled =
            // !list_empty(&cfs_b->throttled_cfs_rq)` before the refill;
            // `nr_throttled` counts such periods, so never exceeds
            // `nr_periods`.
            pool.nr_periods += 1;
            pool.nr_throttled += u64::from(!pool.throttled.is_empty());
        }
        self.distribute_cfs_runtime(c, p, t)
    }

    /// `distribute_cfs_runtime()` from CPU `c` at `t`: gives throttled
    /// cfs_rqs their deficit plus 1 ns, in throttle order, until the pool
    /// is dry. Returns when it is done.
    fn distribute_cfs_runtime(&mut self, c: u32, p: u32, mut t: Nanos) -> Nanos {
        let mut i = 0;
        while i < self.sched().pools[p as usize].throttled.len()
            && self.sched().pools[p as usize].runtime > 0
        {
            let g = self.sched().pools[p as usize].throttled[i];
            i += 1;
            let target = self.sched().groups[g as usize].cpu;
            // rq_lock_irqsave(target rq): wait out a walk holding it.
            t = t.max(self.cpus()[target as usize].rq_busy_until)
                + self.cost().line_transfer(c, target);
            let sched = self.sched_mut();
            let gr = &mut sched.groups[g as usize];
            if !gr.throttled || gr.on_csd_list {
                continue;
            }
            let pool = &mut sched.pools[p as usize];
            let runtime = ((-gr.runtime_remaining + 1).max(0) as u64).min(pool.runtime);
            pool.runtime -= runtime;
            gr.runtime_remaining += runtime as i64;
            if gr.runtime_remaining <= 0 {
                continue;
            }
            if target == c {
                t += self.walk_cost(g);
                self.unthrottle(g);
                i -= 1;
                self.cpus_mut()[c as usize].rq_busy_until = t;
            } else {
                gr.on_csd_list = true;
                let list = &mut self.cpus_mut()[target as usize].cfsb_list;
                list.push(g);
                if list.len() == 1 {
                    t += self.cost().ipi_send;
                    self.queue_csd(target, Csd::CfsbUnthrottle, t, c);
                }
            }
        }
        t
    }

    /// `return_cfs_rq_runtime()`: group runqueue `g` has nothing queued
    /// or running on its CPU any more; with the `cfs_bandwidth_slack`
    /// knob it gives its runtime beyond `min_cfs_rq_runtime` back.
    fn return_cfs_rq_runtime(&mut self, g: u32) {
        if !self.spec().knobs.cfs_bandwidth_slack {
            return;
        }
        let gr = &mut self.sched_mut().groups[g as usize];
        let Some(p) = gr.pool else { return };
        let slack = gr.runtime_remaining - MIN_CFS_RQ_RUNTIME as i64;
        if slack <= 0 {
            return;
        }
        gr.runtime_remaining -= slack;
        let cpu = gr.cpu;
        let now = self.now();
        let measuring = self.metrics().measuring(now);
        let slice = self.spec().knobs.cfs_bandwidth_slice;
        let pool = &mut self.sched_mut().pools[p as usize];
        pool.runtime += slack as u64;
        if measuring {
            pool.slack_returned += slack as u64;
        }
        // start_cfs_slack_bandwidth().
        if pool.runtime > slice
            && !pool.throttled.is_empty()
            && !pool.slack_started
            && pool.next_period.saturating_sub(now) >= MIN_BANDWIDTH_EXPIRATION
        {
            pool.slack_started = true;
            pool.slack_cpu = cpu;
            self.at(
                now + CFS_BANDWIDTH_SLACK_PERIOD,
                crate::event::Event::Cfs(crate::event::CfsEvent::Slack { pool: p }),
            );
        }
    }

    /// `do_sched_cfs_slack_timer()` in the hardirq of `c` from `t`.
    fn cfs_slack_timer(&mut self, c: u32, p: u32, t: Nanos) -> Nanos {
        let slice = self.spec().knobs.cfs_bandwidth_slice;
        let measuring = self.metrics().measuring(self.now());
        let pool = &mut self.sched_mut().pools[p as usize];
        pool.slack_started = false;
        if pool.runtime <= slice {
            return t;
        }
        if measuring {
            pool.slack_distributions += 1;
        }
        self.distribute_cfs_runtime(c, p, t)
    }

    /// `__cfsb_csd_unthrottle()` in the IPI handler of `c`, from `t`.
    fn cfsb_csd_unthrottle(&mut self, c: u32, mut t: Nanos) -> Nanos {
        let list = std::mem::take(&mut self.cpus_mut()[c as usize].cfsb_list);
        for &g in &list {
            self.sched_mut().groups[g as usize].on_csd_list = false;
            if self.sched().groups[g as usize].throttled {
                t += self.walk_cost(g);
                self.unthrottle(g);
            }
        }
        let mut list = list;
        list.clear();
        self.cpus_mut()[c as usize].cfsb_list = list;
        self.cpus_mut()[c as usize].rq_busy_until = t;
        t
    }

    /// `unthrottle_cfs_rq()`: the group's entity is runnable again.
    fn unthrottle(&mut self, g: u32) {
        let warm = self.now() >= self.metrics().warmup;
        let sched = self.sched_mut();
        let gr = &mut sched.groups[g as usize];
        gr.throttled = false;
        let c = gr.cpu;
        if let Some(p) = gr.pool {
            let pool = &mut sched.pools[p as usize];
            if let Some(i) = pool.throttled.iter().position(|&x| x == g) {
                pool.throttled.remove(i);
            }
            if warm {
                pool.nr_unthrottled += 1;
            }
        }
        self.requeue_group(g);
        if !self.sched().groups[g as usize].cfs.is_empty()
            && self.cpus()[c as usize].curr == crate::task::NO_TASK
        {
            self.cpus_mut()[c as usize].need_resched = true;
        }
    }

    /// Routes a bandwidth event: the period timer fires on the CPU it was
    /// armed on and refills the pool in its hardirq.
    fn on_cfs_event(&mut self, e: crate::event::CfsEvent) -> smpsim_engine::Handled {
        let pool = match e {
            crate::event::CfsEvent::Period { pool } => pool,
            crate::event::CfsEvent::Slack { pool } => {
                let cpu = self.sched().pools[pool as usize].slack_cpu;
                self.cpus_mut()[cpu as usize]
                    .irq_pending
                    .push(crate::cpu::PendingIrq::CfsSlack { pool });
                self.interrupt(cpu);
                return smpsim_engine::Handled::Done;
            }
        };
        let now = self.now();
        let p = &mut self.sched_mut().pools[pool as usize];
        let (cpu, period) = (p.timer_cpu, p.period);
        p.next_period = now + period;
        self.at(
            now + period,
            crate::event::Event::Cfs(crate::event::CfsEvent::Period { pool }),
        );
        self.cpus_mut()[cpu as usize]
            .irq_pending
            .push(crate::cpu::PendingIrq::CfsPeriod { pool });
        self.interrupt(cpu);
        smpsim_engine::Handled::Done
    }
}

impl<'s, K: SchedEnv<'s> + ?Sized> CfsBandwidth<'s> for K {}
