//! The table of kernel objects: every instance of every declared object,
//! by kind. An op's object reference resolves to an instance through
//! [`Objects::first_instance`]; [`super::build`] makes the instances once,
//! from the spec through the registries.
//!
//! Each lock kind owns its table. The two on every hot path, `mutex` and
//! `rw_semaphore`, are typed fields here ([`Objects::mutexes`],
//! [`Objects::rwsems`]): reached directly, because a lookup by type on
//! each of the ~35 accesses of a lock operation cost the bench ~15% of
//! its events per second. The others are kept by their type
//! ([`Objects::kind_table`]), naming no kind; `percpu_rwsem` uses
//! [`Objects::sleeping`]. Spinning locks, atomics and variables have
//! tables here, their instances made by [`super::build`].

use crate::coherence::Line;
use crate::ids::ObjId;
use crate::locking::mutex::Mutexes;
use crate::locking::rwsem::Rwsems;
use crate::locking::spinning::LockInstance;

/// The `Line` an atomic instance uses: its own (or another atomic's) in
/// the atomics table, or the word of a lock placed on the same line (a
/// sleeping kind's, reached through the kind's own function).
#[derive(Clone, Copy, Debug)]
pub(crate) enum LineAt {
    Atomic(u32),
    Spinlock(u32),
    Word(fn(&mut Objects, u32) -> &mut Line, u32),
}

/// Its fields are locking's own (`pub(super)` at most): the rest of the
/// kernel reads an instance through the methods below.
#[derive(Default)]
pub struct Objects {
    /// Spinning locks of every implementation (`spinlock_t`, `rwlock_t`).
    pub(super) spinlocks: Vec<LockInstance>,
    /// `atomic_t`s, each on its own line unless [`Objects::atomic_at`]
    /// places it on another's.
    pub(super) atomics: Vec<Line>,
    /// Where each atomic instance's line is when a layout places atomics
    /// on shared lines (`line = "NAME"`, `stride = "packed"`); empty
    /// otherwise, and then every atomic uses its own entry of `atomics`.
    // invariant: empty, or one entry per atomic (`check_invariants`).
    atomic_at: Vec<LineAt>,
    /// Failed `atomic_try_cmpxchg()`s per atomic instance (grown on the
    /// first failure): the line's own count would also take those of the
    /// lock or the other atomics a layout puts on the same line.
    cmpxchg_fails: Vec<u64>,
    /// Shared variables' values.
    pub(super) variables: Vec<i64>,
    /// Instances of sleeping-lock kinds that keep no table of their own
    /// (each kind downcasts its own).
    pub(super) sleeping: Vec<Box<dyn std::any::Any + Send>>,
    /// `struct mutex`'s own table, read and written only by `mutex/`.
    pub(super) mutexes: Mutexes,
    /// `struct rw_semaphore`'s own table, read and written only by `rwsem/`.
    pub(super) rwsems: Rwsems,
    /// The tables a kind owns (its instances and what it keeps beside
    /// them), by the table's type: made by the kind on first use, read
    /// only by it ([`Objects::kind_table`]). Few: one per kind declared.
    // invariant: at most one table per type (`kind_table` looks the type
    // up before it adds one; `check_invariants`).
    kind_tables: Vec<(std::any::TypeId, Box<dyn std::any::Any + Send>)>,
    /// First instance of each declared object in its kind's table.
    // invariant: one entry per declared object, as `kinds`
    // (`check_invariants`).
    base: Vec<ObjId>,
    /// Each declared object's sleeping-lock kind (its id), if it is one.
    kinds: Vec<Option<u8>>,
    /// The sleeping-lock kinds declared at all, in registry order.
    // invariant: sorted, without repeats, and exactly the kinds in
    // `kinds` (`declare` keeps it; `check_invariants`).
    used_kinds: Vec<u8>,
}

impl Objects {
    /// Declares the next object: its first instance in its kind's table,
    /// and its sleeping-lock kind (its id), if it is one.
    pub(crate) fn declare(&mut self, base: ObjId, kind: Option<u8>) {
        self.base.push(base);
        self.kinds.push(kind);
        if let Some(k) = kind {
            if let Err(at) = self.used_kinds.binary_search(&k) {
                self.used_kinds.insert(at, k);
            }
        }
    }

    /// What stays true of the table once built and through the run,
    /// checked in debug builds when locking's state is made
    /// ([`super::Locking::new`]): the table only grows before then.
    pub(crate) fn check_invariants(&self) {
        if !cfg!(any(debug_assertions, feature = "invariants")) {
            return;
        }
        let mut declared: Vec<u8> = self.kinds.iter().flatten().copied().collect();
        declared.sort_unstable();
        declared.dedup();
        let repeated_table = (1..self.kind_tables.len()).find(|&i| {
            self.kind_tables[..i]
                .iter()
                .any(|(t, _)| *t == self.kind_tables[i].0)
        });
        crate::invariants::check(if self.base.len() != self.kinds.len() {
            Err(format!(
                "objects: {} first instances for {} declared objects",
                self.base.len(),
                self.kinds.len()
            ))
        } else if declared != self.used_kinds {
            Err(format!(
                "objects: sleeping kinds used {:?}, declared {declared:?}",
                self.used_kinds
            ))
        } else if !self.atomic_at.is_empty() && self.atomic_at.len() != self.atomics.len() {
            Err(format!(
                "objects: {} atomic placements for {} atomics",
                self.atomic_at.len(),
                self.atomics.len()
            ))
        } else if let Some(i) = repeated_table {
            Err(format!(
                "objects: kind table {i} repeats an earlier one's type"
            ))
        } else {
            Ok(())
        });
    }

