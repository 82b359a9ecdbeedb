//! Normal grace periods and callbacks (kernel/rcu/tree.c): requests,
//! quiescent states, the FQS scans and the end of a grace period, for a
//! kernel without `CONFIG_PREEMPT_RCU`.
//!
//! Normal grace periods are driven by the GP kthread (`rcu_sched`, a CFS
//! task on a CPU: `gp_kthread.rs`): woken by the first request, it runs
//! `rcu_gp_init()` (a pass over the rcu_node tree), then sleeps until the
//! next force-quiescent-state time or until the last quiescent state is
//! reported, scans, and after the last one runs `rcu_gp_cleanup()`. A CPU
//! passes a quiescent state at a context switch (`rcu_qs()` notes it; the
//! CPU's next tick runs `rcu_core()`, which reports it, if the CPU still
//! ticks: an idle CPU without callbacks has stopped its tick), or at a tick
//! that interrupted user mode (reported at once). Idle CPUs are reported
//! by the FQS scans, in two phases as `rcu_gp_fqs()` does: the first scan
//! snapshots each CPU's idle counter and reports the CPUs idle now
//! (`rcu_watching_snap_save()`), later scans report those that have been
//! idle since (`rcu_watching_snap_recheck()`). The first scan comes
//! `jiffies_till_first_fqs` after init, later ones every
//! `jiffies_till_next_fqs`, each wait a timer-wheel timeout; a CPU still
//! holding out after `jiffies_till_sched_qs` gets `rcu_urgent_qs`, and its
//! own next tick in the kernel sets need_resched; only past half the stall
//! timeout does the scan `resched_cpu()` it (an IPI).
//! Callbacks (`call_rcu()`, and the wakeup of a `synchronize_rcu()` caller)
//! become ready as the grace period ends and are invoked as `callbacks.rs`
//! says. Every grace period's length goes to the `rcu_gp_duration`
//! histogram.
//!
//! Also here: `rcu_read_lock()`/`rcu_read_unlock()` and the guarantee
//! checker that runs as a grace period ends.

use super::*;
use smpsim_engine::Nanos;

use crate::cpu::Activity;
use crate::event::*;
use crate::task::*;

/// `RCU_JIFFIES_TILL_FORCE_QS + nr_cpu_ids / RCU_JIFFIES_FQS_DIV`
/// (kernel/rcu/tree.h, `rcu_init_geometry()`).
pub fn default_fqs_jiffies(hz: u32, nr_cpus: u32) -> u64 {
    let till_force_qs = 1 + (hz > 250) as u64 + (hz > 500) as u64;
    till_force_qs + nr_cpus as u64 / 256
}

/// Normal grace periods and read-side sections, for any kernel RCU runs
/// in (its methods are RCU's; the env gives it the rest).
pub(crate) trait RcuTree: RcuEnv {
    fn fqs_first(&self) -> Nanos {
        let k = &self.spec().knobs;
        let j = k
            .jiffies_till_first_fqs
            .map(u64::from)
            .unwrap_or_else(|| default_fqs_jiffies(k.hz, self.nr_cpus()));
        j.max(1) * self.jiffy()
    }

    fn fqs_next(&self) -> Nanos {
        let k = &self.spec().knobs;
        let j = k
            .jiffies_till_next_fqs
            .map(u64::from)
            .unwrap_or_else(|| default_fqs_jiffies(k.hz, self.nr_cpus()));
        j.max(1) * self.jiffy()
    }

    /// When a timeout of `j` jiffies armed at `at` fires: at the tick after
    /// `jiffies + j`. The GP kthread waits for its FQS time with
    /// `swait_event_idle_timeout_exclusive(..., j)`, a `schedule_timeout()`
    /// on the timer wheel, and the wheel rounds a level-0 expiry up by one
    /// jiffy so that no timer fires early (`calc_index()`,
    /// kernel/time/timer.c): the wait is between j and j+1 jiffies, ending
    /// on a tick.
    fn jiffies_timeout(&self, at: Nanos, j: Nanos) -> Nanos {
        (at / self.jiffy() + j + 1) * self.jiffy()
    }

