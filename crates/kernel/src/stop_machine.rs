//! `stop_machine()` (kernel/stop_machine.c): every online CPU stops what it
//! runs and spins with interrupts off while one of them runs a function.
//!
//! # The life of a call
//!
//! 1. **Queueing.** `stop_machine_cpuslocked()` stores
//!    `MULTI_STOP_PREPARE` in `msdata` (`set_state()`; `msdata` lives on
//!    the caller's stack, one cache line holding `state` and `thread_ack`)
//!    and calls `stop_cpus()`, whose `queue_stop_cpus_work()` queues a
//!    `cpu_stop_work` on every online CPU's `cpu_stopper`, with preemption
//!    disabled, one CPU after the other: `cpu_stop_queue_work()` takes the
//!    stopper's lock (an RMW on that CPU's stopper line), adds the work,
//!    unlocks, and wakes `migration/N` (`wake_up_q()`, which costs the
//!    caller the machine's `wakeup`). The caller then sleeps in
//!    `wait_for_completion()`.
//! 2. **The stoppers run.** `migration/N` is in the stop scheduling class,
//!    above every real-time priority: once woken it preempts whatever runs
//!    on its CPU, but only when that CPU can be preempted. A task in a
//!    preempt-disabled or IRQ-disabled section keeps its CPU until the
//!    section ends, and every other CPU waits for it in step 3. The
//!    caller's own stopper preempts the caller at the `preempt_enable()`
//!    that ends the queueing.
//! 3. **`multi_cpu_stop()`** on every CPU: a loop reading `msdata->state`.
//!    A CPU that sees a new state acts on it (MULTI_STOP_DISABLE_IRQ:
//!    interrupts off; MULTI_STOP_RUN: the active CPU runs `fn`) and acks it
//!    with `atomic_dec_and_test(&msdata->thread_ack)`; the CPU whose ack
//!    takes the count to zero resets it and stores the next state
//!    (`ack_state()` -> `set_state()`): PREPARE, DISABLE_IRQ, RUN, EXIT.
//!    No CPU sees a state before every CPU has acked the one before.
//! 4. **Completion.** Back in `cpu_stopper_thread()` each stopper
//!    decrements `done->nr_todo` (`cpu_stop_signal_done()`, another shared
//!    line) with preemption still disabled; the last one `complete()`s,
//!    waking the caller.
//!
//! # The shared line
//!
//! Every read and ack of step 3 is a transaction on the `msdata` line
//! ([`Line`]), served one at a time in the order the CPUs ask for it; the
//! spinning is not simulated iteration by iteration. A spinning CPU that
//! holds a copy of the line costs nothing until a write invalidates it;
//! then it asks for the line once, and again only after that read has been
//! served. A write thus costs a re-fetch by every CPU spinning on a copy,
//! queued behind the requests made before it. When a new state appears,
//! every CPU re-fetches it and then acks it, one after the other: a state
//! costs about two transfers per CPU, and a stop_machine's time grows with
//! the number of CPUs through the machine's line-transfer costs.
//!
//! Until the last CPU arrives nothing can pass PREPARE: the line's queue is
//! worked off as arrivals come. Once every CPU is in, what follows depends
//! on the line alone and is computed at once: when each CPU sees each
//! state, when the active one runs `fn`, when each leaves the loop and
//! signals `done`. Two simplifications follow from that: interrupts count
//! as disabled on every CPU from the last arrival (the kernel disables them
//! one line round later, at DISABLE_IRQ), and an interrupt a CPU takes
//! while it spins in PREPARE does not delay its acks.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use smpsim_engine::{Handled, Nanos};

use crate::coherence::Line;
use crate::env::{CoreEnv, SchedVerbs};
use crate::event::{Event, SchedEvent, StopEvent};
use crate::kthread::KthreadStep;
use crate::mechanism::Flow;
use crate::program::{Dist, Expr, Op, StopOp, END_OF_TIME};
use crate::task::*;

