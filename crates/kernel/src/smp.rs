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
use crate::event::*;
use crate::mechanism::Flow;
use crate::program::{CallFunc, CpuSet, LockingOp, Op, SmpOp, END_OF_TIME, MAX_SPAN};
use crate::task::*;
use smpsim_engine::Nanos;

impl<'s> crate::mechanism::MechanismOp<crate::Kernel<'s>> for SmpOp {
    fn run(&self, k: &mut crate::Kernel<'s>, c: u32, t: TaskId, resume: Resume) -> Flow {
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

impl crate::Kernel<'_> {
    /// An interrupt became pending on `c`: take it now if the CPU can.
    pub(crate) fn interrupt(&mut self, c: u32) {
        if self.irqs_enabled(c) {
            self.enter_irq(c);
        }
    }

    /// Enters the hardirq handler for everything pending on `c`, computing
    /// the handler's timeline: entry cost, timers, CFS period timers, then
    /// the CSD queue. The CPU is busy (IRQs off) until the handler ends.
    pub(crate) fn enter_irq(&mut self, c: u32) {
        self.settle(c);
        let cpu = &mut self.cpus[c as usize];
        cpu.interrupted = if cpu.activity == Activity::Task {
            cpu.curr
        } else {
            NO_TASK
        };
        // In the handler from now on: wakeups it does must not switch tasks.
        cpu.activity = Activity::Irq { end: self.now };
        self.irq_off_begin(c);
        // A polling idle CPU woken by a flag write, not an interrupt, runs
        // the queue from the idle loop: no entry or exit. A softirq alone
        // runs at the exit of the tick, whose entry is not modelled.
        let cpu = &mut self.cpus[c as usize];
        cpu.softirq_from = END_OF_TIME;
        let softirq_only = !cpu.ipi_pending && cpu.irq_pending == [PendingIrq::RcuSoftirq];
        let entry = if std::mem::take(&mut cpu.polled_wake) || softirq_only {
            0
        } else {
            self.cost.irq_entry_exit
        };
        let mut t = self.now + entry;
        let mut softirq = false;
        // A sched_tick hook that takes locks runs last, at its true time.
        let mut tick_run = false;
        // An IPI alone (the common case) has no other interrupt pending:
        // the queue is not taken apart and put back.
        let any_pending = !self.cpus[c as usize].irq_pending.is_empty();
        let mut pending = if any_pending {
            std::mem::take(&mut self.cpus[c as usize].irq_pending)
        } else {
            Vec::new()
        };
        for irq in pending.drain(..) {
            match irq {
                PendingIrq::Timer { task, gen } => {
                    let tk = &self.tasks[task as usize];
                    if tk.gen == gen && tk.state == TaskState::Sleeping {
                        self.wake_up(task, c);
                    }
                }
                PendingIrq::CfsPeriod { pool } => t = self.cfs_period_timer(c, pool, t),
                PendingIrq::CfsSlack { pool } => t = self.cfs_slack_timer(c, pool, t),
                PendingIrq::TickHook => {
                    let curr = self.cpus[c as usize].curr;
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
            self.cpus[c as usize].irq_pending = pending;
        }
        if std::mem::take(&mut self.cpus[c as usize].ipi_pending) {
            t = self.flush_call_function_queue(c, t);
        }
        // Hooks the handler ran (a wakeup's enqueue_task_fair).
        t += self.take_hook_debt(c);
        if tick_run {
            self.start_tick_run(c, t, softirq);
            return;
        }
        // irq_exit(): the softirqs raised, after the hardirq work.
        if softirq {
            t = self.rcu_softirq(c, t);
        }
        self.cpus[c as usize].activity = Activity::Irq { end: t };
        self.arm_cpu(c, t);
    }

    /// Runs the CSDs queued on `c` starting at `t`; returns the end time.
    pub(crate) fn flush_call_function_queue(&mut self, c: u32, mut t: u64) -> u64 {
        let mut queue = std::mem::take(&mut self.cpus[c as usize].csd_queue);
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
                    t = (t + self.cost.line_transfer(from_cpu, c) + cost).min(END_OF_TIME);
                    if handler != crate::cpu::NO_HANDLER {
                        t = self.run_handler(c, handler, t);
                    }
                    // The handler runs between smp_mb()s (the IPI itself
                    // orders, and membarrier's ipi_mb() is one).
                    self.cpus[c as usize].last_barrier = t;
                    if !wait {
                        continue;
                    }
                    // csd_unlock(): the caller sees the flag one transfer later.
                    let seen = t + self.cost.line_transfer(c, from_cpu);
                    self.at(
                        seen,
                        Event::Sched(SchedEvent::SpinEnd { task: caller, gen }),
                    );
                }
                Csd::CfsbUnthrottle => unthrottle = true,
                Csd::RcuExp => self.rcu_exp_handler(c),
                Csd::ShootLazy { mm } => {
                    t += self.cost.tlb_flush_full;
                    self.shoot_lazy_tlb(c, mm);
                }
            }
        }
        if unthrottle {
            t = self.cfsb_csd_unthrottle(c, t);
        }
        queue.clear();
        self.cpus[c as usize].csd_queue = queue;
        t
    }

