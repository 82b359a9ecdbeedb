//! Locks, laid out as the kernel's `kernel/locking/`: one file per
//! implementation, each behind one small interface.
//!
//! Spinning locks (`spinlock_t` and `rwlock_t`) implement [`SpinningLock`]:
//! the interpreter asks a lock to be taken or released by a task on a CPU
//! at a time, and the implementation answers with cache-line transactions
//! on its own [`Line`]s: when the taker owns the
//! lock, or that it waits (and later, at a release, which waiters own the
//! lock and when each sees it). Everything common to every kind (preemption
//! and IRQ state, the spin interval, `lock_stat`, the bad-unlock detector)
//! lives in `spinning.rs`, written once.
//!
//! Adding an implementation is one new file with a [`LockKindInfo`] and one
//! line in [`LOCK_KINDS`].

pub(crate) mod atomic;
pub mod build;
pub mod cna;
pub mod distributed_mutex;
pub(crate) mod env;
pub mod lockdep;
pub mod mcs;
pub mod mutex;
pub mod object_type;
pub mod objects;
pub mod ops;
pub mod osq;
pub mod osq_numa;
pub mod percpu_ref;
pub mod percpu_rwsem;
pub mod qrwlock;
pub mod qspinlock;
pub mod rt_mutex;
pub mod rwsem;
pub mod semaphore;
pub mod seqcount;
pub mod sleeping;
pub(crate) mod spinning;
pub mod tas;
pub mod ticket;
pub mod ttas;

use smpsim_engine::Nanos;

use crate::coherence::Line;
use crate::costs::CostNs;
use crate::program::LockMode;
use crate::spec::{LockOptions, ObjectKind, SleepingKind, SpinKind};
use crate::task::TaskId;

/// Every spinning-lock implementation smpsim knows.
pub static LOCK_KINDS: &[LockKindInfo] = &[
    qspinlock::KIND,
    ticket::KIND,
    tas::KIND,
    ttas::KIND,
    mcs::KIND,
    cna::KIND,
    distributed_mutex::KIND,
    qrwlock::KIND,
];

/// Every sleeping-lock kind smpsim knows, at the index its `id` says
/// ([`sleeping::SleepingLock`]).
pub static SLEEPING_KINDS: &[sleeping::SleepingKindInfo] = &[
    mutex::KIND,
    rwsem::KIND,
    semaphore::KIND,
    seqcount::KIND,
    rt_mutex::KIND,
    percpu_rwsem::KIND,
    osq_numa::KIND,
];

/// Every object type with ops of its own that is not a lock, each
/// described whole in its file ([`object_type::ObjectTypeInfo`]).
pub static OBJECT_TYPES: &[&object_type::ObjectTypeInfo] = &[&percpu_ref::OBJECT_TYPE];

pub(crate) use env::{LockingEnv, LockingParts};
/// Each sleeping kind's operations over env `K`, by its id (its place in
/// [`SLEEPING_KINDS`]; `sleeping_ops_follow_the_registry` checks the two
/// agree). A kind's ops are generic over the env, so the registry's
/// `&dyn` entry cannot carry them: a new kind adds its line here too.
#[inline]
pub(crate) fn sleeping_ops<'a, K: LockingEnv + 'a>(id: u8) -> &'a dyn sleeping::SleepingLockOps<K> {
    match id {
        0 => &mutex::MutexKind,
        1 => &rwsem::RwsemKind,
        2 => &semaphore::SemaphoreKind,
        3 => &seqcount::SeqcountKind,
        4 => &rt_mutex::RtMutexKind,
        5 => &percpu_rwsem::PercpuRwsemKind,
        6 => &osq_numa::NumaOsqMutex,
        _ => panic!("no sleeping-lock kind {id} in SLEEPING_KINDS"),
    }
}

pub use sleeping::{find_sleeping_kind, sleeping_kind_names, SleepingKindInfo};