    /// `jiffies_till_sched_qs` as `adjust_jiffies_till_sched_qs()` sets it.
    fn sched_qs_after(&self) -> Nanos {
        let first = self.fqs_first() / self.jiffy();
        let next = self.fqs_next() / self.jiffy();
        let floor = self.spec().knobs.hz as u64 / 10 + self.nr_cpus() as u64 / 256;
        (first + 2 * next).max(floor) * self.jiffy()
    }

    /// Work of `rcu_gp_init()` / `rcu_gp_cleanup()`: one pass over the
    /// rcu_node tree.
    fn rcu_tree_cost(&self) -> Nanos {
        let leaves = self
            .nr_cpus()
            .div_ceil(self.spec().knobs.rcu_fanout_leaf.max(1)) as u64;
        (leaves + 1) * self.spec().knobs.rcu_node_cost
    }

    fn rcu_gp_expedited(&self) -> bool {
        self.spec().knobs.rcu_expedited || self.rcu().expedite_nesting > 0
    }

    /// The normal grace period a request made now, on CPU `c`, needs.
    fn rcu_request(&mut self, c: u32) -> u64 {
        match self.rcu().phase {
            GpPhase::Idle => {
                self.rcu_mut().phase = GpPhase::Starting;
                // rcu_start_this_gp() -> rcu_gp_kthread_wake().
                self.wake_gp_kthread(c);
                self.rcu().completed + 1
            }
            GpPhase::Starting => self.rcu().completed + 1,
            GpPhase::Running => {
                self.rcu_mut().requested = true;
                self.rcu().completed + 2
            }
        }
    }

    /// `rcu_gp_kthread_wake()` from CPU `c` (a task's op, or its tick's
    /// softirq or IRQ context): `swake_up_one()` of the sleeping GP
    /// kthread, done once the current event is. Its `try_to_wake_up()` is
    /// charged `cost.wakeup` now, to what `c` is doing, as a task's wakeup
    /// costs the task; nothing if the kthread is not asleep (its own
    /// reports, `current == gp_kthread`, or a wake already on its way).
    fn wake_gp_kthread(&mut self, c: u32) {
        let kthread = self.rcu().gp_kthread;
        let asleep = kthread != NO_TASK && self.task(kthread).state == TaskState::Sleeping;
        if !asleep || self.rcu().gp_wake_queued {
            return;
        }
        self.rcu_mut().gp_wake_queued = true;
        let wakeup = self.cost().wakeup;
        self.charge_context(c, wakeup);
        self.at(self.now(), Event::Rcu(RcuEvent::WakeGpKthread { from: c }));
    }

    /// `rcu_sched_clock_irq()`'s urgent-QS check on CPU `c`'s tick: a CPU
    /// the grace period waits on, interrupted in the kernel, sets its own
    /// need_resched (in user mode or idle the tick is a quiescent state
    /// already).
    fn rcu_urgent_qs_tick(&mut self, c: u32, in_kernel: bool) {
        if !std::mem::take(&mut self.rcu_mut().urgent_qs[c as usize]) {
            return;
        }
        if in_kernel && self.rcu().qs_pending[c as usize] {
            self.resched_cpu(c, c);
        }
    }

    /// `rcu_core()` on CPU `c`: request grace periods for its new callbacks.
    fn rcu_core(&mut self, c: u32) {
        self.rcu_mut().core_pending[c as usize] = false;
        // rcu_check_quiescent_state(): report a QS noted since the last
        // tick, if this CPU still takes ticks.
        if self.rcu().qs_noted[c as usize] && self.rcu_cpu_ticks(c) {
            self.rcu_report_qs(c);
        }
        self.rcu_accelerate(c);
    }

