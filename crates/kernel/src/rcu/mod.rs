//! Tree RCU grace periods (kernel/rcu/tree.c, tree_exp.h), for a kernel
//! without `CONFIG_PREEMPT_RCU`: any preempt-disabled region is a read-side
//! critical section.
//!
//! Normal grace periods are driven by the GP kthread (modelled as timed
//! steps that use no CPU): `rcu_gp_init()` (cost per rcu_node), then the
//! wait for every online CPU's quiescent state. A CPU reports one at a
//! context switch, or at the scheduler tick when it interrupted user mode;
//! dyntick-idle CPUs (idle, tick stopped) are reported by the
//! force-quiescent-state scan, the first `jiffies_till_first_fqs` after the
//! start and then every `jiffies_till_next_fqs`; a CPU still holding out
//! after `jiffies_till_sched_qs` is sent a reschedule IPI. Then
//! `rcu_gp_cleanup()`. Callbacks (`call_rcu()`, and the wakeup of a
//! `synchronize_rcu()` caller) run from RCU_SOFTIRQ at the queuing CPU's
//! next tick after the grace period ended.
//!
//! Expedited grace periods (`synchronize_rcu_expedited()`, or any
//! `synchronize_rcu()` under `rcu_expedite_gp()`) are driven from a
//! workqueue: IPIs go to every online CPU that is not idle, leaf rcu_node by
//! leaf rcu_node in parallel; `rcu_exp_handler()` reports a quiescent state
//! at once unless the CPU is in a preempt-disabled region, in which case it
//! comes at the CPU's next context switch.

use smpsim_engine::Nanos;

use crate::cpu::{Activity, Csd};
pub use crate::event::RcuCallback;
use crate::event::*;
use crate::task::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GpPhase {
    Idle,
    /// The GP kthread has been asked to start one.
    Starting,
    Running,
}

pub struct Rcu {
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
    fqs_gen: u32,
    pub expedite_nesting: u32,
    exp_phase: GpPhase,
    pub exp_completed: u64,
    exp_requested: bool,
    exp_pending: Vec<bool>,
    /// The CPU owes an expedited QS at its next context switch.
    exp_deferred: Vec<bool>,
    exp_remaining: u32,
    exp_waiters: Vec<(u64, TaskId, u32)>,
    pub nr_gps: u64,
    pub nr_exp_gps: u64,
    pub gp_time: Nanos,
}

