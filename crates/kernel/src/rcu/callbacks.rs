//! RCU callbacks (kernel/rcu/tree.c): queued by `call_rcu()`, invoked after
//! a grace period by `rcu_do_batch()`, with what each costs.
//!
//! Lifecycle of a callback queued on CPU `c`:
//!
//! 1. `__call_rcu_common()`: on a no-CBs CPU with lazy RCU
//!    (`CONFIG_RCU_LAZY`, the `rcu_lazy` knob) a `call_rcu()` goes to the
//!    lazy bypass list and asks for no grace period
//!    (`rcu_nocb_try_bypass()`); the list is flushed into the main one by
//!    a `call_rcu_hurry()` on the CPU (`synchronize_rcu()`'s callback is
//!    one), by reaching `qhimark` callbacks, or by its timer,
//!    `jiffies_lazy_flush` (10 s) after the first. Otherwise it is
//!    enqueued, and `__call_rcu_core()`, past `qhimark` callbacks on the
//!    CPU, accelerates them at once (no grace period running) or sets
//!    `rdp->blimit` to `DEFAULT_MAX_RCU_BLIMIT` (one running; the
//!    `rcu_force_quiescent_state()` kick is not modelled).
//! 2. The CPU's next tick runs `rcu_core()`, which asks for the next grace
//!    period not yet started (`tree.rs`).
//! 3. When that grace period ends the callback is ready (`RCU_DONE_TAIL`):
//!    on a no-CBs CPU (`rcu_nocbs`) `rcuop/c` is woken (`nocb.rs`);
//!    otherwise `RCU_SOFTIRQ` is raised at the CPU's next tick.
//! 4. `rcu_core()` in the softirq calls `rcu_do_batch()`: `bl =
//!    max(rdp->blimit, pending >> rcu_divisor)` (`blimit` 10,
//!    `rcu_divisor` 7); after each callback, stop once `bl` are done if the
//!    CPU has anything else to do (`need_resched()` or not idle), or, when
//!    `bl > 100`, once `rcu_resched_ns` (3 ms) have passed. Once the CPU's
//!    callbacks drop to `qlowmark` the knob's `blimit` is back. Callbacks
//!    left over re-raise the softirq (`invoke_rcu_core()`), which
//!    `__do_softirq()` runs again at once while under
//!    `MAX_SOFTIRQ_TIME` (2 ms) and `MAX_SOFTIRQ_RESTART` (10) and no
//!    reschedule is due; past that the kernel wakes `ksoftirqd`, which is
//!    not modelled: the rest waits for the CPU's next tick.
//!
//! The softirq runs at the end of the tick's interrupt, with the CPU busy
//! until it ends (no task runs), accounted as `softirq` CPU time. Unlike
//! the kernel it runs with IRQs off, so a long batch also delays other
//! interrupts and shows in `max_irq_off_ns`. Callbacks that cost nothing
//! (a `synchronize_rcu()` wakeup, `rcu_sync_func()`) run at the tick
//! without an interrupt; with nothing ahead of them, each as an event of
//! its own, as before callbacks had a cost.

use super::*;
use smpsim_engine::Nanos;

use crate::event::*;
use crate::task::NO_TASK;

/// `DEFAULT_MAX_RCU_BLIMIT`: the batch limit during a callback flood.
const MAX_BLIMIT: u64 = 10_000;
/// `rcu_divisor`'s default: a batch is at least `pending >> 7`.
const RCU_DIVISOR: u32 = 7;
/// `rcu_resched_ns`'s default, `RCU_RESCHED_NS` (3 ms): how long a batch
/// with `bl > 100` may run in the softirq.
const RCU_RESCHED_NS: Nanos = 3_000_000;
/// `MAX_SOFTIRQ_TIME` (kernel/softirq.c): 2 ms of restarts at most.
const MAX_SOFTIRQ_TIME: Nanos = 2_000_000;
/// `MAX_SOFTIRQ_RESTART` (kernel/softirq.c).
const MAX_SOFTIRQ_RESTART: u32 = 10;

