//! `[hooks]`: scenario code the kernel runs on its own at an event, on the
//! CPU where the event happens and in the context the kernel has there.
//!
//! A hook is a run of `work`, `count`, `atomic_*` ops, `if`s (jumps
//! forward only) and, at the events that allow it, spinlocks and (the
//! tick's) `up()` wakeups (no sleeping, no loops), priced like a task's.
//! It sees what its event is about ([`HookSubject`]: `task_cpu()`,
//! `prev_mm()`, `next_mm()`, `prev_active_mm()`), so it can take the
//! wakee's runqueue lock or work only when the mm changes. Each atomic
//! is a coherence transaction on its line at the time the hook reaches
//! it, so hooks on several CPUs contend for a shared line.
//! A hook without spinlocks costs no event: its end time is folded into
//! the interval the kernel was already spending there. One with spinlocks
//! is a resumable run ([`HookRun`], below): it takes and releases each
//! lock at its true time and, when the lock is held elsewhere, the CPU
//! spins there, in the kernel's context, until the lock's implementation
//! grants it; what the kernel was doing (the switch, the tick handler)
//! goes on after the hook.
//!
//! - `sched_switch`: `trace_sched_switch()` in `__schedule()`, after
//!   `pick_next_task()` and before `context_switch()`, with the rq lock
//!   held and IRQs off: the switch ends after the hook (charged as sys).
//!   Spinlocks allowed.
//! - `dequeue_task_fair`: the blocking task leaves the runqueue in
//!   `__schedule()` (`deactivate_task()`), rq lock held, IRQs off; part of
//!   the switch too. Spinlocks allowed.
//! - `try_to_wake_up`: every wakeup, on the waking CPU, in
//!   `try_to_wake_up()` (kernel/sched/core.c) once `select_task_rq()` has
//!   placed the task and before `ttwu_queue()`, `p->pi_lock` held, IRQs
//!   off; charged like `enqueue_task_fair`. Spinlocks allowed.
//! - `enqueue_task_fair`: a CFS task woken (`try_to_wake_up()` ->
//!   `ttwu_do_activate()`) is enqueued on the waking CPU with the rq lock
//!   held and IRQs off: a task that wakes another pays the hook as sys
//!   before its next op; a wakeup in an interrupt handler (an hrtimer)
//!   lengthens the handler; elsewhere (a spinning CPU, a softirq callback)
//!   the time is added to the CPU's next interrupt or switch. Spinlocks
//!   allowed: see [`Hooks::wake_hook`].
//! - `sched_tick`: `sched_tick()` in the timer interrupt on every CPU that
//!   runs a task (idle CPUs stop their tick, NO_HZ); the hook runs as a
//!   hardirq (charged as irq, with the interrupt's entry and exit), taken
//!   when the CPU has IRQs on. Spinlocks allowed (marked for lockdep as
//!   taken in hardirq context); such a hook runs after the interrupt's
//!   other hardirq work, before its softirqs.
//! - `set_task_cpu`: a task moves to another CPU (`set_task_cpu()` ->
//!   `migrate_task_rq_fair()`), on the CPU doing the move: the waking CPU
//!   for a wake-up placed elsewhere (`try_to_wake_up()`), the balancing CPU
//!   for a load-balancer pull, the outgoing CPU for a hotplug push; charged
//!   like `enqueue_task_fair`. Spinlocks allowed.
//! - `idle_enter`: a CPU switches to its idle task (`do_idle()` begins:
//!   `tick_nohz_idle_enter()`, `nohz_balance_enter_idle()`); it is busy
//!   until the hook ends, so a wakeup or interrupt arriving meanwhile waits
//!   for the rest of it.
//! - `idle_exit`: the idle task leaves for a task (`tick_nohz_idle_exit()`
//!   before `schedule_idle()`): part of that switch, like `sched_switch`.
//!   Spinlocks allowed.
//! - `sched_ttwu_pending`: with `[kernel] ttwu_queue` set, in the IPI
//!   handler of a CPU whose `call_single_queue` held wakees queued by
//!   `ttwu_queue_wakelist()` (`sched/ttwu_queue.rs`), once per handler,
//!   before their `ttwu_do_activate()`s: hardirq, IRQs off (charged as
//!   irq). Spinlocks allowed (the CPU's own `rq->lock`, marked for lockdep
//!   as taken in hardirq context); such a hook runs after the handler's
//!   other hardirq work, and the activations after it.
//! - `update_tg_load_avg`, `update_cfs_group`: per task group (cgroup),
//!   see `sched/tg_load_avg.rs`.
//!
//! A wakeup's hooks with spinlocks hold up what woke: a waking task stops
//! after the op that woke and its CPU is held ([`HookCtx::Held`]) until
//! they are done; a handler or switch runs them at its end. Spinlocks are
//! not (yet) allowed in `idle_enter` and the per-group events. Scenario
//! loading says so.

use smpsim_engine::Nanos;

use crate::env::SchedVerbs;
use crate::program::{BinOp, CmpOp, Cond, Expr, LockMode, LockingOp, ObjRef, Op, Program};
use crate::task::TaskId;

pub use crate::spec::{hook_event, HookEvent, HOOK_EVENTS, HOOK_NAMES};

/// Whether `op`, at `pc` of a hook's program, may run in a hook (atomic
/// context, no task of its own): an `if` (a jump forward) but no loop.
/// Where a lock op may run is [`locks_allowed`]'s to say.
pub fn allowed_in_hook(pc: usize, op: &Op) -> bool {
    match op {
        Op::Work(_) | Op::Count(_) | Op::Exit => true,
        Op::Jump(to) => *to as usize > pc,
        Op::JumpUnless(cond, to) => *to as usize > pc && hook_cond(cond),
        Op::Locking(LockingOp::AtomicRmw(r))
        | Op::Locking(LockingOp::AtomicRead(r))
        | Op::Locking(LockingOp::Up(r)) => r.index.as_ref().is_none_or(hook_expr),
        Op::Locking(LockingOp::Lock { lock, .. }) | Op::Locking(LockingOp::Unlock { lock, .. }) => {
            lock.index.as_ref().is_none_or(hook_expr)
        }
        _ => false,
    }
}