    /// The handler is done: return to what was interrupted.
    pub(crate) fn exit_irq(&mut self, c: u32) {
        if self.hook_run_waiting(c) {
            // The handler's sched_tick hook goes on first (`hooks.rs`).
            self.drive_hook_run(c);
            return;
        }
        self.settle(c);
        let cpu = &mut self.cpus[c as usize];
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
        let task_irqs_off = back != NO_TASK && self.tasks[back as usize].irq.irqs_off;
        if !task_irqs_off {
            self.irq_off_end(c);
        }
        self.kick(c);
    }

    /// Queues a CSD from CPU `from` on `target` at `at`
    /// (`__smp_call_single_queue()`): `llist_add()` on the target's
    /// `call_single_queue`, a line the target last wrote when it emptied
    /// it; then, if the queue was empty, `send_call_function_single_ipi()`.
    pub(crate) fn queue_csd(&mut self, target: u32, csd: Csd, at: u64, from: u32) {
        if !self.cpus[target as usize].online {
            self.csd_on_offline_cpu(target, at, from);
        }
        let q = &mut self.cpus[target as usize].csd_queue;
        let first = q.is_empty();
        q.push_back(csd);
        if first {
            let queued = at + self.cost.line_transfer(target, from);
            let wake = self.wake_idle_latency(target, from);
            self.cpus[target as usize].polled_wake |= self.polls_in_idle(target);
            self.at(queued + wake, Event::Smp(SmpEvent::Ipi { cpu: target }));
        }
    }

