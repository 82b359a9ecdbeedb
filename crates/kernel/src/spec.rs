//! What a simulation is built from: the validated, compiled scenario.
//!
//! The scenario crate produces a [`Spec`]; [`crate::Kernel::new`] turns it
//! into a running system. Everything here is plain data with resolved ids.

use smpsim_engine::Nanos;
use smpsim_machine::{CpuId, Machine};

use crate::program::Program;

/// Kernel configuration and tunables, named after the kernel's own.
#[derive(Clone, Debug, PartialEq)]
pub struct Knobs {
    /// `CONFIG_HZ`: scheduler tick frequency.
    pub hz: u32,
    /// `sysctl_sched_base_slice`-like: how long a CFS task runs before the
    /// tick preempts it when others wait.
    pub sched_slice: Nanos,
    /// Waking CFS task preempts the current one if its vruntime is smaller
    /// by more than this (`sysctl_sched_wakeup_granularity`).
    pub wakeup_granularity: Nanos,
    /// `CONFIG_MUTEX_SPIN_ON_OWNER`.
    pub mutex_spin_on_owner: bool,
    /// `sysctl_sched_cfs_bandwidth_slice_us`, as ns.
    pub cfs_bandwidth_slice: Nanos,
    /// Cost of visiting one task group in `walk_tg_tree_from()` during
    /// throttle (`tg_throttle_down`) and unthrottle (`tg_unthrottle_up`).
    pub tg_walk_cost: Nanos,
    /// Fixed part of throttle/unthrottle (dequeue/enqueue of the group entity).
    pub cfs_throttle_base_cost: Nanos,
    /// Length of the windows over which per-CPU maximum preempt-off and
    /// IRQ-off sections are collected.
    pub latency_window: Nanos,
    /// `csd_lock_wait()` with preemption enabled (the "Allow preemption
    /// during IPI completion waiting" series) instead of disabled.
    pub csd_wait_preemptible: bool,
    /// `rcupdate.rcu_expedited`: every `synchronize_rcu()` is expedited.
    pub rcu_expedited: bool,
    /// RCU FQS cadence in jiffies; `None` = the kernel's default from HZ and
    /// the number of CPUs (kernel/rcu/tree.c `rcu_init_geometry()`).
    pub jiffies_till_first_fqs: Option<u32>,
    pub jiffies_till_next_fqs: Option<u32>,
    /// Work of the RCU GP kthread per rcu_node at GP init and cleanup.
    pub rcu_node_cost: Nanos,
    /// `CONFIG_RCU_FANOUT_LEAF`: CPUs per leaf rcu_node.
    pub rcu_fanout_leaf: u32,
    /// The CPU the RCU GP kthread (`rcu_sched`) last ran on when the run
    /// starts; `None` = the machine's last CPU (see `rcu::gp_kthread_cpu`).
    pub rcu_gp_kthread_cpu: Option<u32>,
    pub lazy_tlb: LazyTlb,
    /// `kernel.watchdog_thresh`: the hard-lockup threshold; the soft-lockup
    /// one is twice it.
    pub watchdog_thresh: Nanos,
    /// `kernel.hung_task_timeout_secs`.
    pub hung_task_timeout: Nanos,
    /// `smp.csd_lock_timeout` (`CONFIG_CSD_LOCK_WAIT_DEBUG`).
    pub csd_lock_timeout: Nanos,
    /// `rcupdate.rcu_cpu_stall_timeout` (`CONFIG_RCU_CPU_STALL_TIMEOUT`).
    pub rcu_cpu_stall_timeout: Nanos,
    /// Load balancing and wake-up placement of tasks that may move: on, as
    /// in the kernel; off keeps every task where it was placed.
    pub load_balance: bool,
    /// `sysctl_sched_migration_cost`: a task that ran this recently is
    /// cache-hot and the periodic balancer leaves it where it is.
    pub sched_migration_cost: Nanos,
    /// `CONFIG_PROVE_LOCKING`: lockdep's dependency checks.
    pub lockdep: bool,
    /// How often `update_tg_load_avg()` may update `tg->load_avg` for one
    /// cfs_rq (`NSEC_PER_MSEC` since "sched/fair: Ratelimit update to
    /// tg->load_avg", v6.7); 0: at every call, as before it.
    pub tg_load_avg_ratelimit: Nanos,
    /// Cache lines of a task's working set that follow it to a new CPU,
    /// each one line transfer from the old CPU, paid when it next runs.
    pub migration_footprint_lines: u32,
    /// Flush TLBs by broadcast (`broadcast_tlb_flush()`, x86 INVLPGB)
    /// where the machine can (`[tlb] broadcast`) and the mm has a global
    /// ASID; false: always by IPIs (a kernel before 6.15, or
    /// `clearcpuid=invlpgb`).
    pub tlb_broadcast: bool,
    /// `return_cfs_rq_runtime()` and the slack timer: a cfs_rq whose
    /// group goes idle on its CPU gives back its runtime beyond
    /// `min_cfs_rq_runtime` (1 ms), and `cfs_bandwidth_slack_period`
    /// (5 ms) later the pool is distributed to throttled cfs_rqs. Off by
    /// default in the model (the kernel always has it) so that results
    /// recorded before it stay as they were.
    pub cfs_bandwidth_slack: bool,
    /// Local runtime expires at the end of the period it was taken in
    /// (`expire_cfs_rq_runtime()`, kernels before 5.4 removed it in
    /// de57d87 "sched/fair: Fix low cpu usage with high throttling by
    /// removing expiration of cpu-local slices").
    pub cfs_slice_expiry: bool,
    /// The scheduler knows the CPUs' capacities (`arch_scale_cpu_capacity()`
    /// reports the machine's core types, so `sched_asym_cpucap_active()`):
    /// wake-up placement by capacity. False: every CPU looks like 1024 to
    /// it, as on hybrid x86 before 6.12; the hardware speeds still apply.
    pub asym_cpu_capacity: bool,
    /// `rcutree.blimit`: callbacks one `rcu_do_batch()` invokes in the
    /// softirq before it stops for a CPU with other work (at least 1).
    pub rcu_blimit: u64,
    /// `rcutree.qhimark`: past this many callbacks on a CPU the batch limit
    /// is lifted (`DEFAULT_MAX_RCU_BLIMIT`), and a lazy list is flushed.
    pub rcu_qhimark: u64,
    /// `rcutree.qlowmark`: the batch limit is back once a CPU's callbacks
    /// drop to this many.
    pub rcu_qlowmark: u64,
    /// `rcu_nocbs=`: CPUs whose callbacks `rcuop/N` kthreads invoke.
    pub rcu_nocbs: Vec<u32>,
    /// `CONFIG_RCU_LAZY` (with `rcutree.enable_rcu_lazy`): `call_rcu()` on
    /// a no-CBs CPU waits in a lazy list for `rcu_lazy_flush`.
    pub rcu_lazy: bool,
    /// `rcutree.jiffies_lazy_flush`, as time.
    pub rcu_lazy_flush: Nanos,
    /// `rcutree.rcu_normal_wake_from_gp`: `synchronize_rcu()` callers are
    /// woken by the GP kthread at the grace period's cleanup, not by a
    /// callback.
    pub rcu_normal_wake_from_gp: bool,
    /// `KFREE_DRAIN_JIFFIES` (mm/slab_common.c): how long after its first
    /// object a CPU's `kfree_rcu()` batch waits for more before it is
    /// queued behind a grace period; `None`: the kernel's `5 * HZ`.
    pub kfree_drain_jiffies: Option<u64>,
    /// What a `kfree_rcu()` costs its caller: `krc_this_cpu_lock()`,
    /// `add_ptr_to_bulk_krc_lock()`, the state snapshot and
    /// `schedule_delayed_monitor_work()`'s check.
    pub kfree_rcu_cost: Nanos,
    /// What freeing one object costs the kworker (`kfree_bulk()`).
    pub kfree_rcu_free_cost: Nanos,
    /// How a wakeup of a task on another CPU is queued (`ttwu_queue()`).
    pub ttwu_queue: TtwuQueue,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            hz: 1000,
            sched_slice: 3_000_000,
            wakeup_granularity: 1_000_000,
            mutex_spin_on_owner: true,
            cfs_bandwidth_slice: 5_000_000,
            tg_walk_cost: 100,
            cfs_throttle_base_cost: 1_000,
            latency_window: 30_000_000_000,
            csd_wait_preemptible: false,
            rcu_expedited: false,
            jiffies_till_first_fqs: None,
            jiffies_till_next_fqs: None,
            rcu_node_cost: 1_000,
            rcu_fanout_leaf: 16,
            rcu_gp_kthread_cpu: None,
            lazy_tlb: LazyTlb::Refcount,
            watchdog_thresh: 10_000_000_000,
            hung_task_timeout: 120_000_000_000,
            csd_lock_timeout: 5_000_000_000,
            rcu_cpu_stall_timeout: 21_000_000_000,
            load_balance: true,
            lockdep: false,
            // kernel/sched/fair.c update_tg_load_avg(): at most once per
            // NSEC_PER_MSEC per cfs_rq (since v6.7).
            tg_load_avg_ratelimit: 1_000_000,
            // kernel/sched/fair.c: sysctl_sched_migration_cost = 500000UL.
            sched_migration_cost: 500_000,
            // assumed: 64 lines (4 KiB) of hot stack and data; a scenario
            // that knows its working set sets it.
            migration_footprint_lines: 64,
            tlb_broadcast: true,
            cfs_bandwidth_slack: false,
            cfs_slice_expiry: false,
            asym_cpu_capacity: true,
            // kernel/rcu/tree.c: DEFAULT_RCU_BLIMIT 10, DEFAULT_RCU_QHIMARK
            // 10000, DEFAULT_RCU_QLOMARK 100.
            rcu_blimit: 10,
            rcu_qhimark: 10_000,
            rcu_qlowmark: 100,
            rcu_nocbs: Vec::new(),
            rcu_lazy: false,
            // kernel/rcu/tree_nocb.h: LAZY_FLUSH_JIFFIES (10 * HZ), 10 s.
            rcu_lazy_flush: 10_000_000_000,
            // Off by default in the kernel before 6.17 (which turns it on
            // for machines of 16 CPUs or fewer); off here so that results
            // recorded before it stay the same.
            rcu_normal_wake_from_gp: false,
            kfree_drain_jiffies: None,
            // assumed: local_irq_save() and an uncontended per-CPU raw
            // spinlock, a store into the page, smp_mb() and two reads of
            // get_state_synchronize_rcu_full(), an atomic_inc() and the
            // delayed_work_pending() check: 60 ns (range 30 - 150 ns).
            kfree_rcu_cost: 60,
            // assumed: kfree_bulk() -> kmem_cache_free_bulk() per object,
            // about 30 ns (range 10 - 100 ns).
            kfree_rcu_free_cost: 30,
            ttwu_queue: TtwuQueue::RqLock,
        }
    }
}

