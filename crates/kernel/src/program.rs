//! The program IR: what a task executes.
//!
//! The scenario compiler turns a task group's `code` into a flat [`Program`]
//! of [`Op`]s with resolved jump targets, object ids and variable slots.
//! The kernel interprets it; nothing in the kernel knows which workload a
//! program describes.

use smpsim_engine::{Nanos, Rng};

/// A task-local variable slot.
pub type Slot = u16;
/// Index into [`crate::Spec::objects`].
pub type ObjectId = u32;
/// Index into [`crate::Spec::counters`].
pub type CounterId = u32;
/// Index into [`crate::Spec::histograms`].
pub type HistId = u32;
/// Index into a program's ops.
pub type Pc = u32;

/// The longest a single span of simulated time can be: one `work`, one
/// sleep, one cross-CPU handler (`func` x `units`), and the longest run.
/// A longer span is cut to it: it would end after any run a scenario can
/// ask for anyway (about 36.5 years).
pub const MAX_SPAN: Nanos = 1 << 60;
/// A time after every event a run can reach; sums of spans stop here, so
/// simulated time never wraps.
pub const END_OF_TIME: Nanos = 1 << 62;

/// An integer expression evaluated in a task's context.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(i64),
    Var(Slot),
    /// The CPU the task runs on (`smp_processor_id()`).
    ThisCpu,
    /// `nr_cpu_ids`.
    NrCpus,
    /// Index of the task within its task group.
    TaskIndex,
    /// Number of tasks in the task group.
    GroupSize,
    /// A uniformly random CPU in `[0, nr_cpu_ids)`.
    RandomCpu,
    /// A uniformly random integer in `[lo, hi)`.
    Uniform(Box<Expr>, Box<Expr>),
    /// The address space of the task current on a CPU
    /// (`cpu_rq(cpu)->curr->mm`): -1 for the idle task (a kernel thread
    /// has no `mm`) or a CPU out of range.
    CpuCurrMm(Box<Expr>),
    /// This task's address space (`current->mm`).
    CurrentMm,
    /// In a hook: `task_cpu(p)` of the task its event is about (the wakee
    /// of `try_to_wake_up`/`enqueue_task_fair`, the task `set_task_cpu`
    /// moves), as the kernel sees it there (`hooks.rs`).
    TaskCpu,
    /// In a switch's hook: `prev->mm`, -1 for the idle task or a kernel
    /// thread (`hooks.rs`).
    PrevMm,
    /// In a switch's hook: `next->mm`, -1 for a kernel thread.
    NextMm,
    /// In a switch's hook: `prev->active_mm`, the mm the CPU is using
    /// (the one the idle task or a kernel thread borrowed), -1 for
    /// `init_mm`: what `switch_mm_irqs_off()` switches from.
    PrevActiveMm,
    /// `READ_ONCE()` of a shared `variable` object (one instance of it, for
    /// a per-CPU one).
    ReadOnce(Box<ObjRef>),
    /// `hash(x)`: the kernel's `hash_64(x, 32)` (include/linux/hash.h),
    /// `x * GOLDEN_RATIO_64 >> 32`, in `[0, 2^32)`: deterministic, for
    /// picking an element of an object array (`bucket[hash(uaddr) % n]`).
    Hash(Box<Expr>),
    /// `get_state_synchronize_rcu()` (kernel/rcu/tree.c): `rcu_seq_snap()`
    /// of the normal grace-period sequence, the end of the first grace
    /// period to start after now (`rcu/poll.rs`).
    RcuGetState,
    Bin(BinOp, Box<Expr>, Box<Expr>),
}