/// Whether a hook on event `ev` (a [`HookEvent`] index) may take
/// spinlocks: the points where the model can hold up the kernel's own work
/// (a switch, the tick's handler) until a lock is granted.
pub fn locks_allowed(ev: usize) -> bool {
    [
        HookEvent::SchedSwitch,
        HookEvent::SchedTick,
        HookEvent::DequeueTaskFair,
        HookEvent::IdleExit,
        HookEvent::TryToWakeUp,
        HookEvent::EnqueueTaskFair,
        HookEvent::SetTaskCpu,
        HookEvent::SchedTtwuPending,
    ]
    .iter()
    .any(|e| *e as usize == ev)
}

/// Whether a hook on event `ev` may wake a task (`up()`): the tick's, a
/// hardirq as an hrtimer's `hrtimer_wakeup()` is. The others run with a
/// runqueue's lock or `p->pi_lock` held, where the kernel cannot call
/// `try_to_wake_up()` (it would take them again), or in the idle entry.
pub fn wakes_allowed(ev: usize) -> bool {
    ev == HookEvent::SchedTick as usize
}

/// Whether `program` takes or releases a lock.
pub fn takes_locks(program: &Program) -> bool {
    program.ops.iter().any(|op| {
        matches!(
            op,
            Op::Locking(LockingOp::Lock { .. }) | Op::Locking(LockingOp::Unlock { .. })
        )
    })
}

/// Whether an index expression can be evaluated without a task.
fn hook_expr(e: &Expr) -> bool {
    match e {
        Expr::Const(_)
        | Expr::ThisCpu
        | Expr::NrCpus
        | Expr::RandomCpu
        | Expr::TaskCpu
        | Expr::PrevMm
        | Expr::NextMm
        | Expr::PrevActiveMm => true,
        Expr::Bin(_, a, b) => hook_expr(a) && hook_expr(b),
        Expr::Hash(x) => hook_expr(x),
        // A task's own state, or what a hook does not model reading.
        Expr::Var(_)
        | Expr::TaskIndex
        | Expr::GroupSize
        | Expr::Uniform(..)
        | Expr::CpuCurrMm(_)
        | Expr::CurrentMm
        | Expr::ReadOnce(_)
        | Expr::RcuGetState => false,
    }
}

/// Whether an `if`'s condition can be evaluated without a task.
fn hook_cond(c: &Cond) -> bool {
    match c {
        Cond::Cmp(_, a, b) => hook_expr(a) && hook_expr(b),
        Cond::CpuOnline(e) => hook_expr(e),
        Cond::Not(c) => hook_cond(c),
        Cond::And(a, b) | Cond::Or(a, b) => hook_cond(a) && hook_cond(b),
        Cond::RcuPollState(_) | Cond::SpinIsLocked(_) => false,
    }
}

/// What a hook's event is about, fixed when the event happens: what
/// `task_cpu()`, `prev_mm()` and `next_mm()` give in its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HookSubject {
    /// `task_cpu(p)` of the wakee or the task moved.
    task_cpu: Option<u32>,
    /// The switch's `prev->mm`, `next->mm` (-1: none, a kernel thread or
    /// the idle task).
    prev_mm: i64,
    next_mm: i64,
    /// The switch's `prev->active_mm` (-1: `init_mm`).
    prev_active_mm: i64,
}

impl HookSubject {
    /// An event about no task but the CPU's own (the tick, idle).
    pub(crate) const NONE: HookSubject = HookSubject {
        task_cpu: None,
        prev_mm: -1,
        next_mm: -1,
        prev_active_mm: -1,
    };

    /// A switch from `prev` to `next`, whose `mm`s these are (None or
    /// `NO_MM` for none), on a CPU using `active_mm`.
    pub(crate) fn switch(prev_mm: Option<u32>, next_mm: Option<u32>, active_mm: u32) -> Self {
        let mm = |m: Option<u32>| match m {
            Some(m) if m != crate::ids::NO_MM => m as i64,
            _ => -1,
        };
        HookSubject {
            prev_mm: mm(prev_mm),
            next_mm: mm(next_mm),
            prev_active_mm: mm(Some(active_mm)),
            ..Self::NONE
        }
    }
}

/// Where a hook is, for a fault it hits there: its program, the op it is
/// at and the time it has reached.
#[derive(Clone, Copy)]
pub(crate) struct HookAt<'p> {
    pub(crate) hook: &'p Program,
    pub(crate) pc: usize,
    pub(crate) t: Nanos,
}

/// The hooks' run-time state.
pub(crate) struct HookState<'s> {
    /// By CPU: the hook run under way there, waiting for its time to take
    /// or release a lock, or spinning. Empty when no hook takes locks.
    runs: Vec<Option<Box<HookRun<'s>>>>,
    /// By [`HookEvent`]: its hook takes spinlocks.
    locking: [bool; HOOK_EVENTS],
    /// By group runqueue (cgroup and CPU): when `update_tg_load_avg()` may
    /// next update (`cfs_rq->last_update_tg_load_avg` plus the limit).
    pub(crate) tg_next_update: Vec<Nanos>,
}

impl<'s> HookState<'s> {
    pub(crate) fn new(spec: &'s crate::Spec, nr_cpus: u32, group_rqs: usize) -> Self {
        let mut locking = [false; HOOK_EVENTS];
        for (l, h) in locking.iter_mut().zip(&spec.hooks) {
            *l = h.as_ref().is_some_and(takes_locks);
        }
        let runs = if locking.iter().any(|l| *l) {
            (0..nr_cpus).map(|_| None).collect()
        } else {
            Vec::new()
        };
        let tg = spec.hooks[HookEvent::UpdateTgLoadAvg as usize].is_some();
        HookState {
            runs,
            locking,
            tg_next_update: if tg { vec![0; group_rqs] } else { Vec::new() },
        }
    }
}