/// Locking's state: every lock kind's instances (each kind's own table in
/// [`objects::Objects`]) and lockdep. Its fields are locking's own: the
/// rest of the kernel reads the instances through [`Locking::objects`] and
/// changes them through locking's verbs.
pub(crate) struct Locking {
    /// Every instance of every declared object, by kind.
    // invariant: holds `cpu_hotplug_lock` at `hotplug_lock` (see below).
    objects: objects::Objects,
    /// Scratch for the waiters a lock operation grants the lock to, kept
    /// for its capacity.
    // invariant: empty outside a spinning lock's operation
    // (`spinning.rs`'s `with_lock` takes it, fills it, and hands it back
    // cleared; checked there in debug builds).
    lock_grants: Vec<(
        crate::task::TaskId,
        crate::program::LockMode,
        smpsim_engine::Nanos,
    )>,
    /// `cpu_hotplug_lock`'s instance in [`objects::Objects::sleeping`].
    // invariant: a `percpu_rwsem` instance of `objects` (checked in
    // debug builds by `Locking::new`); never changes.
    hotplug_lock: u32,
    /// lockdep, when the scenario turns it on.
    // invariant: set at most once, at boot before any event
    // (`Locking::enable_lockdep`); `None` for good after a circular
    // dependency report turns lockdep off.
    lockdep: Option<Box<lockdep::Lockdep>>,
}

impl Locking {
    /// Locking's state over the instances `objects`, `cpu_hotplug_lock`
    /// being its sleeping instance `hotplug_lock`; lockdep off.
    pub(crate) fn new(objects: objects::Objects, hotplug_lock: u32) -> Self {
        debug_assert!(
            objects
                .sleeping
                .get(hotplug_lock as usize)
                .is_some_and(|l| l.is::<percpu_rwsem::PercpuRwsem>()),
            "cpu_hotplug_lock is a percpu_rwsem instance"
        );
        objects.check_invariants();
        Locking {
            objects,
            lock_grants: Vec::with_capacity(8),
            hotplug_lock,
            lockdep: None,
        }
    }

    /// Turns lockdep on (at boot, when the scenario asks for it).
    pub(crate) fn enable_lockdep(&mut self, ld: lockdep::Lockdep) {
        debug_assert!(self.lockdep.is_none(), "lockdep is turned on once");
        self.lockdep = Some(Box::new(ld));
    }

    /// Every instance of every declared object, to read.
    #[inline]
    pub(crate) fn objects(&self) -> &objects::Objects {
        &self.objects
    }

    /// Every instance, to change: for the core's verbs that operate on an
    /// instance's line or value (an atomic's cache line, a variable's
    /// `WRITE_ONCE()`), which [`objects::Objects`] keeps consistent.
    #[inline]
    pub(crate) fn objects_mut(&mut self) -> &mut objects::Objects {
        &mut self.objects
    }

    /// Whether lockdep already knows lock class `class` is taken in this
    /// context (hardirq if `in_hardirq`), so `mark_lock()` has nothing to
    /// add; true when lockdep is off.
    #[inline]
    pub(crate) fn lockdep_usage_settled(&self, class: u32, in_hardirq: bool) -> bool {
        self.lockdep
            .as_ref()
            .is_none_or(|ld| ld.usage_settled(class, in_hardirq))
    }
}

/// A spinning-lock implementation, as a scenario names it.
pub struct LockKindInfo {
    /// Its index in [`LOCK_KINDS`] (what [`SpinKind`] carries).
    pub id: u8,
    /// `kind = "..."` in a scenario.
    pub name: &'static str,
    /// The object type it implements: `spinlock` or `rwlock`.
    pub object_type: &'static str,
    /// The implementation an object of this type gets without `kind`.
    pub default: bool,
    /// The options (`LockOptions` fields) it takes.
    pub options: &'static [&'static str],
    /// One line for error messages and docs.
    pub summary: &'static str,
    pub(crate) new: fn(LockOptions, crate::coherence::LineHome) -> Box<dyn SpinningLock>,
}

impl LockKindInfo {
    /// The modes its ops take: `spin_*` for a spinlock, `read_*`/`write_*`
    /// for an rwlock.
    pub fn modes(&self) -> &'static [LockMode] {
        if self.object_type == "rwlock" {
            &[LockMode::Read, LockMode::Write]
        } else {
            &[LockMode::Exclusive]
        }
    }
}

impl LockKindInfo {
    /// The handle a compiled scenario keeps for it.
    pub fn handle(&self) -> SpinKind {
        SpinKind(self.id)
    }
}

impl SpinKind {
    /// The implementation named `name` (`kind = "..."`).
    pub fn named(name: &str) -> Option<SpinKind> {
        LOCK_KINDS
            .iter()
            .find(|k| k.name == name)
            .map(|k| k.handle())
    }

