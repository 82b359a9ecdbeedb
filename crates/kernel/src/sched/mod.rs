//! The scheduler: per-CPU RT and CFS runqueues, `__schedule()`, wakeups,
//! the tick and preemption.
//!
//! Modelled after CFS with group scheduling flattened to two levels: tasks
//! of the root cgroup are entities of the CPU's root runqueue; each
//! top-level cgroup has one group entity per CPU whose own runqueue holds
//! all tasks of its subtree. Tasks whose affinity allows it move between
//! CPUs (`balance.rs`). SCHED_FIFO tasks always run before CFS ones and are
//! never tick-preempted.

pub mod balance;
pub mod capacity;
pub mod cfs_bandwidth;
mod env;
pub(crate) mod preempt;
pub mod tg_load_avg;
pub(crate) mod ttwu_queue;

pub(crate) use env::{SchedEnv, SchedParts};

/// The scheduler's traits, for its files and for the kernel's entry
/// points (`sim/sched_env.rs`).
pub(crate) mod prelude {
    pub(crate) use super::balance::Balancer;
    pub(crate) use super::capacity::Capacity;
    pub(crate) use super::cfs_bandwidth::CfsBandwidth;
    pub(crate) use super::env::SchedEnv;
    pub(crate) use super::tg_load_avg::TgLoadAvg;
    pub(crate) use super::ttwu_queue::TtwuQueueing;
    pub(crate) use super::Scheduler;
}

use smpsim_engine::Handled;

use crate::cpu::{Activity, NOT_QUEUED};
use crate::event::*;
use crate::spec::Policy;
use crate::task::*;
#[allow(unused_imports)]
use prelude::*;

/// `wake_up()` from a softirq (an RCU callback) on the woken task's CPU.
pub(crate) const FROM_SOFTIRQ: u32 = u32::MAX;

/// The scheduler's state beside the per-CPU run queues (those are in
/// each [`crate::cpu::Cpu`]). Its fields are the scheduler's own (private
/// to `sched/`); the rest of the kernel builds it with [`Sched::new`] and
/// reads it through its methods.
pub(crate) struct Sched<'s> {
    /// Heap position of every scheduling entity: tasks, then group
    /// entities.
    // invariant: `pos[e]` is `NOT_QUEUED` unless entity `e` is on a CFS
    // heap (its CPU's or its group's), and then its index there.
    pos: Vec<u32>,
    /// Each cgroup's per-CPU run queue (CFS group scheduling and
    /// bandwidth), by group and CPU.
    groups: Vec<cfs_bandwidth::GroupRq>,
    /// Each bandwidth-limited cgroup's global runtime pool
    /// (`cfs_bandwidth`).
    pools: Vec<cfs_bandwidth::Pool>,
    /// Sched domains, affinity masks and the load balancer's state.
    // invariant: its count of queued movable tasks is the number of
    // runnable, not running, tasks that are not pinned (`Kernel::set_state`
    // keeps it).
    balance: balance::Balance,
    /// Wake-up placements by CPU capacity (`capacity.rs`).
    capacity_stats: crate::result::CapacityStats,
    /// `try_to_wake_up()`s that woke a task, over the run: a context
    /// that is not a task's op (an RCU callback, the GP kthread's cleanup)
    /// charges `cost.wakeup` for each it issued, as a task's op does.
    pub(crate) wakeups_issued: u64,
    /// A jiffy: `1e9 / HZ`.
    // invariant: at least 1 (HZ is clamped to at most 1e9).
    tick_ns: smpsim_engine::Nanos,
    /// The run is starting: each CPU's first task is already current, as
    /// on a system that booted before the run (see `Kernel::boot`).
    // invariant: true only inside `Kernel::boot`, before any event.
    booting: bool,
    /// The perturbed schedule being explored, if any.
    pub(crate) perturb: Option<crate::check::Perturber>,
    /// `[hooks]` runs waiting for locks, and the per-group rate limit:
    /// the hooks' own state, kept here (not in `Kernel`, which keeps to
    /// its core) and changed only by `hooks.rs` through [`Sched::hooks_mut`].
    hooks: crate::hooks::HookState<'s>,
    /// `ttwu_queue_wakelist()`'s lines and counts (`ttwu_queue.rs`).
    pub(crate) ttwu: ttwu_queue::TtwuQueueState,
}