/// `ttwu_queue()` (kernel/sched/core.c): a wakeup enqueues the wakee
/// from the waking CPU (under the wakee's rq lock, which the scenario's
/// `try_to_wake_up` hook takes), or `ttwu_queue_wakelist()` queues it on
/// the wakee CPU's `call_single_queue` and that CPU enqueues it in its IPI
/// handler (`sched_ttwu_pending()`, the `sched_ttwu_pending` hook).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TtwuQueue {
    /// Never the wake list (`NO_TTWU_QUEUE`): the waker enqueues.
    #[default]
    RqLock,
    /// Every wakeup of a task whose CPU is another online CPU.
    Wakelist,
    /// `ttwu_queue_cond()`'s first test: only when the waking CPU and the
    /// wakee's CPU share no LLC (`!cpus_share_cache()`).
    CrossLlc,
}

/// A kernel object declared by the scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectDecl {
    pub name: String,
    pub kind: ObjectKind,
    /// One instance per possible CPU (`DEFINE_PER_CPU`).
    pub per_cpu: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ObjectKind {
    /// `struct mutex`. `spin = false` is a mutex that never spins
    /// optimistically (the seed's `slow_mutex_lock`).
    Mutex { spin: bool },
    /// A spinning lock (`spinlock_t` or `rwlock_t`) of one of the
    /// implementations in [`crate::locking::LOCK_KINDS`] (`qspinlock`,
    /// `ticket`, `tas`, `ttas`, `qrwlock`, ...), with its options.
    Spinlock {
        kind: SpinKind,
        options: LockOptions,
    },
    /// An `atomic_t` on its own cache line (a counter, a refcount).
    Atomic,
    /// A plain shared variable (`READ_ONCE()`/`WRITE_ONCE()`), read and
    /// written at no cost: state that scenario checks look at.
    Variable { initial: i64 },
    /// `struct rw_semaphore` (`mmap_lock`, `cgroup_mutex`'s peers): sleeping
    /// readers and writers. `spin`: writers spin on the OSQ
    /// (`CONFIG_RWSEM_SPIN_ON_OWNER`); `reader_spin`: readers too, as
    /// before 5.11.
    Rwsem { spin: bool, reader_spin: bool },
    /// `seqcount_t`: a sequence writers make odd, readers retry on.
    Seqcount,
    /// A counting semaphore (tokens), for pipe / futex style handoffs.
    Semaphore { initial: u32 },
    /// An object of a type registered in [`crate::locking::OBJECT_TYPES`]
    /// (`percpu_ref`): the type's own file builds and runs it.
    Registered(ObjType),
    /// A sleeping lock of a kind in [`crate::locking::SLEEPING_KINDS`] other
    /// than its type's default (`type = "mutex", kind = "rt_mutex"`);
    /// `spin`: it may spin on a running owner.
    Sleeping { kind: SleepingKind, spin: bool },
}

