//! Tree RCU grace periods (kernel/rcu/tree.c, tree_exp.h), for a kernel
//! without `CONFIG_PREEMPT_RCU`: any preempt-disabled region is a read-side
//! critical section.
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
//! run from RCU_SOFTIRQ at the queuing CPU's next tick after the grace
//! period ended. Every grace period's length goes to the `rcu_gp_duration`
//! histogram.
//!
//! Expedited grace periods (`synchronize_rcu_expedited()`, or any
//! `synchronize_rcu()` under `rcu_expedite_gp()`) are driven from a
//! workqueue (modelled as timed steps that use no CPU): IPIs go to every
//! online CPU that is not idle, leaf rcu_node by leaf rcu_node in parallel;
//! `rcu_exp_handler()` reports a quiescent state at once unless the CPU is
//! in a preempt-disabled region, in which case it comes at the CPU's next
//! context switch.

pub(crate) mod gp_kthread;

use smpsim_engine::Nanos;

use crate::cpu::{Activity, Csd};
pub use crate::event::RcuCallback;
use crate::event::*;
use crate::task::*;

/// The histogram every normal grace period's length goes to.
pub const GP_HISTOGRAM: &str = "rcu_gp_duration";

/// Whether a scenario uses RCU (and so gets its GP kthread).
pub fn used_by(spec: &crate::Spec) -> bool {
    use crate::program::Op;
    spec.task_groups.iter().any(|g| {
        g.program.ops.iter().any(|op| {
            matches!(
                op,
                Op::SynchronizeRcu
                    | Op::SynchronizeRcuExpedited
                    | Op::RcuExpediteGp
                    | Op::CpusWriteLock
                    | Op::CpusWriteUnlock
            )
        })
    })
}

