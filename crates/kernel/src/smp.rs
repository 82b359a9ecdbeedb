//! Cross-CPU function calls (kernel/smp.c) and hardirq handling.
//!
//! `smp_call_function_single(cpu, func, info, wait=1)`: the caller disables
//! preemption (`get_cpu()`), queues a CSD on the target's
//! `call_single_queue`, sends an IPI only if that queue was empty, and spins
//! in `csd_lock_wait()` with preemption disabled until the target has run
//! `func`. A target with IRQs disabled takes the IPI only when it enables
//! them again. The target's handler (`__flush_smp_call_function_queue`)
//! takes every queued CSD at once, runs the synchronous ones first, then the
//! asynchronous ones (such as the CFS bandwidth unthrottle CSD).

use crate::cpu::{Activity, Csd, PendingIrq};
use crate::env::{CoreEnv, SchedVerbs};
use crate::event::*;
use crate::mechanism::Flow;
use crate::program::{CallFunc, CpuSet, LockingOp, Op, SmpOp, END_OF_TIME, MAX_SPAN};
use crate::task::*;
use smpsim_engine::Nanos;

impl<'s, K: SmpEnv<'s>> crate::mechanism::MechanismOp<K> for SmpOp {
    fn run(&self, k: &mut K, c: u32, t: TaskId, resume: Resume) -> Flow {
        let step = match resume {
            Resume::SmpCall(s) => Some(s),
            _ => None,
        };
        match self {
            SmpOp::SmpCallFunctionSingle { cpu, func, wait } => {
                k.smp_call_function_single(c, t, cpu, func, *wait, step)
            }
            SmpOp::SmpCallFunctionMany { cpus, func, wait } => {
                k.smp_call_function_many(c, t, cpus, func, *wait, step)
            }
        }
    }
}

/// What cross-CPU calls and hardirq handling need from the rest of the
/// kernel: time, the spec and costs, the CPUs' interrupt state and the
/// tasks, the event sink, and the verbs of the mechanisms an interrupt
/// runs (the scheduler's timers and hooks, RCU, the mm's TLB work, the
/// interpreter's expressions). `'s` is the spec's lifetime: a handler's
/// or hook's program is read from it while the kernel changes.
/// Implemented for the kernel in `sim/rcu_env.rs`.
pub(crate) trait SmpEnv<'s>: CoreEnv + SchedVerbs {
    fn spec(&self) -> &'s crate::Spec;
    fn handler_stream(&mut self, c: u32) -> &mut smpsim_engine::Rng;
    /// With the scenario's `line = "csd_data"`, a read (or a store) by CPU
    /// `by` of CPU `owner`'s csd line starting at `at`; when it is done.
    /// `None`: the csd keeps a line of its own, priced as fixed transfers.
    fn csd_line(&mut self, owner: u32, by: u32, store: bool, at: Nanos) -> Option<Nanos>;
    // The core's CPU accounting and decisions (sim/).
    // The scheduler's.
    fn cfs_period_timer(&mut self, c: u32, pool: u32, t: Nanos) -> Nanos;
    fn cfs_slack_timer(&mut self, c: u32, pool: u32, t: Nanos) -> Nanos;
    fn cfsb_csd_unthrottle(&mut self, c: u32, t: Nanos) -> Nanos;
    fn has_group_hooks(&self) -> bool;
    fn run_group_hooks(
        &mut self,
        on: u32,
        t: TaskId,
        site: crate::sched::tg_load_avg::UpdateSite,
        at: Nanos,
    ) -> Nanos;
    // The hooks'.
    fn hook(&self, ev: crate::hooks::HookEvent) -> Option<&'s crate::program::Program>;
    fn run_hook(&mut self, c: u32, hook: &crate::program::Program, t: Nanos) -> Nanos;
    fn tick_hook_locks(&self) -> bool;
    fn start_irq_hook_run(
        &mut self,
        c: u32,
        t: Nanos,
        ttwu_activate: Option<Nanos>,
        tick: bool,
        softirq: bool,
    );
    fn sched_ttwu_pending(&mut self, c: u32, t: Nanos) -> (Nanos, Option<Nanos>);
    fn take_hook_debt(&mut self, c: u32) -> Nanos;
    fn hook_run_waiting(&self, c: u32) -> bool;
    fn drive_hook_run(&mut self, c: u32);
    // RCU's.
    fn rcu_softirq(&mut self, c: u32, start: Nanos) -> Nanos;
    fn rcu_exp_handler(&mut self, c: u32);
    // Locking's.
    /// Lockdep has nothing new to learn of `class` taken in (or out of)
    /// hardirq context (or lockdep is off).
    fn lockdep_usage_settled(&self, class: u32, in_hardirq: bool) -> bool;
    fn lockdep_usage(&mut self, c: u32, class: u32, in_hardirq: bool, site: String);
    // The mm's.
    fn shoot_lazy_tlb(&mut self, c: u32, mm: u32);
    fn flush_by_broadcast(&self, t: TaskId) -> bool;
    fn broadcast_tlb_flush(&mut self, t: TaskId, pages: u64) -> u64;
    fn count_tlb_flush_ipis(&mut self, n: u64);
    fn tlb_broadcast_on(&self) -> bool;
    fn consider_global_asid(&mut self, t: TaskId);
    fn tlb_flush_targets(&mut self, t: TaskId, freed_tables: bool, out: &mut Vec<u32>);
    fn tlb_flush_mask_targets(&mut self, t: TaskId, slot: u16, out: &mut Vec<u32>);
    /// CPU `c` is in address space `mm`'s cpumask.
    fn mm_cpumask_has(&self, mm: u32, c: u32) -> bool;
    // The interpreter's and the cpumask ops'.
    fn report_negative(&mut self, t: TaskId, what: &str, n: i64);
    fn bad_cpu(&mut self, c: u32, op: &str, cpu: i64);
}