/// A spinning-lock implementation, resolved once, when the scenario is
/// compiled: its place in [`crate::locking::LOCK_KINDS`]. The kernel never
/// looks a kind up by name again (`SpinKind::named`, `SpinKind::info`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpinKind(pub(crate) u8);

/// A sleeping-lock kind, resolved once, when the scenario is compiled:
/// its `id` in [`crate::locking::SLEEPING_KINDS`] (`SleepingKind::named`,
/// `SleepingKind::info`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SleepingKind(pub(crate) u8);

/// An object type of [`crate::locking::OBJECT_TYPES`], resolved once,
/// when the scenario is compiled: its place in the registry
/// (`ObjType::named`, `ObjType::info`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjType(pub(crate) u8);

/// Options of a spinning-lock implementation; each kind says which it takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockOptions {
    /// `tas`: exponential backoff between the waiters' `xchg` attempts
    /// instead of a bare test-and-set loop (they still never read first:
    /// test-and-test-and-set is the `ttas` kind).
    pub backoff: bool,
    /// `ttas`: folly's `detail::Sleeper` on the waiters (none: they spin
    /// until they get the lock, as the kernel's spinlocks do).
    pub sleeper: Option<Sleeper>,
}

/// folly's `detail::Sleeper` (`folly/synchronization/detail/Sleeper.h`):
/// a waiter's first `max_active_spin` waits are one `pause` each; every
/// later one is a `nanosleep()`, after which it reads the lock again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sleeper {
    /// Waits that pause before the waiter starts sleeping (`kMaxActiveSpin`).
    pub max_active_spin: u32,
    /// One iteration of the read loop: a `pause` and a cache hit.
    pub pause: Nanos,
    /// From the start of one sleep to the read after it.
    pub sleep: Nanos,
}

