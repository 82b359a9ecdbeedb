//! Tree RCU (kernel/rcu/), for a kernel without `CONFIG_PREEMPT_RCU`: any
//! preempt-disabled region is a read-side critical section. Laid out as
//! the kernel's files:
//!
//! - `tree`: normal grace periods (tree.c), driven by
//! - `gp_kthread`: the `rcu_sched` GP kthread's loop (`rcu_gp_kthread()`);
//! - `callbacks`: `call_rcu()` and callback invocation (`rcu_do_batch()`
//!   from `RCU_SOFTIRQ`, tree.c), lazy callbacks;
//! - `nocb`: callbacks of `rcu_nocbs` CPUs invoked by `rcuop/N` kthreads
//!   (tree_nocb.h);
//! - `exp`: expedited grace periods (tree_exp.h);
//! - `kfree`: `kfree_rcu()` batching (mm/slab_common.c);
//! - `poll`: polled grace periods, `get_state_synchronize_rcu()` and
//!   `poll_state_synchronize_rcu()` (tree.c);
//! - `stall`: CPU stall detection (tree_stall.h).
//!
//! This file holds the state they share, each field with what stays true
//! of it, and routes RCU events.

pub(crate) mod callbacks;
mod exp;
pub(crate) mod gp_kthread;
pub(crate) mod kfree;
pub(crate) mod nocb;
pub(crate) mod ops;
mod poll;
mod stall;
mod tree;

use smpsim_engine::Nanos;

use crate::env::{CoreEnv, SchedVerbs};
pub use crate::event::RcuCallback;
use crate::event::*;
use crate::task::*;
pub use poll::RCU_GET_STATE_COMPLETED;
pub use tree::default_fqs_jiffies;

/// The histogram every normal grace period's length goes to.
pub const GP_HISTOGRAM: &str = "rcu_gp_duration";

/// Whether a scenario uses RCU (and so gets its GP kthread): a grace
/// period op, or a percpu_rw_semaphore whose writers wait for one.
pub fn used_by(spec: &crate::Spec) -> bool {
    crate::locking::percpu_rwsem::declared_in(spec)
        || spec
            .task_groups
            .iter()
            .any(|g| g.program.ops.iter().any(|op| op.waits_for_rcu()))
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

/// Where a grace period (normal or expedited) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GpPhase {
    /// None running, none asked for.
    Idle,
    /// One has been asked for and its start is on the way (the GP kthread
    /// woken, or the expedited workqueue's start queued).
    Starting,
    /// Started, waiting for quiescent states.
    Running,
}

/// RCU's state. Per-CPU vectors are indexed by CPU and have `nr_cpus`
/// entries.
pub struct Rcu {
    // ----- the GP kthread (gp_kthread.rs) --------------------------------
    /// The GP kthread's task; `NO_TASK` exactly when the scenario does not
    /// use RCU. Set once, at construction.
    gp_kthread: TaskId,
    /// Where the GP kthread is in its loop: `Init` only while `phase` is
    /// `Starting`; `FqsWait`, `Fqs` and `Cleanup` only while it is
    /// `Running`; `WaitRequest` never while it is `Running`.
    kthread: gp_kthread::State,
    /// An `RcuEvent::WakeGpKthread` is queued and its `try_to_wake_up()`
    /// already charged: a second `rcu_gp_kthread_wake()` before it runs
    /// finds the wait queue empty and costs nothing.
    gp_wake_queued: bool,
    /// The next FQS scan is the first of its grace period: set by
    /// `rcu_gp_init()`, cleared by the first scan.
    fqs_first: bool,
    /// When the GP kthread's current FQS wait times out (always on a
    /// tick); meaningful while `kthread` is `FqsWait`.
    fqs_at: Nanos,