impl<'s> Sched<'s> {
    /// The scheduler's state for a run of `spec` with `nr_tasks` tasks (the
    /// scenario's and the kernel threads), the cgroups' run queues and
    /// runtime pools (`cfs_bandwidth::build`) and the balancer holding the
    /// tasks' affinity masks.
    pub(crate) fn new(
        spec: &'s crate::spec::Spec,
        nr_cpus: u32,
        nr_tasks: usize,
        groups: Vec<cfs_bandwidth::GroupRq>,
        pools: Vec<cfs_bandwidth::Pool>,
        balance: balance::Balance,
    ) -> Self {
        let nr_group_rqs = groups.len();
        Sched {
            pos: vec![NOT_QUEUED; nr_tasks + nr_group_rqs],
            groups,
            pools,
            balance,
            capacity_stats: Default::default(),
            wakeups_issued: 0,
            tick_ns: 1_000_000_000 / spec.knobs.hz.max(1) as smpsim_engine::Nanos,
            booting: false,
            perturb: spec.perturb.as_ref().map(crate::check::Perturber::new),
            hooks: crate::hooks::HookState::new(spec, nr_cpus, nr_group_rqs),
            ttwu: ttwu_queue::TtwuQueueState::new(spec.knobs.ttwu_queue, nr_cpus),
        }
    }

    /// The hooks' state (`hooks.rs`), to read.
    #[inline]
    pub(crate) fn hooks(&self) -> &crate::hooks::HookState<'s> {
        &self.hooks
    }

    /// The hooks' state, for `hooks.rs` to change.
    #[inline]
    pub(crate) fn hooks_mut(&mut self) -> &mut crate::hooks::HookState<'s> {
        &mut self.hooks
    }

    /// A jiffy: the scheduler tick's period, `1e9 / HZ`.
    #[inline]
    pub(crate) fn tick_ns(&self) -> smpsim_engine::Nanos {
        self.tick_ns
    }

    /// Whether the run is starting (each CPU's first switch is free).
    #[inline]
    pub(crate) fn booting(&self) -> bool {
        self.booting
    }

    /// The run starts (`true`) or has started (`false`): `Kernel::boot`.
    pub(crate) fn set_booting(&mut self, booting: bool) {
        self.booting = booting;
    }

    /// Wake-up placements by CPU capacity so far.
    pub(crate) fn capacity_stats(&self) -> crate::result::CapacityStats {
        self.capacity_stats
    }

    /// A task that is not pinned joins (`true`) or leaves the tasks queued
    /// and movable, for the load balancer.
    #[inline]
    pub(crate) fn movable_queued(&mut self, queued: bool) {
        self.balance.movable_queued(queued)
    }

    /// Each bandwidth-limited cgroup's runtime pool, with its counts.
    pub(crate) fn pools(&self) -> &[cfs_bandwidth::Pool] {
        &self.pools
    }

    /// Each bandwidth pool with the time its first period ends.
    pub(crate) fn first_periods(&self) -> impl Iterator<Item = (u32, smpsim_engine::Nanos)> + '_ {
        self.pools
            .iter()
            .enumerate()
            .map(|(p, pool)| (p as u32, cfs_bandwidth::first_period(pool)))
    }
}

/// The scheduler's methods (`__schedule()`, wakeups, the tick); for
/// every scheduler env.
pub(crate) trait Scheduler<'s>: SchedEnv<'s> {
    fn placement_credit(&self) -> u64 {
        self.spec().knobs.sched_slice
    }

    fn group_entity(&self, g: u32) -> u32 {
        self.tasks().len() as u32 + g
    }