/// Cross-CPU calls and hardirq entry and exit, for any kernel.
pub(crate) trait Smp<'s>: SmpEnv<'s> {
    /// An interrupt became pending on `c`: take it now if the CPU can.
    fn interrupt(&mut self, c: u32) {
        if self.irqs_enabled(c) {
            self.enter_irq(c);
        }
    }

    /// Enters the hardirq handler for everything pending on `c`, computing
    /// the handler's timeline: entry cost, timers, CFS period timers, then
    /// the CSD queue. The CPU is busy (IRQs off) until the handler ends.
    fn enter_irq(&mut self, c: u32) {
        self.settle(c);
        let now = self.now();
        let cpu = self.cpu_mut(c);
        cpu.interrupted = if cpu.activity == Activity::Task {
            cpu.curr
        } else {
            NO_TASK
        };
        // In the handler from now on: wakeups it does must not switch tasks.
        cpu.activity = Activity::Irq { end: now };
        self.irq_off_begin(c);
        // A polling idle CPU woken by a flag write, not an interrupt, runs
        // the queue from the idle loop: no entry or exit. A softirq alone
        // runs at the exit of the tick, whose entry is not modelled.
        let cpu = self.cpu_mut(c);
        cpu.softirq_from = END_OF_TIME;
        let softirq_only = !cpu.ipi_pending && cpu.irq_pending == [PendingIrq::RcuSoftirq];
        let entry = if std::mem::take(&mut cpu.polled_wake) || softirq_only {
            0
        } else {
            self.cost().irq_entry_exit
        };
        let mut t = self.now() + entry;
        let mut softirq = false;
        // A sched_tick hook that takes locks runs last, at its true time.
        let mut tick_run = false;
        // An IPI alone (the common case) has no other interrupt pending:
        // the queue is not taken apart and put back.
        let any_pending = !self.cpu(c).irq_pending.is_empty();
        let mut pending = if any_pending {
            std::mem::take(&mut self.cpu_mut(c).irq_pending)
        } else {
            Vec::new()
        };
        for irq in pending.drain(..) {
            match irq {
                PendingIrq::Timer { task, gen } => {
                    let tk = self.task(task);
                    if tk.gen == gen && tk.state == TaskState::Sleeping {
                        // hrtimer_wakeup() -> try_to_wake_up() in the
                        // hardirq: its cost, as a task's wakeup costs it.
                        self.wake_up(task, c);
                        t += self.cost().wakeup;
                    }
                }
                PendingIrq::CfsPeriod { pool } => t = self.cfs_period_timer(c, pool, t),
                PendingIrq::CfsSlack { pool } => t = self.cfs_slack_timer(c, pool, t),
                PendingIrq::TickHook => {
                    let curr = self.cpu(c).curr;
                    if curr != NO_TASK && self.has_group_hooks() {
                        // entity_tick() for the task the tick found running.
                        let site = crate::sched::tg_load_avg::UpdateSite::Tick;
                        t = self.run_group_hooks(c, curr, site, t);
                    }
                    if self.tick_hook_locks() {
                        tick_run = true;
                    } else if let Some(h) = self.hook(crate::hooks::HookEvent::SchedTick) {
                        t = self.run_hook(c, h, t);
                    }
                }
                PendingIrq::RcuSoftirq => softirq = true,
            }
        }
        if any_pending {
            self.cpu_mut(c).irq_pending = pending;
        }
        if std::mem::take(&mut self.cpu_mut(c).ipi_pending) {
            t = self.flush_call_function_queue(c, t);
        }
        // The wakees the flush took (sched/ttwu_queue.rs).
        let (after, ttwu_run) = self.sched_ttwu_pending(c, t);
        t = after;
        // Hooks the handler ran (a wakeup's enqueue_task_fair).
        t += self.take_hook_debt(c);
        if tick_run || ttwu_run.is_some() {
            self.start_irq_hook_run(c, t, ttwu_run, tick_run, softirq);
            return;
        }
        // irq_exit(): the softirqs raised, after the hardirq work.
        if softirq {
            t = self.rcu_softirq(c, t);
        }
        self.cpu_mut(c).activity = Activity::Irq { end: t };
        self.arm_cpu(c, t);
    }