/// What `stop_machine()` needs from the rest of the kernel: its own
/// stoppers (with the machine's costs beside them, for the lines), time,
/// which CPUs are online, the tasks, the event sink, and the scheduler's
/// and interpreter's verbs. Implemented for the kernel in
/// `sim/rcu_env.rs`.
pub(crate) trait StopEnv: CoreEnv + SchedVerbs {
    fn stop(&self) -> &Stoppers;
    fn stop_mut(&mut self) -> &mut Stoppers;
    /// The stoppers and the machine's costs at once.
    fn stop_parts(&mut self) -> (&mut Stoppers, &crate::costs::CostNs);
    fn cpu_online(&self, c: u32) -> bool;
    /// CPU `c` has interrupts off from `since`, unless they already were.
    fn irq_off_from(&mut self, c: u32, since: Nanos);
    // The scheduler's.
    // The interpreter's.
    fn bad_cpu(&mut self, c: u32, op: &str, cpu: i64);
}

impl<K: StopEnv> crate::mechanism::MechanismOp<K> for StopOp {
    fn run(&self, k: &mut K, c: u32, t: TaskId, resume: Resume) -> Flow {
        match self {
            StopOp::StopMachine { func, cpu } => {
                let step = match resume {
                    Resume::StopMachine(s) => Some(s),
                    _ => None,
                };
                k.stop_machine_cpuslocked(c, t, func, cpu.as_ref(), step)
            }
        }
    }
}

/// `stop_sched_class` runs before `rt_sched_class`: the stoppers are
/// real-time tasks above the 99 priorities a task can be given.
pub const STOP_PRIO: u8 = 100;

/// `enum multi_stop_state`, as indices of [`StopCpu::seen`].
pub const MULTI_STOP_NONE: usize = 0;
pub const MULTI_STOP_PREPARE: usize = 1;
pub const MULTI_STOP_DISABLE_IRQ: usize = 2;
pub const MULTI_STOP_RUN: usize = 3;
pub const MULTI_STOP_EXIT: usize = 4;
const STATES: usize = 5;

/// No CPU (an active CPU that is not online: `fn` runs nowhere).
const NO_CPU: u32 = u32::MAX;

/// Whether a scenario calls `stop_machine` (and so gets the stoppers).
pub fn used_by(spec: &crate::Spec) -> bool {
    spec.task_groups.iter().any(|g| {
        g.program
            .ops
            .iter()
            .any(|op| matches!(op, Op::Stop(StopOp::StopMachine { .. })))
    })
}

/// `migration/N`, one per CPU (`smpboot_register_percpu_thread()`: bound
/// to its CPU, in the stop class, asleep until work is queued).
pub const KTHREAD: crate::kthread::KthreadInfo = crate::kthread::KthreadInfo {
    name: "migration",
    used_by,
    spawn: crate::kthread::Spawn::PerCpu {
        policy: crate::spec::Policy::Fifo(STOP_PRIO),
    },
    step: |k, c, t| {
        let step = k.cpu_stopper_thread(c, t);
        k.stop().check_invariants();
        step
    },
    started: |k, ids| *k.stop_mut() = Stoppers::new(k.nr_cpus(), ids),
};

/// One CPU's part in a call, as recorded for `Kernel::stop_machine_log`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StopCpu {
    pub cpu: u32,
    /// When its stopper entered `multi_cpu_stop()`.
    pub arrived: Nanos,
    /// When it saw each state (indexed by `MULTI_STOP_*`).
    pub seen: [Nanos; STATES],
    /// When its ack of each state completed.
    pub acked: [Nanos; STATES],
    /// When it left the loop (its EXIT ack completed).
    pub exit: Nanos,
    /// When its `cpu_stop_signal_done()` completed.
    pub signalled: Nanos,
}

/// One `stop_machine_cpuslocked()` call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StopRecord {
    pub caller_cpu: u32,
    /// The CPU `fn` runs on (`u32::MAX` if none is online).
    pub active_cpu: u32,
    pub called_at: Nanos,
    pub returned_at: Nanos,
    /// When the last stopper's `complete()` ran.
    pub completed_at: Nanos,
    pub cpus: Vec<StopCpu>,
    /// Each run of `fn`: CPU, start, end.
    pub fn_runs: Vec<(u32, Nanos, Nanos)>,
    /// Transactions on the `msdata` line that moved it.
    pub msdata_transfers: u64,
}

/// What a stopper does when it next runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `cpu_stopper_thread()`: take a queued work, or sleep.
    Idle,
    /// The work is off the list: enter `multi_cpu_stop()`.
    Took,
    /// Its spin in `multi_cpu_stop()` ended: the active CPU saw RUN, or the
    /// CPU left the loop.
    Spinning,
    /// The active CPU ran `fn`: back to spinning until EXIT.
    RanFn,
    /// `cpu_stop_signal_done()` ran.
    Signalled,
}