/// `GOLDEN_RATIO_64` of include/linux/hash.h.
pub const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// `hash_64(x, 32)` of include/linux/hash.h: the value [`Expr::Hash`]
/// gives, the same on every host and run.
pub fn hash_64_32(x: i64) -> i64 {
    ((x as u64).wrapping_mul(GOLDEN_RATIO_64) >> 32) as i64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Expr {
    /// Whether evaluating it reads a shared variable (so it must be
    /// evaluated at the time its op runs, not ahead in a batch).
    pub fn reads_shared(&self) -> bool {
        match self {
            // RCU's grace-period sequence moves as the run goes, as a
            // shared variable does.
            Expr::ReadOnce(_) | Expr::RcuGetState => true,
            Expr::Uniform(a, b) | Expr::Bin(_, a, b) => a.reads_shared() || b.reads_shared(),
            Expr::CpuCurrMm(e) | Expr::Hash(e) => e.reads_shared(),
            _ => false,
        }
    }
}

impl Cond {
    /// Whether evaluating it reads a shared variable.
    pub fn reads_shared(&self) -> bool {
        match self {
            Cond::CpuOnline(e) => e.reads_shared(),
            Cond::RcuPollState(_) | Cond::SpinIsLocked(_) => true,
            Cond::Cmp(_, a, b) => a.reads_shared() || b.reads_shared(),
            Cond::Not(c) => c.reads_shared(),
            Cond::And(a, b) | Cond::Or(a, b) => a.reads_shared() || b.reads_shared(),
        }
    }

    /// Whether evaluating it reads a lock's word (`spin_is_locked()`): a
    /// load of its line, at the time the task has reached.
    pub fn reads_lock_word(&self) -> bool {
        match self {
            Cond::SpinIsLocked(_) => true,
            Cond::Not(c) => c.reads_lock_word(),
            Cond::And(a, b) | Cond::Or(a, b) => a.reads_lock_word() || b.reads_lock_word(),
            Cond::CpuOnline(_) | Cond::RcuPollState(_) | Cond::Cmp(..) => false,
        }
    }
}

/// A condition for `if` ops. `&&` and `||` evaluate as C's do, left to
/// right with short-circuit: the right side is not evaluated when the
/// left decides (a `uniform()` or `random_cpu()` in it draws nothing).
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// `cpu_online(cpu)`.
    CpuOnline(Expr),
    /// `poll_state_synchronize_rcu(oldstate)` (kernel/rcu/tree.c): a full
    /// grace period has passed since the `get_state_synchronize_rcu()`
    /// that returned `oldstate` (`rcu/poll.rs`).
    RcuPollState(Expr),
    /// `spin_is_locked(lock)` (include/linux/spinlock.h ->
    /// `arch_spin_is_locked()`; a qspinlock's is `atomic_read(&lock->val)`):
    /// a read of the lock word's line, charged as `atomic_read()`'s load
    /// is, and whether the spinlock is held when the read is made.
    SpinIsLocked(ObjRef),
    Cmp(CmpOp, Expr, Expr),
    Not(Box<Cond>),
    /// `a && b`.
    And(Box<Cond>, Box<Cond>),
    /// `a || b`.
    Or(Box<Cond>, Box<Cond>),
}

/// A duration drawn from a distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Const(Nanos),
    Exp {
        mean: Nanos,
    },
    Uniform {
        lo: Nanos,
        hi: Nanos,
    },
    /// Normal, truncated at zero.
    Normal {
        mean: Nanos,
        sd: Nanos,
    },
    /// Log-normal with the given median and shape (sigma of the log):
    /// heavy-tailed, for sections that are usually short and rarely long.
    LogNormal {
        median: Nanos,
        sigma: f64,
    },
}

impl Dist {
    /// One draw, at most [`MAX_SPAN`].
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> Nanos {
        self.draw(rng).min(MAX_SPAN)
    }

    #[inline]
    fn draw(&self, rng: &mut Rng) -> Nanos {
        match *self {
            Dist::Const(v) => v,
            Dist::Exp { mean } => rng.exp(mean),
            Dist::Uniform { lo, hi } => lo + rng.below((hi - lo).saturating_add(1)),
            Dist::Normal { mean, sd } => {
                let v = mean as f64 + sd as f64 * rng.normal();
                v.max(0.0).round() as Nanos
            }
            Dist::LogNormal { median, sigma } => {
                let v = median as f64 * smpsim_engine::detmath::exp(sigma * rng.normal());
                v.min(1e15).round() as Nanos
            }
        }
    }

    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Const(v) => v as f64,
            Dist::Exp { mean } => mean as f64,
            Dist::Uniform { lo, hi } => (lo as f64 + hi as f64) / 2.0,
            Dist::Normal { mean, .. } => mean as f64,
            Dist::LogNormal { median, sigma } => median as f64 * (sigma * sigma / 2.0).exp(),
        }
    }
}

/// A reference to an object instance: a global object, or one element of a
/// per-CPU array selected by an index expression.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjRef {
    pub object: ObjectId,
    pub index: Option<Expr>,
}

