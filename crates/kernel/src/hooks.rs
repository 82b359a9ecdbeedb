//! `[hooks]`: scenario code the kernel runs on its own at an event, on the
//! CPU where the event happens and in the context the kernel has there.
//!
//! A hook is a straight run of `work`, `count`, `atomic_*` ops (no
//! sleeping, no loops), priced like a task's: each atomic is a coherence
//! transaction on its line at the time the hook reaches it, so hooks on
//! several CPUs contend for a shared line. It costs no event: its end time
//! is folded into the interval the kernel was already spending there.
//!
//! - `sched_switch`: `trace_sched_switch()` in `__schedule()`, after
//!   `pick_next_task()` and before `context_switch()`, with the rq lock
//!   held and IRQs off: the switch ends after the hook (charged as sys).
//! - `dequeue_task_fair`: the blocking task leaves the runqueue in
//!   `__schedule()` (`deactivate_task()`), rq lock held, IRQs off; part of
//!   the switch too.
//! - `enqueue_task_fair`: a CFS task woken (`try_to_wake_up()` ->
//!   `ttwu_do_activate()`) is enqueued on the waking CPU with the rq lock
//!   held and IRQs off: a task that wakes another pays the hook as sys
//!   before its next op; a wakeup in an interrupt handler (an hrtimer)
//!   lengthens the handler; elsewhere (a spinning CPU, a softirq callback)
//!   the time is added to the CPU's next interrupt or switch.
//! - `sched_tick`: `sched_tick()` in the timer interrupt on every CPU that
//!   runs a task (idle CPUs stop their tick, NO_HZ); the hook runs as a
//!   hardirq (charged as irq, with the interrupt's entry and exit), taken
//!   when the CPU has IRQs on.
//! - `set_task_cpu`: a task moves to another CPU (`set_task_cpu()` ->
//!   `migrate_task_rq_fair()`), on the CPU doing the move: the waking CPU
//!   for a wake-up placed elsewhere (`try_to_wake_up()`), the balancing CPU
//!   for a load-balancer pull, the outgoing CPU for a hotplug push; charged
//!   like `enqueue_task_fair`.
//! - `idle_enter`: a CPU switches to its idle task (`do_idle()` begins:
//!   `tick_nohz_idle_enter()`, `nohz_balance_enter_idle()`); it is busy
//!   until the hook ends, so a wakeup or interrupt arriving meanwhile waits
//!   for the rest of it.
//! - `idle_exit`: the idle task leaves for a task (`tick_nohz_idle_exit()`
//!   before `schedule_idle()`): part of that switch, like `sched_switch`.
//!
//! Not (yet) hook events: `update_cfs_group()` (the model keeps no PELT
//! load averages to update) and spinlocks inside a hook (a hook runs
//! without events, so it cannot wait for a lock holder).

use smpsim_engine::Nanos;

use crate::program::{BinOp, Expr, Op, Program};

pub use crate::spec::{hook_event, HookEvent, HOOK_EVENTS, HOOK_NAMES};

/// Whether `op` may run in a hook (atomic context, no task of its own).
pub fn allowed_in_hook(op: &Op) -> bool {
    match op {
        Op::Work(_) | Op::Count(_) | Op::Exit => true,
        Op::AtomicRmw(r) | Op::AtomicRead(r) => r.index.as_ref().is_none_or(hook_expr),
        _ => false,
    }
}

/// Whether an index expression can be evaluated without a task.
fn hook_expr(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::ThisCpu | Expr::NrCpus | Expr::RandomCpu => true,
        Expr::Bin(_, a, b) => hook_expr(a) && hook_expr(b),
        _ => false,
    }
}

impl<'s> crate::Kernel<'s> {
    /// The hook on `ev`, if the scenario has one.
    #[inline]
    pub(crate) fn hook(&self, ev: HookEvent) -> Option<&'s Program> {
        let spec = self.spec;
        spec.hooks[ev as usize].as_ref()
    }

    /// Runs `hook` on CPU `c` from time `t`; returns when it ends.
    pub(crate) fn run_hook(&mut self, c: u32, hook: &Program, mut t: Nanos) -> Nanos {
        for op in &hook.ops {
            match op {
                Op::Work(d) => {
                    let mut ns = d.sample(&mut self.rng);
                    if self.cost.scales_work {
                        ns = self.scale_work(c, ns, t);
                    }
                    t = t.saturating_add(ns);
                }
                Op::Count(counter) => self.metrics.count(t, *counter),
                Op::AtomicRmw(r) | Op::AtomicRead(r) => {
                    let mut l = self.objects.first_instance(r.object);
                    if let Some(e) = &r.index {
                        let i = self.hook_eval(c, e);
                        l += i.clamp(0, self.nr_cpus as i64 - 1) as u32;
                    }
                    let line = &mut self.objects.atomics[l as usize];
                    t = if matches!(op, Op::AtomicRmw(_)) {
                        line.rmw(&self.cost, c, t)
                    } else {
                        line.read(&self.cost, c, t)
                    };
                }
                _ => {}
            }
        }
        t
    }

    /// Charges `d` of hook time to what CPU `c` is doing now.
    pub(crate) fn charge_hook(&mut self, c: u32, d: Nanos) {
        let cpu = &self.cpus[c as usize];
        let curr = cpu.curr;
        let task_ctx = cpu.activity == crate::cpu::Activity::Task
            && curr != crate::task::NO_TASK
            && self.tasks[curr as usize].wait.spin == crate::task::Spin::None;
        if task_ctx
            && self.tasks[curr as usize]
                .batch
                .push(crate::task::Mode::Sys, d)
        {
            return;
        }
        {
            self.cpus[c as usize].hook_debt += d;
        }
    }

    /// The hook time CPU `c` owes its next interrupt or switch: its debt,
    /// and what is left of an `idle_enter` hook. Cleared.
    pub(crate) fn take_hook_debt(&mut self, c: u32) -> Nanos {
        let cpu = &mut self.cpus[c as usize];
        let idle_left = std::mem::take(&mut cpu.idle_hook_until).saturating_sub(self.now);
        std::mem::take(&mut cpu.hook_debt) + idle_left
    }

    fn hook_eval(&mut self, c: u32, e: &Expr) -> i64 {
        match e {
            Expr::Const(v) => *v,
            Expr::ThisCpu => c as i64,
            Expr::NrCpus => self.nr_cpus as i64,
            Expr::RandomCpu => self.rng.below(self.nr_cpus as u64) as i64,
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.hook_eval(c, a), self.hook_eval(c, b));
                match op {
                    BinOp::Add => a.wrapping_add(b),
                    BinOp::Sub => a.wrapping_sub(b),
                    BinOp::Mul => a.wrapping_mul(b),
                    BinOp::Div => a.checked_div(b).unwrap_or(0),
                    BinOp::Rem => a.checked_rem(b).unwrap_or(0),
                }
            }
            _ => 0,
        }
    }
}