/// A request for the `msdata` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Req {
    /// `READ_ONCE(msdata->state)` missed: fetch the line.
    Read,
    /// `atomic_dec_and_test(&msdata->thread_ack)`.
    Ack,
}

/// The per-CPU stoppers and the call under way (one at a time:
/// `stop_cpus_mutex`). Changed only by this file.
pub struct Stoppers {
    /// `migration/N`, by CPU (empty if the scenario never stops the machine).
    thread: Vec<TaskId>,
    /// Each CPU's `cpu_stopper` (its `lock` and `works`).
    // invariant: `lock`, `work`, `step`, `cpus`, `in_call`, `cur` and
    // `fn_done` have one entry per stopper (`thread.len()`: every CPU, or
    // none) (`check_invariants`).
    lock: Vec<Line>,
    /// A `cpu_stop_work` is on the CPU's `works` list.
    work: Vec<bool>,
    step: Vec<Step>,
    /// `stop_cpus_mutex` is held, and the callers sleeping on it.
    // invariant: `busy` exactly when a call is under way, that is when
    // `caller` is a task (`check_invariants`).
    busy: bool,
    waiters: VecDeque<TaskId>,
    // The call under way.
    caller: TaskId,
    caller_cpu: u32,
    active: u32,
    func: Nanos,
    /// The CPUs in the call, and how many have entered its loop.
    // invariant: `arrived` <= `num_threads` (`check_invariants`).
    num_threads: u32,
    arrived: u32,
    /// `msdata->state` and `msdata->thread_ack`, on the `msdata` line.
    // invariant: `state` <= `STATES` (one past EXIT once EXIT is acked by
    // all), `thread_ack` <= `num_threads` (`check_invariants`).
    state: usize,
    thread_ack: u32,
    msdata: Line,
    /// `done->nr_todo`'s line.
    done: Line,
    cpus: Vec<StopCpu>,
    /// CPUs in the call, and the state each saw last (`curstate`).
    in_call: Vec<bool>,
    cur: Vec<usize>,
    fn_done: Vec<bool>,
    /// CPUs spinning on a valid copy of `msdata` (no read queued).
    pollers: Vec<u32>,
    /// Requests for the `msdata` line not yet served: time, order, CPU.
    queue: BinaryHeap<Reverse<(Nanos, u64, u32, Req)>>,
    seq: u64,
    /// CPUs leaving the loop, in the order their EXIT acks were served.
    exits: Vec<(Nanos, u32)>,
    completer: u32,
    complete: bool,
    called_at: Nanos,
    completed_at: Nanos,
    transfers_at_call: u64,
    fn_runs: Vec<(u32, Nanos, Nanos)>,
    /// Every call's timeline, when asked for.
    log: Option<Vec<StopRecord>>,
}

impl Stoppers {
    /// The stoppers of a machine of `nr_cpus` CPUs, `thread[N]` being
    /// `migration/N` (none if `thread` is empty).
    pub(crate) fn new(nr_cpus: u32, thread: Vec<TaskId>) -> Self {
        let n = if thread.is_empty() {
            0
        } else {
            nr_cpus as usize
        };
        Stoppers {
            thread,
            lock: (0..n as u32)
                .map(|c| Line::new(nr_cpus as usize, c))
                .collect(),
            work: vec![false; n],
            step: vec![Step::Idle; n],
            busy: false,
            waiters: VecDeque::new(),
            caller: NO_TASK,
            caller_cpu: 0,
            active: NO_CPU,
            func: 0,
            num_threads: 0,
            arrived: 0,
            state: MULTI_STOP_NONE,
            thread_ack: 0,
            msdata: Line::new(nr_cpus as usize, 0),
            done: Line::new(nr_cpus as usize, 0),
            cpus: vec![StopCpu::default(); n],
            in_call: vec![false; n],
            cur: vec![MULTI_STOP_NONE; n],
            fn_done: vec![false; n],
            pollers: Vec::with_capacity(n),
            queue: BinaryHeap::with_capacity(2 * n),
            seq: 0,
            exits: Vec::with_capacity(n),
            completer: NO_CPU,
            complete: false,
            called_at: 0,
            completed_at: 0,
            transfers_at_call: 0,
            fn_runs: Vec::new(),
            log: None,
        }
    }

