//! The protocol every sleeping lock follows (`struct mutex`,
//! `struct rw_semaphore`, counting semaphores, `seqcount_t`'s readers,
//! `rt_mutex`), and the core's only way to reach one.
//!
//! A sleeping lock's op may take it at once, spin (optimistically on the
//! owner, queued on an OSQ, or on a value) or sleep on its wait list; the
//! core never knows which kind it is dealing with. It asks the kind, through
//! [`SleepingLock`], at five points:
//!
//! - **lock** (`LockingOp::Lock`, `LockingOp::Down`): take it, spin, or sleep; a resumed
//!   op passes back the step the kind recorded in [`Resume::Lock`];
//! - **unlock** (`LockingOp::Unlock`, `LockingOp::Up`): release it, hand it over, wake;
//! - **owner leaves its CPU** (every context switch): spinners on what the
//!   task owns give up (`owner_on_cpu()` is false);
//! - **need_resched while spinning**: the spinner leaves its queue and
//!   reschedules;
//! - **spin finished** (its `SpinEnd`): it has the lock, or it goes on in
//!   the slow path.
//!
//! A task spinning in a sleeping lock has [`Spin::Sleeping`] with the kind's
//! index in [`super::SLEEPING_KINDS`]; the kind's instances live in its own
//! table (or in [`Objects::sleeping`] for a kind that needs no other), built
//! by the kind itself.
//!
//! Adding a sleeping lock kind is one file implementing [`SleepingLock`]
//! with a [`SleepingKindInfo`], and one line in [`super::SLEEPING_KINDS`]
//! (see docs/locks.md).

use crate::coherence::LineHome;
use crate::locking::objects::Objects;
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::spec::ObjectKind;
use crate::task::*;

/// A sleeping-lock kind, as a scenario names it.
pub struct SleepingKindInfo {
    /// Its index in [`super::SLEEPING_KINDS`] (what [`Spin::Sleeping`]
    /// carries).
    pub id: u8,
    /// `kind = "..."` in a scenario (the default kind of its type is named
    /// like the type).
    pub name: &'static str,
    /// The scenario object type it implements (`mutex`, `rwsem`, ...).
    pub object_type: &'static str,
    /// The implementation an object of this type gets without `kind`.
    pub default: bool,
    /// One line for error messages and docs.
    pub summary: &'static str,
    /// The type `perf lock contention` shows (tools/perf/builtin-lock.c
    /// `lock_type_table`; `:R`/`:W` are added for a kind with a read side).
    pub perf_type: &'static str,
    pub(crate) imp: &'static dyn SleepingLock,
}

/// What a new instance is made from: the declaration and where its line
/// lives.
pub(crate) struct Build<'a> {
    /// The declared object's index.
    pub object: u32,
    pub kind: &'a ObjectKind,
    /// The home of instance `i`'s cache line.
    pub home: &'a dyn Fn(u32) -> LineHome,
    /// How many instances (one per CPU for a per-CPU object).
    pub n: u32,
}

/// The one interface every sleeping-lock kind has. `l` is an instance
/// index in the kind's own table; `c` the CPU `t` runs on.
pub(crate) trait SleepingLock: Sync {
    /// Makes the instances of a declared object; returns the first one's
    /// index in the kind's table.
    fn build(&self, o: &mut Objects, b: &Build) -> usize;
    /// The declared object instance `l` belongs to (for `lock_stat`).
    fn object(&self, o: &Objects, l: u32) -> u32;
    /// Line transfers so far on instances `first..first + n`.
    fn line_transfers(&self, o: &Objects, first: usize, n: usize) -> u64;
    /// Whether its read side is a `lock_stat` class of its own (`NAME-R`).
    fn has_read_side(&self) -> bool {
        false
    }
    /// The kernel function that takes it in `mode` (for lockdep's reports).
    fn lock_fn(&self, mode: LockMode) -> String;
}

/// What a sleeping-lock kind does to a task, over any env ([`LockingEnv`]):
/// take, release, and the three points of its spinners. Monomorphised per
/// env; the registry reaches a kind's through [`super::sleeping_ops`].
pub(crate) trait SleepingLockOps<K: LockingEnv>: SleepingLock {
    /// `t` takes instance `l` in `mode`: from the start (`step` none) or
    /// continued at the step it recorded in [`Resume::Lock`].
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode, step: Option<u8>) -> Flow;
    /// `t` releases instance `l` held in `mode`.
    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode) -> Flow;
    /// Task `owner` leaves its CPU: spinners on what it owns give up.
    fn owner_leaves_cpu(&self, _k: &mut K, _owner: TaskId) {}
    /// `need_resched()` is set while `t` spins on instance `l`.
    fn spin_need_resched(&self, _k: &mut K, _c: u32, _t: TaskId, _l: u32) {}
    /// The spin of `t` on instance `l` ended (its `SpinEnd`; [`Spin`] is
    /// already cleared). True if `t` goes on with its program.
    fn spin_finished(&self, k: &mut K, c: u32, t: TaskId, l: u32) -> bool;
}

