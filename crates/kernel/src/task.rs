//! A task (`struct task_struct`): its scheduling state, where it is in its
//! program, and what it is doing on the CPU.

use smpsim_engine::{Nanos, Rng};

use crate::spec::Policy;

pub use crate::ids::{TaskId, NO_TASK};

/// A kernel thread's kind: its index among the kinds the run spawned
/// (`Kernel::kthreads`).
pub type Kthread = u8;

/// [`Task::affinity`] of a task that may run only on its own CPU.
pub const PINNED: u32 = u32::MAX;

/// Scheduler-visible state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Running,
    Runnable,
    /// TASK_UNINTERRUPTIBLE (mutex wait) or an hrtimer sleep.
    Sleeping,
    Exited,
}

/// CPU-time category of a stretch of task execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    User,
    Sys,
}

/// Up to four consecutive pieces of local work with their modes: a batch of
/// ops that touched no shared state, run as one interval.
///
/// The interpreter asks for the batch's length at every op it plans, so
/// the length is kept up to date rather than summed each time.
#[derive(Clone, Copy, Debug)]
pub struct Batch {
    /// The pieces' lengths, first `len` in use; none is 0.
    ns: [Nanos; Self::CAPACITY],
    modes: [Mode; Self::CAPACITY],
    len: u8,
    /// The pieces' sum, saturating: a scenario may ask for absurd
    /// durations; time must not wrap (the run ends at its horizon anyway).
    total: Nanos,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            ns: [0; Self::CAPACITY],
            modes: [Mode::User; Self::CAPACITY],
            len: 0,
            total: 0,
        }
    }
}

impl Batch {
    pub const CAPACITY: usize = 4;

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The mode of the piece running now (the first left), or `rest`
    /// when none is.
    pub fn current_mode(&self, rest: Mode) -> Mode {
        if self.len == 0 {
            return rest;
        }
        self.modes[0]
    }
    /// The mode of the piece running `elapsed` ns into the batch (the
    /// time since it was last consumed), or `rest` past its end.
    pub fn mode_at(&self, elapsed: Nanos, rest: Mode) -> Mode {
        let mut left = elapsed;
        for (&m, &ns) in self.modes[..self.len as usize].iter().zip(&self.ns) {
            if left < ns {
                return m;
            }
            left -= ns;
        }
        rest
    }
    pub fn is_full(&self) -> bool {
        self.len as usize == Self::CAPACITY
    }
    /// The pieces' sum (saturating).
    #[inline]
    pub fn total(&self) -> Nanos {
        self.total
    }
    /// Appends work; merges with the last part when the mode is the same.
    /// Returns false when full.
    pub fn push(&mut self, mode: Mode, ns: Nanos) -> bool {
        if ns == 0 {
            return true;
        }
        let len = self.len as usize;
        if len > 0 && self.modes[len - 1] == mode {
            let last = &mut self.ns[len - 1];
            *last = last.saturating_add(ns);
        } else if len == Self::CAPACITY {
            return false;
        } else {
            self.ns[len] = ns;
            self.modes[len] = mode;
            self.len += 1;
        }
        // Saturating sums of non-negative terms in any grouping are the
        // true sum capped at the maximum: this is the pieces' sum.
        self.total = self.total.saturating_add(ns);
        true
    }
    /// Consumes `elapsed` ns from the front, calling `charge` per mode.
    #[inline]
    pub fn consume(&mut self, elapsed: Nanos, mut charge: impl FnMut(Mode, Nanos)) {
        // The usual case: the batch ran to its end. Each piece is charged
        // whole, in order, as the piece-by-piece walk would (a capped
        // total does not say where the pieces end: that takes the walk).
        if elapsed >= self.total && self.total != Nanos::MAX {
            for i in 0..(self.len as usize).min(Self::CAPACITY) {
                charge(self.modes[i], self.ns[i]);
            }
            self.len = 0;
            self.total = 0;
            return;
        }
        self.consume_part(elapsed, charge);
    }
    /// [`Self::consume`] of part of the batch (or of a capped one).
    #[inline(never)]
    fn consume_part(&mut self, mut elapsed: Nanos, mut charge: impl FnMut(Mode, Nanos)) {
        let len = self.len as usize;
        let mut i = 0;
        let mut taken = 0;
        while elapsed > 0 && i < len {
            let take = self.ns[i].min(elapsed);
            charge(self.modes[i], take);
            elapsed -= take;
            taken += take;
            self.ns[i] -= take;
            if self.ns[i] == 0 {
                i += 1;
            }
        }
        if i == len {
            // Run to its end (here only when the total was capped).
            self.len = 0;
        } else if i > 0 {
            // Element by element: a library `memmove` of a few bytes
            // costs more than the pieces' whole accounting.
            for j in i..len {
                self.ns[j - i] = self.ns[j];
                self.modes[j - i] = self.modes[j];
            }
            self.len -= i as u8;
        }
        self.total = if self.total == Nanos::MAX {
            // Capped: the pieces left may still sum past the maximum.
            self.ns[..self.len as usize]
                .iter()
                .fold(0, |t: Nanos, &ns| t.saturating_add(ns))
        } else {
            self.total - taken
        };
    }
    pub fn clear(&mut self) {
        self.len = 0;
        self.total = 0;
    }
    /// The pieces the next `elapsed` ns consist of, without consuming them;
    /// time past the batch is reported as `rest`.
    pub fn peek(&self, mut elapsed: Nanos, rest: Mode, mut f: impl FnMut(Mode, Nanos)) {
        let len = self.len as usize;
        for (&m, &ns) in self.modes[..len].iter().zip(&self.ns[..len]) {
            if elapsed == 0 {
                return;
            }
            let take = ns.min(elapsed);
            f(m, take);
            elapsed -= take;
        }
        if elapsed > 0 {
            f(rest, elapsed);
        }
    }
}