    /// Puts a runnable (not running) task on its CPU's runqueue.
    fn enqueue_task(&mut self, t: TaskId) {
        let credit = self.placement_credit();
        let SchedParts { cpus, tasks, sched } = self.sched_parts();
        let task = &mut tasks[t as usize];
        let c = task.cpu as usize;
        if let Policy::Fifo(prio) = task.policy {
            cpus[c].rt.push_tail(prio, t);
            return;
        }
        match task.group_rq {
            None => {
                let cfs = &mut cpus[c].cfs;
                let v = task.vruntime.max(cfs.min_vruntime.saturating_sub(credit));
                task.vruntime = v;
                cfs.push(&mut sched.pos, v, t);
            }
            Some(g) => {
                let gr = &mut sched.groups[g as usize];
                let v = task
                    .vruntime
                    .max(gr.cfs.min_vruntime.saturating_sub(credit));
                task.vruntime = v;
                gr.cfs.push(&mut sched.pos, v, t);
                self.requeue_group(g);
            }
        }
    }

    /// Takes a queued (runnable, not running) task off its runqueue.
    fn dequeue_task(&mut self, t: TaskId) {
        let ent_base = self.tasks().len() as u32;
        let SchedParts { cpus, tasks, sched } = self.sched_parts();
        let task = &tasks[t as usize];
        let c = task.cpu as usize;
        if task.is_rt() {
            cpus[c].rt.remove(t);
            return;
        }
        match task.group_rq {
            None => cpus[c].cfs.remove(&mut sched.pos, t),
            Some(g) => {
                let ent = ent_base + g;
                let gr = &mut sched.groups[g as usize];
                gr.cfs.remove(&mut sched.pos, t);
                if gr.cfs.is_empty() && sched.pos[ent as usize] != NOT_QUEUED {
                    let cpu = gr.cpu as usize;
                    cpus[cpu].cfs.remove(&mut sched.pos, ent);
                }
            }
        }
    }

    /// Queues the group entity on the root runqueue if it has runnable
    /// tasks, is not throttled and is not the running entity.
    fn requeue_group(&mut self, g: u32) {
        let ent = self.group_entity(g);
        let credit = self.placement_credit();
        let SchedParts { cpus, sched, .. } = self.sched_parts();
        let gr = &mut sched.groups[g as usize];
        if gr.throttled || gr.running || gr.cfs.is_empty() || sched.pos[ent as usize] != NOT_QUEUED
        {
            return;
        }
        let cfs = &mut cpus[gr.cpu as usize].cfs;
        gr.vruntime = gr.vruntime.max(cfs.min_vruntime.saturating_sub(credit));
        cfs.push(&mut sched.pos, gr.vruntime, ent);
    }

    /// Takes the next task to run off the CPU's runqueues.
    fn pick_next(&mut self, c: u32) -> TaskId {
        let SchedParts { cpus, tasks, sched } = self.sched_parts();
        let cpu = &mut cpus[c as usize];
        if let Some(t) = cpu.rt.pop() {
            return t;
        }
        let Some((v, ent)) = cpu.cfs.pop(&mut sched.pos) else {
            return NO_TASK;
        };
        cpu.cfs.min_vruntime = cpu.cfs.min_vruntime.max(v);
        if (ent as usize) < tasks.len() {
            return ent;
        }
        let g = ent - tasks.len() as u32;
        let gr = &mut sched.groups[g as usize];
        let (tv, t) = gr.cfs.pop(&mut sched.pos).expect("queued group has tasks");
        gr.cfs.min_vruntime = gr.cfs.min_vruntime.max(tv);
        gr.running = true;
        t
    }

    /// Charges the running task's CPU time to its vruntime and, for a
    /// bandwidth-limited group, to the group's runtime (`update_curr()`).
    fn update_curr(&mut self, c: u32) {
        let t = self.cpus()[c as usize].curr;
        if t == NO_TASK {
            return;
        }
        let now = self.now();
        let task = &mut self.tasks_mut()[t as usize];
        if task.exec_start > now {
            return; // still being switched in
        }
        let delta = now - task.exec_start;
        task.exec_start = now;
        if task.is_rt() || delta == 0 {
            return;
        }
        task.vruntime += delta;
        if let Some(g) = task.group_rq {
            self.sched_mut().groups[g as usize].vruntime += delta;
            if self.account_cfs_rq_runtime(g, delta) {
                self.cpus_mut()[c as usize].need_resched = true;
            }
        }
    }