/// How the idle task and kernel threads borrow the previous mm
/// (`CONFIG_MMU_LAZY_TLB_REFCOUNT` / `CONFIG_MMU_LAZY_TLB_SHOOTDOWN`, and
/// the `mm_cpumask`-as-refcount proposal of seed 004).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LazyTlb {
    /// `mmgrab_lazy_tlb()` / `mmdrop_lazy_tlb()` on `mm->mm_count` at every
    /// switch to and from a lazy context.
    #[default]
    Refcount,
    /// No lazy references; the final `__mmdrop()` IPIs the CPUs of
    /// `mm_cpumask` still using the mm lazily.
    Shootdown,
    /// `mm_cpumask` is the lazy reference: a CPU clears its bit after it
    /// stopped using the mm, and frees it if it cleared the last bit after
    /// `mm_users` reached zero, deciding with one atomic operation.
    CpumaskRefcount,
    /// The same, naively: the bit is cleared before the CPU stops using the
    /// mm, and the emptiness check and free are separate steps.
    CpumaskRefcountNaive,
}

/// CFS bandwidth control of a cgroup (`cpu.max` = quota period).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidth {
    pub quota: Nanos,
    pub period: Nanos,
    /// When the period timer first fires, in `[0, period)`; it then fires
    /// every `period`. 0 = at `period`, as every cgroup's did before. The
    /// kernel's timer keeps the phase of its first expiry:
    /// `start_cfs_bandwidth()` and `sched_cfs_period_timer()` move it on
    /// with `hrtimer_forward_now()`, by whole periods.
    pub phase: Nanos,
}