/// A count or histogram sample planned inside a task's batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credit {
    /// Where in the batch it falls, on the task's `batch_clock`.
    pub at: Nanos,
    pub what: CreditKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreditKind {
    Count(u32),
    /// A histogram and the value recorded in it.
    Record(u32, Nanos),
}

/// What a task that spins is waiting to observe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spin {
    None,
    /// A spinning lock's waiter (`spinlock_t`, `rwlock_t`) on spinning-lock
    /// instance `lock`: it spins until the implementation grants it.
    Lock {
        lock: u32,
    },
    /// A spin inside a sleeping lock's op (a mutex's or rwsem's optimistic
    /// spin, a seqcount reader waiting for an even sequence): instance
    /// `lock` of sleeping-lock kind `kind` (its index in
    /// [`crate::locking::SLEEPING_KINDS`]), which decides what `how` means,
    /// what `need_resched()` does to it and what its end does.
    Sleeping {
        kind: u8,
        lock: u32,
        how: SpinHow,
    },
    /// `csd_lock_wait()` for CSDs sent to other CPUs.
    CsdWait,
    /// A stopper thread in `multi_cpu_stop()`, polling `msdata->state`.
    StopMachine,
}

/// Where a sleeping lock's spinner is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinHow {
    /// Queued on the lock's OSQ behind another spinner (spinning on its
    /// own node).
    Queued,
    /// Spinning on the owner: the OSQ head, or a waiter spinning itself.
    OnOwner,
    /// Waiting for a value (a seqcount's even sequence).
    Value,
}

/// What the task does when it next gets a CPU (or when its spin ends):
/// start the op at `pc`, or continue the blocking op there from the step
/// its mechanism recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Interpret the op at `pc` from its start.
    Op,
    /// A sleeping lock's op, continued at the step its kind recorded (each
    /// kind numbers its own steps).
    Lock(u8),
    SmpCall(SmpCallStep),
    /// `stop_machine_cpuslocked()`, continued.
    StopMachine(StopMachineStep),
    /// `synchronize_rcu()`: the grace period is over.
    SynchronizeRcu,
    /// `do_exit()`: `exit_mm()` is done.
    Exit,
    /// A cmpxchg loop: the value is read, the next step is an attempt
    /// expecting the line's write count to be `.0`.
    Cmpxchg(u64),
}

/// Where `smp_call_function_*()` continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmpCallStep {
    /// The IPIs are paid for: queue the CSDs.
    Queue,
    /// The call is complete.
    Done,
}

/// Where `stop_machine_cpuslocked()` continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopMachineStep {
    /// `queue_stop_cpus_work()` has queued a work on every stopper:
    /// `preempt_enable()`, where the caller's own stopper preempts it.
    Queued,
    /// `wait_for_completion(&done.completion)`.
    Wait,
}

/// Per-task CPU-time accounting, like `time(1)` plus the waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TaskTimes {
    pub user: Nanos,
    pub sys: Nanos,
    /// Part of `sys` spent spinning (mutex optimistic spin, csd_lock_wait).
    pub spin: Nanos,
    /// Sleeping (mutex wait list, hrtimer sleep).
    pub sleep: Nanos,
    /// Runnable but not running.
    pub runnable: Nanos,
    /// Interrupted by hardirqs while current.
    pub irq: Nanos,
}