    /// `rcu_accelerate_cbs()`: CPU `c`'s new callbacks wait for the next
    /// grace period not yet started.
    fn rcu_accelerate(&mut self, c: u32) {
        let mut i = 0;
        while i < self.rcu().unrequested.len() {
            if self.rcu().unrequested[i].cpu == c {
                let cb = self.rcu_mut().unrequested.remove(i);
                let target = self.rcu_request(c);
                self.rcu_mut().callbacks.push((target, cb));
            } else {
                i += 1;
            }
        }
    }

    /// `synchronize_rcu()` by task `t` on CPU `c`: blocks until a full
    /// grace period has elapsed (expedited if RCU is being expedited).
    fn synchronize_rcu(&mut self, c: u32, t: TaskId, expedited: bool) {
        if expedited || self.rcu_gp_expedited() {
            self.synchronize_rcu_expedited(c, t);
            return;
        }
        let gen = self.task(t).gen.wrapping_add(1);
        if self.spec().knobs.rcu_normal_wake_from_gp {
            // synchronize_rcu_normal(): a request for the next grace
            // period now (start_poll_synchronize_rcu()), and the GP
            // kthread wakes the caller at its cleanup.
            let target = self.rcu_request(c);
            self.rcu_mut().sr_waiters.push((target, t, gen));
        } else {
            // wait_rcu_gp(call_rcu_hurry): wakeme_after_rcu() is a
            // callback like any other.
            self.call_rcu(c, RcuCallback::Wake { task: t, gen });
        }
        self.block(c, t);
        self.task_mut(t).gen = gen;
    }

    /// The end of `rcu_gp_init()`: every online CPU owes a quiescent
    /// state.
    fn rcu_gp_init(&mut self) {
        self.rcu_mut().phase = GpPhase::Running;
        self.rcu_mut().requested = false;
        let now = self.now();
        self.rcu_mut().gp_start = now;
        self.rcu_mut().gp_starts.push(now);
        self.rcu_mut().remaining = 0;
        for c in 0..self.nr_cpus() as usize {
            let online = self.cpu(c as u32).online;
            self.rcu_mut().qs_pending[c] = online;
            self.rcu_mut().qs_noted[c] = false;
            self.rcu_mut().remaining += online as u32;
        }
    }

    /// Whether CPU `c` takes its tick: it is busy, or idle with RCU
    /// callbacks of its own (`rcu_needs_cpu()` keeps the tick).
    fn rcu_cpu_ticks(&self, c: u32) -> bool {
        let cpu = self.cpu(c);
        let idle = cpu.curr == NO_TASK && cpu.activity == Activity::Idle;
        !idle
            || self.rcu().unrequested.iter().any(|x| x.cpu == c)
            || self.rcu().callbacks.iter().any(|x| x.1.cpu == c)
    }

    /// `rcu_note_context_switch()` on CPU `c`: an expedited QS is reported
    /// at once; a normal one is noted and reported by `rcu_core()` at the
    /// CPU's next tick.
    fn rcu_note_context_switch(&mut self, c: u32) {
        let cu = c as usize;
        if self.rcu().exp_deferred[cu] {
            self.rcu_mut().exp_deferred[cu] = false;
            self.rcu_exp_qs(c);
        }
        if self.rcu().phase == GpPhase::Running
            && self.rcu().qs_pending[cu]
            && !std::mem::replace(&mut self.rcu_mut().qs_noted[cu], true)
            && !std::mem::replace(&mut self.rcu_mut().core_pending[cu], true)
        {
            let next_tick = (self.now() / self.jiffy() + 1) * self.jiffy();
            self.at(next_tick, Event::Rcu(RcuEvent::Core { cpu: c }));
        }
    }

    /// `rcu_read_lock()` by task `t`.
    fn rcu_read_lock(&mut self, t: TaskId) {
        self.rcu_mut().readers_seen = true;
        let now = self.now();
        let irq = &mut self.task_mut(t).irq;
        if irq.rcu_read_depth == 0 {
            irq.rcu_read_since = now;
        }
        irq.rcu_read_depth += 1;
    }