impl Rcu {
    pub fn new(nr_cpus: usize) -> Self {
        Rcu {
            phase: GpPhase::Idle,
            completed: 0,
            gp_start: 0,
            qs_pending: vec![false; nr_cpus],
            remaining: 0,
            requested: false,
            callbacks: Vec::new(),
            unrequested: Vec::new(),
            core_pending: vec![false; nr_cpus],
            fqs_gen: 0,
            expedite_nesting: 0,
            exp_phase: GpPhase::Idle,
            exp_completed: 0,
            exp_requested: false,
            exp_pending: vec![false; nr_cpus],
            exp_deferred: vec![false; nr_cpus],
            exp_remaining: 0,
            exp_waiters: Vec::new(),
            nr_gps: 0,
            nr_exp_gps: 0,
            gp_time: 0,
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

    /// The normal grace period a request made now needs.
    fn rcu_request(&mut self) -> u64 {
        match self.rcu.phase {
            GpPhase::Idle => {
                self.rcu.phase = GpPhase::Starting;
                // Wake the GP kthread.
                let wake = self.cost.wakeup + self.cost.context_switch;
                self.at(self.now + wake, Event::Rcu(RcuEvent::GpStart));
                self.rcu.completed + 1
            }
            GpPhase::Starting => self.rcu.completed + 1,
            GpPhase::Running => {
                self.rcu.requested = true;
                self.rcu.completed + 2
            }
        }
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

    /// `rcu_core()` on CPU `c`: request grace periods for its new callbacks.
    pub(crate) fn rcu_core(&mut self, c: u32) {
        self.rcu.core_pending[c as usize] = false;
        let mut i = 0;
        while i < self.rcu.unrequested.len() {
            if self.rcu.unrequested[i].0 == c {
                let (_, cb) = self.rcu.unrequested.remove(i);
                let target = self.rcu_request();
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

    pub(crate) fn rcu_gp_start(&mut self) {
        let cost = self.rcu_tree_cost();
        self.rcu.phase = GpPhase::Running;
        self.rcu.requested = false;
        self.rcu.gp_start = self.now;
        self.rcu.remaining = 0;
        for c in 0..self.nr_cpus as usize {
            let online = self.cpus[c].online;
            self.rcu.qs_pending[c] = online;
            self.rcu.remaining += online as u32;
        }
        self.rcu.fqs_gen = self.rcu.fqs_gen.wrapping_add(1);
        let gen = self.rcu.fqs_gen;
        self.at(
            self.jiffies_timeout(self.now + cost, self.fqs_first() / self.jiffy()),
            Event::Rcu(RcuEvent::Fqs { gen }),
        );
        if self.rcu.remaining == 0 {
            self.rcu_gp_done();
        }
    }

    /// A quiescent state on CPU `c` (context switch, user-mode tick, idle).
    pub(crate) fn rcu_qs(&mut self, c: u32) {
        let cu = c as usize;
        if self.rcu.exp_deferred[cu] {
            self.rcu.exp_deferred[cu] = false;
            self.rcu_exp_qs(c);
        }
        if self.rcu.phase == GpPhase::Running && self.rcu.qs_pending[cu] {
            self.rcu.qs_pending[cu] = false;
            self.rcu.remaining -= 1;
            if self.rcu.remaining == 0 {
                self.rcu_gp_done();
            }
        }
    }

    fn rcu_gp_done(&mut self) {
        // Stop FQS scans of this GP; clean up after one pass of the tree.
        self.rcu.fqs_gen = self.rcu.fqs_gen.wrapping_add(1);
        let cost = self.rcu_tree_cost();
        self.at(self.now + cost, Event::Rcu(RcuEvent::GpEnd));
    }

    /// The force-quiescent-state scan of the GP kthread.
    pub(crate) fn rcu_fqs(&mut self, gen: u32) -> bool {
        if gen != self.rcu.fqs_gen || self.rcu.phase != GpPhase::Running {
            return false;
        }
        let holdout = self.now - self.rcu.gp_start >= self.sched_qs_after();
        for c in 0..self.nr_cpus {
            if !self.rcu.qs_pending[c as usize] {
                continue;
            }
            let cpu = &self.cpus[c as usize];
            let idle = !cpu.online || (cpu.curr == NO_TASK && cpu.activity == Activity::Idle);
            if idle {
                self.rcu_qs(c);
            } else if holdout {
                // rcu_implicit_dynticks_qs(): resched_cpu() the holdout.
                self.at(
                    self.now + self.cost.ipi_latency,
                    Event::Sched(SchedEvent::Resched { cpu: c }),
                );
            }
        }
        if self.rcu.phase == GpPhase::Running && self.rcu.remaining > 0 && gen == self.rcu.fqs_gen {
            self.at(
                self.jiffies_timeout(self.now, self.fqs_next() / self.jiffy()),
                Event::Rcu(RcuEvent::Fqs { gen }),
            );
        }
        true
    }

    /// `rcu_gp_cleanup()` is done: callbacks become ready, and the next
    /// grace period starts if one is needed.
    pub(crate) fn rcu_gp_end(&mut self) {
        self.rcu.completed += 1;
        self.rcu.nr_gps += 1;
        self.rcu.gp_time += self.now - self.rcu.gp_start;
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
        if self.rcu.requested || !self.rcu.callbacks.is_empty() {
            self.rcu.phase = GpPhase::Starting;
            self.at(self.now, Event::Rcu(RcuEvent::GpStart));
        } else {
            self.rcu.phase = GpPhase::Idle;
        }
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
            self.queue_csd(c, Csd::RcuExp, sent);
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
        self.rcu.nr_exp_gps += 1;
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
            RcuEvent::GpStart => self.rcu_gp_start(),
            RcuEvent::Fqs { gen } => {
                if !self.rcu_fqs(gen) {
                    return smpsim_engine::Handled::Stale;
                }
            }
            RcuEvent::GpEnd => self.rcu_gp_end(),
            RcuEvent::ExpStart => self.rcu_exp_start(),
            RcuEvent::Core { cpu } => self.rcu_core(cpu),
            RcuEvent::Callback { cb, .. } => self.rcu_callback(cb),
        }
        smpsim_engine::Handled::Done
    }
}