    /// Runs the CSDs queued on `c` starting at `t`; returns the end time.
    fn flush_call_function_queue(&mut self, c: u32, mut t: u64) -> u64 {
        let mut queue = std::mem::take(&mut self.cpu_mut(c).csd_queue);
        let mut unthrottle = false;
        for csd in queue.iter() {
            match *csd {
                Csd::Sync {
                    caller,
                    gen,
                    cost,
                    from_cpu,
                    wait,
                    handler,
                } => {
                    // The handler reads the caller's csd (func, info).
                    let read = self.csd_line(from_cpu, c, false, t);
                    let read = read.unwrap_or(t + self.cost().line_transfer(from_cpu, c));
                    t = (read + cost).min(END_OF_TIME);
                    if handler != crate::cpu::NO_HANDLER {
                        t = self.run_handler(c, handler, t);
                    }
                    // The handler runs between smp_mb()s (the IPI itself
                    // orders, and membarrier's ipi_mb() is one).
                    self.cpu_mut(c).last_barrier = t;
                    // csd_unlock(): a store to the csd's line, if placed.
                    let unlocked = self.csd_line(from_cpu, c, true, t);
                    if !wait {
                        continue;
                    }
                    // The caller sees the flag one transfer later (its
                    // csd_lock_wait() read of the line, if placed).
                    let seen = match unlocked {
                        Some(at) => self.csd_line(from_cpu, from_cpu, false, at).unwrap_or(at),
                        None => t + self.cost().line_transfer(c, from_cpu),
                    };
                    self.at(
                        seen,
                        Event::Sched(SchedEvent::SpinEnd { task: caller, gen }),
                    );
                }
                Csd::CfsbUnthrottle => unthrottle = true,
                Csd::RcuExp => self.rcu_exp_handler(c),
                Csd::ShootLazy { mm } => {
                    t += self.cost().tlb_flush_full;
                    self.shoot_lazy_tlb(c, mm);
                }
                // CSD_TYPE_TTWU: sched_ttwu_pending() after the flush.
                Csd::Ttwu { task } => self.cpu_mut(c).ttwu_pending.push(task),
            }
        }
        if unthrottle {
            t = self.cfsb_csd_unthrottle(c, t);
        }
        queue.clear();
        self.cpu_mut(c).csd_queue = queue;
        t
    }