    /// `__schedule()`: puts the current task back (or not, if it blocked),
    /// throttles its group if it ran out of runtime, picks the next task,
    /// and spends the context-switch time (IRQs off) before running it.
    fn schedule(&mut self, c: u32) {
        self.settle(c);
        // smp_mb__after_spinlock() once the rq lock is taken: a full
        // barrier whatever is picked (membarrier relies on it).
        self.cpus_mut()[c as usize].last_barrier = self.now();
        self.update_curr(c);
        self.rcu_note_context_switch(c);
        let prev = self.cpus()[c as usize].curr;
        let mut cost = 0;
        // The switch's hooks, once one of them may wait for a lock.
        let mut hook_run = None;
        if prev != NO_TASK {
            let task = &self.tasks()[prev as usize];
            let (state, is_rt) = (task.state, task.is_rt());
            // __might_sleep(): a task that blocks in atomic context or with
            // IRQs disabled (both are checked: in_atomic(), irqs_disabled()).
            if task.state != TaskState::Running {
                let what = match (task.irq.preempt_count > 0, task.irq.irqs_off) {
                    (true, false) => Some("schedule() with preemption disabled"),
                    (false, true) => Some("schedule() with IRQs disabled; irqs_disabled(): 1"),
                    (true, true) => {
                        Some("schedule() with preemption and IRQs disabled; irqs_disabled(): 1")
                    }
                    (false, false) => None,
                };
                if let Some(what) = what {
                    let now = self.now();
                    self.metrics_mut().sleep_in_atomic(c, now, what);
                }
            }
            if state != TaskState::Running && !is_rt && !self.sched().booting {
                // deactivate_task() -> dequeue_task_fair(), rq lock held.
                let ev = crate::hooks::HookEvent::DequeueTaskFair;
                let none = crate::hooks::HookSubject::NONE;
                cost = self.switch_hook(c, ev, none, cost, &mut hook_run);
                if self.has_group_hooks() {
                    let site = tg_load_avg::UpdateSite::Dequeue;
                    cost = self.switch_group_hooks(c, prev, site, cost, &mut hook_run);
                }
            }
            let task = &self.tasks()[prev as usize];
            if task.state == TaskState::Running {
                self.set_state(prev, TaskState::Runnable);
                if self.cpus()[c as usize].online {
                    self.put_prev_runnable(prev);
                } else {
                    self.push_off_offline_cpu(prev, c);
                }
            }
            self.tasks_mut()[prev as usize].last_ran = self.now();
            if let Some(g) = self.tasks()[prev as usize].group_rq {
                self.sched_mut().groups[g as usize].running = false;
                cost += self.check_cfs_rq_runtime(c, g);
                if self.sched().groups[g as usize].cfs.is_empty() {
                    // dequeue_entity() left the group empty on this CPU.
                    self.return_cfs_rq_runtime(g);
                }
                self.requeue_group(g);
            }
        }
        self.cpus_mut()[c as usize].need_resched = false;
        cost += self.take_hook_debt(c);
        let cpu = &self.cpus()[c as usize];
        if cpu.rt.is_empty() && cpu.cfs.is_empty() {
            cost += self.newidle_balance(c);
        }
        let next = self.pick_next(c);
        if prev != NO_TASK && next != prev {
            // owner->on_cpu goes to 0: spinners on the locks it owns give up.
            self.sleeping_owner_leaves_cpu(prev);
        }
        if next != NO_TASK {
            let task = &self.tasks()[next as usize];
            crate::invariants::check(crate::invariants::switch_in(
                next,
                c,
                task.cpu,
                task.state,
                self.cpus()[c as usize].online,
                task.kthread.is_some(),
            ));
            self.set_state(next, TaskState::Running);
            // Its run time starts being charged when the switch completes.
            self.tasks_mut()[next as usize].exec_start = u64::MAX;
        }
        if next != NO_TASK && next != prev && self.has_group_hooks() {
            // pick_next_task_fair() -> set_next_entity() -> update_load_avg().
            let site = tg_load_avg::UpdateSite::SetNext;
            cost = self.switch_group_hooks(c, next, site, cost, &mut hook_run);
        }
        if prev == NO_TASK && next != NO_TASK && !self.sched().booting {
            // do_idle() ends (tick_nohz_idle_exit(), ...): the idle task's
            // way out, before schedule_idle().
            let ev = crate::hooks::HookEvent::IdleExit;
            let subject = self.switch_subject(c, prev, next);
            cost = self.switch_hook(c, ev, subject, cost, &mut hook_run);
        }
        if next != prev {
            // trace_sched_switch(), before context_switch().
            if !self.sched().booting {
                let ev = crate::hooks::HookEvent::SchedSwitch;
                let subject = self.switch_subject(c, prev, next);
                cost = self.switch_hook(c, ev, subject, cost, &mut hook_run);
            }
            cost += self.cost().context_switch;
            cost += self.mm_switch_start(c, prev, next);
            if self.metrics().measuring(self.now()) {
                self.cpus_mut()[c as usize].nr_switches += 1;
            }
        }
        if self.sched().booting {
            // Switched in before the run began.
            cost = 0;
        }
        let now = self.now();
        let cpu = &mut self.cpus_mut()[c as usize];
        cpu.curr = next;
        if let Some(run) = hook_run {
            // Hooks that take locks: the switch ends when they are done.
            self.start_switch_run(c, next, cost, run);
            return;
        }
        if cost == 0 {
            self.finish_switch(c, next);
            return;
        }
        cpu.activity = Activity::Switch {
            end: now + cost,
            next,
        };
        cpu.rq_busy_until = cpu.rq_busy_until.max(now + cost);
        self.irq_off_begin(c);
        self.arm_cpu(c, now + cost);
    }