    /// `rcu_read_unlock()` by task `t`.
    fn rcu_read_unlock(&mut self, t: TaskId) {
        let irq = &mut self.task_mut(t).irq;
        irq.rcu_read_depth = irq.rcu_read_depth.saturating_sub(1);
    }

    /// The RCU guarantee checker, as a grace period ends: no read-side
    /// critical section that began before the grace period may still be
    /// running (one that slept, say, in a kernel without PREEMPT_RCU, let
    /// its CPU pass a quiescent state).
    fn rcu_check_readers(&mut self) {
        let start = self.rcu().gp_start;
        let reader = self
            .tasks()
            .iter()
            .position(|task| task.irq.rcu_read_depth > 0 && task.irq.rcu_read_since < start);
        if let Some(r) = reader {
            let since = self.task(r as TaskId).irq.rcu_read_since;
            let (cpu, name) = (self.task(r as TaskId).cpu, self.task_name(r as TaskId));
            let report = format!(
                "rcu: a grace period that began at {start} ns ended at {} ns while {name}'s rcu_read_lock() section, begun at {since} ns, was still running: what it reads may already be freed",
                self.now()
            );
            let now = self.now();
            self.metrics_mut().rcu_guarantee(cpu, now, report);
        }
    }

    /// A quiescent state on CPU `c` reported at once (a tick that
    /// interrupted user mode, a CPU going offline).
    fn rcu_qs(&mut self, c: u32) {
        let cu = c as usize;
        if self.rcu().exp_deferred[cu] {
            self.rcu_mut().exp_deferred[cu] = false;
            self.rcu_exp_qs(c);
        }
        self.rcu_report_qs(c);
    }

    /// `rcu_report_qs_rdp()`: CPU `c` no longer holds up the grace period;
    /// the last one wakes the GP kthread to clean up.
    fn rcu_report_qs(&mut self, c: u32) {
        let cu = c as usize;
        self.rcu_mut().qs_noted[cu] = false;
        if self.rcu().phase == GpPhase::Running && self.rcu().qs_pending[cu] {
            self.rcu_mut().qs_pending[cu] = false;
            self.rcu_mut().remaining -= 1;
            if self.rcu().remaining == 0 {
                self.wake_gp_kthread(c);
            }
        }
    }

    /// `rcu_gp_fqs()`: the GP kthread's scan of the CPUs still holding out.
    fn rcu_gp_fqs(&mut self) {
        let first = std::mem::replace(&mut self.rcu_mut().fqs_first, false);
        if self.metrics().measuring(self.now()) {
            self.rcu_mut().stats.fqs_scans += 1;
        }
        let holdout = self.now() - self.rcu().gp_start >= self.sched_qs_after();
        for c in 0..self.nr_cpus() {
            let cu = c as usize;
            if !self.rcu().qs_pending[cu] {
                continue;
            }
            let cpu = self.cpu(c);
            let idle_now = !cpu.online || (cpu.curr == NO_TASK && cpu.activity == Activity::Idle);
            let seq = self.rcu().idle_seq[cu];
            let passed = if first {
                // rcu_watching_snap_save().
                self.rcu_mut().watching_snap[cu] = seq;
                idle_now
            } else {
                // rcu_watching_snap_recheck().
                idle_now || seq != self.rcu().watching_snap[cu]
            };
            if passed {
                self.rcu_report_qs(c);
            } else if holdout {
                // rcu_watching_snap_recheck(): at age jiffies_till_sched_qs
                // the holdout gets rcu_urgent_qs, which its next tick in
                // the kernel turns into a reschedule; resched_cpu() only
                // past halfway to the stall timeout (jiffies_resched), at
                // most once per jiffies_till_sched_qs.
                self.rcu_mut().urgent_qs[cu] = true;
                let jtsq = self.sched_qs_after();
                let resched_after = self.spec().knobs.rcu_cpu_stall_timeout / 2;
                if self.now() - self.rcu().gp_start > resched_after
                    && self.now() > self.rcu().last_fqs_resched[cu] + jtsq
                {
                    self.rcu_mut().last_fqs_resched[cu] = self.now();
                    if self.metrics().measuring(self.now()) {
                        self.rcu_mut().stats.fqs_resched_ipis += 1;
                    }
                    self.at(
                        self.now() + self.cost().ipi_latency,
                        Event::Sched(SchedEvent::Resched { cpu: c }),
                    );
                }
            }
        }
    }