impl TaskTimes {
    /// Adds `other` field by field, saturating at `u64::MAX` (a group's
    /// total of many tasks' long sleeps can exceed it); true if any field
    /// saturated.
    pub fn add_saturating(&mut self, other: &TaskTimes) -> bool {
        let mut saturated = false;
        for (a, b) in [
            (&mut self.user, other.user),
            (&mut self.sys, other.sys),
            (&mut self.spin, other.spin),
            (&mut self.sleep, other.sleep),
            (&mut self.runnable, other.runnable),
            (&mut self.irq, other.irq),
        ] {
            match a.checked_add(b) {
                Some(v) => *a = v,
                None => {
                    *a = u64::MAX;
                    saturated = true;
                }
            }
        }
        saturated
    }

    /// The time since `base` (an earlier reading of the same task).
    pub fn since(&self, base: &TaskTimes) -> TaskTimes {
        TaskTimes {
            user: self.user - base.user,
            sys: self.sys - base.sys,
            spin: self.spin - base.spin,
            sleep: self.sleep - base.sleep,
            runnable: self.runnable - base.runnable,
            irq: self.irq - base.irq,
        }
    }
}

pub struct Task {
    /// The task's own random stream: every draw of its program (work
    /// lengths, `choose`, `uniform()`, `random_cpu()`, the costs of what it
    /// calls) comes from here, so what it draws does not depend on any
    /// other task or on event order (`sim/streams.rs`).
    pub rng: Rng,
    pub group: u32,
    pub index: u32,
    pub cpu: u32,
    pub policy: Policy,
    pub mm: u32,
    /// Bandwidth-group runqueue id (top-level cgroup), if any.
    pub group_rq: Option<u32>,
    /// The top-level cgroup's index, whose runqueue on each CPU
    /// `group_rq` is.
    pub top_group: Option<u32>,
    /// Where it may run: an index into the kernel's affinity masks, or
    /// [`PINNED`] for only `cpu`.
    pub affinity: u32,
    /// When it last left a CPU (for `task_hot()`).
    pub last_ran: Nanos,
    /// Cache refill owed after a migration, paid when it next runs.
    pub migration_refill: Nanos,
    pub state: TaskState,
    pub since: Nanos,
    pub vruntime: u64,
    pub exec_start: Nanos,
    pub slice_start: Nanos,
    /// Where the task is in its program.
    pub pc: u32,
    pub resume: Resume,
    pub vars: Vec<i64>,
    pub mode: Mode,
    pub batch: Batch,
    /// Batch time consumed since the task was created: the clock its
    /// `credits` are placed on.
    pub batch_clock: Nanos,
    /// Counts and histogram samples planned inside the batch, each due when
    /// the batch has run up to it (`at`, on `batch_clock`): they are
    /// credited at the simulated time they happen, so that none planned
    /// past the end of the run (or past an interruption that delays the
    /// batch) is counted.
    pub credits: std::collections::VecDeque<Credit>,
    /// Invalidates `SpinEnd` and `Timer` events sent earlier.
    pub gen: u32,
    /// Interpreter steps in a row in which no op took any time.
    pub timeless_steps: u32,
    /// An explored schedule already decided whether to delay the op at
    /// `pc`.
    pub perturbed: bool,
    pub irq: IrqState,
    pub wait: WaitState,
    pub smp: SmpCall,
    pub times: TaskTimes,
    pub exited_at: Option<Nanos>,
    /// A kernel thread runs the mechanism's code, not a program.
    pub kthread: Option<Kthread>,
    /// A fault an op planned ahead of the batch hit: it happens (is
    /// reported, and stops the run) when the batch reaches the op.
    pub fault: Option<Fault>,
    /// Objects of the locks it took in kernel mode and holds, innermost
    /// last (lockdep's `held_locks`): any left at `SyscallExit` is
    /// `lockdep_sys_exit()`'s report.
    pub held: Vec<u32>,
}

/// A fault that stops the run, found while planning ahead of the batch.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// `a / b` (or `%`) by zero, or `i64::MIN / -1`, at op `pc`.
    Divide { pc: u32, a: i64, b: i64 },
    /// A per-CPU `object` indexed with `index`, outside `[0, nr_cpu_ids)`.
    BadIndex { object: u32, index: i64 },
}