/// A cgroup with the cpu controller.
#[derive(Clone, Debug, PartialEq)]
pub struct CgroupDecl {
    pub name: String,
    pub parent: Option<usize>,
    pub bandwidth: Option<Bandwidth>,
    /// Task groups in this cgroup's subtree that the scenario generated in
    /// bulk (e.g. 2000 children each 5 deep), beyond the declared ones. They
    /// hold tasks but matter to the model through `walk_tg_tree_from()`.
    pub generated_descendants: u64,
}

/// Scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER (CFS).
    Normal,
    /// SCHED_FIFO with a priority 1..=99 (higher runs first).
    Fifo(u8),
}

/// Where a task may run (`cpus_allowed`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Affinity {
    /// Only the CPU it is placed on (`kthread_bind()`, or `taskset -c N`
    /// per thread).
    #[default]
    Pinned,
    /// Any of these CPUs (`sched_setaffinity()` to a set).
    Cpus(Vec<CpuId>),
}

/// A group of identical tasks.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskGroupDecl {
    pub name: String,
    /// The CPU each task starts on, one entry per task.
    pub placement: Vec<CpuId>,
    /// Where the tasks may run; the load balancer moves those that may.
    pub affinity: Affinity,
    pub policy: Policy,
    /// Index into `Spec::cgroups`; `None` is the root cgroup.
    pub cgroup: Option<usize>,
    /// Address space: tasks with the same id are threads of one process.
    pub mm: u32,
    /// Each task its own address space, `mm + i` for the group's task `i`
    /// (fork()ed processes, as will-it-scale's processes mode runs).
    pub mm_per_task: bool,
    pub program: Program,
}

/// A compiled scenario variant, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub machine: Machine,
    pub knobs: Knobs,
    pub objects: Vec<ObjectDecl>,
    pub cgroups: Vec<CgroupDecl>,
    /// `cpu.max.burst` of each cgroup, by index (missing or 0: none).
    pub cfs_burst: Vec<Nanos>,
    pub task_groups: Vec<TaskGroupDecl>,
    /// Names of counters (`count` ops), indexed by `CounterId`.
    pub counters: Vec<String>,
    /// Names of latency histograms, indexed by `HistId`.
    pub histograms: Vec<String>,
    /// Simulated duration.
    pub duration: Nanos,
    /// Leading part of the run excluded from rates and histograms.
    pub warmup: Nanos,
    pub seed: u64,
    /// Event budget: the run stops early after this many events.
    pub max_events: Option<u64>,
    /// Independent replicas run (in parallel) with seeds `seed..seed+n` and
    /// merged into one result: windows and histograms pooled.
    pub replicas: u32,
    /// Schedule exploration: random delays before shared-state ops.
    pub perturb: Option<Perturb>,
    /// Cross-CPU call handlers written as code: `work`, `spin_lock`,
    /// `spin_unlock` and `count` ops, run on the target in hardirq context.
    pub handlers: Vec<Program>,
    /// `[hooks]`: code run at kernel events, by [`HookEvent`]
    /// index (`None`: no hook there).
    pub hooks: [Option<Program>; HOOK_EVENTS],
    /// Where objects sit on cache lines, when not one line per object.
    pub layout: Layout,
}