    fn put_prev_runnable(&mut self, t: TaskId) {
        let SchedParts { cpus, tasks, sched } = self.sched_parts();
        let task = &tasks[t as usize];
        let c = task.cpu as usize;
        match (task.policy, task.group_rq) {
            (Policy::Fifo(prio), _) => cpus[c].rt.push_head(prio, t),
            (Policy::Normal, None) => {
                let v = task.vruntime;
                cpus[c].cfs.push(&mut sched.pos, v, t)
            }
            (Policy::Normal, Some(g)) => {
                let v = task.vruntime;
                sched.groups[g as usize].cfs.push(&mut sched.pos, v, t)
            }
        }
    }

    /// The switch is done: `next` (or idle) runs from now.
    fn finish_switch(&mut self, c: u32, next: TaskId) {
        if self.hook_run_waiting(c) {
            // A hook of this switch goes on first (`hooks.rs`).
            self.drive_hook_run(c);
            return;
        }
        self.settle(c);
        self.irq_off_end(c);
        let now = self.now();
        let cpu = &mut self.cpus_mut()[c as usize];
        cpu.curr = next;
        cpu.switched_in_at = now;
        if next == NO_TASK {
            cpu.activity = Activity::Idle;
            // ct_idle_enter(): an extended quiescent state begins.
            self.rcu_eqs_enter(c);
            let hook = self.hook(crate::hooks::HookEvent::IdleEnter);
            if let Some(h) = hook.filter(|_| !self.sched().booting) {
                // do_idle() begins (tick_nohz_idle_enter(), ...): the CPU is
                // busy in the idle task until the hook ends.
                let end = self.run_hook(c, h, now);
                self.cpus_mut()[c as usize].idle_hook_until = end;
            }
        } else {
            cpu.activity = Activity::Task;
            // finish_task_switch(): the mm side of the switch, charged to the
            // task before it runs.
            let user = self.tasks()[next as usize].kthread.is_none();
            if user
                && (self.cpus()[c as usize].active_mm != self.tasks()[next as usize].mm
                    || self.cpus()[c as usize].lazy)
            {
                let t = self.mm_switch_finish(c, next);
                self.tasks_mut()[next as usize].batch.push(Mode::Sys, t);
            }
            let task = &mut self.tasks_mut()[next as usize];
            // The working set follows a migrated task (cache misses).
            let refill = std::mem::take(&mut task.migration_refill);
            task.batch.push(task.mode, refill);
            task.exec_start = now;
            task.slice_start = now;
            if let Some(h) = task.wait.overshoot_hist.take() {
                let late = now.saturating_sub(task.wait.wake_deadline);
                self.metrics_mut().record(now, h, late);
            }
            if !self.cpus()[c as usize].tick_armed {
                self.cpus_mut()[c as usize].tick_armed = true;
                let next_tick = (now / self.sched().tick_ns + 1) * self.sched().tick_ns;
                self.at(next_tick, Event::Sched(SchedEvent::Tick { cpu: c }));
            }
        }
        if self.sched().booting {
            // Every CPU gets its task before any runs (Kernel::boot).
            return;
        }
        self.kick(c);
    }