    /// What stays true of the stoppers between events, checked in debug
    /// builds after each stop_machine event and each stopper step.
    fn check_invariants(&self) {
        if !cfg!(any(debug_assertions, feature = "invariants")) {
            return;
        }
        let n = self.thread.len();
        let lens = [
            self.lock.len(),
            self.work.len(),
            self.step.len(),
            self.cpus.len(),
            self.in_call.len(),
            self.cur.len(),
            self.fn_done.len(),
        ];
        crate::invariants::check(if lens.iter().any(|&l| l != n) {
            Err(format!(
                "stop_machine: {n} stoppers but per-CPU state of lengths {lens:?}"
            ))
        } else if self.busy != (self.caller != NO_TASK) {
            Err(format!(
                "stop_machine: stop_cpus_mutex {} but the caller is {}",
                if self.busy { "held" } else { "free" },
                self.caller
            ))
        } else if self.arrived > self.num_threads {
            Err(format!(
                "stop_machine: {} CPUs arrived in a call of {}",
                self.arrived, self.num_threads
            ))
        } else if self.state > STATES || self.thread_ack > self.num_threads {
            Err(format!(
                "stop_machine: state {} with {} acks to go of {}",
                self.state, self.thread_ack, self.num_threads
            ))
        } else {
            Ok(())
        });
    }

    /// Queues a request for the `msdata` line at `at`.
    fn request(&mut self, at: Nanos, cpu: u32, req: Req) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, cpu, req)));
    }
}

pub(crate) trait StopMachine: StopEnv {
    /// Keeps the timeline of every `stop_machine` call from now on.
    fn log_stop_machine(&mut self) {
        self.stop_mut().log = Some(Vec::new());
    }

    /// The calls logged since [`Self::log_stop_machine`].
    fn stop_machine_log(&self) -> &[StopRecord] {
        self.stop().log.as_deref().unwrap_or(&[])
    }

    /// `stop_machine_cpuslocked(fn, NULL, cpus)` at `step`.
    fn stop_machine_cpuslocked(
        &mut self,
        c: u32,
        t: TaskId,
        func: &Dist,
        cpu: Option<&Expr>,
        step: Option<StopMachineStep>,
    ) -> Flow {
        match step {
            None => self.queue_stop_cpus_work(c, t, func, cpu),
            Some(StopMachineStep::Queued) => {
                // queue_stop_cpus_work()'s preempt_enable(): the caller's
                // own stopper, woken in the loop, takes the CPU here.
                self.task_mut(t).resume = Resume::StopMachine(StopMachineStep::Wait);
                if self.preempt_enable(t) {
                    self.schedule(c);
                    return Flow::Stop;
                }
                self.stop_machine_wait(c, t)
            }
            Some(StopMachineStep::Wait) => self.stop_machine_wait(c, t),
        }
    }