/// How a lock is held: `spinlock_t` and `struct mutex` only exclusively,
/// `rwlock_t` shared by readers or exclusively by one writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockMode {
    Exclusive,
    Read,
    Write,
}

impl LockMode {
    /// The prefix of the kernel's op names: `spin_lock`, `read_lock`, `write_lock`.
    pub fn op_prefix(self) -> &'static str {
        match self {
            LockMode::Exclusive => "spin",
            LockMode::Read => "read",
            LockMode::Write => "write",
        }
    }
}

/// A task's cpumask variable (`cpumask_var_t`): an index into the task's
/// masks, separate from its integer slots.
pub type MaskSlot = u16;

/// A cpumask built from the kernel's masks when a `cpumask` op runs
/// (`cpumask_copy()`, `cpumask_and()`, ... of include/linux/cpumask.h),
/// stored in a task's mask variable and read later.
#[derive(Clone, Debug, PartialEq)]
pub enum MaskExpr {
    /// `mm_cpumask(current->mm)`, the bits as they are (this CPU and
    /// offline CPUs included).
    MmCpumask,
    /// `cpu_online_mask`.
    Online,
    /// The CPUs whose current task runs `current->mm`
    /// (`cpu_rq(cpu)->curr->mm == mm`).
    MmRunning,
    /// The CPUs in lazy TLB mode (`per_cpu(cpu_tlbstate_shared.is_lazy)`):
    /// running the idle task or a kthread on a borrowed mm.
    Lazy,
    /// The CPUs whose instance of a per-CPU `variable` is not 0 (a per-CPU
    /// flag, as `should_flush_tlb()` reads `is_lazy`).
    Flag(ObjectId),
    /// One CPU (`cpumask_of(cpu)`); out of range: empty.
    Cpu(Expr),
    /// Another mask variable of the task (`cpumask_copy()`).
    Var(MaskSlot),
    And(Box<MaskExpr>, Box<MaskExpr>),
    Or(Box<MaskExpr>, Box<MaskExpr>),
    /// `cpumask_andnot(dst, a, b)`: in `a` and not in `b`.
    AndNot(Box<MaskExpr>, Box<MaskExpr>),
}

/// A set of CPUs, evaluated when an op runs.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuSet {
    /// `mm_cpumask(current->mm)` without this CPU: every CPU that has run
    /// the address space since its bit was last trimmed, lazy users and
    /// CPUs gone to another mm included (`mm.rs`).
    MmCpumask,
    /// The CPUs `native_flush_tlb_multi()` IPIs for a flush of
    /// `current->mm` (x86 `should_flush_tlb()`): those running it and not
    /// lazy, and once a second the stale ones, to trim the mask; with
    /// `freed_tables`, every CPU of the mask. Lazy CPUs are left a deferred
    /// flush for their next switch.
    TlbFlush {
        freed_tables: bool,
        /// A mask the task built earlier (`flush_tlb_mm_range(..., cpus =
        /// MASK)`): exactly its CPUs are sent the flush, whatever they do
        /// now (`native_flush_tlb_multi(cpumask, info)` given a stale mask).
        mask: Option<MaskSlot>,
    },
    /// The CPUs whose current task runs `current->mm`, as membarrier's
    /// broadcast path collects them (`cpu_rq(cpu)->curr->mm == mm`).
    MmRunning,
    /// Every online CPU but this one (`smp_call_function()`).
    AllButSelf,
    /// An explicit list of CPU expressions.
    List(Vec<Expr>),
    /// A mask variable of the task, as it was built.
    Mask(MaskSlot),
}

/// The cost of the function a cross-CPU call runs on each target: a
/// duration, optionally multiplied by a count evaluated by the caller (for
/// example pages to flush).
#[derive(Clone, Debug, PartialEq)]
pub struct CallFunc {
    pub cost: Dist,
    pub units: Option<Expr>,
    /// A handler program (an index into `Spec::handlers`) run on the
    /// target in hardirq context, after `cost`.
    pub handler: Option<u32>,
}