    // ----- normal grace periods (tree.rs) --------------------------------
    /// Where the normal grace period is. `Running` from `rcu_gp_init()` to
    /// `rcu_gp_end()`.
    phase: GpPhase,
    /// Normal grace periods completed since the run began (warm-up
    /// included); only grows. The running one, if any, is `completed + 1`.
    completed: u64,
    /// When the running (else the last) grace period's `rcu_gp_init()`
    /// ended.
    gp_start: Nanos,
    /// Per CPU: it owes the running grace period a quiescent state. Set
    /// for the online CPUs by `rcu_gp_init()`, cleared one by one as they
    /// are reported; all clear unless `phase` is `Running`.
    qs_pending: Vec<bool>,
    /// How many `qs_pending` entries are set; the grace period can end
    /// when it reaches 0.
    // invariant: `remaining` = set `qs_pending` entries, none unless
    // `phase` is `Running` (`check_invariants`).
    remaining: u32,
    /// Per CPU: a quiescent state passed but not yet reported
    /// (`!rdp->cpu_no_qs.b.norm`). Set only where `qs_pending` is (so it
    /// implies it); cleared when reported and by `rcu_gp_init()`.
    // invariant: `qs_noted[c]` implies `qs_pending[c]` (`check_invariants`).
    qs_noted: Vec<bool>,
    /// Another grace period is needed after the running one; set only
    /// while `phase` is `Running`, cleared by `rcu_gp_init()`.
    requested: bool,
    /// Callbacks waiting for a grace period: (grace period needed,
    /// callback). Every entry needs one not yet completed (`> completed`):
    /// `rcu_gp_end()` takes the ready ones out and leaves the rest sorted
    /// by (grace period, CPU).
    callbacks: Vec<(u64, callbacks::Cb)>,
    /// Callbacks queued by `call_rcu()` whose CPU has not yet run
    /// `rcu_core()` to ask for a grace period. Every CPU named here has
    /// `core_pending` set.
    unrequested: Vec<callbacks::Cb>,
    /// Per CPU: callbacks whose grace period has ended, in order, waiting
    /// for `rcu_do_batch()` (the `RCU_DONE_TAIL` segment): each with the
    /// grace period it waited for.
    done: Vec<std::collections::VecDeque<(u64, callbacks::Cb)>>,
    /// Per CPU: an `RcuEvent::Softirq` is queued for it (`RCU_SOFTIRQ`
    /// raised), or the softirq is pending in its interrupt.
    softirq_raised: Vec<bool>,
    /// Per CPU: callbacks queued and not yet invoked
    /// (`rcu_segcblist_n_cbs()`), lazy ones included.
    n_cbs: Vec<u64>,
    /// Per CPU: `rdp->blimit`: the knob, or `DEFAULT_MAX_RCU_BLIMIT` while
    /// a callback flood (above `qhimark`) drains to `qlowmark`.
    blimit: Vec<u64>,
    /// Per CPU: lazy callbacks in the no-CBs bypass list (`->nocb_bypass`),
    /// not yet asking for a grace period; and the generation of its flush
    /// timer (a flush makes the armed timer stale).
    lazy: Vec<Vec<callbacks::Cb>>,
    lazy_gen: Vec<u32>,
    /// Per CPU: `rcuop/N`, the kthread invoking its callbacks if it is a
    /// no-CBs CPU (`NO_TASK` otherwise), and the batch it is invoking.
    rcuop: Vec<TaskId>,
    rcuop_batch: Vec<Vec<(u64, callbacks::Cb)>>,
    /// `synchronize_rcu()` callers woken from the GP kthread
    /// (`rcu_normal_wake_from_gp`): (grace period needed, task, wakeup
    /// generation).
    sr_waiters: Vec<(u64, TaskId, u32)>,
    /// When each normal grace period began (index: its number - 1), for
    /// the check that callbacks wait for a whole one.
    gp_starts: Vec<Nanos>,
    /// Per CPU: an `rcu_core()` pass is scheduled at its next tick (an
    /// `RcuEvent::Core` is queued for it); at most one at a time.
    core_pending: Vec<bool>,
    /// Per CPU: extended quiescent states (idle) entered so far, the
    /// counter `rcu_watching_snap_save()` snapshots; only grows (the
    /// scheduler counts each entry to idle).
    idle_seq: Vec<u64>,
    /// Per CPU: `idle_seq` as the grace period's first FQS scan saw it;
    /// read by the later scans of the same grace period.
    watching_snap: Vec<u64>,
    /// Per CPU: `rdp->rcu_urgent_qs`, set by the FQS scan for a CPU that
    /// has held a grace period up for `jiffies_till_sched_qs`; its next
    /// tick takes it and, in the kernel, asks for a reschedule.
    urgent_qs: Vec<bool>,
    /// Per CPU: `rdp->last_fqs_resched`, when the FQS scan last sent it a
    /// resched IPI (0: never).
    last_fqs_resched: Vec<Nanos>,

    // ----- expedited grace periods (exp.rs) ------------------------------
    /// `rcu_expedite_gp()` nesting depth: above 0, `synchronize_rcu()` is
    /// expedited. Changed only by the RCU ops (`ops.rs`).
    expedite_nesting: u32,
    /// Where the expedited grace period is: `Starting` while an
    /// `RcuEvent::ExpStart` is queued, `Running` from `rcu_exp_start()` to
    /// `rcu_exp_end()`.
    exp_phase: GpPhase,
    /// Expedited grace periods completed; only grows.
    exp_completed: u64,
    /// Another expedited grace period is needed after the running one;
    /// set only while `exp_phase` is `Running`.
    exp_requested: bool,
    /// Per CPU: it owes the running expedited grace period a quiescent
    /// state (set for the online, non-idle CPUs at its start).
    exp_pending: Vec<bool>,
    /// How many `exp_pending` entries are set; the expedited grace period
    /// ends when it reaches 0.
    // invariant: `exp_remaining` = set `exp_pending` entries
    // (`check_invariants`).
    exp_remaining: u32,
    /// Per CPU: its IPI found it in a preempt-disabled region, so it owes
    /// an expedited quiescent state at its next context switch (or going
    /// offline).
    exp_deferred: Vec<bool>,
    /// `synchronize_rcu_expedited()` callers asleep: (expedited grace
    /// period needed, task, the task's wakeup generation). Every entry
    /// needs one not yet completed (`> exp_completed`).
    // invariant: every waiter's grace period is `> exp_completed`
    // (`check_invariants`).
    exp_waiters: Vec<(u64, TaskId, u32)>,