    /// khungtaskd: a task that has slept in D state (uninterruptibly) for
    /// `hung_task_timeout_secs` is reported. Checked when it wakes and at
    /// the end of the run.
    fn check_hung_task(&mut self, t: TaskId) {
        let task = &self.tasks()[t as usize];
        if task.state != TaskState::Sleeping || task.wait.interruptible {
            return;
        }
        let blocked = self.now() - task.wait.wait_start;
        if blocked >= self.metrics().thresholds.hung_task {
            let cpu = task.cpu;
            let name = self.task_name(t);
            let now = self.now();
            self.metrics_mut().hung_task(cpu, now, name, blocked);
        }
    }

    /// What the hooks of CPU `c`'s switch from `prev` to `next` see of
    /// it: `prev->mm` and `next->mm` (none for the idle task or a kernel
    /// thread, which borrow `active_mm`), and the CPU's `active_mm`.
    fn switch_subject(&self, c: u32, prev: TaskId, next: TaskId) -> crate::hooks::HookSubject {
        let mm = |t: TaskId| {
            let task = self.tasks().get(t as usize)?;
            task.kthread.is_none().then_some(task.mm)
        };
        let active = self.cpus()[c as usize].active_mm;
        crate::hooks::HookSubject::switch(mm(prev), mm(next), active)
    }

    /// `try_to_wake_up()`: makes a sleeping task runnable and decides
    /// whether it preempts its CPU's current task. `from` is the waking CPU.
    fn wake_up(&mut self, t: TaskId, from: u32) {
        if from == FROM_SOFTIRQ {
            self.wake_up_from(t, self.tasks()[t as usize].cpu, true);
        } else {
            self.wake_up_from(t, from, false);
        }
    }

    /// `try_to_wake_up()` from CPU `waker`, in a task or (`softirq`) in
    /// softirq/IRQ context, where a wakeup on the same CPU preempts on the
    /// way out of the interrupt.
    fn wake_up_from(&mut self, t: TaskId, waker: u32, softirq: bool) {
        debug_assert_eq!(self.tasks()[t as usize].state, TaskState::Sleeping);
        self.sched_mut().wakeups_issued += 1;
        self.check_hung_task(t);
        self.place_waking_task(t, waker);
        let c = self.tasks()[t as usize].cpu;
        // The waking CPU (the task's own CPU from a softirq).
        let on = if softirq { c } else { waker };
        // try_to_wake_up(), once select_task_rq() has placed the task,
        // before ttwu_queue() (kernel/sched/core.c).
        self.wake_hook(on, crate::hooks::HookEvent::TryToWakeUp, t);
        // ttwu_queue(): the wakee's CPU enqueues it, or this one does.
        if !softirq && self.ttwu_queue_cond(on, c) {
            self.ttwu_queue_wakelist(t, on, c);
            return;
        }
        let from = if softirq && c == waker {
            FROM_SOFTIRQ
        } else {
            waker
        };
        self.ttwu_do_activate(t, on, from);
    }

    /// `ttwu_do_activate()` on CPU `on` of task `t` (on its runqueue by
    /// now): runnable, enqueued, and `wakeup_preempt()` as from `from`.
    fn ttwu_do_activate(&mut self, t: TaskId, on: u32, from: u32) {
        self.set_state(t, TaskState::Runnable);
        self.tasks_mut()[t as usize].gen = self.tasks()[t as usize].gen.wrapping_add(1);
        self.enqueue_task(t);
        // ttwu_do_activate() -> enqueue_task_fair(), rq lock held.
        if !self.tasks()[t as usize].is_rt() {
            self.wake_hook(on, crate::hooks::HookEvent::EnqueueTaskFair, t);
        }
        if self.has_group_hooks() {
            // enqueue_entity() -> update_load_avg(), update_cfs_group().
            let site = tg_load_avg::UpdateSite::Enqueue;
            let d = self.run_group_hooks(on, t, site, self.now()) - self.now();
            self.charge_hook(on, d);
        }
        let c = self.tasks()[t as usize].cpu;
        self.check_preempt_wakeup(c, t, from);
    }