    /// Its registry entry.
    #[inline]
    pub fn info(self) -> &'static LockKindInfo {
        &LOCK_KINDS[self.0 as usize]
    }
}

impl std::fmt::Debug for SpinKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.info().name)
    }
}

impl SleepingKindInfo {
    /// The handle a compiled scenario keeps for it.
    pub fn handle(&self) -> SleepingKind {
        SleepingKind(self.id)
    }
}

impl SleepingKind {
    /// The kind named `name` (`kind = "..."`).
    pub fn named(name: &str) -> Option<SleepingKind> {
        SLEEPING_KINDS
            .iter()
            .find(|k| k.name == name)
            .map(|k| SleepingKind(k.id))
    }

    /// Its registry entry.
    #[inline]
    pub fn info(self) -> &'static SleepingKindInfo {
        &SLEEPING_KINDS[self.0 as usize]
    }
}

impl std::fmt::Debug for SleepingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.info().name)
    }
}

/// The lock type `perf lock contention` shows for an object of `kind`
/// (tools/perf/builtin-lock.c `lock_type_table`), from the kind's
/// registry entry; `None` for an object that is not a lock.
pub fn perf_lock_type(kind: &ObjectKind) -> Option<&'static str> {
    match kind {
        ObjectKind::Spinlock { kind, .. } => Some(kind.info().object_type),
        ObjectKind::Atomic | ObjectKind::Variable { .. } => None,
        _ => sleeping::kind_of(kind).map(|k| k.perf_type),
    }
}

/// The implementation `name` of `object_type`, or its default with `None`.
pub fn find_kind(object_type: &str, name: Option<&str>) -> Option<&'static LockKindInfo> {
    LOCK_KINDS
        .iter()
        .find(|k| k.object_type == object_type && name.map_or(k.default, |n| n == k.name))
}

/// The names of the implementations of `object_type`.
pub fn kind_names(object_type: &str) -> impl Iterator<Item = &'static str> + '_ {
    LOCK_KINDS
        .iter()
        .filter(move |k| k.object_type == object_type)
        .map(|k| k.name)
}

/// A task asking for, holding or releasing a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taker {
    pub task: TaskId,
    pub cpu: u32,
    pub mode: LockMode,
}

/// A bench for the implementations' unit tests: a flat machine and the
/// grants of the last release.
#[cfg(test)]
pub(crate) struct Rig {
    pub cost: CostNs,
    pub grants: Vec<(TaskId, LockMode, Nanos)>,
}

#[cfg(test)]
impl Rig {
    pub fn new(cpus: u32) -> Self {
        Rig {
            cost: CostNs::new(&crate::testkit::flat_machine(cpus)),
            grants: Vec::new(),
        }
    }

    /// `sockets` sockets of `cores` CPUs each (a NUMA node per socket).
    pub fn new_sockets(sockets: u32, cores: u32) -> Self {
        let mut m = crate::testkit::flat_machine(sockets * cores);
        m.topology.sockets = sockets;
        m.topology.cores_per_llc = cores;
        Rig {
            cost: CostNs::new(&m),
            grants: Vec::new(),
        }
    }

    fn env(&mut self, now: Nanos) -> Env<'_> {
        Env {
            now,
            cost: &self.cost,
            grants: &mut self.grants,
            timer: None,
        }
    }

    /// Task `task`, on CPU `task`, asks for `l` exclusively at `now`.
    pub fn lock(&mut self, l: &mut dyn SpinningLock, now: Nanos, task: TaskId) -> Option<Nanos> {
        l.lock(&mut self.env(now), Self::taker(task))
    }

    /// Task `task` releases `l` at `now`; [`Rig::grants`] has only this
    /// release's grants.
    pub fn unlock(&mut self, l: &mut dyn SpinningLock, now: Nanos, task: TaskId) -> Nanos {
        self.grants.clear();
        l.unlock(&mut self.env(now), Self::taker(task))
    }

    fn taker(task: TaskId) -> Taker {
        Taker {
            task,
            cpu: task,
            mode: LockMode::Exclusive,
        }
    }
}

/// What a lock operation may use and report.
pub struct Env<'a> {
    pub now: Nanos,
    pub cost: &'a CostNs,
    /// Waiters that now hold the lock, with when each sees it (a release
    /// can grant several readers at once).
    pub grants: &'a mut Vec<(TaskId, LockMode, Nanos)>,
    /// Set by a lock that wants [`SpinningLock::timer`] called at a time
    /// (a backoff that expires while nobody else touches the lock).
    pub timer: Option<Nanos>,
}