    /// `stop_cpus()`: `stop_cpus_mutex`, `set_state(PREPARE)`, then
    /// `queue_stop_cpus_work()` over the online CPUs; the caller's time for
    /// the loop is one batch of sys work, and each stopper is woken when
    /// the loop reaches its CPU.
    fn queue_stop_cpus_work(&mut self, c: u32, t: TaskId, func: &Dist, cpu: Option<&Expr>) -> Flow {
        if self.stop().busy {
            // mutex_lock(&stop_cpus_mutex): another call is under way.
            self.stop_mut().waiters.push_back(t);
            return self.sleep_until_woken(c, t, Resume::Op);
        }
        let first_online = (0..self.nr_cpus()).find(|&k| self.cpu_online(k));
        let active = match cpu {
            // cpus == NULL: cpumask_first(cpu_online_mask).
            None => first_online.unwrap_or(NO_CPU),
            Some(e) => {
                let v = self.eval(t, e);
                if v < 0 || v >= self.nr_cpus() as i64 {
                    self.bad_cpu(c, "stop_machine_cpuslocked", v);
                    NO_CPU
                } else if self.cpu_online(v as u32) {
                    v as u32
                } else {
                    NO_CPU
                }
            }
        };
        let now = self.now();
        let func = func.sample(&mut self.task_mut(t).rng);
        let s = self.stop_mut();
        s.busy = true;
        s.caller = t;
        s.caller_cpu = c;
        s.active = active;
        s.func = func;
        s.arrived = 0;
        s.state = MULTI_STOP_PREPARE;
        s.pollers.clear();
        s.queue.clear();
        s.exits.clear();
        s.fn_runs.clear();
        s.completer = NO_CPU;
        s.complete = false;
        s.called_at = now;
        s.transfers_at_call = s.msdata.transfers;
        let mut n = 0;
        for k in 0..self.nr_cpus() {
            let online = self.cpu_online(k);
            let s = self.stop_mut();
            s.in_call[k as usize] = online;
            s.cur[k as usize] = MULTI_STOP_NONE;
            s.fn_done[k as usize] = false;
            s.cpus[k as usize] = StopCpu {
                cpu: k,
                ..StopCpu::default()
            };
            n += online as u32;
        }
        // num_threads = num_online_cpus(); set_state(&msdata, PREPARE);
        // cpu_stop_init_done(&done, n): stores to the caller's stack.
        let (s, cost) = self.stop_parts();
        s.num_threads = n;
        s.thread_ack = n;
        let mut at = s.msdata.store(cost, c, now);
        at = s.done.store(cost, c, at);
        self.preempt_disable(t);
        for k in 0..self.nr_cpus() {
            if !self.stop().in_call[k as usize] {
                continue;
            }
            // cpu_stop_queue_work(): raw_spin_lock_irqsave(&stopper->lock),
            // list_add_tail(), unlock (the line is held: a hit).
            let (s, cost) = self.stop_parts();
            let line = &mut s.lock[k as usize];
            let locked = line.rmw(cost, c, at);
            let unlocked = line.store(cost, c, locked);
            self.stop_mut().work[k as usize] = true;
            self.at(unlocked, Event::Stop(StopEvent::Wake { cpu: k }));
            // wake_up_q(): try_to_wake_up() of migration/k.
            at = unlocked + self.cost().wakeup;
        }
        let task = self.task_mut(t);
        task.batch.push(Mode::Sys, at - now);
        task.resume = Resume::StopMachine(StopMachineStep::Queued);
        self.arm_cpu(c, at);
        Flow::Stop
    }

    /// `wait_for_completion(&done.completion)`, then `stop_cpus_mutex` is
    /// released.
    fn stop_machine_wait(&mut self, c: u32, t: TaskId) -> Flow {
        if !self.stop().complete {
            return self.sleep_until_woken(c, t, Resume::StopMachine(StopMachineStep::Wait));
        }
        let now = self.now();
        let s = self.stop_mut();
        if let Some(log) = &mut s.log {
            log.push(StopRecord {
                caller_cpu: s.caller_cpu,
                active_cpu: s.active,
                called_at: s.called_at,
                returned_at: now,
                completed_at: s.completed_at,
                cpus: (0..s.cpus.len())
                    .filter(|&k| s.in_call[k])
                    .map(|k| s.cpus[k].clone())
                    .collect(),
                fn_runs: s.fn_runs.clone(),
                msdata_transfers: s.msdata.transfers - s.transfers_at_call,
            });
        }
        self.stop_mut().busy = false;
        self.stop_mut().caller = NO_TASK;
        // mutex_unlock(&stop_cpus_mutex) wakes the first waiter.
        if let Some(w) = self.stop_mut().waiters.pop_front() {
            if self.task(w).state == TaskState::Sleeping {
                self.wake_up_from(w, c, false);
            }
        }
        self.advance(t);
        Flow::Next
    }