    /// `wakeup_preempt()` for a task just queued on `c`, and the end of
    /// `c`'s idle time if it was idle.
    fn check_preempt_wakeup(&mut self, c: u32, t: TaskId, from: u32) {
        self.idle_ends(c);
        if self.should_preempt(c, t) {
            self.resched_cpu(c, from);
        }
    }

    /// `check_preempt_curr()`.
    fn should_preempt(&mut self, c: u32, woken: TaskId) -> bool {
        let curr = self.cpus()[c as usize].curr;
        if curr == NO_TASK {
            return true;
        }
        let (w, cur) = (&self.tasks()[woken as usize], &self.tasks()[curr as usize]);
        match (w.policy, cur.policy) {
            (Policy::Fifo(a), Policy::Fifo(b)) => a > b,
            (Policy::Fifo(_), Policy::Normal) => true,
            (Policy::Normal, Policy::Fifo(_)) => false,
            (Policy::Normal, Policy::Normal) => {
                if w.group_rq.is_some() && w.group_rq == cur.group_rq {
                    return false;
                }
                let wv = match w.group_rq {
                    None => w.vruntime,
                    Some(g) => self.sched().groups[g as usize].vruntime,
                };
                let cv = match cur.group_rq {
                    None => cur.vruntime,
                    Some(g) => self.sched().groups[g as usize].vruntime,
                };
                cv > wv + self.spec().knobs.wakeup_granularity
            }
        }
    }

    /// `resched_curr()`: locally sets `need_resched`; remotely sends a
    /// reschedule IPI.
    fn resched_cpu(&mut self, c: u32, from: u32) {
        if from == FROM_SOFTIRQ {
            // Raised on the target CPU itself, outside any task: act now.
            self.at(self.now(), Event::Sched(SchedEvent::Resched { cpu: c }));
            return;
        }
        if c == from {
            self.cpus_mut()[c as usize].need_resched = true;
            // A local spinner polls need_resched and a running task reaches a
            // preemption point on its own; an idle CPU picks the task now.
            if self.cpus()[c as usize].activity == Activity::Idle {
                self.kick(c);
            }
            return;
        }
        // resched_curr(): an IPI, or for a polling idle CPU only the flag.
        let latency = self.wake_idle_latency(c, from);
        self.at(
            self.now() + latency,
            Event::Sched(SchedEvent::Resched { cpu: c }),
        );
    }

    fn on_resched_ipi(&mut self, c: u32) -> Handled {
        let cpu = &mut self.cpus_mut()[c as usize];
        cpu.need_resched = true;
        if matches!(cpu.activity, Activity::Idle | Activity::Task) {
            self.kick(c);
        }
        Handled::Done
    }