    /// `smpcfd_dying_cpu()`: CPU `c` goes offline; what is still queued
    /// for it runs now.
    fn smpcfd_dying_cpu(&mut self, c: u32) {
        if !self.cpu(c).csd_queue.is_empty() {
            self.cpu_mut(c).ipi_pending = false;
            let now = self.now();
            self.flush_call_function_queue(c, now);
            // Its wakees join its runqueue, which hotplug then empties
            // (a locking sched_ttwu_pending hook is not run here).
            self.sched_ttwu_pending(c, now);
        }
    }

    /// The handler is done: return to what was interrupted.
    fn exit_irq(&mut self, c: u32) {
        if self.hook_run_waiting(c) {
            // The handler's sched_tick hook goes on first (`hooks.rs`).
            self.drive_hook_run(c);
            return;
        }
        self.settle(c);
        let cpu = self.cpu_mut(c);
        let back = cpu.interrupted;
        cpu.interrupted = NO_TASK;
        cpu.activity = if back != NO_TASK {
            Activity::Task
        } else {
            Activity::Idle
        };
        if cpu.curr != back && back == NO_TASK && cpu.curr != NO_TASK {
            // Idle was interrupted while curr was already set: cannot happen.
            debug_assert!(false, "irq returned to a different context");
        }
        let task_irqs_off = back != NO_TASK && self.task(back).irq.irqs_off;
        if !task_irqs_off {
            self.irq_off_end(c);
        }
        self.kick(c);
    }

    /// Queues a CSD from CPU `from` on `target` at `at`
    /// (`__smp_call_single_queue()`): `llist_add()` on the target's
    /// `call_single_queue`, a line the target last wrote when it emptied
    /// it; then, if the queue was empty, `send_call_function_single_ipi()`.
    fn queue_csd(&mut self, target: u32, csd: Csd, at: u64, from: u32) {
        if !self.cpu(target).online {
            self.csd_on_offline_cpu(target, at, from);
        }
        let q = &mut self.cpu_mut(target).csd_queue;
        let first = q.is_empty();
        q.push_back(csd);
        if first {
            let queued = at + self.cost().line_transfer(target, from);
            let wake = self.wake_idle_latency(target, from);
            self.cpu_mut(target).polled_wake |= self.polls_in_idle(target);
            self.at(queued + wake, Event::Smp(SmpEvent::Ipi { cpu: target }));
        }
    }

    /// `__flush_smp_call_function_queue()` on the offline CPU warns. Out
    /// of line (it builds a string) so the common path saves fewer
    /// registers.
    #[cold]
    #[inline(never)]
    fn csd_on_offline_cpu(&mut self, target: u32, at: u64, from: u32) {
        let on = from.min(self.nr_cpus() - 1);
        self.metrics_mut().ipi_offline_cpu(
            on,
            at,
            format!("WARNING: IPI on offline CPU {target} (a CSD queued on it)"),
        );
    }

    /// How long a wakeup of CPU `c` sent from `from` takes to reach it. A
    /// running CPU takes an IPI. An idle one must also leave its idle
    /// state; if it polls its thread flags (`set_nr_if_polling()`,
    /// `set_nr_and_not_polling()` succeed) the waker's store to those flags
    /// is the whole message: no IPI is sent, and the CPU runs what is
    /// queued from the idle loop, with no interrupt entry.
    fn wake_idle_latency(&self, c: u32, from: u32) -> u64 {
        if self.cpu(c).activity != Activity::Idle {
            return self.cost().ipi_latency;
        }
        if self.polls_in_idle(c) {
            return self.cost().line_transfer(from, c) + self.cost().idle_exit;
        }
        self.cost().ipi_latency + self.cost().idle_exit
    }