    /// `cpu_stopper_thread()` (task `t`, current on CPU `c`): one step
    /// each time it has the CPU and nothing left of its last piece of work.
    /// The stopper is its CPU's (`me`), which is `c` unless a scenario took
    /// that CPU offline under it (the kernel's callers hold the hotplug
    /// lock, so that cannot happen there).
    fn cpu_stopper_thread(&mut self, c: u32, t: TaskId) -> KthreadStep {
        let me = self.task(t).index;
        let k = me as usize;
        loop {
            match self.stop().step[k] {
                Step::Idle => {
                    if !self.stop().work[k] {
                        return KthreadStep::Sleep { timeout: None };
                    }
                    // raw_spin_lock_irq(&stopper->lock); list_del_init();
                    // raw_spin_unlock_irq().
                    self.stop_mut().work[k] = false;
                    let now = self.now();
                    let (s, cost) = self.stop_parts();
                    let line = &mut s.lock[k];
                    let locked = line.rmw(cost, c, now);
                    let unlocked = line.store(cost, c, locked);
                    self.stop_mut().step[k] = Step::Took;
                    return KthreadStep::Work(unlocked - self.now());
                }
                Step::Took => {
                    // preempt_count_inc(); fn(arg) = multi_cpu_stop().
                    self.preempt_disable(t);
                    self.stop_mut().step[k] = Step::Spinning;
                    self.stop_spin(t);
                    self.multi_cpu_stop_arrive(me);
                    return KthreadStep::Spin;
                }
                Step::Spinning => {
                    if me == self.stop().active && !self.stop().fn_done[k] {
                        // MULTI_STOP_RUN on the active CPU: err = msdata->fn().
                        self.stop_mut().fn_done[k] = true;
                        self.stop_mut().step[k] = Step::RanFn;
                        let (start, func) = (self.now(), self.stop().func);
                        self.stop_mut().fn_runs.push((c, start, start + func));
                        return KthreadStep::Work(func);
                    }
                    // Out of the loop: local_irq_restore(flags), return, and
                    // cpu_stop_signal_done(done) with preemption still off.
                    self.task_mut(t).irq.irqs_off = false;
                    self.irq_off_end(c);
                    self.stop_mut().step[k] = Step::Signalled;
                    let signalled = self.stop().cpus[k].signalled;
                    return KthreadStep::Work(signalled.saturating_sub(self.now()));
                }
                Step::RanFn => {
                    self.stop_mut().step[k] = Step::Spinning;
                    self.stop_spin(t);
                    let (gen, exit) = (self.task(t).gen, self.stop().cpus[k].exit);
                    self.at(
                        exit.max(self.now()),
                        Event::Sched(SchedEvent::SpinEnd { task: t, gen }),
                    );
                    return KthreadStep::Spin;
                }
                Step::Signalled => {
                    if self.stop().completer == me && !self.stop().complete {
                        self.stop_machine_complete(c);
                    }
                    // preempt_count_dec(); goto repeat.
                    self.preempt_enable(t);
                    self.stop_mut().step[k] = Step::Idle;
                }
            }
        }
    }

    /// The stopper `t` starts spinning in `multi_cpu_stop()`.
    fn stop_spin(&mut self, t: TaskId) {
        let now = self.now();
        let task = self.task_mut(t);
        task.gen = task.gen.wrapping_add(1);
        task.wait.spin = Spin::StopMachine;
        task.wait.spin_done = false;
        task.wait.wait_start = now;
    }

    /// CPU `c`'s stopper enters `multi_cpu_stop()`: its first read of
    /// `msdata->state`. The last CPU in determines the rest of the call.
    fn multi_cpu_stop_arrive(&mut self, c: u32) {
        let now = self.now();
        self.serve_msdata(now);
        let s = self.stop_mut();
        s.arrived += 1;
        s.cpus[c as usize].arrived = now;
        s.request(now, c, Req::Read);
        if s.arrived < s.num_threads {
            self.serve_msdata(now);
            return;
        }
        self.serve_msdata(END_OF_TIME);
        self.multi_cpu_stop_settled();
    }

    /// Serves the `msdata` line's requests made up to `until`, in the order
    /// they were made, as `multi_cpu_stop()`'s loop makes them on each CPU.
    fn serve_msdata(&mut self, until: Nanos) {
        let (s, cost) = self.stop_parts();
        while let Some(&Reverse((at, _, cpu, req))) = s.queue.peek() {
            if at > until {
                break;
            }
            s.queue.pop();
            let k = cpu as usize;
            match req {
                Req::Read => {
                    let done = s.msdata.read(cost, cpu, at);
                    if s.state == s.cur[k] {
                        // Nothing new: spin on the copy until a write.
                        s.pollers.push(cpu);
                        continue;
                    }
                    s.cur[k] = s.state;
                    s.cpus[k].seen[s.state] = done;
                    let ack = if s.state == MULTI_STOP_RUN && cpu == s.active {
                        done + s.func
                    } else {
                        done
                    };
                    s.request(ack, cpu, Req::Ack);
                }
                Req::Ack => {
                    let done = s.msdata.rmw(cost, cpu, at);
                    let cur = s.cur[k];
                    s.cpus[k].acked[cur] = done;
                    s.thread_ack -= 1;
                    // Every CPU spinning on a copy misses and asks again.
                    let mut pollers = std::mem::take(&mut s.pollers);
                    for &p in &pollers {
                        s.request(done, p, Req::Read);
                    }
                    pollers.clear();
                    s.pollers = pollers;
                    if cur == MULTI_STOP_EXIT {
                        s.cpus[k].exit = done;
                        s.exits.push((done, cpu));
                    }
                    if s.thread_ack == 0 {
                        // set_state(): atomic_set(&thread_ack, num_threads);
                        // smp_wmb(); WRITE_ONCE(state, state + 1): the line
                        // is this CPU's, a hit.
                        let w = s.msdata.store(cost, cpu, done);
                        s.thread_ack = s.num_threads;
                        s.state += 1;
                        if cur != MULTI_STOP_EXIT {
                            s.request(w, cpu, Req::Read);
                        }
                    } else if cur != MULTI_STOP_EXIT {
                        s.pollers.push(cpu);
                    }
                }
            }
        }
    }