/// A hook that may wait for a lock, with the kernel's work around it: run
/// step by step at the times its lock ops happen.
pub(crate) struct HookRun<'s> {
    /// What is left, in order.
    steps: std::collections::VecDeque<Step<'s>>,
    /// The time the CPU's timeline has reached (the current step begins).
    t: Nanos,
    /// The part of the switch's own cost already in `steps`.
    spanned: Nanos,
    /// The lock instance it spins on, since when.
    spin: Option<(u32, Nanos)>,
    /// The context it runs in, which goes on when it is done.
    ctx: HookCtx,
}

enum Step<'s> {
    /// The kernel's own work, of this length.
    Span(Nanos),
    /// A hook, from op `pc`, about `subject`.
    Hook {
        ev: HookEvent,
        program: &'s Program,
        pc: usize,
        subject: HookSubject,
    },
    /// `irq_exit()`'s softirqs.
    Softirq,
}

#[derive(Clone, Copy)]
enum HookCtx {
    /// `__schedule()`, switching to `next`.
    Switch { next: TaskId },
    /// A hardirq handler.
    Irq,
    /// A wakeup's hooks ([`Hooks::wake_hook`]) not yet under way:
    /// they go on in the context the CPU is in when they are driven (the
    /// handler or the switch it is busy in), or hold up its task or idle
    /// loop ([`Hooks::start_held_run`]).
    Pending,
    /// A wakeup's hooks holding up what the CPU ran (its current task, or
    /// idle): `try_to_wake_up()` holds `p->pi_lock` with IRQs off, so the
    /// CPU is busy in the kernel (sys, IRQs off) until they are done, and
    /// the task's next op waits.
    Held,
}

/// What the hooks need of the kernel beyond its core and the scheduler's
/// verbs: the scenario, their own run-time state, the CPU's random
/// stream and work scaling, and the locking verbs a hook's ops are
/// (`sim/hooks_env.rs` implements it for the kernel).
pub(crate) trait HooksEnv<'s>: SchedVerbs {
    /// The compiled scenario (its hooks, its objects' layout).
    fn spec(&self) -> &'s crate::Spec;
    /// The hooks' run-time state.
    fn hooks(&self) -> &HookState<'s>;
    /// The hooks' run-time state, to change.
    fn hooks_mut(&mut self) -> &mut HookState<'s>;
    /// CPU `c`'s random stream for hooks.
    fn hook_stream(&mut self, c: u32) -> &mut smpsim_engine::Rng;
    /// `ns` of work on CPU `c` from `t`, scaled by its capacity.
    fn scale_work(&mut self, c: u32, ns: Nanos, t: Nanos) -> Nanos;
    /// The first instance of `object` (an array's element is an object).
    fn first_instance(&self, object: u32) -> u32;
    /// An atomic RMW (or, not `rmw`, a read) of atomic instance `l` by
    /// CPU `c` at `t`: when it is done.
    fn hook_atomic(&mut self, c: u32, l: u32, rmw: bool, t: Nanos) -> Nanos;
    /// `up()` of semaphore instance `s` in CPU `c`'s handler at `t`: when
    /// its RMW is done, and the sleeper to wake.
    fn hook_semaphore_up(&mut self, c: u32, s: u32, t: Nanos) -> (Nanos, Option<TaskId>);
    /// A hook on CPU `c` takes spinlock instance `l`: when it has it, or
    /// None if it spins ([`Hooks::hook_lock_granted`] follows).
    fn hook_spin_lock(&mut self, c: u32, l: u32, mode: LockMode) -> Option<Nanos>;
    /// A hook on CPU `c` releases spinlock instance `l`: when done.
    fn hook_spin_unlock(&mut self, c: u32, l: u32, mode: LockMode) -> Nanos;
    /// The object spinlock instance `l` belongs to.
    fn spinlock_object(&self, l: u32) -> u32;
    /// Whether lockdep is off, or already knows lock class `class` is
    /// taken in hardirq context.
    fn lockdep_hardirq_settled(&self, class: u32) -> bool;
    /// lockdep's `mark_lock()` of `class` in a context, at `site`.
    fn lockdep_usage(&mut self, c: u32, class: u32, in_hardirq: bool, site: String);
    /// `irq_exit()`'s softirqs on CPU `c` from `t`: when they end.
    fn rcu_softirq(&mut self, c: u32, t: Nanos) -> Nanos;
    /// The hook `hook` on CPU `c` indexed `object` with `index`, outside
    /// its range, at `t`: reported as a task's bad index is (the
    /// `bad_percpu_index` finding), and the run stops; neither if the
    /// hook got there after the run's end.
    fn hook_bad_index(&mut self, c: u32, t: Nanos, hook: &Program, object: u32, index: i64);
    /// The hook on CPU `c` computed `a / b` (or `%`) by zero, or
    /// `i64::MIN / -1`, `at` its op: reported as a task's is (the
    /// `divide_error` finding), and the run stops; neither if the hook got
    /// there after the run's end or the run has stopped already.
    fn hook_divide_error(&mut self, c: u32, at: HookAt<'_>, a: i64, b: i64);
    /// The run was stopped (a fault): a hook goes no further.
    fn run_halted(&self) -> bool;
}