/// A queued callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cb {
    /// The CPU whose list it is on (the one that queued it).
    pub cpu: u32,
    pub cb: RcuCallback,
    /// What invoking it costs.
    pub cost: Nanos,
    pub queued_at: Nanos,
}

/// `call_rcu()` and callback invocation, for any kernel RCU runs in.
pub(crate) trait RcuCallbacks: RcuEnv {
    /// `rdp->blimit` of CPU `c`.
    fn blimit(&self, c: u32) -> u64 {
        let knob = self.spec().knobs.rcu_blimit;
        self.rcu().blimit.get(c as usize).copied().unwrap_or(knob)
    }

    fn set_blimit(&mut self, c: u32, v: u64) {
        if self.rcu().blimit.is_empty() {
            let knob = self.spec().knobs.rcu_blimit;
            self.rcu_mut().blimit = vec![knob; self.nr_cpus() as usize];
        }
        self.rcu_mut().blimit[c as usize] = v;
    }

    /// The invariant: `cb`, waiting for grace period `gp`, may run only
    /// once that grace period, begun after it was queued, has ended.
    fn rcu_check_callback(&self, gp: u64, cb: &Cb) {
        let started = self
            .rcu()
            .gp_starts
            .get(gp.wrapping_sub(1) as usize)
            .copied()
            .unwrap_or(0);
        crate::invariants::check(crate::invariants::rcu_callback_after_gp(
            gp,
            self.rcu().completed,
            started,
            cb.queued_at,
        ));
    }

    /// Whether CPU `c` is a no-CBs CPU (`rcu_nocbs=`).
    fn rcu_nocb_cpu(&self, c: u32) -> bool {
        self.rcu()
            .rcuop
            .get(c as usize)
            .is_some_and(|&t| t != NO_TASK)
    }

    /// A `call_rcu()` (`lazy`) or `call_rcu_hurry()` op on CPU `c` whose
    /// callback costs `cost`.
    fn call_rcu_op(&mut self, c: u32, cost: Nanos, lazy: bool) {
        let cb = Cb {
            cpu: c,
            cb: RcuCallback::Func,
            cost,
            queued_at: self.now(),
        };
        self.call_rcu_common(cb, lazy);
    }

    /// `call_rcu_hurry()` of a kernel-internal callback that costs nothing
    /// (`wakeme_after_rcu()`, `rcu_sync_func()`) from CPU `c`.
    fn call_rcu(&mut self, c: u32, cb: RcuCallback) {
        let cb = Cb {
            cpu: c,
            cb,
            cost: 0,
            queued_at: self.now(),
        };
        self.call_rcu_common(cb, false);
    }

    /// `__call_rcu_common()`.
    fn call_rcu_common(&mut self, cb: Cb, lazy: bool) {
        let c = cb.cpu;
        let cu = c as usize;
        self.rcu_mut().n_cbs[cu] += 1;
        if cb.cb == RcuCallback::Func && self.metrics().measuring(self.now()) {
            self.rcu_mut().stats.callbacks_queued += 1;
        }
        let qhimark = self.spec().knobs.rcu_qhimark;
        if lazy && self.spec().knobs.rcu_lazy && self.rcu_nocb_cpu(c) {
            // rcu_nocb_try_bypass(): onto ->nocb_bypass, no grace period.
            self.rcu_mut().lazy[cu].push(cb);
            let n = self.rcu().lazy[cu].len() as u64;
            if n >= qhimark {
                self.rcu_lazy_flush(c);
            } else if n == 1 {
                let gen = self.rcu().lazy_gen[cu];
                let at = self.now().saturating_add(self.spec().knobs.rcu_lazy_flush);
                self.at(at, Event::Rcu(RcuEvent::LazyFlush { cpu: c, gen }));
            }
            return;
        }
        // A non-lazy callback flushes the lazy ones ahead of it.
        if !self.rcu().lazy[cu].is_empty() {
            self.rcu_lazy_flush(c);
        }
        self.rcu_enqueue(cb);
        // __call_rcu_core(): a flood past qhimark.
        if self.rcu().n_cbs[cu] > qhimark {
            if self.rcu().phase == super::GpPhase::Running {
                self.set_blimit(c, MAX_BLIMIT);
            } else {
                self.rcu_accelerate(c);
            }
        }
    }