    /// Every CPU has left the loop (on the line's timeline): the
    /// `done->nr_todo` decrements, interrupts off on every CPU, and each
    /// stopper's end of spin.
    fn multi_cpu_stop_settled(&mut self) {
        let now = self.now();
        let (s, cost) = self.stop_parts();
        // cpu_stop_signal_done(): atomic_dec_and_test(&done->nr_todo), in
        // the order the CPUs leave the loop; the last one completes.
        for &(at, cpu) in &s.exits {
            s.cpus[cpu as usize].signalled = s.done.rmw(cost, cpu, at);
        }
        s.completer = s.exits.last().map_or(NO_CPU, |e| e.1);
        for k in 0..s.in_call.len() {
            if !self.stop().in_call[k] {
                continue;
            }
            let t = self.stop().thread[k];
            let seen = self.stop().cpus[k].seen;
            // MULTI_STOP_DISABLE_IRQ: local_irq_disable(); hard_irq_disable().
            self.task_mut(t).irq.irqs_off = true;
            let on = self.task(t).cpu;
            self.irq_off_from(on, seen[MULTI_STOP_DISABLE_IRQ].max(now));
            let end = if k as u32 == self.stop().active {
                seen[MULTI_STOP_RUN]
            } else {
                self.stop().cpus[k].exit
            };
            let gen = self.task(t).gen;
            self.at(end, Event::Sched(SchedEvent::SpinEnd { task: t, gen }));
        }
    }

    /// `complete(&done->completion)` by CPU `c`'s stopper: wakes the
    /// caller if it sleeps in `wait_for_completion()`.
    fn stop_machine_complete(&mut self, c: u32) {
        self.stop_mut().complete = true;
        self.stop_mut().completed_at = self.now();
        let caller = self.stop().caller;
        let task = &self.task(caller);
        if task.state == TaskState::Sleeping
            && task.resume == Resume::StopMachine(StopMachineStep::Wait)
        {
            self.wake_up_from(caller, c, false);
        }
    }

    /// Routes a stop_machine event.
    fn on_stop_event(&mut self, e: StopEvent) -> Handled {
        match e {
            StopEvent::Wake { cpu } => {
                let t = self.stop().thread[cpu as usize];
                if self.task(t).state == TaskState::Sleeping {
                    let from = self.stop().caller_cpu;
                    self.wake_up_from(t, from, false);
                }
            }
        }
        self.stop().check_invariants();
        Handled::Done
    }
}
impl<K: StopEnv + ?Sized> StopMachine for K {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_stoppers_hold_their_invariants() {
        Stoppers::new(4, Vec::new()).check_invariants();
        Stoppers::new(4, vec![4, 5, 6, 7]).check_invariants();
    }

    #[test]
    #[cfg(any(debug_assertions, feature = "invariants"))]
    #[should_panic(expected = "stop_cpus_mutex held but the caller is")]
    fn a_held_mutex_without_a_caller_is_caught() {
        let mut s = Stoppers::new(4, vec![4, 5, 6, 7]);
        s.busy = true;
        s.check_invariants();
    }

    #[test]
    #[cfg(any(debug_assertions, feature = "invariants"))]
    #[should_panic(expected = "5 CPUs arrived in a call of 4")]
    fn more_arrivals_than_cpus_in_the_call_are_caught() {
        let mut s = Stoppers::new(4, vec![4, 5, 6, 7]);
        s.num_threads = 4;
        s.arrived = 5;
        s.check_invariants();
    }
}