/// The hooks' verbs over any [`HooksEnv`]: running a hook straight, and
/// the resumable runs of hooks that take locks.
pub(crate) trait Hooks<'s>: HooksEnv<'s> {
    /// The hook on `ev`, if the scenario has one.
    #[inline]
    fn hook(&self, ev: HookEvent) -> Option<&'s Program> {
        self.spec().hooks[ev as usize].as_ref()
    }

    /// Runs `hook` on CPU `c` from time `t`, without waiting for anything;
    /// returns when it ends.
    fn run_hook(&mut self, c: u32, hook: &Program, t: Nanos) -> Nanos {
        self.run_hook_about(c, hook, t, HookSubject::NONE)
    }

    /// [`Self::run_hook`] of a hook whose event is about `subject`.
    fn run_hook_about(
        &mut self,
        c: u32,
        hook: &Program,
        mut t: Nanos,
        subject: HookSubject,
    ) -> Nanos {
        let mut pc = 0;
        while let Some(op) = hook.ops.get(pc) {
            let at = HookAt { hook, pc, t };
            pc = match self.hook_jump(c, op, at, subject) {
                Some(to) => to,
                None => {
                    t = self.hook_op(c, op, at, subject);
                    pc + 1
                }
            };
            if self.run_halted() {
                // A fault in the hook: nothing after it runs.
                break;
            }
        }
        t
    }

    /// Where a hook's `if` `at` its op goes on (None: `op` is no jump).
    /// Jumps in a hook only go forward (scenario loading).
    fn hook_jump(
        &mut self,
        c: u32,
        op: &Op,
        at: HookAt<'_>,
        subject: HookSubject,
    ) -> Option<usize> {
        match op {
            Op::Jump(to) => Some(*to as usize),
            Op::JumpUnless(cond, _) if self.hook_cond_holds(c, cond, at, subject) => {
                Some(at.pc + 1)
            }
            Op::JumpUnless(_, to) => Some(*to as usize),
            _ => None,
        }
    }

    /// An `if`'s condition in a hook on CPU `c`.
    fn hook_cond_holds(
        &mut self,
        c: u32,
        cond: &Cond,
        at: HookAt<'_>,
        subject: HookSubject,
    ) -> bool {
        match cond {
            Cond::Cmp(op, a, b) => {
                let a = self.hook_eval(c, a, at, subject);
                let b = self.hook_eval(c, b, at, subject);
                match op {
                    CmpOp::Eq => a == b,
                    CmpOp::Ne => a != b,
                    CmpOp::Lt => a < b,
                    CmpOp::Le => a <= b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                }
            }
            Cond::CpuOnline(e) => {
                let cpu = self.hook_eval(c, e, at, subject);
                usize::try_from(cpu)
                    .ok()
                    .and_then(|i| self.cpus().get(i))
                    .is_some_and(|cpu| cpu.online)
            }
            Cond::Not(c2) => !self.hook_cond_holds(c, c2, at, subject),
            // Short-circuit, as C's (a `random_cpu()` on the right draws
            // only when it is evaluated).
            Cond::And(a, b) => {
                self.hook_cond_holds(c, a, at, subject) && self.hook_cond_holds(c, b, at, subject)
            }
            Cond::Or(a, b) => {
                self.hook_cond_holds(c, a, at, subject) || self.hook_cond_holds(c, b, at, subject)
            }
            Cond::RcuPollState(_) | Cond::SpinIsLocked(_) => false,
        }
    }

    /// One op of a hook that needs no other CPU's state, `at` it: when it
    /// is done.
    fn hook_op(&mut self, c: u32, op: &Op, at: HookAt<'_>, subject: HookSubject) -> Nanos {
        let mut t = at.t;
        match op {
            Op::Work(d) => {
                let mut ns = d.sample(self.hook_stream(c));
                if self.cost().scales_work {
                    ns = self.scale_work(c, ns, t);
                }
                t = t.saturating_add(ns);
            }
            // A hook's timeline is computed ahead of its events: a count it
            // reaches after the run's end did not happen in the run.
            Op::Count(counter) if self.metrics().in_run(t) => self.metrics_mut().count(t, *counter),
            Op::Count(_) => {}
            Op::Locking(LockingOp::Up(r)) => {
                let Some(s) = self.hook_instance(c, r, at, subject) else {
                    return t;
                };
                let (done, woken) = self.hook_semaphore_up(c, s, t);
                t = done;
                if let Some(w) = woken {
                    // try_to_wake_up() in the hardirq, as hrtimer_wakeup()'s
                    // (smp.rs): it costs the handler what a task's costs it.
                    self.wake_up(w, c);
                    t += self.cost().wakeup;
                }
            }
            Op::Locking(LockingOp::AtomicRmw(r)) | Op::Locking(LockingOp::AtomicRead(r)) => {
                let Some(l) = self.hook_instance(c, r, at, subject) else {
                    return t;
                };
                let rmw = matches!(op, Op::Locking(LockingOp::AtomicRmw(_)));
                t = self.hook_atomic(c, l, rmw, t);
            }
            _ => debug_assert!(
                !matches!(
                    op,
                    Op::Locking(LockingOp::Lock { .. }) | Op::Locking(LockingOp::Unlock { .. })
                ),
                "a lock op in a hook run straight"
            ),
        }
        t
    }

    /// The instance of `r` that a hook on CPU `c` names `at` its op: of a
    /// per-CPU object, or an element of an object array (an object of its
    /// own). An index out of range, or one that divides by zero, faults as
    /// in a task's code (the `bad_percpu_index` or `divide_error` finding;
    /// the run stops): None.
    fn hook_instance(
        &mut self,
        c: u32,
        r: &ObjRef,
        at: HookAt<'_>,
        subject: HookSubject,
    ) -> Option<u32> {
        let Some(e) = &r.index else {
            return Some(self.first_instance(r.object));
        };
        let i = self.hook_eval(c, e, at, subject);
        if self.run_halted() {
            return None;
        }
        let array = self.spec().layout.array_len(r.object);
        let len = array.unwrap_or(self.nr_cpus());
        if i < 0 || i >= len as i64 {
            self.hook_bad_index(c, at.t, at.hook, r.object, i);
            return None;
        }
        Some(match array {
            Some(_) => self.first_instance(r.object + i as u32),
            None => self.first_instance(r.object) + i as u32,
        })
    }

    /// Charges `d` of hook time to what CPU `c` is doing now.
    fn charge_hook(&mut self, c: u32, d: Nanos) {
        let cpu = self.cpu(c);
        let curr = cpu.curr;
        let task_ctx = cpu.activity == crate::cpu::Activity::Task
            && curr != crate::task::NO_TASK
            && self.task(curr).wait.spin == crate::task::Spin::None;
        if task_ctx && self.task_mut(curr).batch.push(crate::task::Mode::Sys, d) {
            return;
        }
        self.cpu_mut(c).hook_debt += d;
    }

    /// The hook time CPU `c` owes its next interrupt or switch: its debt,
    /// and what is left of an `idle_enter` hook. Cleared.
    fn take_hook_debt(&mut self, c: u32) -> Nanos {
        let now = self.now();
        let cpu = self.cpu_mut(c);
        let idle_left = std::mem::take(&mut cpu.idle_hook_until).saturating_sub(now);
        std::mem::take(&mut cpu.hook_debt) + idle_left
    }

    /// The value of `e` in a hook on CPU `c`, `at` its op. A division by
    /// zero faults as in a task's code (the `divide_error` finding; the
    /// run stops): 0, and the caller goes no further.
    fn hook_eval(&mut self, c: u32, e: &Expr, at: HookAt<'_>, subject: HookSubject) -> i64 {
        match e {
            Expr::Const(v) => *v,
            Expr::ThisCpu => c as i64,
            // Scenario loading allows it only where the event has a task.
            Expr::TaskCpu => subject.task_cpu.unwrap_or(c) as i64,
            Expr::PrevMm => subject.prev_mm,
            Expr::NextMm => subject.next_mm,
            Expr::PrevActiveMm => subject.prev_active_mm,
            Expr::Hash(x) => crate::program::hash_64_32(self.hook_eval(c, x, at, subject)),
            Expr::NrCpus => self.nr_cpus() as i64,
            Expr::RandomCpu => {
                let n = self.cpus().len() as u64;
                self.hook_stream(c).below(n) as i64
            }
            Expr::Bin(op, a, b) => {
                let a = self.hook_eval(c, a, at, subject);
                let b = self.hook_eval(c, b, at, subject);
                match op {
                    BinOp::Add => a.wrapping_add(b),
                    BinOp::Sub => a.wrapping_sub(b),
                    BinOp::Mul => a.wrapping_mul(b),
                    BinOp::Div | BinOp::Rem => {
                        let q = if *op == BinOp::Div {
                            a.checked_div(b)
                        } else {
                            a.checked_rem(b)
                        };
                        q.unwrap_or_else(|| {
                            self.hook_divide_error(c, at, a, b);
                            0
                        })
                    }
                }
            }
            // What needs a task of its own or a lock word: scenario
            // loading refuses each in a hook ([`allowed_in_hook`]).
            Expr::Var(_)
            | Expr::TaskIndex
            | Expr::GroupSize
            | Expr::Uniform(..)
            | Expr::CpuCurrMm(_)
            | Expr::CurrentMm
            | Expr::ReadOnce(_)
            | Expr::RcuGetState => unreachable!("{e:?} in a hook: refused at scenario loading"),
        }
    }

    /// A hook inside `__schedule()` at `cost` into the switch, on CPU `c`:
    /// run at once, as always; or, once a hook of this switch takes locks,
    /// queued in `run` behind the switch's work so far, to run at its true
    /// time. Returns the switch's cost so far (with the hook's time when it
    /// ran at once).
    fn switch_hook(
        &mut self,
        c: u32,
        ev: HookEvent,
        subject: HookSubject,
        cost: Nanos,
        run: &mut Option<Box<HookRun<'s>>>,
    ) -> Nanos {
        let Some(program) = self.hook(ev) else {
            return cost;
        };
        if run.is_none() && !self.hooks().locking[ev as usize] {
            return self.run_hook_about(c, program, self.now() + cost, subject) - self.now();
        }
        let r = run.get_or_insert_with(|| {
            Box::new(HookRun {
                steps: Default::default(),
                t: self.now() + cost,
                spanned: cost,
                spin: None,
                ctx: HookCtx::Irq,
            })
        });
        if cost > r.spanned {
            r.steps.push_back(Step::Span(cost - r.spanned));
            r.spanned = cost;
        }
        r.steps.push_back(Step::Hook {
            ev,
            program,
            pc: 0,
            subject,
        });
        cost
    }

    /// `__schedule()` on CPU `c` ends in a hook run: the switch to `next`,
    /// `cost` long without the hooks, ends when the run is done.
    fn start_switch_run(&mut self, c: u32, next: TaskId, cost: Nanos, mut run: Box<HookRun<'s>>) {
        if cost > run.spanned {
            run.steps.push_back(Step::Span(cost - run.spanned));
        }
        run.ctx = HookCtx::Switch { next };
        self.cpu_mut(c).activity = crate::cpu::Activity::Switch { end: run.t, next };
        self.irq_off_begin(c);
        self.install_run(c, run);
        self.drive_hook_run(c);
    }

    /// A wakeup's hook at `ev` (`try_to_wake_up`, `enqueue_task_fair`,
    /// `set_task_cpu`) about task `p` on CPU `on`, now: `task_cpu()` in it
    /// is `p`'s CPU as it is now (`p->pi_lock` is held: it stays). Without locks it runs at once and
    /// its time goes to what `on` is doing ([`Self::charge_hook`]). With
    /// locks it is queued on `on` to run at its true time: at once on a CPU
    /// running a task or idle (the CPU's event is set to now: the waking
    /// task stops after the op that woke and goes on when the hook is
    /// done), after the handler or switch the CPU is busy in otherwise.
    fn wake_hook(&mut self, on: u32, ev: HookEvent, p: TaskId) {
        let Some(program) = self.hook(ev) else {
            return;
        };
        let subject = HookSubject {
            task_cpu: Some(self.task(p).cpu),
            ..HookSubject::NONE
        };
        if !self.hooks().locking[ev as usize] {
            let d = self.run_hook_about(on, program, self.now(), subject) - self.now();
            self.charge_hook(on, d);
            return;
        }
        let step = Step::Hook {
            ev,
            program,
            pc: 0,
            subject,
        };
        let now = self.now();
        match &mut self.hooks_mut().runs[on as usize] {
            Some(run) => run.steps.push_back(step),
            slot @ None => {
                *slot = Some(Box::new(HookRun {
                    steps: [step].into(),
                    t: now,
                    spanned: 0,
                    spin: None,
                    ctx: HookCtx::Pending,
                }))
            }
        }
        let activity = self.cpu(on).activity;
        if matches!(
            activity,
            crate::cpu::Activity::Task | crate::cpu::Activity::Idle
        ) {
            // Taken at the CPU's next event, now (`Self::kick`).
            self.arm_cpu(on, now);
        }
    }

    /// CPU `c`, running a task or idle, has a wakeup's hooks queued
    /// ([`Self::wake_hook`]): they hold it up from now, IRQs off, charged
    /// as sys (`try_to_wake_up()` under `p->pi_lock`); the task goes on
    /// where it was when they are done. Called by [`Self::kick`].
    fn start_held_run(&mut self, c: u32) {
        self.settle(c);
        let now = self.now();
        let run = self.hooks_mut().runs[c as usize]
            .as_mut()
            .expect("a queued wakeup hook");
        debug_assert!(matches!(run.ctx, HookCtx::Pending));
        run.ctx = HookCtx::Held;
        run.t = run.t.max(now);
        let cpu = self.cpu_mut(c);
        cpu.activity = crate::cpu::Activity::Switch {
            end: now,
            next: cpu.curr,
        };
        self.irq_off_begin(c);
        self.drive_hook_run(c);
    }

    /// Makes `run` CPU `c`'s: a wakeup's hooks queued there before it
    /// (the wakeup came first) run ahead of its steps.
    fn install_run(&mut self, c: u32, mut run: Box<HookRun<'s>>) {
        if let Some(queued) = self.hooks_mut().runs[c as usize].take() {
            for step in queued.steps.into_iter().rev() {
                run.steps.push_front(step);
            }
        }
        self.hooks_mut().runs[c as usize] = Some(run);
    }

    /// Puts CPU `c`'s run back while it waits: a wakeup's hooks queued
    /// while it was being driven run after its steps.
    fn put_back_run(&mut self, c: u32, mut run: Box<HookRun<'s>>) {
        if let Some(queued) = self.hooks_mut().runs[c as usize].take() {
            run.steps.extend(queued.steps);
        }
        self.hooks_mut().runs[c as usize] = Some(run);
    }

    /// A handler's hooks take locks: they run from `t`, after the
    /// handler's other hardirq work: `sched_ttwu_pending` and then its
    /// `ttwu_activate` of activations (if Some), the tick's `sched_tick`
    /// (if `tick`); the handler (and its softirqs, if `softirq`) ends when
    /// they are done.
    fn start_irq_hook_run(
        &mut self,
        c: u32,
        t: Nanos,
        ttwu_activate: Option<Nanos>,
        tick: bool,
        softirq: bool,
    ) {
        let mut steps = std::collections::VecDeque::new();
        if let Some(activate) = ttwu_activate {
            if let Some(program) = self.hook(HookEvent::SchedTtwuPending) {
                steps.push_back(Step::Hook {
                    ev: HookEvent::SchedTtwuPending,
                    program,
                    pc: 0,
                    subject: HookSubject::NONE,
                });
            }
            steps.push_back(Step::Span(activate));
        }
        if tick {
            let program = self.hook(HookEvent::SchedTick).expect("a sched_tick hook");
            steps.push_back(Step::Hook {
                ev: HookEvent::SchedTick,
                program,
                pc: 0,
                subject: HookSubject::NONE,
            });
        }
        if softirq {
            steps.push_back(Step::Softirq);
        }
        self.cpu_mut(c).activity = crate::cpu::Activity::Irq { end: t };
        let run = Box::new(HookRun {
            steps,
            t,
            spanned: 0,
            spin: None,
            ctx: HookCtx::Irq,
        });
        self.install_run(c, run);
        self.drive_hook_run(c);
    }

    /// Whether the hook at `ev` takes locks.
    fn hook_takes_locks(&self, ev: HookEvent) -> bool {
        self.hooks().locking[ev as usize]
    }

    /// Whether the tick's `sched_tick` hook takes locks.
    fn tick_hook_locks(&self) -> bool {
        self.hooks().locking[HookEvent::SchedTick as usize]
    }

    /// Whether CPU `c`'s current activity ends in a hook run's next step
    /// rather than where it was headed.
    #[inline]
    fn hook_run_waiting(&self, c: u32) -> bool {
        self.hooks()
            .runs
            .get(c as usize)
            .is_some_and(|r| r.is_some())
    }

    /// Runs CPU `c`'s hook run from where it is, at the current time: its
    /// steps up to a lock op that is still ahead (the CPU's event is set
    /// there) or a lock held elsewhere (the CPU spins), or to its end (the
    /// activity it is part of ends there).
    fn drive_hook_run(&mut self, c: u32) {
        self.settle(c);
        let mut run = self.hooks_mut().runs[c as usize]
            .take()
            .expect("a hook run");
        debug_assert!(run.spin.is_none(), "a spinning hook run driven");
        // A wakeup's hooks queued behind a handler or a switch run from
        // where it has got to, in its context.
        run.t = run.t.max(self.now());
        if let HookCtx::Pending = run.ctx {
            run.ctx = match self.cpu(c).activity {
                crate::cpu::Activity::Switch { next, .. } => HookCtx::Switch { next },
                _ => HookCtx::Irq,
            };
        }
        loop {
            // None: parked or spinning, back in its slot.
            let Some(mut done) = self.drive_steps(c, run) else {
                return;
            };
            // A wakeup in the run (its softirq) queued hooks: they go on.
            match self.hooks_mut().runs[c as usize].take() {
                Some(queued) => {
                    done.steps.extend(queued.steps);
                    run = done;
                }
                None => {
                    self.end_hook_run(c, done);
                    return;
                }
            }
        }
    }

    /// Runs `run`'s steps on CPU `c` up to a lock op ahead in time or a
    /// lock held elsewhere (the run is then put back in its slot: None),
    /// or to its end.
    fn drive_steps(&mut self, c: u32, mut run: Box<HookRun<'s>>) -> Option<Box<HookRun<'s>>> {
        while let Some(step) = run.steps.front_mut() {
            let (ev, program, pc, subject) = match step {
                Step::Span(d) => {
                    run.t += *d;
                    run.steps.pop_front();
                    continue;
                }
                Step::Softirq => {
                    run.steps.pop_front();
                    run.t = self.rcu_softirq(c, run.t);
                    continue;
                }
                Step::Hook {
                    ev,
                    program,
                    pc,
                    subject,
                } => (*ev, *program, pc, *subject),
            };
            let Some(op) = program.ops.get(*pc) else {
                run.steps.pop_front();
                continue;
            };
            let at = HookAt {
                hook: program,
                pc: *pc,
                t: run.t,
            };
            if let Some(to) = self.hook_jump(c, op, at, subject) {
                *pc = to;
                if self.run_halted() {
                    // A fault in the `if`: the run stops, and the hook.
                    run.steps.clear();
                    break;
                }
                continue;
            }
            *pc += 1;
            let (lock, mode, take) = match op {
                Op::Locking(LockingOp::Lock { lock, mode, .. }) => (lock, *mode, true),
                Op::Locking(LockingOp::Unlock { lock, mode, .. }) => (lock, *mode, false),
                _ => {
                    run.t = self.hook_op(c, op, at, subject);
                    if self.run_halted() {
                        run.steps.clear();
                        break;
                    }
                    continue;
                }
            };
            if run.t > self.now() {
                // Lock ops happen at their time: come back then.
                *pc -= 1;
                let at = run.t;
                self.park_hook_run(c, run, at);
                return None;
            }
            let Some(l) = self.hook_instance(c, lock, at, subject) else {
                // A fault: the run stops, and the hook with it.
                run.steps.clear();
                break;
            };
            if !take {
                run.t = self.hook_spin_unlock(c, l, mode);
                continue;
            }
            if matches!(run.ctx, HookCtx::Irq) {
                // The tick's hook, or a wakeup's in a hardirq handler.
                self.hook_lockdep_hardirq(c, ev, lock.object);
            }
            match self.hook_spin_lock(c, l, mode) {
                Some(done) => run.t = done,
                None => {
                    // Spins, IRQs off, until a release grants it the lock.
                    run.spin = Some((l, self.now()));
                    let cpu = self.cpu_mut(c);
                    cpu.gen = cpu.gen.wrapping_add(1);
                    self.put_back_run(c, run);
                    return None;
                }
            }
        }
        Some(run)
    }

    /// `run` is done: the switch or the handler ends where it got to; a
    /// held-up task or idle loop goes on once its time has passed.
    fn end_hook_run(&mut self, c: u32, run: Box<HookRun<'s>>) {
        let end = run.t;
        let now = self.now();
        let cpu = self.cpu_mut(c);
        match run.ctx {
            HookCtx::Switch { next } => {
                cpu.activity = crate::cpu::Activity::Switch { end, next };
                cpu.rq_busy_until = cpu.rq_busy_until.max(end);
            }
            HookCtx::Irq | HookCtx::Pending => cpu.activity = crate::cpu::Activity::Irq { end },
            HookCtx::Held if end > now => {
                // Its last work: the CPU stays held until then.
                self.park_hook_run(c, run, end);
                return;
            }
            HookCtx::Held => {
                let curr = cpu.curr;
                cpu.activity = if curr == crate::task::NO_TASK {
                    crate::cpu::Activity::Idle
                } else {
                    crate::cpu::Activity::Task
                };
                let irqs_off = curr != crate::task::NO_TASK && self.task(curr).irq.irqs_off;
                if !irqs_off {
                    self.irq_off_end(c);
                }
                self.kick(c);
                return;
            }
        }
        self.arm_cpu(c, end);
    }

    /// The run goes on at `at`: the CPU's current activity lasts until then.
    fn park_hook_run(&mut self, c: u32, run: Box<HookRun<'s>>, at: Nanos) {
        let cpu = self.cpu_mut(c);
        cpu.activity = match run.ctx {
            HookCtx::Switch { next } => {
                cpu.rq_busy_until = cpu.rq_busy_until.max(at);
                crate::cpu::Activity::Switch { end: at, next }
            }
            HookCtx::Irq | HookCtx::Pending => crate::cpu::Activity::Irq { end: at },
            HookCtx::Held => crate::cpu::Activity::Switch {
                end: at,
                next: cpu.curr,
            },
        };
        self.put_back_run(c, run);
        self.arm_cpu(c, at);
    }

    /// The lock CPU `c`'s hook spins on is its from `at` (called by the
    /// lock's release, [`Self::with_lock`]): the run goes on from then.
    fn hook_lock_granted(&mut self, c: u32, at: Nanos) {
        let run = self.hooks_mut().runs[c as usize]
            .as_mut()
            .expect("a hook run waits for the lock");
        let (l, since) = run.spin.take().expect("the hook spins");
        run.t = at;
        let object = self.spinlock_object(l);
        self.metrics_mut().lock_spin(at, object, at - since);
        let run = self.hooks_mut().runs[c as usize]
            .take()
            .expect("a hook run");
        self.park_hook_run(c, run, at);
    }

    /// When the hook on CPU `c` began to spin for its lock.
    fn hook_spin_since(&self, c: u32) -> Nanos {
        self.hooks().runs[c as usize]
            .as_ref()
            .and_then(|r| r.spin)
            .map_or(self.now(), |s| s.1)
    }

    /// lockdep's `mark_lock()` for a lock class taken in the tick's hook:
    /// hardirq context.
    fn hook_lockdep_hardirq(&mut self, c: u32, ev: HookEvent, class: u32) {
        if !self.lockdep_hardirq_settled(class) {
            let site = format!("CPU{c} in the {} hook (hardirq)", HOOK_NAMES[ev as usize]);
            self.lockdep_usage(c, class, true, site);
        }
    }
}