    /// `__flush_smp_call_function_queue()` on the offline CPU warns. Out
    /// of line (it builds a string) so the common path saves fewer
    /// registers.
    #[cold]
    #[inline(never)]
    fn csd_on_offline_cpu(&mut self, target: u32, at: u64, from: u32) {
        self.metrics.ipi_offline_cpu(
            from.min(self.nr_cpus() - 1),
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
    pub(crate) fn wake_idle_latency(&self, c: u32, from: u32) -> u64 {
        if self.cpus[c as usize].activity != Activity::Idle {
            return self.cost.ipi_latency;
        }
        if self.polls_in_idle(c) {
            return self.cost.line_transfer(from, c) + self.cost.idle_exit;
        }
        self.cost.ipi_latency + self.cost.idle_exit
    }

    /// CPU `c` is idle with `TIF_POLLING_NRFLAG` set.
    fn polls_in_idle(&self, c: u32) -> bool {
        self.cost.idle_polling && self.cpus[c as usize].activity == Activity::Idle
    }

    /// The per-target cost of a call's function, sampled for one target.
    fn func_cost(&mut self, t: TaskId, func: &CallFunc) -> u64 {
        let base = func.cost.sample(&mut self.tasks[t as usize].rng);
        base.saturating_mul(self.tasks[t as usize].smp.call_units)
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
        self.tasks[t as usize].smp.call_units = units;
    }

    /// A handler program on CPU `c` in hardirq context from time `t`;
    /// returns when it ends. Its spinlocks are marked for lockdep's
    /// IRQ-safety check; they are neither contended nor priced here: the
    /// handler runs inside the CSD queue's timeline, computed at once, and
    /// only a `sched_tick` hook's run (`hooks.rs`) can wait for a lock in
    /// hardirq context so far.
    fn run_handler(&mut self, c: u32, h: u32, mut t: Nanos) -> Nanos {
        let spec = self.spec;
        for op in &spec.handlers[h as usize].ops {
            match op {
                Op::Work(d) => t += d.sample(self.handler_stream(c)),
                Op::Count(counter) => self.metrics.count(t, *counter),
                Op::Locking(LockingOp::Lock { lock, .. }) => {
                    let settled = self
                        .locking
                        .lockdep
                        .as_ref()
                        .is_none_or(|ld| ld.usage_settled(lock.object, true));
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
    pub(crate) fn smp_call_function_single(
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
            let task = &mut self.tasks[t as usize];
            task.smp.call_targets.clear();
            task.smp
                .call_targets
                .push(v.clamp(-1, u32::MAX as i64 - 1) as u32);
            v
        } else {
            self.tasks[t as usize].smp.call_targets[0] as i64
        };
        if step.is_none() {
            self.preempt_disable(t);
            self.set_units(t, func);
            if target == c as i64 {
                // Runs func locally with IRQs off; no IPI.
                let cost = self.func_cost(t, func);
                self.tasks[t as usize].batch.push(Mode::Sys, cost);
                self.tasks[t as usize].resume = Resume::SmpCall(SmpCallStep::Done);
                return self.end_batch(c, t);
            }
            if target < 0 || target >= self.nr_cpus() as i64 {
                self.bad_cpu(c, "smp_call_function_single", target);
                return self.smp_call_done(c, t);
            }
            if !self.cpus[target as usize].online {
                // generic_exec_single(): -ENXIO, nothing sent; the scenario
                // does not look at the error, so it is reported.
                self.call_to_offline_cpu(c, t, target);
                return self.smp_call_done(c, t);
            }
            let send = self.cost.ipi_send;
            let task = &mut self.tasks[t as usize];
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
        self.metrics.ipi_offline_cpu(
            c,
            self.now,
            format!(
                "smp_call_function_single({target}) by {name}: CPU {target} is offline; generic_exec_single() returns -ENXIO and nothing is sent"
            ),
        );
    }

    /// `smp_call_function_many()` at `step`: a CSD for every CPU of the
    /// mask but this one, the IPIs, then a wait for each CSD in turn (which
    /// ends when the slowest target has run the function).
    pub(crate) fn smp_call_function_many(
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
                matches!(cpus, CpuSet::TlbFlush { .. }) && self.cost.tlb_broadcast.is_some();
            if flush && self.flush_by_broadcast(t) {
                // flush_tlb_mm_range() of an mm with a global ASID: the
                // caller invalidates every CPU's TLB and waits; no IPI.
                let pages = self.tasks[t as usize].smp.call_units;
                let cost = self.broadcast_tlb_flush(t, pages);
                let task = &mut self.tasks[t as usize];
                task.batch.push(Mode::Sys, cost);
                task.resume = Resume::SmpCall(SmpCallStep::Done);
                return self.end_batch(c, t);
            }
            let mut targets = std::mem::take(&mut self.tasks[t as usize].smp.call_targets);
            targets.clear();
            self.eval_cpuset(t, cpus, &mut targets);
            let n = targets.len() as u64;
            self.tasks[t as usize].smp.call_targets = targets;
            if flush {
                self.mm.count_tlb_flush_ipis(n);
                if self.tlb_broadcast_on() {
                    self.consider_global_asid(t);
                }
            }
            if n == 0 {
                return self.smp_call_done(c, t);
            }
            let send = self.cost.ipi_send * n;
            let task = &mut self.tasks[t as usize];
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
        let gen = self.tasks[t as usize].gen.wrapping_add(1);
        let targets = std::mem::take(&mut self.tasks[t as usize].smp.call_targets);
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
            self.queue_csd(target, csd, self.now, c);
        }
        let n = targets.len() as u32;
        self.tasks[t as usize].smp.call_targets = targets;
        if wait {
            return self.csd_lock_wait(c, t, n);
        }
        self.smp_call_done(c, t)
    }

    /// The CPUs of a set, this CPU and offline ones left out, in CPU order.
    fn eval_cpuset(&mut self, t: TaskId, set: &CpuSet, out: &mut Vec<u32>) {
        let me = self.tasks[t as usize].cpu;
        match set {
            CpuSet::MmCpumask => {
                let mask = &self.mm.mms[self.tasks[t as usize].mm as usize].mask;
                out.extend(
                    (0..self.nr_cpus())
                        .filter(|&c| c != me && mask.contains(c) && self.cpus[c as usize].online),
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
                let mask = self.task_mask(t, *slot);
                out.extend(
                    crate::cpumask::cpus(mask)
                        .filter(|&c| c != me && c < self.nr_cpus() && self.cpus[c as usize].online),
                );
            }
            CpuSet::MmRunning => {
                let mm = self.tasks[t as usize].mm;
                out.extend((0..self.nr_cpus()).filter(|&c| {
                    let cpu = &self.cpus[c as usize];
                    c != me
                        && cpu.online
                        && cpu.curr != NO_TASK
                        && self.tasks[cpu.curr as usize].mm == mm
                }));
            }
            CpuSet::AllButSelf => out.extend(
                (0..self.nr_cpus()).filter(|&cpu| cpu != me && self.cpus[cpu as usize].online),
            ),
            CpuSet::List(exprs) => {
                for e in exprs {
                    let cpu = self.eval(t, e);
                    if cpu < 0 || cpu >= self.nr_cpus() as i64 {
                        self.bad_cpu(me, "smp_call_function_many", cpu);
                    }
                    if cpu >= 0
                        && cpu < self.nr_cpus() as i64
                        && cpu as u32 != me
                        && self.cpus[cpu as usize].online
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
        let preemptible = self.spec.knobs.csd_wait_preemptible;
        let task = &mut self.tasks[t as usize];
        task.gen = task.gen.wrapping_add(1);
        task.wait.spin = Spin::CsdWait;
        task.wait.spin_done = false;
        task.smp.csd_pending = pending;
        task.smp.csd_wait_preemptible = preemptible;
        task.wait.wait_start = self.now;
        if preemptible && self.preempt_enable(t) {
            self.schedule(c);
        }
        Flow::Stop
    }

    /// The wait is over (or there was none): `put_cpu()`.
    pub(crate) fn smp_call_done(&mut self, c: u32, t: TaskId) -> Flow {
        self.advance(t);
        let task = &mut self.tasks[t as usize];
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
        let end = self
            .now
            .saturating_add(self.tasks[t as usize].batch.total());
        self.arm_cpu(c, end);
        Flow::Stop
    }
}

impl crate::Kernel<'_> {
    /// Routes a cross-CPU call event.
    pub(crate) fn on_smp_event(&mut self, e: SmpEvent) -> smpsim_engine::Handled {
        match e {
            SmpEvent::Ipi { cpu } => {
                self.cpus[cpu as usize].ipi_pending = true;
                self.interrupt(cpu);
            }
        }
        smpsim_engine::Handled::Done
    }
}