/// The kind registered as `id`.
#[inline]
pub(crate) fn kind(id: u8) -> &'static SleepingKindInfo {
    &super::SLEEPING_KINDS[id as usize]
}

/// The sleeping-lock kind of a declared object, if it is one: the type's
/// own kind, or the one the compiled scenario resolved.
pub fn kind_of(decl: &ObjectKind) -> Option<&'static SleepingKindInfo> {
    let id = match decl {
        ObjectKind::Mutex { .. } => super::mutex::KIND.id,
        ObjectKind::Rwsem { .. } => super::rwsem::KIND.id,
        ObjectKind::Semaphore { .. } => super::semaphore::KIND.id,
        ObjectKind::Seqcount => super::seqcount::KIND.id,
        ObjectKind::Sleeping { kind, .. } => return Some(kind.info()),
        ObjectKind::Spinlock { .. }
        | ObjectKind::Atomic
        | ObjectKind::Variable { .. }
        | ObjectKind::Registered(_) => return None,
    };
    Some(kind(id))
}

/// The sleeping kind `name` of `object_type`, or its default with `None`.
pub fn find_sleeping_kind(
    object_type: &str,
    name: Option<&str>,
) -> Option<&'static SleepingKindInfo> {
    super::SLEEPING_KINDS
        .iter()
        .find(|k| k.object_type == object_type && name.map_or(k.default, |n| n == k.name))
}

/// The names of the sleeping kinds of `object_type`.
pub fn sleeping_kind_names(object_type: &str) -> impl Iterator<Item = &'static str> + '_ {
    super::SLEEPING_KINDS
        .iter()
        .filter(move |k| k.object_type == object_type)
        .map(|k| k.name)
}

/// The core's only way to reach a sleeping lock: each call goes to the
/// kind of the instance.
pub(crate) trait SleepingLocks: LockingEnv {
    /// A sleeping lock's `lock` for the op's object reference.
    fn sleeping_lock(
        &mut self,
        c: u32,
        t: TaskId,
        kind_id: u8,
        l: u32,
        mode: LockMode,
        resume: Resume,
    ) -> Flow {
        let step = match resume {
            Resume::Lock(s) => Some(s),
            _ => None,
        };
        super::sleeping_ops::<Self>(kind_id).lock(self, c, t, l, mode, step)
    }

    /// `owner_leaves_cpu` of every kind the scenario declares, for `prev`,
    /// which leaves its CPU.
    fn sleeping_owner_leaves_cpu(&mut self, prev: TaskId) {
        for i in 0..self.locking().objects.used_kinds().len() {
            let k = self.locking().objects.used_kinds()[i];
            super::sleeping_ops::<Self>(k).owner_leaves_cpu(self, prev);
        }
    }

    /// `t` spins in a sleeping lock on CPU `c`, which has `need_resched()`.
    fn sleeping_spin_need_resched(&mut self, c: u32, t: TaskId, kind_id: u8, l: u32) {
        super::sleeping_ops::<Self>(kind_id).spin_need_resched(self, c, t, l);
    }

    /// The spin of `t` in a sleeping lock ended; true if it goes on.
    fn sleeping_spin_finished(&mut self, c: u32, t: TaskId, kind_id: u8, l: u32) -> bool {
        super::sleeping_ops::<Self>(kind_id).spin_finished(self, c, t, l)
    }
}

impl<K: LockingEnv> SleepingLocks for K {}

#[cfg(test)]
mod tests {
    /// Each kind's `id` is its place in the registry, and every type has
    /// one default kind.
    #[test]
    fn the_registry_is_indexed_by_id_with_one_default_per_type() {
        for (i, k) in super::super::SLEEPING_KINDS.iter().enumerate() {
            assert_eq!(k.id as usize, i, "{}", k.name);
            let defaults = super::super::SLEEPING_KINDS
                .iter()
                .filter(|o| o.object_type == k.object_type && o.default)
                .count();
            assert_eq!(defaults, 1, "{}", k.object_type);
        }
    }
}