/// Preemption and interrupt state (`preempt_count()`, `irqs_disabled()`).
#[derive(Clone, Debug, Default)]
pub struct IrqState {
    pub preempt_count: u32,
    pub irqs_off: bool,
    /// `rcu_read_lock()` nesting, and when the outermost section began.
    pub rcu_read_depth: u32,
    pub rcu_read_since: Nanos,
    /// `spin_lock_irqsave()` nesting: the saved IRQ state of each level
    /// (bit i = level i had IRQs off), and the depth.
    pub irq_saved: u32,
    pub irq_depth: u8,
}

/// What the task waits for, spinning or sleeping, and the locks it holds.
#[derive(Clone, Debug)]
pub struct WaitState {
    pub spin: Spin,
    /// A `SpinEnd` has been observed while the CPU was busy elsewhere.
    pub spin_done: bool,
    /// The spin ended without success (mutex owner left its CPU).
    pub spin_abort: bool,
    /// When a spinner's first reads of what it watches are in: it cannot
    /// notice a change before.
    pub spin_ready: Nanos,
    /// When the current wait (lock, sleep, spin) began.
    pub wait_start: Nanos,
    /// Sleeping in TASK_INTERRUPTIBLE (an hrtimer sleep), not in D state.
    pub interruptible: bool,
    /// Intended wakeup time of an hrtimer sleep and where to record lateness.
    pub wake_deadline: Nanos,
    pub overshoot_hist: Option<u32>,
}

impl Default for WaitState {
    fn default() -> Self {
        WaitState {
            spin: Spin::None,
            spin_done: false,
            spin_abort: false,
            spin_ready: 0,
            wait_start: 0,
            interruptible: false,
            wake_deadline: 0,
            overshoot_hist: None,
        }
    }
}

/// The cross-CPU call the task is making (`smp_call_function_*`).
#[derive(Clone, Debug)]
pub struct SmpCall {
    /// CSDs of the current call not yet run by their targets.
    pub csd_pending: u32,
    /// The current `csd_lock_wait()` runs with preemption enabled.
    pub csd_wait_preemptible: bool,
    /// Targets and unit count of the current cross-CPU call (reused).
    pub call_targets: Vec<u32>,
    pub call_units: u64,
    /// A membarrier command under way: when it began, and its target CPU
    /// (-1 for every CPU).
    pub membarrier: Option<(Nanos, i64)>,
    /// The task's cpumask variables (`cpumask.rs`), grown when first set;
    /// empty for a program without them.
    pub masks: Vec<Vec<u64>>,
}

impl Default for SmpCall {
    fn default() -> Self {
        SmpCall {
            csd_pending: 0,
            csd_wait_preemptible: false,
            call_targets: Vec::new(),
            call_units: 1,
            membarrier: None,
            masks: Vec::new(),
        }
    }
}

impl Task {
    /// Task `index` of task group `group`, runnable on `cpu`, pinned there.
    pub fn new(group: u32, index: u32, cpu: u32, policy: Policy, mm: u32) -> Self {
        Task {
            // Seeded by `Kernel::new` once the task's identity is known.
            rng: Rng::seed_from_u64(0),
            group,
            index,
            cpu,
            policy,
            mm,
            group_rq: None,
            top_group: None,
            affinity: PINNED,
            last_ran: 0,
            migration_refill: 0,
            state: TaskState::Runnable,
            since: 0,
            vruntime: 0,
            exec_start: 0,
            slice_start: 0,
            pc: 0,
            resume: Resume::Op,
            vars: Vec::new(),
            mode: Mode::User,
            batch: Batch::default(),
            batch_clock: 0,
            credits: std::collections::VecDeque::new(),
            gen: 0,
            timeless_steps: 0,
            perturbed: false,
            irq: IrqState::default(),
            wait: WaitState::default(),
            smp: SmpCall::default(),
            times: TaskTimes::default(),
            exited_at: None,
            kthread: None,
            fault: None,
            held: Vec::new(),
        }
    }