    /// CPU `c` is idle with `TIF_POLLING_NRFLAG` set.
    fn polls_in_idle(&self, c: u32) -> bool {
        self.cost().idle_polling && self.cpu(c).activity == Activity::Idle
    }

    /// The per-target cost of a call's function, sampled for one target.
    fn func_cost(&mut self, t: TaskId, func: &CallFunc) -> u64 {
        let base = func.cost.sample(&mut self.task_mut(t).rng);
        base.saturating_mul(self.task(t).smp.call_units)
            .min(MAX_SPAN)
    }

    /// Evaluates the call's unit count once, when the call starts.
    fn set_units(&mut self, t: TaskId, func: &CallFunc) {
        let units = match &func.units {
            None => 1,
            Some(e) => {
                let n = self.eval(t, e);
                if n < 0 {
                    self.report_negative(t, "`units`", n);
                }
                n.max(0) as u64
            }
        };
        self.task_mut(t).smp.call_units = units;
    }

    /// A handler program on CPU `c` in hardirq context from time `t`;
    /// returns when it ends. Its spinlocks are marked for lockdep's
    /// IRQ-safety check; they are neither contended nor priced here: the
    /// handler runs inside the CSD queue's timeline, computed at once, and
    /// only a `sched_tick` hook's run (`hooks.rs`) can wait for a lock in
    /// hardirq context so far.
    fn run_handler(&mut self, c: u32, h: u32, mut t: Nanos) -> Nanos {
        let spec = self.spec();
        for op in &spec.handlers[h as usize].ops {
            match op {
                Op::Work(d) => t += d.sample(self.handler_stream(c)),
                Op::Count(counter) => self.metrics_mut().count(t, *counter),
                Op::Locking(LockingOp::Lock { lock, .. }) => {
                    let settled = self.lockdep_usage_settled(lock.object, true);
                    if !settled {
                        let site = format!("CPU{c} in a cross-CPU call handler (hardirq)");
                        self.lockdep_usage(c, lock.object, true, site);
                    }
                }
                _ => {}
            }
        }
        t
    }

    /// `smp_call_function_single()` at `step`.
    fn smp_call_function_single(
        &mut self,
        c: u32,
        t: TaskId,
        cpu: &crate::program::Expr,
        func: &CallFunc,
        wait: bool,
        step: Option<SmpCallStep>,
    ) -> Flow {
        // The target is evaluated once, when the call starts.
        let target = if step.is_none() {
            let v = self.eval(t, cpu);
            let task = self.task_mut(t);
            task.smp.call_targets.clear();
            task.smp
                .call_targets
                .push(v.clamp(-1, u32::MAX as i64 - 1) as u32);
            v
        } else {
            self.task(t).smp.call_targets[0] as i64
        };
        if step.is_none() {
            self.preempt_disable(t);
            self.set_units(t, func);
            if target == c as i64 {
                // Runs func locally with IRQs off; no IPI.
                let cost = self.func_cost(t, func);
                self.task_mut(t).batch.push(Mode::Sys, cost);
                self.task_mut(t).resume = Resume::SmpCall(SmpCallStep::Done);
                return self.end_batch(c, t);
            }
            if target < 0 || target >= self.nr_cpus() as i64 {
                self.bad_cpu(c, "smp_call_function_single", target);
                return self.smp_call_done(c, t);
            }
            if !self.cpu(target as u32).online {
                // generic_exec_single(): -ENXIO, nothing sent; the scenario
                // does not look at the error, so it is reported.
                self.call_to_offline_cpu(c, t, target);
                return self.smp_call_done(c, t);
            }
            let send = self.cost().ipi_send;
            let task = self.task_mut(t);
            task.batch.push(Mode::Sys, send);
            task.resume = Resume::SmpCall(SmpCallStep::Queue);
            return self.end_batch(c, t);
        }
        if step == Some(SmpCallStep::Queue) {
            return self.queue_calls(c, t, func, wait);
        }
        self.smp_call_done(c, t)
    }