    /// The scheduler tick (`scheduler_tick()`): accounts the running task,
    /// preempts a CFS task whose slice is used up when others wait. Idle
    /// CPUs stop their tick (NO_HZ).
    fn tick(&mut self, c: u32) -> Handled {
        let cpu = &self.cpus()[c as usize];
        if cpu.curr == NO_TASK && cpu.activity == Activity::Idle {
            self.cpus_mut()[c as usize].tick_armed = false;
            return Handled::Done;
        }
        let t = cpu.curr;
        self.at(
            self.now() + self.sched().tick_ns,
            Event::Sched(SchedEvent::Tick { cpu: c }),
        );
        if t == NO_TASK {
            return Handled::Done;
        }
        self.update_curr(c);
        self.rcu_check_cpu_stall(c);
        // rcu_sched_clock_irq(): a tick that interrupted user mode is a
        // quiescent state.
        // The mode of the work running now: the batch is consumed only up
        // to the CPU's last accounting, and one planned up to a syscall's
        // shared op may start in sys and be in user mode by now.
        // Never with IRQs or preemption off, or inside an RCU reader:
        // user code cannot be there (scenario loading refuses it outside
        // `syscall`), but a lock taken in user code (a model of a
        // user-space spinlock) still disables preemption here, and a grace
        // period must not end through such a section.
        let task = &self.tasks()[t as usize];
        let into_batch = self.now() - self.cpus()[c as usize].accounted_to;
        let user = task.batch.mode_at(into_batch, task.mode) == Mode::User
            && task.wait.spin == Spin::None
            && task.irq.preempt_count == 0
            && !task.irq.irqs_off
            && task.irq.rcu_read_depth == 0
            && self.cpus()[c as usize].activity == Activity::Task;
        if user {
            let irq = &self.tasks()[t as usize].irq;
            crate::invariants::check(crate::invariants::quiescent_outside_atomic(
                c,
                irq.preempt_count,
                irq.irqs_off,
                irq.rcu_read_depth,
            ));
            self.rcu_qs(c);
        }
        self.rcu_urgent_qs_tick(c, !user);
        let task = &self.tasks()[t as usize];
        let cpu = &self.cpus()[c as usize];
        let others_wait = !cpu.rt.is_empty()
            || !cpu.cfs.is_empty()
            || task
                .group_rq
                .is_some_and(|g| !self.sched().groups[g as usize].cfs.is_empty());
        if !task.is_rt()
            && others_wait
            && self.now() - task.slice_start >= self.spec().knobs.sched_slice
        {
            self.cpus_mut()[c as usize].need_resched = true;
        }
        self.trigger_load_balance(c);
        let task = &self.tasks()[t as usize];
        // entity_tick() -> update_load_avg(), update_cfs_group().
        let group_tick = self.has_group_hooks() && task.group_rq.is_some() && !task.is_rt();
        if self.hook(crate::hooks::HookEvent::SchedTick).is_some() || group_tick {
            // The hook runs in the timer interrupt, once IRQs are on.
            self.cpus_mut()[c as usize]
                .irq_pending
                .push(crate::cpu::PendingIrq::TickHook);
            self.interrupt(c);
            return Handled::Done;
        }
        if self.cpus()[c as usize].need_resched
            && matches!(self.cpus()[c as usize].activity, Activity::Task)
        {
            self.kick(c);
        }
        Handled::Done
    }

    /// The task sleeps until woken, then continues its op at `resume`.
    fn sleep_until_woken(&mut self, c: u32, t: TaskId, resume: Resume) -> crate::mechanism::Flow {
        self.tasks_mut()[t as usize].resume = resume;
        self.block(c, t);
        crate::mechanism::Flow::Stop
    }

    /// The task gives up the CPU because it blocks (state already set).
    fn block(&mut self, c: u32, t: TaskId) {
        self.set_state(t, TaskState::Sleeping);
        self.tasks_mut()[t as usize].wait.wait_start = self.now();
        self.tasks_mut()[t as usize].wait.interruptible = false;
        self.schedule(c);
    }

    /// Routes a scheduler event.
    fn on_sched_event(&mut self, e: SchedEvent) -> smpsim_engine::Handled {
        use smpsim_engine::Handled;
        match e {
            SchedEvent::Cpu { cpu, gen } => self.on_cpu_event(cpu, gen),
            SchedEvent::Resched { cpu } => self.on_resched_ipi(cpu),
            SchedEvent::Tick { cpu } => self.tick(cpu),
            SchedEvent::NohzBalance { cpu } => self.nohz_idle_balance(cpu),
            SchedEvent::SpinEnd { task, gen } => self.on_spin_end(task, gen),
            SchedEvent::Timer { task, gen } => {
                // The hrtimer interrupt fires on the sleeper's CPU.
                let t = &self.tasks()[task as usize];
                if t.gen != gen || t.state != TaskState::Sleeping {
                    return Handled::Stale;
                }
                let cpu = t.cpu;
                self.cpus_mut()[cpu as usize]
                    .irq_pending
                    .push(crate::cpu::PendingIrq::Timer { task, gen });
                self.interrupt(cpu);
                Handled::Done
            }
        }
    }
}

impl<'s, K: SchedEnv<'s> + ?Sized> Scheduler<'s> for K {}