    pub fn is_rt(&self) -> bool {
        matches!(self.policy, Policy::Fifo(_))
    }
    pub fn rt_prio(&self) -> u8 {
        match self.policy {
            Policy::Fifo(p) => p,
            Policy::Normal => 0,
        }
    }
    pub fn preemptible(&self) -> bool {
        self.irq.preempt_count == 0 && !self.irq.irqs_off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sum of the pieces left, charged one by one.
    fn summed(b: &Batch) -> Nanos {
        let (mut copy, mut sum) = (*b, 0);
        copy.consume(Nanos::MAX, |_, ns| sum += ns);
        sum
    }

    #[test]
    fn batch_merges_same_mode_and_refuses_a_fifth_piece() {
        let mut b = Batch::default();
        assert!(b.push(Mode::User, 10));
        assert!(b.push(Mode::User, 5));
        assert!(b.push(Mode::Sys, 0), "nothing to add is always taken");
        assert!(b.push(Mode::Sys, 7));
        assert!(b.push(Mode::User, 1));
        assert!(b.push(Mode::Sys, 2));
        assert!(b.is_full());
        assert!(!b.push(Mode::User, 3));
        assert!(b.push(Mode::Sys, 3), "merges into the last piece");
        assert_eq!(b.total(), 15 + 7 + 1 + 5);
        let mut seen = Vec::new();
        b.peek(100, Mode::User, |m, ns| seen.push((m, ns)));
        let want = [
            (Mode::User, 15),
            (Mode::Sys, 7),
            (Mode::User, 1),
            (Mode::Sys, 5),
            (Mode::User, 72),
        ];
        assert_eq!(seen, want);
    }

    #[test]
    fn batch_consume_charges_by_mode_and_keeps_the_total() {
        let mut b = Batch::default();
        b.push(Mode::Sys, 4);
        b.push(Mode::User, 10);
        b.push(Mode::Sys, 6);
        let mut charged = Vec::new();
        b.consume(9, |m, ns| charged.push((m, ns)));
        assert_eq!(charged, [(Mode::Sys, 4), (Mode::User, 5)]);
        assert_eq!(b.total(), 11);
        assert_eq!(b.current_mode(Mode::Sys), Mode::User);
        charged.clear();
        b.consume(100, |m, ns| charged.push((m, ns)));
        assert_eq!(charged, [(Mode::User, 5), (Mode::Sys, 6)]);
        assert!(b.is_empty());
        assert_eq!(b.total(), 0);
        assert_eq!(b.current_mode(Mode::Sys), Mode::Sys);
    }

    #[test]
    fn mode_at_follows_the_pieces_without_consuming_them() {
        let mut b = Batch::default();
        b.push(Mode::Sys, 3);
        b.push(Mode::User, 9);
        assert_eq!(b.mode_at(0, Mode::Sys), Mode::Sys);
        assert_eq!(b.mode_at(2, Mode::Sys), Mode::Sys);
        assert_eq!(b.mode_at(3, Mode::Sys), Mode::User);
        assert_eq!(b.mode_at(11, Mode::Sys), Mode::User);
        assert_eq!(b.mode_at(12, Mode::Sys), Mode::Sys);
        assert_eq!(b.total(), 12);
    }

    #[test]
    fn batch_consumed_whole_charges_as_the_piece_walk_does() {
        let pieces: [&[(Mode, Nanos)]; 3] = [
            &[(Mode::User, 7)],
            &[(Mode::Sys, 3), (Mode::User, 9), (Mode::Sys, 1)],
            &[
                (Mode::User, 2),
                (Mode::Sys, 4),
                (Mode::User, 6),
                (Mode::Sys, 8),
            ],
        ];
        for p in pieces {
            let mut b = Batch::default();
            for &(m, ns) in p {
                b.push(m, ns);
            }
            for elapsed in [b.total(), b.total() + 5] {
                let (mut fast, mut walk) = (b, b);
                let (mut by_fast, mut by_walk) = (Vec::new(), Vec::new());
                fast.consume(elapsed, |m, ns| by_fast.push((m, ns)));
                walk.consume_part(elapsed, |m, ns| by_walk.push((m, ns)));
                assert_eq!(by_fast, by_walk);
                assert_eq!(by_fast, p);
                assert!(fast.is_empty() && walk.is_empty());
                assert_eq!((fast.total(), walk.total()), (0, 0));
            }
        }
    }

    #[test]
    fn batch_total_saturates_and_recovers_after_consume() {
        let mut b = Batch::default();
        b.push(Mode::User, Nanos::MAX - 5);
        b.push(Mode::Sys, 20);
        b.push(Mode::User, 30);
        assert_eq!(b.total(), Nanos::MAX);
        // Past the first piece: what is left sums without saturating.
        b.consume(Nanos::MAX - 5, |_, _| {});
        assert_eq!(b.total(), 50);
        assert_eq!(b.total(), summed(&b));
        b.push(Mode::User, Nanos::MAX);
        assert_eq!(b.total(), Nanos::MAX);
        // The pieces are 20 and MAX (30 + MAX merged, capped): 25 in, the
        // 5 past the cap are gone, as they would be summing the pieces.
        b.consume(25, |_, _| {});
        assert_eq!(b.total(), Nanos::MAX - 5);
        assert_eq!(b.total(), summed(&b));
        b.clear();
        assert_eq!(b.total(), 0);
    }
}