    /// Every spinning-lock instance, to read.
    #[inline]
    pub(crate) fn spinlocks(&self) -> &[LockInstance] {
        &self.spinlocks
    }

    /// Spinning-lock instance `l`, to read its word.
    #[inline]
    pub(crate) fn spinlock_mut(&mut self, l: ObjId) -> &mut LockInstance {
        &mut self.spinlocks[l as usize]
    }

    /// Whether the scenario has shared variables at all.
    #[inline]
    pub(crate) fn has_variables(&self) -> bool {
        !self.variables.is_empty()
    }

    /// `READ_ONCE()` of shared variable instance `i`.
    #[inline]
    pub(crate) fn variable(&self, i: ObjId) -> i64 {
        self.variables[i as usize]
    }

    /// `WRITE_ONCE()` of shared variable instance `i`.
    pub(crate) fn set_variable(&mut self, i: ObjId, v: i64) {
        self.variables[i as usize] = v;
    }

    /// The sleeping-lock kinds declared at all, in registry order.
    pub(crate) fn used_kinds(&self) -> &[u8] {
        &self.used_kinds
    }

    /// Places atomic instance `inst` on `at` (a layout's shared line); the
    /// others keep their own.
    pub(crate) fn place_atomic(&mut self, inst: u32, at: LineAt) {
        if self.atomic_at.is_empty() {
            self.atomic_at = (0..self.atomics.len() as u32).map(LineAt::Atomic).collect();
        }
        self.atomic_at[inst as usize] = at;
    }

    /// A compare-and-exchange on atomic instance `l` failed.
    pub(crate) fn note_cmpxchg_fail(&mut self, l: ObjId) {
        let i = l as usize;
        if self.cmpxchg_fails.len() <= i {
            self.cmpxchg_fails.resize(self.atomics.len().max(i + 1), 0);
        }
        self.cmpxchg_fails[i] += 1;
    }

    /// Failed compare-and-exchanges on atomic instance `l` so far.
    pub fn cmpxchg_fails_of(&self, l: ObjId) -> u64 {
        self.cmpxchg_fails.get(l as usize).copied().unwrap_or(0)
    }

    /// The line atomic instance `l` operates on.
    #[inline]
    pub fn atomic_line(&mut self, l: ObjId) -> &mut Line {
        match self.atomic_at.get(l as usize) {
            None => &mut self.atomics[l as usize],
            Some(&LineAt::Atomic(i)) => &mut self.atomics[i as usize],
            Some(&LineAt::Spinlock(i)) => self.spinlocks[i as usize].imp.word_mut(),
            Some(&LineAt::Word(word, i)) => word(self, i),
        }
    }

    /// The table of type `T` a kind keeps here, made empty on first use.
    #[inline]
    pub(crate) fn kind_table<T: Default + Send + 'static>(&mut self) -> &mut T {
        let id = std::any::TypeId::of::<T>();
        let at = match self.kind_tables.iter().position(|(t, _)| *t == id) {
            Some(at) => at,
            None => {
                self.kind_tables.push((id, Box::new(T::default())));
                self.kind_tables.len() - 1
            }
        };
        self.kind_tables[at]
            .1
            .downcast_mut::<T>()
            .expect("a table is kept under its own type")
    }

    /// [`Self::kind_table`], read-only: `None` before the kind made it.
    #[inline]
    pub(crate) fn kind_table_ref<T: 'static>(&self) -> Option<&T> {
        let id = std::any::TypeId::of::<T>();
        let (_, table) = self.kind_tables.iter().find(|(t, _)| *t == id)?;
        table.downcast_ref::<T>()
    }

    /// The instance of object `object` for per-CPU index 0 (or the only one).
    #[inline]
    pub fn first_instance(&self, object: u32) -> ObjId {
        self.base[object as usize]
    }

    /// The sleeping-lock kind (its id) of declared object `object`, if it
    /// is one.
    #[inline]
    pub fn sleeping_kind(&self, object: u32) -> Option<u8> {
        self.kinds[object as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_objects_hold_the_tables_invariants() {
        let mut o = Objects::default();
        o.declare(0, Some(1));
        o.declare(0, None);
        o.declare(1, Some(0));
        o.declare(2, Some(1));
        assert_eq!(o.used_kinds(), [0, 1]);
        o.check_invariants();
    }

    #[test]
    #[cfg(any(debug_assertions, feature = "invariants"))]
    #[should_panic(expected = "sleeping kinds used [1, 3], declared [1]")]
    fn a_kind_used_but_never_declared_is_caught() {
        let mut o = Objects::default();
        o.declare(0, Some(1));
        o.used_kinds.push(3);
        o.check_invariants();
    }
}