    // ----- stall detection (stall.rs) and checks -------------------------
    /// The grace period a stall was last reported for (`completed + 1` at
    /// the time): at most one report per grace period.
    stall_reported: u64,
    /// Some task has used `rcu_read_lock()`: the guarantee checker runs at
    /// each grace period's end. Only goes from false to true.
    readers_seen: bool,
    /// Counted in the measured part of the run only.
    stats: crate::result::RcuStats,
    /// `kfree_rcu()`'s per-CPU batches (kfree.rs).
    kfree: kfree::Kfree,
}

impl Rcu {
    /// Whether the scenario uses RCU: its grace periods move, so a read of
    /// their sequence must happen at its own time.
    pub(crate) fn in_use(&self) -> bool {
        self.gp_kthread != NO_TASK
    }

    /// RCU's counts for the result, if the scenario uses RCU.
    pub(crate) fn stats(&self) -> Option<crate::result::RcuStats> {
        (self.gp_kthread != NO_TASK).then(|| {
            let mut s = self.stats;
            self.kfree.finish(&mut s);
            s
        })
    }

    /// `ct_idle_enter()`: CPU `c` enters an extended quiescent state (the
    /// scheduler calls it each time the CPU goes idle).
    pub(crate) fn eqs_enter(&mut self, c: u32) {
        self.idle_seq[c as usize] += 1;
    }

    /// What stays true of the grace-period state between events, checked
    /// in debug builds after each RCU event.
    fn check_invariants(&self) {
        if !cfg!(any(debug_assertions, feature = "invariants")) {
            return;
        }
        let pending = self.qs_pending.iter().filter(|&&p| p).count() as u32;
        let exp_pending = self.exp_pending.iter().filter(|&&p| p).count() as u32;
        let noted_without_pending =
            (0..self.qs_noted.len()).find(|&c| self.qs_noted[c] && !self.qs_pending[c]);
        let late_exp = self
            .exp_waiters
            .iter()
            .find(|(gp, ..)| *gp <= self.exp_completed);
        crate::invariants::check(if pending != self.remaining {
            Err(format!(
                "RCU: {pending} CPUs owe the grace period a quiescent state, `remaining` says {}",
                self.remaining
            ))
        } else if self.phase != GpPhase::Running && pending > 0 {
            Err(format!(
                "RCU: {pending} quiescent states owed with no grace period running"
            ))
        } else if let Some(c) = noted_without_pending {
            Err(format!(
                "RCU: CPU{c} has a quiescent state noted but none owed"
            ))
        } else if exp_pending != self.exp_remaining {
            Err(format!(
                "RCU: {exp_pending} CPUs owe the expedited grace period, `exp_remaining` says {}",
                self.exp_remaining
            ))
        } else if let Some((gp, t, _)) = late_exp {
            Err(format!(
                "RCU: task {t} waits for expedited grace period {gp}, already completed ({})",
                self.exp_completed
            ))
        } else {
            Ok(())
        });
    }

    pub fn new(nr_cpus: usize) -> Self {
        Rcu {
            gp_kthread: NO_TASK,
            kthread: gp_kthread::State::WaitRequest,
            gp_wake_queued: false,
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
            done: vec![Default::default(); nr_cpus],
            softirq_raised: vec![false; nr_cpus],
            n_cbs: vec![0; nr_cpus],
            blimit: Vec::new(),
            lazy: vec![Vec::new(); nr_cpus],
            lazy_gen: vec![0; nr_cpus],
            rcuop: vec![NO_TASK; nr_cpus],
            rcuop_batch: vec![Vec::new(); nr_cpus],
            sr_waiters: Vec::new(),
            gp_starts: Vec::new(),
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
            kfree: Default::default(),
            stall_reported: 0,
            readers_seen: false,
        }
    }
}