    /// `rcu_gp_cleanup()` is done: callbacks become ready, and the next
    /// grace period starts if one is needed.
    fn rcu_gp_end(&mut self) {
        if self.rcu().readers_seen {
            self.rcu_check_readers();
        }
        self.rcu_mut().completed += 1;
        if self.metrics().measuring(self.now()) {
            self.rcu_mut().stats.grace_periods += 1;
        }
        let length = self.now() - self.rcu().gp_start;
        let hist = self.spec().histograms.len() as u32;
        let now = self.now();
        self.metrics_mut().record(now, hist, length);
        let done = self.rcu().completed;
        self.rcu_sr_normal_gp_cleanup(done);
        let mut i = 0;
        while i < self.rcu().callbacks.len() {
            let (target, cb) = self.rcu().callbacks[i];
            if target <= done {
                self.rcu_mut().callbacks.swap_remove(i);
                self.rcu_callback_ready(target, cb);
            } else {
                i += 1;
            }
        }
        // Keep callback order deterministic after swap_remove.
        self.rcu_mut().callbacks.sort_by_key(|x| (x.0, x.1.cpu));
        // The GP kthread goes on to the next one at once if it is needed.
        self.rcu_mut().phase = if self.rcu().requested
            || !self.rcu().callbacks.is_empty()
            || !self.rcu().sr_waiters.is_empty()
        {
            GpPhase::Starting
        } else {
            GpPhase::Idle
        };
    }

    fn rcu_callback(&mut self, cb: RcuCallback) {
        match cb {
            RcuCallback::Wake { task, gen } => {
                let t = self.task(task);
                if t.gen == gen && t.state == TaskState::Sleeping {
                    self.wake_up(task, crate::sched::FROM_SOFTIRQ);
                }
            }
            RcuCallback::RcuSync { sem } => self.rcu_sync_func(sem),
            RcuCallback::Object { object, instance } => self.object_rcu_callback(object, instance),
            RcuCallback::KfreeRcuWork { cpu, slot } => self.kfree_rcu_work_ready(cpu, slot),
            RcuCallback::Func => {}
        }
    }

    /// `rcu_sr_normal_gp_cleanup()` (`rcu_normal_wake_from_gp`): the GP
    /// kthread, at the end of grace period `done`, wakes the
    /// `synchronize_rcu()` callers that waited for it. (The kernel wakes
    /// up to `SR_MAX_USERS_WAKE_FROM_GP`, 5, itself and hands the rest to
    /// a work item; here the kthread wakes them all.)
    fn rcu_sr_normal_gp_cleanup(&mut self, done: u64) {
        if self.rcu().sr_waiters.is_empty() {
            return;
        }
        let from = self.task(self.rcu().gp_kthread).cpu;
        let mut waiters = std::mem::take(&mut self.rcu_mut().sr_waiters);
        waiters.retain(|&(target, task, gen)| {
            if target > done {
                return true;
            }
            let t = self.task(task);
            if t.gen == gen && t.state == TaskState::Sleeping {
                self.wake_up(task, from);
                if self.metrics().measuring(self.now()) {
                    self.rcu_mut().stats.wakeups_from_gp += 1;
                }
            }
            false
        });
        self.rcu_mut().sr_waiters = waiters;
    }

    /// A CPU goes offline: it no longer holds up grace periods.
    fn rcu_cpu_offline(&mut self, c: u32) {
        self.rcu_qs(c);
        self.rcu_exp_qs(c);
        self.rcu_mut().exp_deferred[c as usize] = false;
    }
}
impl<K: RcuEnv + ?Sized> RcuTree for K {}