/// The one interface every spinning-lock implementation has.
pub trait SpinningLock: Send {
    /// `taker` tries to take the lock at `env.now`: `Some(t)` if it owns it
    /// at `t` (its atomic done), `None` if it now waits (spins).
    fn lock(&mut self, env: &mut Env, taker: Taker) -> Option<Nanos>;
    /// The holder `taker` releases it; returns when the releasing store is
    /// done. Waiters granted the lock go to `env.grants`.
    fn unlock(&mut self, env: &mut Env, taker: Taker) -> Nanos;
    /// The exclusive holder, for a lock that has one.
    fn owner(&self) -> Option<Taker>;
    /// The lock word: the line every taker's atomic goes to.
    fn word(&self) -> &Line;
    /// The lock word, for an atomic placed on its line (`line = "NAME"`):
    /// a write to either is a write to the one line.
    fn word_mut(&mut self) -> &mut Line;
    /// Whether `task` holds the lock in `mode`.
    fn holds(&self, task: TaskId, mode: LockMode) -> bool {
        mode == LockMode::Exclusive && self.owner().is_some_and(|o| o.task == task)
    }
    /// A timer asked for through `env.timer` fired.
    fn timer(&mut self, _env: &mut Env) {}
    /// Cache-line transactions on the lock's lines so far: (RMWs, transfers).
    fn line_stats(&self) -> (u64, u64) {
        (self.word().rmws, self.word().transfers)
    }
}

/// lockdep's hooks on every lock op (`lock_acquire()`, `lock_release()`,
/// `mark_lock()`) and its reports, and the locks a task holds.
pub(crate) trait LockdepOps: LockingEnv {
    /// lockdep's class of `cpu_hotplug_lock`: after the declared objects.
    fn hotplug_lock_class(&self) -> u32 {
        self.spec().objects.len() as u32
    }

    fn lock_class_name(&self, class: u32) -> &str {
        self.spec()
            .objects
            .get(class as usize)
            .map_or("cpu_hotplug_lock", |o| o.name.as_str())
    }

    /// `lock_acquire()` when lockdep is on: task `t` on CPU `c` asks for a
    /// lock of `class` at its current op (`irqsave`: an `_irqsave` form,
    /// which disables hardirqs first).
    fn lockdep_acquire(&mut self, c: u32, t: TaskId, class: u32, read: bool, irqsave: bool) {
        let p = self.locking_parts();
        let Some(ld) = p.locking.lockdep.as_mut() else {
            return;
        };
        let pc = p.tasks[t as usize].pc;
        if let Some(cycle) = ld.acquire(t, class, read, pc) {
            self.report_circular_locking(c, t, cycle);
            return;
        }
        // The IRQ-safety half: taken here with hardirqs on.
        let task = &self.tasks()[t as usize];
        let settled = self
            .locking()
            .lockdep
            .as_ref()
            .is_none_or(|ld| ld.usage_settled(class, false));
        if !task.irq.irqs_off && !irqsave && !settled {
            self.mark_hardirq_on(c, t, class, pc);
        }
    }

    /// lockdep's circular-dependency report (once: lockdep is off after
    /// it). This and [`Self::mark_hardirq_on`] are out of line: they
    /// build strings, and inlined they would make every acquisition save
    /// more registers.
    #[cold]
    #[inline(never)]
    fn report_circular_locking(&mut self, c: u32, t: TaskId, cycle: lockdep::Cycle) {
        let report = self.circular_dependency_report(t, &cycle);
        let now = self.now();
        self.metrics_mut().circular_locking(c, now, report);
    }

    /// `mark_lock()` of `class` taken by `t` at op `pc` with hardirqs on:
    /// the first such use, or one after an in-hardirq use (the report).
    #[cold]
    #[inline(never)]
    fn mark_hardirq_on(&mut self, c: u32, t: TaskId, class: u32, pc: u32) {
        let site = format!("{} at {}", self.task_name(t), self.lock_site(t, pc));
        self.lockdep_usage(c, class, false, site);
    }