/// The CPU the GP kthread starts on. The kernel does not pin `rcu_sched`:
/// it runs where its last wakeup put it, and an idle waker keeps it on its
/// previous CPU while that is idle (`wake_affine_idle()`,
/// kernel/sched/fair.c), so it stays wherever it happens to be. Where that
/// is matters: a kthread sharing its CPU with a `synchronize_rcu()` caller
/// has its quiescent state reported by that CPU's tick (kept by the
/// caller's callback), one FQS scan ends an idle grace period; elsewhere
/// its own CPU is busy scanning at the first FQS and a second scan is
/// needed. Default: the machine's last CPU, standing for "not the CPU the
/// workload started on" (assumed: the common case; the
/// `rcu_gp_kthread_cpu` knob sets it).
pub fn gp_kthread_cpu(spec: &crate::Spec) -> u32 {
    let nr = spec.machine.nr_cpus() as u32;
    spec.knobs
        .rcu_gp_kthread_cpu
        .filter(|&c| c < nr)
        .unwrap_or(nr.saturating_sub(1))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GpPhase {
    Idle,
    /// The GP kthread has been asked to start one.
    Starting,
    Running,
}

pub struct Rcu {
    /// The GP kthread's task, if the scenario uses RCU.
    pub gp_kthread: TaskId,
    kthread: gp_kthread::State,
    /// The next FQS scan is the first of its grace period.
    fqs_first: bool,
    /// When the GP kthread's current FQS wait times out.
    fqs_at: Nanos,
    /// Per CPU: a quiescent state passed but not yet reported
    /// (`!rdp->cpu_no_qs.b.norm`).
    qs_noted: Vec<bool>,
    /// Per CPU: extended quiescent states (idle) entered so far, the
    /// counter `rcu_watching_snap_save()` snapshots.
    pub idle_seq: Vec<u64>,
    watching_snap: Vec<u64>,
    phase: GpPhase,
    /// Normal grace periods completed.
    pub completed: u64,
    gp_start: Nanos,
    qs_pending: Vec<bool>,
    remaining: u32,
    /// Another grace period is needed after the running one.
    requested: bool,
    /// (grace period needed, CPU that queued it, what to do).
    callbacks: Vec<(u64, u32, RcuCallback)>,
    /// Callbacks queued by `call_rcu()` whose CPU has not yet run
    /// `rcu_core()` to ask for a grace period: (CPU, callback).
    unrequested: Vec<(u32, RcuCallback)>,
    /// CPUs with an `rcu_core()` pass scheduled at their next tick.
    core_pending: Vec<bool>,
    /// Per CPU: `rdp->rcu_urgent_qs`, set by the FQS scan for a CPU that
    /// has held a grace period up for `jiffies_till_sched_qs`; its next
    /// tick in the kernel asks for a reschedule.
    urgent_qs: Vec<bool>,
    /// Per CPU: `rdp->last_fqs_resched`.
    last_fqs_resched: Vec<Nanos>,
    pub expedite_nesting: u32,
    exp_phase: GpPhase,
    pub exp_completed: u64,
    exp_requested: bool,
    exp_pending: Vec<bool>,
    /// The CPU owes an expedited QS at its next context switch.
    exp_deferred: Vec<bool>,
    exp_remaining: u32,
    exp_waiters: Vec<(u64, TaskId, u32)>,
    /// Counted in the measured part of the run.
    pub stats: crate::result::RcuStats,
    /// The grace period a stall was reported for (`completed + 1`).
    stall_reported: u64,
    /// Some task has used `rcu_read_lock()`: the guarantee checker runs.
    pub readers_seen: bool,
}

impl Rcu {
    pub fn new(nr_cpus: usize) -> Self {
        Rcu {
            gp_kthread: NO_TASK,
            kthread: gp_kthread::State::WaitRequest,
            fqs_first: true,
            fqs_at: 0,
            qs_noted: vec![false; nr_cpus],
            idle_seq: vec![0; nr_cpus],
            watching_snap: vec![0; nr_cpus],
            phase: GpPhase::Idle,
            completed: 0,
            gp_start: 0,
            qs_pending: vec![false; nr_cpus],
            remaining: 0,
            requested: false,
            callbacks: Vec::new(),
            unrequested: Vec::new(),
            core_pending: vec![false; nr_cpus],
            urgent_qs: vec![false; nr_cpus],
            last_fqs_resched: vec![0; nr_cpus],
            expedite_nesting: 0,
            exp_phase: GpPhase::Idle,
            exp_completed: 0,
            exp_requested: false,
            exp_pending: vec![false; nr_cpus],
            exp_deferred: vec![false; nr_cpus],
            exp_remaining: 0,
            exp_waiters: Vec::new(),
            stats: Default::default(),
            stall_reported: 0,
            readers_seen: false,
        }
    }
}

/// `RCU_JIFFIES_TILL_FORCE_QS + nr_cpu_ids / RCU_JIFFIES_FQS_DIV`
/// (kernel/rcu/tree.h, `rcu_init_geometry()`).
pub fn default_fqs_jiffies(hz: u32, nr_cpus: u32) -> u64 {
    let till_force_qs = 1 + (hz > 250) as u64 + (hz > 500) as u64;
    till_force_qs + nr_cpus as u64 / 256
}

impl crate::Kernel<'_> {
    fn jiffy(&self) -> Nanos {
        self.tick_ns
    }

    fn fqs_first(&self) -> Nanos {
        let k = &self.spec.knobs;
        let j = k
            .jiffies_till_first_fqs
            .map(u64::from)
            .unwrap_or_else(|| default_fqs_jiffies(k.hz, self.nr_cpus));
        j.max(1) * self.jiffy()
    }

    fn fqs_next(&self) -> Nanos {
        let k = &self.spec.knobs;
        let j = k
            .jiffies_till_next_fqs
            .map(u64::from)
            .unwrap_or_else(|| default_fqs_jiffies(k.hz, self.nr_cpus));
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
        let floor = self.spec.knobs.hz as u64 / 10 + self.nr_cpus as u64 / 256;
        (first + 2 * next).max(floor) * self.jiffy()
    }

    /// Work of `rcu_gp_init()` / `rcu_gp_cleanup()`: one pass over the
    /// rcu_node tree.
    fn rcu_tree_cost(&self) -> Nanos {
        let leaves = self
            .nr_cpus
            .div_ceil(self.spec.knobs.rcu_fanout_leaf.max(1)) as u64;
        (leaves + 1) * self.spec.knobs.rcu_node_cost
    }

    fn rcu_gp_expedited(&self) -> bool {
        self.spec.knobs.rcu_expedited || self.rcu.expedite_nesting > 0
    }

    /// The normal grace period a request made now, on CPU `c`, needs.
    fn rcu_request(&mut self, c: u32) -> u64 {
        match self.rcu.phase {
            GpPhase::Idle => {
                self.rcu.phase = GpPhase::Starting;
                // rcu_start_this_gp() -> rcu_gp_kthread_wake().
                self.wake_gp_kthread(c);
                self.rcu.completed + 1
            }
            GpPhase::Starting => self.rcu.completed + 1,
            GpPhase::Running => {
                self.rcu.requested = true;
                self.rcu.completed + 2
            }
        }
    }

    /// Wakes the GP kthread from CPU `c`'s softirq context, once the
    /// current event is done.
    fn wake_gp_kthread(&mut self, c: u32) {
        self.at(self.now, Event::Rcu(RcuEvent::WakeGpKthread { from: c }));
    }

    /// `call_rcu()` from CPU `c`. The callback does not start a grace
    /// period by itself (`__call_rcu_core()` only does so past `qhimark`):
    /// the CPU's next tick sees it in `rcu_pending()` and `rcu_core()`
    /// accelerates it onto the next grace period not yet started.
    pub(crate) fn call_rcu(&mut self, c: u32, cb: RcuCallback) {
        self.rcu.unrequested.push((c, cb));
        if !std::mem::replace(&mut self.rcu.core_pending[c as usize], true) {
            let next_tick = (self.now / self.tick_ns + 1) * self.tick_ns;
            self.at(next_tick, Event::Rcu(RcuEvent::Core { cpu: c }));
        }
    }

    /// `rcu_sched_clock_irq()`'s urgent-QS check on CPU `c`'s tick: a CPU
    /// the grace period waits on, interrupted in the kernel, sets its own
    /// need_resched (in user mode or idle the tick is a quiescent state
    /// already).
    pub(crate) fn rcu_urgent_qs_tick(&mut self, c: u32, in_kernel: bool) {
        if !std::mem::take(&mut self.rcu.urgent_qs[c as usize]) {
            return;
        }
        if in_kernel && self.rcu.qs_pending[c as usize] {
            self.resched_cpu(c, c);
        }
    }

    /// `rcu_core()` on CPU `c`: request grace periods for its new callbacks.
    pub(crate) fn rcu_core(&mut self, c: u32) {
        self.rcu.core_pending[c as usize] = false;
        // rcu_check_quiescent_state(): report a QS noted since the last
        // tick, if this CPU still takes ticks.
        if self.rcu.qs_noted[c as usize] && self.rcu_cpu_ticks(c) {
            self.rcu_report_qs(c);
        }
        let mut i = 0;
        while i < self.rcu.unrequested.len() {
            if self.rcu.unrequested[i].0 == c {
                let (_, cb) = self.rcu.unrequested.remove(i);
                let target = self.rcu_request(c);
                self.rcu.callbacks.push((target, c, cb));
            } else {
                i += 1;
            }
        }
    }

    /// `synchronize_rcu()` by task `t` on CPU `c`: blocks until a full
    /// grace period has elapsed (expedited if RCU is being expedited).
    pub(crate) fn synchronize_rcu(&mut self, c: u32, t: TaskId, expedited: bool) {
        if expedited || self.rcu_gp_expedited() {
            self.synchronize_rcu_expedited(c, t);
            return;
        }
        let gen = self.tasks[t as usize].gen.wrapping_add(1);
        self.call_rcu(c, RcuCallback::Wake { task: t, gen });
        self.block(c, t);
        self.tasks[t as usize].gen = gen;
    }

    /// The end of `rcu_gp_init()`: every online CPU owes a quiescent
    /// state.
    fn rcu_gp_init(&mut self) {
        self.rcu.phase = GpPhase::Running;
        self.rcu.requested = false;
        self.rcu.gp_start = self.now;
        self.rcu.remaining = 0;
        for c in 0..self.nr_cpus as usize {
            let online = self.cpus[c].online;
            self.rcu.qs_pending[c] = online;
            self.rcu.qs_noted[c] = false;
            self.rcu.remaining += online as u32;
        }
    }

    /// Whether CPU `c` takes its tick: it is busy, or idle with RCU
    /// callbacks of its own (`rcu_needs_cpu()` keeps the tick).
    fn rcu_cpu_ticks(&self, c: u32) -> bool {
        let cpu = &self.cpus[c as usize];
        let idle = cpu.curr == NO_TASK && cpu.activity == Activity::Idle;
        !idle
            || self.rcu.unrequested.iter().any(|x| x.0 == c)
            || self.rcu.callbacks.iter().any(|x| x.1 == c)
    }

    /// `rcu_note_context_switch()` on CPU `c`: an expedited QS is reported
    /// at once; a normal one is noted and reported by `rcu_core()` at the
    /// CPU's next tick.
    pub(crate) fn rcu_note_context_switch(&mut self, c: u32) {
        let cu = c as usize;
        if self.rcu.exp_deferred[cu] {
            self.rcu.exp_deferred[cu] = false;
            self.rcu_exp_qs(c);
        }
        if self.rcu.phase == GpPhase::Running
            && self.rcu.qs_pending[cu]
            && !std::mem::replace(&mut self.rcu.qs_noted[cu], true)
            && !std::mem::replace(&mut self.rcu.core_pending[cu], true)
        {
            let next_tick = (self.now / self.tick_ns + 1) * self.tick_ns;
            self.at(next_tick, Event::Rcu(RcuEvent::Core { cpu: c }));
        }
    }

    /// `rcu_read_lock()` by task `t`.
    pub(crate) fn rcu_read_lock(&mut self, t: TaskId) {
        self.rcu.readers_seen = true;
        let irq = &mut self.tasks[t as usize].irq;
        if irq.rcu_read_depth == 0 {
            irq.rcu_read_since = self.now;
        }
        irq.rcu_read_depth += 1;
    }

    /// `rcu_read_unlock()` by task `t`.
    pub(crate) fn rcu_read_unlock(&mut self, t: TaskId) {
        let irq = &mut self.tasks[t as usize].irq;
        irq.rcu_read_depth = irq.rcu_read_depth.saturating_sub(1);
    }

    /// The RCU guarantee checker, as a grace period ends: no read-side
    /// critical section that began before the grace period may still be
    /// running (one that slept, say, in a kernel without PREEMPT_RCU, let
    /// its CPU pass a quiescent state).
    fn rcu_check_readers(&mut self) {
        let start = self.rcu.gp_start;
        let reader = self
            .tasks
            .iter()
            .position(|task| task.irq.rcu_read_depth > 0 && task.irq.rcu_read_since < start);
        if let Some(r) = reader {
            let since = self.tasks[r].irq.rcu_read_since;
            let (cpu, name) = (self.tasks[r].cpu, self.task_name(r as TaskId));
            let report = format!(
                "rcu: a grace period that began at {start} ns ended at {} ns while {name}'s rcu_read_lock() section, begun at {since} ns, was still running: what it reads may already be freed",
                self.now
            );
            self.metrics.rcu_guarantee(cpu, self.now, report);
        }
    }

    /// `check_cpu_stall()` from CPU `c`'s tick: a grace period older than
    /// `rcu_cpu_stall_timeout` is reported once, self-detected if `c` is a
    /// holdout, else with the holdout CPUs listed.
    pub(crate) fn rcu_check_cpu_stall(&mut self, c: u32) {
        let gp = self.rcu.completed + 1;
        let age = self.now.saturating_sub(self.rcu.gp_start);
        if self.rcu.phase != GpPhase::Running
            || age < self.metrics.thresholds.rcu_stall
            || self.rcu.stall_reported == gp
        {
            return;
        }
        self.rcu.stall_reported = gp;
        let jiffies = age / self.jiffy();
        let holdouts: Vec<u32> = (0..self.nr_cpus)
            .filter(|&x| self.rcu.qs_pending[x as usize])
            .collect();
        let report = if self.rcu.qs_pending[c as usize] {
            format!(
                "INFO: rcu_sched self-detected stall on CPU\n\t{c}-....: (t={jiffies} jiffies g={gp} q={})",
                holdouts.len()
            )
        } else {
            let list: Vec<String> = holdouts.iter().map(|x| format!("\t{x}-....")).collect();
            format!(
                "INFO: rcu_sched detected stalls on CPUs/tasks:\n{}\n\t(detected by {c}, t={jiffies} jiffies, g={gp})",
                list.join("\n")
            )
        };
        self.metrics.rcu_stall(c, self.now, report);
    }

    /// A quiescent state on CPU `c` reported at once (a tick that
    /// interrupted user mode, a CPU going offline).
    pub(crate) fn rcu_qs(&mut self, c: u32) {
        let cu = c as usize;
        if self.rcu.exp_deferred[cu] {
            self.rcu.exp_deferred[cu] = false;
            self.rcu_exp_qs(c);
        }
        self.rcu_report_qs(c);
    }

    /// `rcu_report_qs_rdp()`: CPU `c` no longer holds up the grace period;
    /// the last one wakes the GP kthread to clean up.
    fn rcu_report_qs(&mut self, c: u32) {
        let cu = c as usize;
        self.rcu.qs_noted[cu] = false;
        if self.rcu.phase == GpPhase::Running && self.rcu.qs_pending[cu] {
            self.rcu.qs_pending[cu] = false;
            self.rcu.remaining -= 1;
            if self.rcu.remaining == 0 {
                self.wake_gp_kthread(c);
            }
        }
    }

    /// `rcu_gp_fqs()`: the GP kthread's scan of the CPUs still holding out.
    fn rcu_gp_fqs(&mut self) {
        let first = std::mem::replace(&mut self.rcu.fqs_first, false);
        if self.metrics.measuring(self.now) {
            self.rcu.stats.fqs_scans += 1;
        }
        let holdout = self.now - self.rcu.gp_start >= self.sched_qs_after();
        for c in 0..self.nr_cpus {
            let cu = c as usize;
            if !self.rcu.qs_pending[cu] {
                continue;
            }
            let cpu = &self.cpus[cu];
            let idle_now = !cpu.online || (cpu.curr == NO_TASK && cpu.activity == Activity::Idle);
            let seq = self.rcu.idle_seq[cu];
            let passed = if first {
                // rcu_watching_snap_save().
                self.rcu.watching_snap[cu] = seq;
                idle_now
            } else {
                // rcu_watching_snap_recheck().
                idle_now || seq != self.rcu.watching_snap[cu]
            };
            if passed {
                self.rcu_report_qs(c);
            } else if holdout {
                // rcu_watching_snap_recheck(): at age jiffies_till_sched_qs
                // the holdout gets rcu_urgent_qs, which its next tick in
                // the kernel turns into a reschedule; resched_cpu() only
                // past halfway to the stall timeout (jiffies_resched), at
                // most once per jiffies_till_sched_qs.
                self.rcu.urgent_qs[cu] = true;
                let jtsq = self.sched_qs_after();
                let resched_after = self.spec.knobs.rcu_cpu_stall_timeout / 2;
                if self.now - self.rcu.gp_start > resched_after
                    && self.now > self.rcu.last_fqs_resched[cu] + jtsq
                {
                    self.rcu.last_fqs_resched[cu] = self.now;
                    if self.metrics.measuring(self.now) {
                        self.rcu.stats.fqs_resched_ipis += 1;
                    }
                    self.at(
                        self.now + self.cost.ipi_latency,
                        Event::Sched(SchedEvent::Resched { cpu: c }),
                    );
                }
            }
        }
    }

    /// `rcu_gp_cleanup()` is done: callbacks become ready, and the next
    /// grace period starts if one is needed.
    fn rcu_gp_end(&mut self) {
        if self.rcu.readers_seen {
            self.rcu_check_readers();
        }
        self.rcu.completed += 1;
        if self.metrics.measuring(self.now) {
            self.rcu.stats.grace_periods += 1;
        }
        let length = self.now - self.rcu.gp_start;
        let hist = self.spec.histograms.len() as u32;
        self.metrics.record(self.now, hist, length);
        let done = self.rcu.completed;
        let mut i = 0;
        while i < self.rcu.callbacks.len() {
            let (target, cpu, cb) = self.rcu.callbacks[i];
            if target <= done {
                self.rcu.callbacks.swap_remove(i);
                // RCU_SOFTIRQ at the queuing CPU's next tick.
                let next_tick = (self.now / self.tick_ns + 1) * self.tick_ns;
                self.at(next_tick, Event::Rcu(RcuEvent::Callback { cpu, cb }));
            } else {
                i += 1;
            }
        }
        // Keep callback order deterministic after swap_remove.
        self.rcu.callbacks.sort_by_key(|x| (x.0, x.1));
        // The GP kthread goes on to the next one at once if it is needed.
        self.rcu.phase = if self.rcu.requested || !self.rcu.callbacks.is_empty() {
            GpPhase::Starting
        } else {
            GpPhase::Idle
        };
    }

    pub(crate) fn rcu_callback(&mut self, cb: RcuCallback) {
        match cb {
            RcuCallback::Wake { task, gen } => {
                let t = &self.tasks[task as usize];
                if t.gen == gen && t.state == TaskState::Sleeping {
                    self.wake_up(task, crate::sched::FROM_SOFTIRQ);
                }
            }
            RcuCallback::RcuSync => self.rcu_sync_func(),
        }
    }

    // ----- expedited -----------------------------------------------------

    pub(crate) fn synchronize_rcu_expedited(&mut self, c: u32, t: TaskId) {
        let target = match self.rcu.exp_phase {
            GpPhase::Idle => {
                self.rcu.exp_phase = GpPhase::Starting;
                // queue_work() + a kworker switching in.
                let kick = self.cost.wakeup + self.cost.context_switch;
                self.at(self.now + kick, Event::Rcu(RcuEvent::ExpStart));
                self.rcu.exp_completed + 1
            }
            GpPhase::Starting => self.rcu.exp_completed + 1,
            GpPhase::Running => {
                self.rcu.exp_requested = true;
                self.rcu.exp_completed + 2
            }
        };
        let gen = self.tasks[t as usize].gen.wrapping_add(1);
        self.rcu.exp_waiters.push((target, t, gen));
        self.block(c, t);
        self.tasks[t as usize].gen = gen;
    }

    /// `sync_rcu_exp_select_cpus()`: IPI every online, non-idle CPU, leaf
    /// rcu_node by leaf rcu_node in parallel.
    pub(crate) fn rcu_exp_start(&mut self) {
        self.rcu.exp_phase = GpPhase::Running;
        self.rcu.exp_requested = false;
        self.rcu.exp_remaining = 0;
        let fanout = self.spec.knobs.rcu_fanout_leaf.max(1);
        let mut in_leaf = 0u64;
        let mut leaf = u32::MAX;
        for c in 0..self.nr_cpus {
            let cpu = &self.cpus[c as usize];
            let idle = cpu.curr == NO_TASK && cpu.activity == Activity::Idle;
            let need = cpu.online && !idle;
            self.rcu.exp_pending[c as usize] = need;
            if !need {
                continue;
            }
            if c / fanout != leaf {
                leaf = c / fanout;
                in_leaf = 0;
            }
            in_leaf += 1;
            self.rcu.exp_remaining += 1;
            let sent = self.now + in_leaf * self.cost.ipi_send;
            // Sent by the workqueue worker of the leaf's first CPU.
            self.queue_csd(c, Csd::RcuExp, sent, leaf * fanout);
        }
        if self.rcu.exp_remaining == 0 {
            self.rcu_exp_end();
        }
    }

    /// `rcu_exp_handler()` on CPU `c`, in its IPI handler.
    pub(crate) fn rcu_exp_handler(&mut self, c: u32) {
        let cpu = &self.cpus[c as usize];
        let t = if cpu.interrupted != NO_TASK {
            cpu.interrupted
        } else {
            cpu.curr
        };
        let in_read_side = t != NO_TASK && self.tasks[t as usize].irq.preempt_count > 0;
        if in_read_side {
            self.rcu.exp_deferred[c as usize] = true;
            self.cpus[c as usize].need_resched = true;
        } else {
            self.rcu_exp_qs(c);
        }
    }

    fn rcu_exp_qs(&mut self, c: u32) {
        if self.rcu.exp_phase == GpPhase::Running && self.rcu.exp_pending[c as usize] {
            self.rcu.exp_pending[c as usize] = false;
            self.rcu.exp_remaining -= 1;
            if self.rcu.exp_remaining == 0 {
                self.rcu_exp_end();
            }
        }
    }

    fn rcu_exp_end(&mut self) {
        self.rcu.exp_completed += 1;
        if self.metrics.measuring(self.now) {
            self.rcu.stats.expedited_grace_periods += 1;
        }
        let done = self.rcu.exp_completed;
        let mut waiters = std::mem::take(&mut self.rcu.exp_waiters);
        waiters.retain(|&(target, t, gen)| {
            if target > done {
                return true;
            }
            let task = &self.tasks[t as usize];
            if task.gen == gen && task.state == TaskState::Sleeping {
                self.at(
                    self.now + self.cost.wakeup,
                    Event::Rcu(RcuEvent::Callback {
                        cpu: task.cpu,
                        cb: RcuCallback::Wake { task: t, gen },
                    }),
                );
            }
            false
        });
        self.rcu.exp_waiters = waiters;
        if self.rcu.exp_requested || !self.rcu.exp_waiters.is_empty() {
            self.rcu.exp_phase = GpPhase::Starting;
            let kick = self.cost.wakeup + self.cost.context_switch;
            self.at(self.now + kick, Event::Rcu(RcuEvent::ExpStart));
        } else {
            self.rcu.exp_phase = GpPhase::Idle;
        }
    }

    /// A CPU goes offline: it no longer holds up grace periods.
    pub(crate) fn rcu_cpu_offline(&mut self, c: u32) {
        self.rcu_qs(c);
        self.rcu_exp_qs(c);
        self.rcu.exp_deferred[c as usize] = false;
    }
}

impl crate::Kernel<'_> {
    /// Routes an RCU event.
    pub(crate) fn on_rcu_event(&mut self, e: RcuEvent) -> smpsim_engine::Handled {
        match e {
            RcuEvent::WakeGpKthread { from } => self.wake_kthread(self.rcu.gp_kthread, from),
            RcuEvent::ExpStart => self.rcu_exp_start(),
            RcuEvent::Core { cpu } => self.rcu_core(cpu),
            RcuEvent::Callback { cb, .. } => self.rcu_callback(cb),
        }
        smpsim_engine::Handled::Done
    }
}