/// Objects placed on cache lines explicitly (`line = "NAME"`, per-CPU
/// `stride = "packed"`); empty: every object (every per-CPU instance) on
/// a line of its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Objects sharing one line, in declaration order: the first is the
    /// line's host (the object whose `Line` the others use: at most one
    /// lock, the rest atomics). Per-CPU objects on a line share it per
    /// CPU: instance i of each on one line.
    pub lines: Vec<Vec<u32>>,
    /// Rwsems that straddle two lines (`line = ["a", "b"]`): the rwsem,
    /// and the atomics beside its second line (`wait_lock` and
    /// `wait_list`'s). Its first line (`count`, `owner`, `osq`) is in
    /// `lines` like any lock's when atomics share it.
    pub split: Vec<(u32, Vec<u32>)>,
    /// Per-CPU atomics packed `n` instances to a line: (object, n).
    pub packed: Vec<(u32, u32)>,
    /// Object arrays (`count = N` in `[objects]`): (first element, N),
    /// by first element. Element `i` is the object `first + i`, declared
    /// in a row, each with its own instance and `lock_stat` row; an index
    /// selects the object, not an instance of one.
    pub arrays: Vec<(u32, u32)>,
    /// A per-CPU atomic whose instance i is on CPU i's `csd_data` line
    /// (`line = "csd_data"`): the IPI model's CSD traffic is then
    /// transactions on that line; without it, fixed transfers between the
    /// caller and the target as before.
    pub csd_line: Option<u32>,
}

impl Layout {
    /// The length of the object array whose first element is `object`.
    #[inline]
    pub fn array_len(&self, object: u32) -> Option<u32> {
        self.arrays
            .binary_search_by_key(&object, |&(first, _)| first)
            .ok()
            .map(|i| self.arrays[i].1)
    }
}

/// A perturbed schedule (`run --explore`): before a task runs a shared-
/// state op, with probability 1 in `one_in`, it is delayed by a uniform
/// 1..=`max_delay` ns, as an interrupt or a burst of cache misses would
/// delay it. Every decision point has an index; `keep`, if given, applies
/// only the delays at those indices (the others are drawn but not taken),
/// which is how a failing schedule is shrunk and replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Perturb {
    pub seed: u64,
    pub max_delay: Nanos,
    pub one_in: u64,
    pub keep: Option<Vec<u32>>,
}

/// Kernel events a `[hooks]` entry can attach to ([`crate::hooks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    SchedSwitch = 0,
    SchedTick = 1,
    DequeueTaskFair = 2,
    EnqueueTaskFair = 3,
    SetTaskCpu = 4,
    IdleEnter = 5,
    IdleExit = 6,
    UpdateTgLoadAvg = 7,
    UpdateCfsGroup = 8,
    TryToWakeUp = 9,
    SchedTtwuPending = 10,
}

/// How many [`HookEvent`]s there are.
pub const HOOK_EVENTS: usize = 11;

/// Every event by its `[hooks]` name, in index order.
pub const HOOK_NAMES: [&str; HOOK_EVENTS] = [
    "sched_switch",
    "sched_tick",
    "dequeue_task_fair",
    "enqueue_task_fair",
    "set_task_cpu",
    "idle_enter",
    "idle_exit",
    "update_tg_load_avg",
    "update_cfs_group",
    "try_to_wake_up",
    "sched_ttwu_pending",
];

/// The event a `[hooks]` key names.
pub fn hook_event(name: &str) -> Option<usize> {
    HOOK_NAMES.iter().position(|n| *n == name)
}