/// What RCU needs from the rest of the kernel beyond the core
/// ([`CoreEnv`]: time, costs, CPUs, tasks, accounting, the event sink) and
/// the scheduler's verbs ([`SchedVerbs`]): its own state, the machine's
/// knobs, and the verbs of the IPI layer and the locks whose callbacks it
/// runs. Implemented for the kernel in `sim/rcu_env.rs`.
pub(crate) trait RcuEnv: CoreEnv + SchedVerbs {
    fn rcu(&self) -> &Rcu;
    fn rcu_mut(&mut self) -> &mut Rcu;
    fn spec(&self) -> &crate::Spec;
    /// A jiffy: the scheduler tick's period.
    fn jiffy(&self) -> Nanos;
    /// `try_to_wake_up()`s that have woken a task so far (any context).
    fn wakeups_issued(&self) -> u64;
    /// Wakes kthread `t` from CPU `from`'s softirq or IRQ context.
    fn wake_kthread(&mut self, t: TaskId, from: u32);
    /// Charges `d` of kernel time to what CPU `c` is doing now: the
    /// running task's sys time, or else the CPU's next interrupt or
    /// context switch (as a hook's time is charged).
    fn charge_context(&mut self, c: u32, d: Nanos);
    /// Sets CPU `c`'s need_resched (from its own IPI handler).
    fn set_need_resched(&mut self, c: u32);
    /// `raise_softirq(RCU_SOFTIRQ)` on CPU `c`: run in its interrupt.
    fn raise_rcu_softirq(&mut self, c: u32);
    /// CPU `c` is in softirq context from `start` (for its accounting).
    fn softirq_from(&mut self, c: u32, start: Nanos);
    /// An IPI (`csd`) to CPU `target`, sent at `at` from CPU `from`.
    fn queue_csd(&mut self, target: u32, csd: crate::cpu::Csd, at: Nanos, from: u32);
    /// `rcu_sync_func()` of percpu_rw_semaphore `sem`.
    fn rcu_sync_func(&mut self, sem: u32);
    /// The RCU callback of a registered object type, for `instance` of
    /// declared object `object` ([`crate::event::RcuCallback::Object`]).
    fn object_rcu_callback(&mut self, object: u32, instance: u32);
    // The ops' needs (ops.rs).
    /// The task's name, CPU and place in its program, for a report.
    fn where_is(&self, t: TaskId) -> (String, u32, String);
    /// `preempt_enable()` as an op of task `t` on CPU `c`.
    fn preempt_enable_op(&mut self, c: u32, t: TaskId) -> crate::mechanism::Flow;
}

pub(crate) use callbacks::RcuCallbacks;
pub(crate) use exp::RcuExp;
pub(crate) use kfree::RcuKfree;
pub(crate) use nocb::RcuNocb;
pub(crate) use stall::RcuStall;
pub(crate) use tree::RcuTree;

/// RCU's event handler.
pub(crate) trait RcuEvents: RcuEnv {
    /// Routes an RCU event.
    fn on_rcu_event(&mut self, e: RcuEvent) -> smpsim_engine::Handled {
        match e {
            RcuEvent::WakeGpKthread { from } => {
                self.rcu_mut().gp_wake_queued = false;
                self.wake_kthread(self.rcu().gp_kthread, from)
            }
            RcuEvent::ExpStart => self.rcu_exp_start(),
            RcuEvent::Core { cpu } => self.rcu_core(cpu),
            RcuEvent::Callback { cb, .. } => self.rcu_callback(cb),
            RcuEvent::Softirq { cpu } => self.rcu_softirq_raise(cpu),
            RcuEvent::LazyFlush { cpu, gen } => {
                if self.rcu().lazy_gen[cpu as usize] != gen {
                    return smpsim_engine::Handled::Stale;
                }
                self.rcu_lazy_flush(cpu);
            }
            RcuEvent::KfreeMonitor { cpu, gen } => {
                let krc_gen = self.rcu().kfree_monitor_gen(cpu);
                if krc_gen != gen {
                    return smpsim_engine::Handled::Stale;
                }
                self.kfree_monitor_timer(cpu);
            }
        }
        self.rcu().check_invariants();
        smpsim_engine::Handled::Done
    }
}
impl<K: RcuEnv + ?Sized> RcuEvents for K {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_state_holds_its_invariants() {
        Rcu::new(4).check_invariants();
    }

    #[test]
    #[cfg(any(debug_assertions, feature = "invariants"))]
    #[should_panic(expected = "`remaining` says 1")]
    fn a_miscounted_grace_period_is_caught() {
        let mut rcu = Rcu::new(4);
        rcu.phase = GpPhase::Running;
        rcu.remaining = 1;
        rcu.check_invariants();
    }

    #[test]
    #[cfg(any(debug_assertions, feature = "invariants"))]
    #[should_panic(expected = "noted but none owed")]
    fn a_noted_quiescent_state_nobody_owes_is_caught() {
        let mut rcu = Rcu::new(4);
        rcu.qs_noted[2] = true;
        rcu.check_invariants();
    }
}