    /// The callback joins its CPU's list; the CPU's next tick sees it in
    /// `rcu_pending()` and `rcu_core()` accelerates it onto the next grace
    /// period not yet started.
    fn rcu_enqueue(&mut self, cb: Cb) {
        let c = cb.cpu;
        self.rcu_mut().unrequested.push(cb);
        if !std::mem::replace(&mut self.rcu_mut().core_pending[c as usize], true) {
            let next_tick = (self.now() / self.jiffy() + 1) * self.jiffy();
            self.at(next_tick, Event::Rcu(RcuEvent::Core { cpu: c }));
        }
    }

    /// The lazy bypass list of CPU `c` goes to the main list
    /// (`rcu_nocb_flush_bypass()`), to wait for a grace period like the rest.
    fn rcu_lazy_flush(&mut self, c: u32) {
        let cu = c as usize;
        self.rcu_mut().lazy_gen[cu] = self.rcu().lazy_gen[cu].wrapping_add(1);
        let lazy = std::mem::take(&mut self.rcu_mut().lazy[cu]);
        if lazy.is_empty() {
            return;
        }
        if self.metrics().measuring(self.now()) {
            self.rcu_mut().stats.lazy_flushes += 1;
        }
        for cb in lazy {
            self.rcu_enqueue(cb);
        }
    }

    /// `cb` waited for grace period `gp`, which has just ended: it is ready
    /// to be invoked on its CPU (`rcu_advance_cbs()`).
    fn rcu_callback_ready(&mut self, gp: u64, cb: Cb) {
        let c = cb.cpu;
        let cu = c as usize;
        self.rcu_check_callback(gp, &cb);
        self.rcu_mut().done[cu].push_back((gp, cb));
        if self.rcu_nocb_cpu(c) {
            self.rcuop_wake(c);
            return;
        }
        if !std::mem::replace(&mut self.rcu_mut().softirq_raised[cu], true) {
            // RCU_SOFTIRQ at the CPU's next tick.
            let next_tick = (self.now() / self.jiffy() + 1) * self.jiffy();
            self.at(next_tick, Event::Rcu(RcuEvent::Softirq { cpu: c }));
        }
    }

    /// `RCU_SOFTIRQ` raised on CPU `c` at its tick. Callbacks that cost
    /// nothing are invoked at once; otherwise the softirq runs at the end
    /// of the tick's interrupt, once the CPU has IRQs on.
    fn rcu_softirq_raise(&mut self, c: u32) {
        let cu = c as usize;
        // Kernel-internal callbacks wake tasks: they run in the softirq,
        // which is charged their wakeups.
        let free = self.rcu().done[cu]
            .iter()
            .all(|(_, cb)| cb.cost == 0 && cb.cb == RcuCallback::Func);
        if free {
            self.rcu_mut().softirq_raised[cu] = false;
            while let Some((gp, cb)) = self.rcu_mut().done[cu].pop_front() {
                // A user's callback of no cost: it wakes no one.
                self.rcu_invoke(gp, cb, self.now());
            }
            return;
        }
        self.raise_rcu_softirq(c);
    }