impl<'s, K: HooksEnv<'s> + ?Sized> Hooks<'s> for K {}

#[cfg(test)]
mod tests {
    use super::Hooks;
    use crate::program::*;
    use crate::spec::*;
    use crate::testkit::*;

    const US: u64 = 1_000;

    /// `lock` taken, held `hold`, released.
    fn critical_section(lock: &ObjRef, hold: u64) -> Vec<Op> {
        vec![
            lock_op(lock, LockMode::Exclusive, true),
            Op::Work(Dist::Const(hold)),
            lock_op(lock, LockMode::Exclusive, false),
        ]
    }

    fn hook(ops: Vec<Op>) -> Option<Program> {
        Some(Program {
            ops,
            slots: 0,
            init: Vec::new(),
        })
    }

    /// Four CPUs whose switches, ticks and tasks all take one lock `g`:
    /// two tasks a CPU take it, then sleep; every switch and every tick
    /// takes it in a hook.
    fn one_lock_everywhere(kind: &str) -> Spec {
        let mut s = spec(flat_machine(4), 2_000 * US);
        let g = ObjRef {
            object: spinning_lock(&mut s, "g", kind, LockOptions::default()),
            index: None,
        };
        let mut ops = critical_section(&g, US);
        ops.push(Op::Work(Dist::Exp { mean: 2 * US }));
        ops.push(Op::Sleep {
            dist: Dist::Exp { mean: 3 * US },
            overshoot: None,
        });
        forever(
            &mut s,
            "w",
            (0..8).map(|i| i % 4).collect(),
            Policy::Normal,
            ops,
        );
        s.hooks[HookEvent::SchedSwitch as usize] = hook(critical_section(&g, 200));
        s.hooks[HookEvent::SchedTick as usize] = hook(critical_section(&g, 300));
        s
    }