/// One operation of a program: the task's own ops (its time, variables,
/// control flow, sleep and exit), run by the interpreter (`interp.rs`),
/// and each mechanism's ops, grouped as [`crate::event::Event`] groups
/// events: one enum per mechanism, each run by the one exhaustive match in
/// its mechanism's file ([`crate::mechanism::MechanismOp`]). A variant without
/// its handler does not compile. (The enums live here, beneath the
/// mechanisms, as the events do in `event.rs`: the IR names no mechanism.)
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Burn CPU time in the current mode (user, or sys inside a syscall).
    Work(Dist),
    /// `work(time, units = EXPR)`: one draw of `time` times `units`,
    /// evaluated when the op runs (a hold time that grows with the
    /// structure it walks); a negative `units` is reported and taken as 0.
    WorkUnits {
        time: Dist,
        units: Expr,
    },
    /// Enter the kernel: charges the machine's syscall cost, then runs in sys mode.
    SyscallEnter,
    /// Return to user mode.
    SyscallExit,
    /// Sleep on an hrtimer (`clock_nanosleep`); if `overshoot` is set,
    /// record how late the task ran again.
    Sleep {
        dist: Dist,
        overshoot: Option<HistId>,
    },
    Set {
        slot: Slot,
        expr: Expr,
    },
    Jump(Pc),
    /// Jump to the target when the condition is false.
    JumpUnless(Cond, Pc),
    /// Sets a counted loop's hidden counter; a negative count is reported
    /// (and the loop runs no times).
    LoopCount {
        slot: Slot,
        expr: Expr,
    },
    /// Decrement the slot; jump back while it stays positive.
    LoopBack {
        slot: Slot,
        target: Pc,
    },
    /// Jump to the first target whose cumulative weight exceeds a draw in
    /// `[0, total)`.
    Choose {
        cumulative: Vec<(u64, Pc)>,
    },
    Count(CounterId),
    /// Store the current time in a slot.
    Mark(Slot),
    /// Record `now - slot` in a histogram.
    RecordSince {
        hist: HistId,
        slot: Slot,
    },
    Exit,
    /// Preemption and local interrupts (`sched/preempt.rs`).
    Preempt(PreemptOp),
    /// RCU readers, grace periods and callbacks (`rcu/ops.rs`).
    Rcu(RcuOp),
    /// Locks and atomics (`locking/ops.rs`).
    Locking(LockingOp),
    /// Cross-CPU function calls (`smp.rs`).
    Smp(SmpOp),
    /// CPUs leaving and joining (`hotplug.rs`).
    Hotplug(HotplugOp),
    /// `stop_machine()` (`stop_machine.rs`).
    Stop(StopOp),
    /// Shared variables, assertions and the membarrier checker (`check.rs`).
    Check(CheckOp),
    /// Cpumask variables (`cpumask.rs`).
    Cpumask(CpumaskOp),
    /// `struct percpu_ref` (`locking/percpu_ref.rs`).
    PercpuRef(PercpuRefOp),
}

/// The preemption and interrupt ops, run by `sched/preempt.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum PreemptOp {
    PreemptDisable,
    PreemptEnable,
    LocalIrqDisable,
    LocalIrqEnable,
}

/// The RCU ops, run by `rcu/ops.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum RcuOp {
    /// `rcu_read_lock()` / `rcu_read_unlock()`: what they do depends on the
    /// preemption model; without `CONFIG_PREEMPT_RCU` they disable and
    /// enable preemption.
    RcuReadLock,
    RcuReadUnlock,
    /// `synchronize_rcu()` (expedited while `rcu_expedite_gp()` is in force
    /// or the `rcu_expedited` knob is set).
    SynchronizeRcu,
    SynchronizeRcuExpedited,
    /// `rcu_expedite_gp()` / `rcu_unexpedite_gp()` (nesting).
    RcuExpediteGp,
    RcuUnexpediteGp,
    /// `call_rcu(head, func)` (`lazy`: may wait in a no-CBs CPU's lazy
    /// bypass list) or `call_rcu_hurry()`: `func` is what the callback
    /// costs when it is invoked.
    CallRcu {
        func: Dist,
        lazy: bool,
    },
    /// `cond_synchronize_rcu(oldstate)`: `synchronize_rcu()` unless a full
    /// grace period has passed since `oldstate` was taken.
    CondSynchronizeRcu(Expr),
    /// `kfree_rcu()` / `kvfree_rcu()` of an object of `bytes` bytes: onto
    /// this CPU's `krcp`, freed by a kworker after a grace period
    /// (`rcu/kfree.rs`).
    KfreeRcu {
        bytes: Expr,
    },
}