    /// `__do_softirq()` running `rcu_core()` on CPU `c` from `t`, inside
    /// its interrupt: `rcu_do_batch()`, restarted while callbacks are left
    /// and the restart limits allow. Returns when it ends.
    fn rcu_softirq(&mut self, c: u32, start: Nanos) -> Nanos {
        let cu = c as usize;
        self.rcu_mut().softirq_raised[cu] = false;
        self.softirq_from(c, start);
        let mut t = start;
        let mut restarts = 0;
        loop {
            t = self.rcu_do_batch(c, t, true);
            if self.rcu().done[cu].is_empty() {
                return t;
            }
            restarts += 1;
            let resched = self.cpu(c).need_resched;
            if t - start >= MAX_SOFTIRQ_TIME || restarts >= MAX_SOFTIRQ_RESTART || resched {
                break;
            }
        }
        // wakeup_softirqd() in the kernel: here the next tick's softirq.
        if self.metrics().measuring(self.now()) {
            self.rcu_mut().stats.softirq_deferred += 1;
        }
        self.rcu_mut().softirq_raised[cu] = true;
        let next_tick = (t / self.jiffy() + 1) * self.jiffy();
        self.at(next_tick, Event::Rcu(RcuEvent::Softirq { cpu: c }));
        t
    }

    /// `rcu_do_batch()` on CPU `c` from `t`, in the softirq (`softirq`) or
    /// an `rcuop` kthread; returns when it ends.
    fn rcu_do_batch(&mut self, c: u32, mut t: Nanos, softirq: bool) -> Nanos {
        let cu = c as usize;
        let pending = self.rcu().done[cu].len() as u64;
        if pending == 0 {
            return t;
        }
        let bl = self.blimit(c).max(pending >> RCU_DIVISOR);
        let tlimit = (softirq && bl > 100).then(|| t.saturating_add(RCU_RESCHED_NS));
        // The CPU has something else to do: a task was interrupted, or a
        // reschedule is due (in the kernel: need_resched() or not idle).
        let busy = self.cpu(c).need_resched || self.cpu(c).interrupted != NO_TASK;
        let mut count = 0;
        while let Some((gp, cb)) = self.rcu_mut().done[cu].pop_front() {
            t = t.saturating_add(cb.cost);
            count += 1;
            let woke = self.rcu_invoke(gp, cb, t);
            t = t.saturating_add(woke);
            if softirq && count >= bl && busy {
                break;
            }
            if tlimit.is_some_and(|l| t >= l) {
                break;
            }
        }
        if softirq && self.metrics().measuring(self.now()) {
            self.rcu_mut().stats.softirq_batches += 1;
        }
        // Reinstate the batch limit once the flood has drained.
        if self.blimit(c) >= MAX_BLIMIT && self.rcu().n_cbs[cu] <= self.spec().knobs.rcu_qlowmark {
            let knob = self.spec().knobs.rcu_blimit;
            self.set_blimit(c, knob);
        }
        t
    }

    /// Invokes one ready callback (`f(rhp)`), which waited for grace
    /// period `gp`; it is done at `end` (counted if that is in the
    /// measured part of the run). Its effect (a wakeup) happens now.
    /// Returns what the wakeups it issued cost its context (the softirq,
    /// or `rcuop`): `cost.wakeup` each, `try_to_wake_up()`'s cost to a
    /// waker, as for a task's wakeup.
    fn rcu_invoke(&mut self, gp: u64, cb: Cb, end: Nanos) -> Nanos {
        self.rcu_check_callback(gp, &cb);
        let cu = cb.cpu as usize;
        self.rcu_mut().n_cbs[cu] = self.rcu().n_cbs[cu].saturating_sub(1);
        if cb.cb == RcuCallback::Func
            && self.metrics().measuring(end)
            && end <= self.spec().duration
        {
            self.rcu_mut().stats.callbacks_invoked += 1;
            if self.rcu_nocb_cpu(cb.cpu) {
                self.rcu_mut().stats.callbacks_invoked_offloaded += 1;
            }
        }
        let before = self.wakeups_issued();
        self.rcu_callback(cb.cb);
        (self.wakeups_issued() - before) * self.cost().wakeup
    }
}
impl<K: RcuEnv + ?Sized> RcuCallbacks for K {}