    /// `mark_lock()` for `class` on CPU `c`, in hardirq context or with
    /// hardirqs on; reports an inconsistent use.
    fn lockdep_usage(&mut self, c: u32, class: u32, in_hardirq: bool, site: String) {
        let Some(ld) = self.locking_mut().lockdep.as_mut() else {
            return;
        };
        let Some(bad) = ld.mark_usage(class, in_hardirq, site.clone()) else {
            return;
        };
        let name = self.lock_class_name(bad.class).to_string();
        let report = format!(
            "WARNING: inconsistent lock state\ninconsistent {{{}}} -> {{{}}} usage.\n{site} takes:\n ({name})\n{{{}}} state was registered at:\n  {}\n Possible unsafe locking scenario:\n       CPU0\n       ----\n  lock({name});\n  <Interrupt>\n    lock({name});\n *** DEADLOCK ***",
            bad.was, bad.now, bad.was, bad.was_at
        );
        let now = self.now();
        self.metrics_mut().inconsistent_lock_state(c, now, report);
    }

    /// A lock of `object` taken by task `t`: held past its syscall's end
    /// if it took it in kernel mode ([`Self::lockdep_sys_exit`]).
    fn hold(&mut self, t: TaskId, object: u32) {
        let task = &mut self.tasks_mut()[t as usize];
        if task.mode == crate::task::Mode::Sys {
            task.held.push(object);
        }
    }

    /// A lock of `object` released by `t`: the innermost one it holds.
    fn unhold(&mut self, t: TaskId, object: u32) {
        let held = &mut self.tasks_mut()[t as usize].held;
        if let Some(i) = held.iter().rposition(|&o| o == object) {
            held.remove(i);
        }
    }

    /// `lockdep_sys_exit()`: task `t` returns to user space at `at` with
    /// locks it took in the kernel still held. The kernel warns (once:
    /// `debug_locks_off()`); the model counts each return, and the locks
    /// stay held, as they would.
    #[cold]
    #[inline(never)]
    fn lockdep_sys_exit(&mut self, c: u32, t: TaskId, at: Nanos) {
        if at > self.spec().duration {
            return;
        }
        let name = self.task_name(t);
        let held = &self.tasks()[t as usize].held;
        let mut locks = String::new();
        for (i, &o) in held.iter().enumerate() {
            let lock = &self.spec().objects[o as usize].name;
            locks.push_str(&format!(" #{i}: ({lock})"));
        }
        let n = held.len();
        let report = format!(
            "WARNING: lock held when returning to user space! {name} is leaving the kernel with locks still held! {n} lock{} held by {name}:{locks}",
            if n == 1 { "" } else { "s" }
        );
        self.metrics_mut()
            .lock_held_returning_to_user(c, at, report);
    }

    fn lockdep_release(&mut self, t: TaskId, class: u32) {
        if let Some(ld) = self.locking_mut().lockdep.as_mut() {
            ld.release(t, class);
        }
    }

    /// The op at `pc` of task `t`'s program, as lockdep's "at:" shows it.
    fn lock_site(&self, t: TaskId, pc: u32) -> String {
        let g = self.tasks()[t as usize].group as usize;
        let op = self
            .spec()
            .task_groups
            .get(g)
            .and_then(|g| g.program.ops.get(pc as usize));
        match op {
            Some(crate::program::Op::Locking(crate::program::LockingOp::Lock {
                lock,
                mode,
                irqsave,
                ..
            })) => {
                let f = match self.locking().objects.sleeping_kind(lock.object) {
                    Some(k) => sleeping::kind(k).imp.lock_fn(*mode),
                    None => format!("{}_lock", mode.op_prefix()),
                };
                format!("{f}{}+pc{pc}", if *irqsave { "_irqsave" } else { "" })
            }
            Some(crate::program::Op::Locking(crate::program::LockingOp::CpusReadLock)) => {
                format!("cpus_read_lock+pc{pc}")
            }
            Some(crate::program::Op::Locking(crate::program::LockingOp::CpusWriteLock)) => {
                format!("cpus_write_lock+pc{pc}")
            }
            _ => format!("pc{pc}"),
        }
    }