/// The ops on locks and atomics, run by `locking/ops.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum LockingOp {
    /// Take a lock; the object's kind decides what that is:
    /// `mutex_lock()` on a `struct mutex`, `spin_lock()` on a `spinlock_t`
    /// (both `LockMode::Exclusive`), `read_lock()` / `write_lock()` on an
    /// `rwlock_t`; with `irqsave`, the `_irqsave` form (spinning locks).
    Lock {
        lock: ObjRef,
        mode: LockMode,
        irqsave: bool,
    },
    /// Release it: `mutex_unlock()`, `spin_unlock()`, `read_unlock()`,
    /// `write_unlock()`, or the `_irqrestore` form.
    Unlock {
        lock: ObjRef,
        mode: LockMode,
        irqrestore: bool,
    },
    /// `down()` on a semaphore object: take a token or sleep for one (a pipe
    /// read, a futex wait).
    Down(ObjRef),
    /// `up()`: hand a token to the first sleeper or keep it (a pipe write,
    /// a futex wake).
    Up(ObjRef),
    /// `down_read_trylock()` / `down_write_trylock()` on an rwsem: take it
    /// if that needs no wait; `slot` (if any) gets 1 if it was taken, else 0.
    RwsemTrylock {
        lock: ObjRef,
        mode: LockMode,
        slot: Option<Slot>,
    },
    /// `downgrade_write()`: the rwsem's writer becomes a reader.
    DowngradeWrite(ObjRef),
    /// `write_seqcount_begin()` (`begin`) / `write_seqcount_end()`.
    WriteSeqcount {
        seq: ObjRef,
        begin: bool,
    },
    /// `read_seqcount_begin()`: the sequence into `slot`, once it is even.
    ReadSeqcountBegin {
        seq: ObjRef,
        slot: Slot,
    },
    /// `read_seqcount_retry()`: back to `retry` if the sequence moved
    /// since `slot` was read.
    ReadSeqcountRetry {
        seq: ObjRef,
        slot: Slot,
        retry: Pc,
    },
    /// `cpus_read_lock()`: `percpu_down_read(&cpu_hotplug_lock)`; blocks
    /// while a writer holds it.
    CpusReadLock,
    CpusReadUnlock,
    /// `cpus_write_lock()`: `percpu_down_write(&cpu_hotplug_lock)`:
    /// `rcu_sync_enter()` (a grace period from GP_IDLE), then waits for
    /// readers to drain.
    CpusWriteLock,
    CpusWriteUnlock,
    /// An atomic read-modify-write (`atomic_inc()` and friends) on an
    /// `atomic` object: a cache-line RMW.
    AtomicRmw(ObjRef),
    /// A compare-and-exchange loop on an `atomic` object: read the value,
    /// then `atomic_try_cmpxchg()` until no other CPU wrote the line in
    /// between (`atomic_fetch_or()` on x86, a lockref's fast path). Every
    /// attempt is a read-for-ownership, failed or not.
    AtomicCmpxchgLoop(ObjRef),
    /// `atomic_read()`: a cache-line read.
    AtomicRead(ObjRef),
    /// `old = atomic_read()`: the read, and what it saw kept in `slot` for
    /// an [`LockingOp::AtomicTryCmpxchg`] (the model keeps the word's
    /// version, its count of writes, not a value).
    AtomicReadOld {
        obj: ObjRef,
        slot: Slot,
    },
    /// One `atomic_try_cmpxchg(obj, &old, new)`, `old` in `slot`: it
    /// succeeds if no other CPU wrote the word since `old` was read, and
    /// the task goes on at `done`; else `old` gets what it found and the
    /// task goes on to the next op (the retry loop's body, which jumps
    /// back here).
    AtomicTryCmpxchg {
        obj: ObjRef,
        slot: Slot,
        done: Pc,
    },
}

/// The cross-CPU call ops, run by `smp.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum SmpOp {
    /// `smp_call_function_single(cpu, func, NULL, wait)`; `func` is the
    /// handler's cost on the target.
    SmpCallFunctionSingle {
        cpu: Expr,
        func: CallFunc,
        wait: bool,
    },
    /// `smp_call_function_many(mask, func, NULL, wait)`: one CSD per CPU of
    /// the mask (this CPU excluded), then wait for each.
    SmpCallFunctionMany {
        cpus: CpuSet,
        func: CallFunc,
        wait: bool,
    },
}