    /// [`one_lock_everywhere`], and every wakeup's hooks take `g` too:
    /// wakeups from the timer interrupt (the sleeps), from tasks (a
    /// producer's `up()` of a semaphore two consumers `down()`), and the
    /// migrations of wake-up placement.
    fn wakeups_take_it_too(kind: &str) -> Spec {
        let mut s = one_lock_everywhere(kind);
        // The tasks' holds keep IRQs off (`spin_lock_irqsave()`): a timer
        // interrupt's wakeup hook taking `g` on a CPU whose task holds it
        // would deadlock, in the kernel too.
        for op in &mut s.task_groups[0].program.ops {
            match op {
                Op::Locking(LockingOp::Lock { irqsave, .. }) => *irqsave = true,
                Op::Locking(LockingOp::Unlock { irqrestore, .. }) => *irqrestore = true,
                _ => {}
            }
        }
        let g = ObjRef {
            object: 0,
            index: None,
        };
        s.objects.push(ObjectDecl {
            name: "sem".into(),
            kind: ObjectKind::Semaphore { initial: 0 },
            per_cpu: false,
        });
        let sem = ObjRef {
            object: 1,
            index: None,
        };
        forever(
            &mut s,
            "producer",
            vec![0],
            Policy::Normal,
            vec![
                Op::Locking(LockingOp::Up(sem.clone())),
                Op::Work(Dist::Exp { mean: 4 * US }),
            ],
        );
        forever(
            &mut s,
            "consumer",
            vec![1, 2],
            Policy::Normal,
            vec![Op::Locking(LockingOp::Down(sem))],
        );
        for (ev, hold) in [
            (HookEvent::TryToWakeUp, 100),
            (HookEvent::EnqueueTaskFair, 150),
            (HookEvent::SetTaskCpu, 50),
        ] {
            s.hooks[ev as usize] = hook(critical_section(&g, hold));
        }
        s
    }