    /// The kernel's `print_circular_bug()` report.
    fn circular_dependency_report(&self, t: TaskId, cycle: &lockdep::Cycle) -> String {
        use std::fmt::Write;
        let name = |class| self.lock_class_name(class).to_string();
        let me = self.task_name(t);
        let mut r = String::new();
        let _ = writeln!(r, "WARNING: possible circular locking dependency detected");
        let _ = writeln!(r, "{me} is trying to acquire lock:");
        let _ = writeln!(
            r,
            " ({}), at: {}",
            name(cycle.new),
            self.lock_site(t, cycle.new_pc)
        );
        let _ = writeln!(r, "but task is already holding lock:");
        let _ = writeln!(
            r,
            " ({}), at: {}",
            name(cycle.held),
            self.lock_site(t, cycle.held_pc)
        );
        let _ = writeln!(r, "which lock already depends on the new lock.");
        let _ = writeln!(r, "the existing dependency chain (in reverse order) is:");
        for (i, link) in cycle.existing.iter().enumerate().rev() {
            let _ = writeln!(
                r,
                "-> #{i} ({}): taken by {} at {}",
                name(link.class),
                self.task_name(link.task),
                self.lock_site(link.task, link.pc)
            );
        }
        let _ = writeln!(r, " Possible unsafe locking scenario:");
        let _ = writeln!(r, "       CPU0                    CPU1");
        let _ = writeln!(r, "  lock({});", name(cycle.held));
        let _ = writeln!(
            r,
            "                               lock({});",
            name(cycle.new)
        );
        let _ = writeln!(
            r,
            "                               lock({});",
            name(cycle.held)
        );
        let _ = writeln!(r, "  lock({});", name(cycle.new));
        let _ = write!(r, " *** DEADLOCK ***");
        r
    }
}

impl<K: LockingEnv> LockdepOps for K {}

/// The lists of kinds and kernel threads that docs keep by hand, checked
/// against the registries: a kind or a thread added without its mention
/// fails here, naming it.
#[cfg(test)]
mod doc_lists {
    use super::{LOCK_KINDS, SLEEPING_KINDS};

    const LIB: &str = include_str!("../lib.rs");
    const LOCKS_MD: &str = include_str!("../../../../docs/locks.md");

    fn kind_names() -> impl Iterator<Item = &'static str> {
        LOCK_KINDS
            .iter()
            .map(|k| k.name)
            .chain(SLEEPING_KINDS.iter().map(|k| k.name))
    }

    /// Each spinning kind's `id` is its place in the registry (what its
    /// [`crate::spec::SpinKind`] handle carries).
    #[test]
    fn spinning_kinds_are_indexed_by_id() {
        for (i, k) in LOCK_KINDS.iter().enumerate() {
            assert_eq!(k.id as usize, i, "{}", k.name);
            assert_eq!(k.handle().info().name, k.name);
        }
    }

    /// [`super::sleeping_ops`] gives each registered kind its own ops.
    #[test]
    fn sleeping_ops_follow_the_registry() {
        use crate::program::LockMode;
        for k in SLEEPING_KINDS {
            let ops = super::sleeping_ops::<crate::Kernel>(k.id);
            for mode in [LockMode::Exclusive, LockMode::Read, LockMode::Write] {
                assert_eq!(ops.lock_fn(mode), k.imp.lock_fn(mode), "{}", k.name);
            }
            assert_eq!(ops.has_read_side(), k.imp.has_read_side(), "{}", k.name);
        }
    }

    #[test]
    fn the_crate_doc_names_every_lock_kind_and_kernel_thread() {
        let doc: String = LIB
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join(" ");
        for name in kind_names() {
            assert!(
                doc.contains(&format!("`{name}`")),
                "crates/kernel/src/lib.rs's module doc does not name lock kind `{name}`"
            );
        }
        for k in crate::KTHREADS {
            assert!(
                doc.contains(&format!("`{}", k.name)),
                "crates/kernel/src/lib.rs's module doc does not name kernel thread `{}`",
                k.name
            );
        }
    }

    #[test]
    fn locks_md_has_a_row_for_every_kind_and_names_every_kernel_thread() {
        let rows: Vec<&str> = LOCKS_MD.lines().filter(|l| l.starts_with("| `")).collect();
        for name in kind_names() {
            assert!(
                rows.iter().any(|r| r.contains(&format!("`{name}`"))
                    || r.contains(&format!("\"{name}\""))),
                "docs/locks.md's table has no row for lock kind `{name}`"
            );
        }
        let threads = LOCKS_MD
            .split("## Adding a kernel thread")
            .nth(1)
            .expect("docs/locks.md's kernel thread section");
        for k in crate::KTHREADS {
            assert!(
                threads.contains(&format!("`{}", k.name)),
                "docs/locks.md's kernel thread section does not name `{}`",
                k.name
            );
        }
    }
}
