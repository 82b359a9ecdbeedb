//! The per-task-group hooks: where the kernel updates a task group's
//! shared load (kernel/sched/fair.c).
//!
//! `update_load_avg(cfs_rq, se, UPDATE_TG)` runs for a task's entity in
//! `enqueue_entity()` (a wakeup), `dequeue_entity()` (the task blocks),
//! `set_next_entity()` (it is picked to run) and `entity_tick()` (the tick
//! of its CPU); for a task in a cgroup its cfs_rq is the group's on that
//! CPU, and `update_tg_load_avg(cfs_rq)` then does
//! `atomic_long_add(delta, &cfs_rq->tg->load_avg)`: one cache line for
//! the whole group. Since "sched/fair: Ratelimit update to tg->load_avg"
//! (v6.7) it returns early when this cfs_rq updated less than
//! `NSEC_PER_MSEC` ago (`cfs_rq->last_update_tg_load_avg`), the
//! `tg_load_avg_ratelimit` knob. `update_cfs_group()` (enqueue, dequeue
//! and tick, not ratelimited) recomputes the group entity's weight from
//! `tg->load_avg` (`calc_group_shares()`: a read of that line).
//!
//! A scenario's `update_tg_load_avg` hook runs where the kernel's would
//! add to `tg->load_avg` and its `update_cfs_group` hook where the kernel
//! would recompute the shares, for tasks in a cgroup (the root group has
//! no `tg->load_avg` to update: `update_tg_load_avg()` returns at once
//! there). Each runs in the context of its call site: inside the switch
//! for a dequeue or a pick, on the waking CPU for a wakeup (charged like
//! `enqueue_task_fair`), in the tick's hardirq for the tick.
//!
//! Not modelled: the load averages themselves (PELT). The model keeps no
//! `cfs_rq->avg.load_avg`, so `update_tg_load_avg()`'s other filter (the
//! change must exceed 1/64 of this cfs_rq's contribution) is taken as
//! always passed, and `update_load_avg()`'s "decayed" test as always true:
//! the hook runs at every call the rate limit lets through. Nested
//! cgroups are flattened to their top level (one update per call, not one
//! per level), and `update_blocked_averages()` (the load balancer's
//! periodic decay of idle cfs_rqs) calls no hook.

use super::prelude::*;
use smpsim_engine::Nanos;

use crate::hooks::{HookEvent, HookRun};
use crate::task::TaskId;

/// Where the kernel calls `update_load_avg()` for a task's entity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateSite {
    /// `enqueue_entity()`.
    Enqueue,
    /// `dequeue_entity()`.
    Dequeue,
    /// `set_next_entity()`: no `update_cfs_group()` there.
    SetNext,
    /// `entity_tick()`.
    Tick,
}

/// The per-group hooks at the scheduler's update sites; for every
/// scheduler env.
pub(crate) trait TgLoadAvg<'s>: SchedEnv<'s> {
    /// Whether the scenario has a per-group hook at all.
    #[inline]
    fn has_group_hooks(&self) -> bool {
        self.hook(HookEvent::UpdateTgLoadAvg).is_some()
            || self.hook(HookEvent::UpdateCfsGroup).is_some()
    }

    /// The per-group hooks the kernel's `update_load_avg()` at `site` for
    /// task `t` reaches at time `at`: (`update_tg_load_avg` passes its
    /// rate limit, `update_cfs_group` runs). Records the update.
    fn group_updates(&mut self, t: TaskId, site: UpdateSite, at: Nanos) -> (bool, bool) {
        let task = &self.tasks()[t as usize];
        let Some(g) = task
            .group_rq
            .filter(|_| !task.is_rt() && !self.sched().booting)
        else {
            return (false, false);
        };
        let mut tg = false;
        if self.hook(HookEvent::UpdateTgLoadAvg).is_some() {
            let ratelimit = self.spec().knobs.tg_load_avg_ratelimit;
            let next = &mut self.sched_mut().hooks.tg_next_update[g as usize];
            if at >= *next {
                // cfs_rq->last_update_tg_load_avg = now.
                *next = at.saturating_add(ratelimit);
                tg = true;
            }
        }
        let cfs_group =
            site != UpdateSite::SetNext && self.hook(HookEvent::UpdateCfsGroup).is_some();
        (tg, cfs_group)
    }

    /// The per-group hooks of task `t`'s update at `site`, run straight on
    /// CPU `on` from `at` (a wakeup, the tick); returns when they end.
    fn run_group_hooks(&mut self, on: u32, t: TaskId, site: UpdateSite, mut at: Nanos) -> Nanos {
        let (tg, cfs_group) = self.group_updates(t, site, at);
        for (run, ev) in [
            (tg, HookEvent::UpdateTgLoadAvg),
            (cfs_group, HookEvent::UpdateCfsGroup),
        ] {
            if let Some(h) = self.hook(ev).filter(|_| run) {
                at = self.run_hook(on, h, at);
            }
        }
        at
    }

    /// The same inside `__schedule()` on CPU `c`, `cost` into the switch
    /// (see [`Self::switch_hook`]); returns the switch's cost so far.
    fn switch_group_hooks(
        &mut self,
        c: u32,
        t: TaskId,
        site: UpdateSite,
        mut cost: Nanos,
        run: &mut Option<Box<HookRun<'s>>>,
    ) -> Nanos {
        let (tg, cfs_group) = self.group_updates(t, site, self.now() + cost);
        if tg {
            let none = crate::hooks::HookSubject::NONE;
            cost = self.switch_hook(c, HookEvent::UpdateTgLoadAvg, none, cost, run);
        }
        if cfs_group {
            let none = crate::hooks::HookSubject::NONE;
            cost = self.switch_hook(c, HookEvent::UpdateCfsGroup, none, cost, run);
        }
        cost
    }
}

impl<'s, K: SchedEnv<'s> + ?Sized> TgLoadAvg<'s> for K {}