    /// Sampled through the run: every lock has at most one exclusive
    /// holder, and a hook holds a lock only while its run is under way
    /// (it releases every lock before the switch or handler goes on).
    #[test]
    fn hook_locks_are_held_alone_and_released_before_the_hook_ends() {
        let specs = ["qspinlock", "ticket", "tas"]
            .into_iter()
            .flat_map(|k| [(k, one_lock_everywhere(k)), (k, wakeups_take_it_too(k))]);
        for (kind, s) in specs {
            let mut sim = crate::Simulation::new(&s);
            let (mut samples, mut hook_held) = (0, 0);
            let mut horizon = 0;
            while !sim.advance(horizon) {
                let k = sim.kernel();
                for lock in k.locking.objects().spinlocks() {
                    assert!(lock.ownership_sound(), "{kind}: {:?}", lock.holders());
                    for h in lock.holders() {
                        if let Some(c) = crate::ids::hook_holder_cpu(h.0) {
                            hook_held += 1;
                            assert!(k.hook_run_waiting(c), "{kind}: CPU{c}'s hook ended holding");
                        }
                    }
                }
                samples += 1;
                horizon += 700; // not a multiple of any cost: samples land anywhere
            }
            let r = sim.finish();
            assert!(samples > 2_000);
            assert!(
                hook_held > 50,
                "{kind}: hooks held the lock at {hook_held} samples"
            );
            let g = r.lock("g").unwrap();
            assert!(g.contentions > 100, "{kind}: {g:?}");
            // No CPU is left spinning forever: switches went on.
            let switches: u64 = r.cpus.iter().map(|c| c.nr_switches).sum();
            assert!(switches > 300, "{kind}: {switches}");
            // CPU time adds up: every CPU accounted for the whole run.
            for c in &r.cpus {
                assert_eq!(c.times.total(), s.duration, "{kind}: CPU{}", c.cpu);
            }
        }
    }
}