/// The hotplug ops, run by `hotplug.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum HotplugOp {
    /// The CPU leaves the system: scheduler, RCU, IPI targets (the end of
    /// `takedown_cpu()`). It must have no tasks placed on it.
    CpuOffline(Expr),
    /// The CPU joins the system again (`notify_cpu_starting()` / set_cpu_online).
    CpuOnline(Expr),
}

/// The `stop_machine()` ops, run by `stop_machine.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum StopOp {
    /// `stop_machine_cpuslocked(fn, NULL, cpus)`: every online CPU's
    /// stopper runs `multi_cpu_stop()`; `func` is what `fn` costs on the
    /// active CPU, `cpu` (or, without it, the first online CPU, as for
    /// `cpus == NULL`).
    StopMachine { func: Dist, cpu: Option<Expr> },
}

/// The ops on shared variables, assertions and the membarrier checker, run by `check.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckOp {
    /// `WRITE_ONCE()` of a shared `variable` object.
    WriteOnce { var: ObjRef, value: Expr },
    /// A promise the scenario states: if `cond` does not hold when the op
    /// runs, an `assertion` finding with `message`.
    Assert { cond: Cond, message: String },
    /// The start of a membarrier command (`MEMBARRIER_CMD_PRIVATE_EXPEDITED`
    /// and `_RSEQ`) for the membarrier checker: `target` is the CPU of a
    /// targeted command (`MEMBARRIER_CMD_FLAG_CPU`), `None` for all.
    MembarrierBegin { target: Option<Expr> },
    /// Its return: every CPU the command covers that ran a thread of the
    /// caller's mm through the call must have executed a full barrier since
    /// its start.
    MembarrierEnd,
}

/// The cpumask ops, run by `cpumask.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum CpumaskOp {
    /// `cpumask_*()` into a mask variable: `expr` evaluated now.
    CpumaskSet { mask: MaskSlot, expr: MaskExpr },
    /// `for_each_cpu(var, mask)`: `var` (starting below 0) becomes the
    /// next CPU of the mask after it; past the last one, jump to `exit`.
    CpumaskNext { mask: MaskSlot, var: Slot, exit: Pc },
}

/// The `percpu_ref` ops, run by `locking/percpu_ref.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum PercpuRefOp {
    /// `percpu_ref_get()`: a reference, on this CPU's counter (percpu
    /// mode) or the shared count (atomic mode, after the kill).
    Get(ObjRef),
    /// `percpu_ref_put()`: gives one back; in atomic mode, once the switch
    /// is done, the put that reaches zero releases the object.
    Put(ObjRef),
    /// `percpu_ref_kill()`: to atomic mode now, the per-CPU counts folded
    /// in after an RCU grace period, and the initial reference put.
    Kill(ObjRef),
}

impl Op {
    /// Whether it waits for, or queues work behind, an RCU grace period (a
    /// scenario with one gets the RCU GP kthread): said here, with the
    /// ops, so that a new one says it where it is added.
    pub fn waits_for_rcu(&self) -> bool {
        matches!(
            self,
            Op::Rcu(RcuOp::SynchronizeRcu)
                | Op::Rcu(RcuOp::CondSynchronizeRcu(_))
                | Op::Rcu(RcuOp::KfreeRcu { .. })
                | Op::Rcu(RcuOp::CallRcu { .. })
                | Op::Rcu(RcuOp::SynchronizeRcuExpedited)
                | Op::Rcu(RcuOp::RcuExpediteGp)
                | Op::Locking(LockingOp::CpusWriteLock)
                | Op::Locking(LockingOp::CpusWriteUnlock)
                | Op::PercpuRef(PercpuRefOp::Kill(_))
        )
    }

    /// `mutex_lock(lock)`.
    pub fn mutex_lock(lock: ObjRef) -> Op {
        Op::Locking(LockingOp::Lock {
            lock,
            mode: LockMode::Exclusive,
            irqsave: false,
        })
    }

    /// `mutex_unlock(lock)`.
    pub fn mutex_unlock(lock: ObjRef) -> Op {
        Op::Locking(LockingOp::Unlock {
            lock,
            mode: LockMode::Exclusive,
            irqrestore: false,
        })
    }
}

/// A compiled program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub ops: Vec<Op>,
    /// Number of variable slots a task needs.
    pub slots: u16,
    /// Initial values of slots, evaluated once when the task is created.
    pub init: Vec<(Slot, Expr)>,
}