    /// The report of `smp_call_function_single()` by `t` to an offline
    /// CPU (out of line, as [`Self::csd_on_offline_cpu`]).
    #[cold]
    #[inline(never)]
    fn call_to_offline_cpu(&mut self, c: u32, t: TaskId, target: i64) {
        let name = self.task_name(t);
        let now = self.now();
        self.metrics_mut().ipi_offline_cpu(
            c,
            now,
            format!(
                "smp_call_function_single({target}) by {name}: CPU {target} is offline; generic_exec_single() returns -ENXIO and nothing is sent"
            ),
        );
    }

    /// `smp_call_function_many()` at `step`: a CSD for every CPU of the
    /// mask but this one, the IPIs, then a wait for each CSD in turn (which
    /// ends when the slowest target has run the function).
    fn smp_call_function_many(
        &mut self,
        c: u32,
        t: TaskId,
        cpus: &CpuSet,
        func: &CallFunc,
        wait: bool,
        step: Option<SmpCallStep>,
    ) -> Flow {
        if step.is_none() {
            self.preempt_disable(t);
            self.set_units(t, func);
            let flush =
                matches!(cpus, CpuSet::TlbFlush { .. }) && self.cost().tlb_broadcast.is_some();
            if flush && self.flush_by_broadcast(t) {
                // flush_tlb_mm_range() of an mm with a global ASID: the
                // caller invalidates every CPU's TLB and waits; no IPI.
                let pages = self.task(t).smp.call_units;
                let cost = self.broadcast_tlb_flush(t, pages);
                let task = self.task_mut(t);
                task.batch.push(Mode::Sys, cost);
                task.resume = Resume::SmpCall(SmpCallStep::Done);
                return self.end_batch(c, t);
            }
            let mut targets = std::mem::take(&mut self.task_mut(t).smp.call_targets);
            targets.clear();
            self.eval_cpuset(t, cpus, &mut targets);
            let n = targets.len() as u64;
            self.task_mut(t).smp.call_targets = targets;
            if flush {
                self.count_tlb_flush_ipis(n);
                if self.tlb_broadcast_on() {
                    self.consider_global_asid(t);
                }
            }
            if n == 0 {
                return self.smp_call_done(c, t);
            }
            let send = self.cost().ipi_send * n;
            let task = self.task_mut(t);
            task.batch.push(Mode::Sys, send);
            task.resume = Resume::SmpCall(SmpCallStep::Queue);
            return self.end_batch(c, t);
        }
        if step == Some(SmpCallStep::Queue) {
            return self.queue_calls(c, t, func, wait);
        }
        self.smp_call_done(c, t)
    }

    /// Queues a CSD on every target in `call_targets` (the IPIs were paid
    /// for), then waits for them all, or, without `wait`, returns.
    fn queue_calls(&mut self, c: u32, t: TaskId, func: &CallFunc, wait: bool) -> Flow {
        let gen = self.task(t).gen.wrapping_add(1);
        // csd_lock(): the caller's store to its csd, if its line is placed.
        let now = self.now();
        let locked = self.csd_line(c, c, true, now).unwrap_or(now);
        if locked > now {
            self.task_mut(t).batch.push(Mode::Sys, locked - now);
        }
        let targets = std::mem::take(&mut self.task_mut(t).smp.call_targets);
        for &target in &targets {
            let cost = self.func_cost(t, func);
            let csd = Csd::Sync {
                caller: t,
                gen,
                cost,
                from_cpu: c,
                wait,
                handler: func.handler.unwrap_or(crate::cpu::NO_HANDLER),
            };
            self.queue_csd(target, csd, locked, c);
        }
        let n = targets.len() as u32;
        self.task_mut(t).smp.call_targets = targets;
        if wait {
            return self.csd_lock_wait(c, t, n);
        }
        self.smp_call_done(c, t)
    }

    /// The CPUs of a set, this CPU and offline ones left out, in CPU order.
    fn eval_cpuset(&mut self, t: TaskId, set: &CpuSet, out: &mut Vec<u32>) {
        let me = self.task(t).cpu;
        match set {
            CpuSet::MmCpumask => {
                let mm = self.task(t).mm;
                out.extend(
                    (0..self.nr_cpus())
                        .filter(|&c| c != me && self.mm_cpumask_has(mm, c) && self.cpu(c).online),
                );
            }
            CpuSet::TlbFlush {
                freed_tables,
                mask: None,
            } => self.tlb_flush_targets(t, *freed_tables, out),
            CpuSet::TlbFlush {
                mask: Some(slot), ..
            } => self.tlb_flush_mask_targets(t, *slot, out),
            CpuSet::Mask(slot) => {
                // smp_call_function_many_cond(): the mask and
                // cpu_online_mask, without this CPU.
                let mask = crate::cpumask::task_mask(self.task(t), *slot);
                out.extend(
                    crate::cpumask::cpus(mask)
                        .filter(|&c| c != me && c < self.nr_cpus() && self.cpu(c).online),
                );
            }
            CpuSet::MmRunning => {
                let mm = self.task(t).mm;
                out.extend((0..self.nr_cpus()).filter(|&c| {
                    let cpu = self.cpu(c);
                    c != me && cpu.online && cpu.curr != NO_TASK && self.task(cpu.curr).mm == mm
                }));
            }
            CpuSet::AllButSelf => {
                out.extend((0..self.nr_cpus()).filter(|&cpu| cpu != me && self.cpu(cpu).online))
            }
            CpuSet::List(exprs) => {
                for e in exprs {
                    let cpu = self.eval(t, e);
                    if cpu < 0 || cpu >= self.nr_cpus() as i64 {
                        self.bad_cpu(me, "smp_call_function_many", cpu);
                    }
                    if cpu >= 0
                        && cpu < self.nr_cpus() as i64
                        && cpu as u32 != me
                        && self.cpu(cpu as u32).online
                    {
                        out.push(cpu as u32);
                    }
                }
                out.sort_unstable();
                out.dedup();
            }
        }
    }

    /// Begins `csd_lock_wait()` on `pending` CSDs. Preemption stays
    /// disabled, unless the kernel has the preemptible-wait series, which
    /// re-enables it once the IPIs are queued.
    fn csd_lock_wait(&mut self, c: u32, t: TaskId, pending: u32) -> Flow {
        let preemptible = self.spec().knobs.csd_wait_preemptible;
        let now = self.now();
        let task = self.task_mut(t);
        task.gen = task.gen.wrapping_add(1);
        task.wait.spin = Spin::CsdWait;
        task.wait.spin_done = false;
        task.smp.csd_pending = pending;
        task.smp.csd_wait_preemptible = preemptible;
        task.wait.wait_start = now;
        if preemptible && self.preempt_enable(t) {
            self.schedule(c);
        }
        Flow::Stop
    }

    /// The wait is over (or there was none): `put_cpu()`.
    fn smp_call_done(&mut self, c: u32, t: TaskId) -> Flow {
        self.advance(t);
        let task = self.task_mut(t);
        if std::mem::take(&mut task.smp.csd_wait_preemptible) {
            return Flow::Next;
        }
        if self.preempt_enable(t) {
            self.schedule(c);
            return Flow::Stop;
        }
        Flow::Next
    }

    /// Ends the task's batch now and resumes the op at its end.
    fn end_batch(&mut self, c: u32, t: TaskId) -> Flow {
        let end = self.now().saturating_add(self.task(t).batch.total());
        self.arm_cpu(c, end);
        Flow::Stop
    }

    /// Routes a cross-CPU call event.
    fn on_smp_event(&mut self, e: SmpEvent) -> smpsim_engine::Handled {
        match e {
            SmpEvent::Ipi { cpu } => {
                self.cpu_mut(cpu).ipi_pending = true;
                self.interrupt(cpu);
            }
        }
        smpsim_engine::Handled::Done
    }
}
impl<'s, K: SmpEnv<'s> + ?Sized> Smp<'s> for K {}
