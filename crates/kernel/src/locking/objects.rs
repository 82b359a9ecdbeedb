//! The table of kernel objects: every instance of every declared object,
//! by kind. A scenario declares objects (a global mutex, a per-CPU array
//! of spinlocks, an atomic counter); [`Objects::build`] makes their
//! instances once, and an op's object reference resolves to an instance
//! through [`Objects::first_instance`].
//!
//! A sleeping lock kind builds its own instances
//! ([`super::sleeping::SleepingLock::build`]) into a table it owns,
//! [`Objects::kind_table`] (kept here by its type, so that this file names
//! no kind: `rt_mutex`, `semaphore`, `seqcount` and `percpu_ref` do so;
//! `mutex` and `rwsem` still have fields of their own here, and
//! `percpu_rwsem` uses [`Objects::sleeping`]); a spinning lock is one file
//! under `locking/` and a line in [`super::LOCK_KINDS`]. Only atomics and
//! variables are built here.

use crate::coherence::{Line, LineHome};
use crate::ids::ObjId;
use crate::locking::mutex::Mutex;
use crate::locking::rwsem::Rwsem;
use crate::locking::sleeping::{self, Build};
use crate::locking::spinning::LockInstance;
use crate::result::LockStat;
use crate::spec::{ObjectKind, Spec};

/// The `Line` an atomic instance uses: its own (or another atomic's) in
/// the atomics table, or the word of a lock placed on the same line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineAt {
    Atomic(u32),
    Spinlock(u32),
    Mutex(u32),
}

#[derive(Default)]
pub struct Objects {
    pub mutexes: Vec<Mutex>,
    /// The mutexes each task holds, by task id (grown as tasks take them).
    pub mutexes_held: Vec<crate::locking::mutex::Held>,
    /// Spinning locks of every implementation (`spinlock_t`, `rwlock_t`).
    pub spinlocks: Vec<LockInstance>,
    /// `struct rw_semaphore`s.
    pub rwsems: Vec<Rwsem>,
    /// rwsem instances whose OSQ head spins on the owner (few at a time):
    /// an owner leaving its CPU ends those spins.
    pub rwsem_watched: Vec<u32>,
    /// `atomic_t`s, each on its own line unless [`Objects::atomic_at`]
    /// places it on another's.
    pub atomics: Vec<Line>,
    /// Where each atomic instance's line is when a layout places atomics
    /// on shared lines (`line = "NAME"`, `stride = "packed"`); empty
    /// otherwise, and then every atomic uses its own entry of `atomics`.
    atomic_at: Vec<LineAt>,
    /// Shared variables' values.
    pub variables: Vec<i64>,
    /// Instances of sleeping-lock kinds that keep no table of their own
    /// (each kind downcasts its own).
    pub sleeping: Vec<Box<dyn std::any::Any + Send>>,
    /// The tables a kind owns (its instances and what it keeps beside
    /// them), by the table's type: made by the kind on first use, read
    /// only by it ([`Objects::kind_table`]). Few: one per kind declared.
    kind_tables: Vec<(std::any::TypeId, Box<dyn std::any::Any + Send>)>,
    /// First instance of each declared object in its kind's table.
    base: Vec<ObjId>,
    /// Each declared object's sleeping-lock kind (its id), if it is one.
    kinds: Vec<Option<u8>>,
    /// The sleeping-lock kinds declared at all, in registry order.
    pub(crate) used_kinds: Vec<u8>,
}

impl Objects {
    /// Every object's instances (one per CPU for a per-CPU object), and an
    /// empty `lock_stat` row per object.
    pub fn build(spec: &Spec, nr_cpus: u32) -> (Objects, Vec<LockStat>) {
        let mut o = Objects::default();
        let mut stats = Vec::with_capacity(spec.objects.len());
        let homes = node_homes(spec, nr_cpus);
        for (id, obj) in spec.objects.iter().enumerate() {
            let n = if obj.per_cpu { nr_cpus } else { 1 };
            let id = id as u32;
            // A per-CPU instance lives in its CPU's node (the per-CPU areas
            // are node-local); a global object where the boot CPU put it.
            let at = |i: u32| LineHome {
                nr_cpus: nr_cpus as usize,
                home: if obj.per_cpu { homes[i as usize] } else { 0 },
            };
            let kind = sleeping::kind_of(&obj.kind);
            let base = match &obj.kind {
                _ if kind.is_some() => kind.expect("a sleeping kind").imp.build(
                    &mut o,
                    &Build {
                        object: id,
                        kind: &obj.kind,
                        home: &at,
                        n,
                    },
                ),
                ObjectKind::Atomic => {
                    let base = o.atomics.len();
                    o.atomics.extend((0..n).map(|i| Line::at(at(i))));
                    base
                }
                ObjectKind::PercpuRef => super::percpu_ref::build(&mut o, id, n, nr_cpus),
                ObjectKind::Variable { initial } => {
                    let base = o.variables.len();
                    o.variables.extend((0..n).map(|_| *initial));
                    base
                }
                ObjectKind::Spinlock { kind, options } => {
                    let info = kind.info();
                    let base = o.spinlocks.len();
                    o.spinlocks
                        .extend((0..n).map(|i| LockInstance::new(id, (info.new)(*options, at(i)))));
                    base
                }
                ObjectKind::Mutex { .. }
                | ObjectKind::Rwsem { .. }
                | ObjectKind::Semaphore { .. }
                | ObjectKind::Seqcount
                | ObjectKind::Sleeping { .. } => {
                    unreachable!("kind_of() names every sleeping kind")
                }
            };
            o.kinds.push(kind.map(|k| k.id));
            if let Some(k) = kind {
                if let Err(at) = o.used_kinds.binary_search(&k.id) {
                    o.used_kinds.insert(at, k.id);
                }
            }
            o.base.push(base as ObjId);
            stats.push(LockStat {
                name: obj.name.clone(),
                instances: n,
                read: (matches!(obj.kind, ObjectKind::Rwsem { .. } | ObjectKind::Seqcount)
                    || kind.is_some_and(|k| k.imp.has_read_side()))
                .then(crate::result::ReadSide::default),
                ..Default::default()
            });
        }
        o.place(spec, nr_cpus);
        (o, stats)
    }

    /// Points atomics placed on a shared line at that line's one `Line`
    /// (the host's: the first object placed on it), and packed per-CPU
    /// atomics at the first element of their line. Nothing to do without
    /// a layout: the hot path then indexes `atomics` directly.
    fn place(&mut self, spec: &Spec, nr_cpus: u32) {
        let layout = &spec.layout;
        if layout.lines.is_empty() && layout.packed.is_empty() {
            return;
        }
        self.atomic_at = (0..self.atomics.len() as u32).map(LineAt::Atomic).collect();
        let n_of = |obj: u32| {
            if spec.objects[obj as usize].per_cpu {
                nr_cpus
            } else {
                1
            }
        };
        for &(obj, per_line) in &layout.packed {
            let base = self.base[obj as usize];
            for i in 0..n_of(obj) {
                self.atomic_at[(base + i) as usize] =
                    LineAt::Atomic(base + i / per_line * per_line);
            }
        }
        for group in &layout.lines {
            let Some((&host, rest)) = group.split_first() else {
                continue;
            };
            let hbase = self.base[host as usize];
            let at = |i: u32| match (&spec.objects[host as usize].kind, self.kinds[host as usize]) {
                (ObjectKind::Atomic, _) => LineAt::Atomic(hbase + i),
                (ObjectKind::Spinlock { .. }, _) => LineAt::Spinlock(hbase + i),
                (ObjectKind::Mutex { .. }, Some(_)) => LineAt::Mutex(hbase + i),
                (k, _) => panic!("an object of kind {k:?} cannot host a shared line"),
            };
            let mut moves = Vec::new();
            for &obj in rest {
                assert_eq!(
                    spec.objects[obj as usize].kind,
                    ObjectKind::Atomic,
                    "only atomics share a line's host"
                );
                let base = self.base[obj as usize];
                for i in 0..n_of(obj) {
                    moves.push((base + i, at(i)));
                }
            }
            for (inst, to) in moves {
                self.atomic_at[inst as usize] = to;
            }
        }
    }

    /// The line atomic instance `l` operates on.
    #[inline]
    pub fn atomic_line(&mut self, l: ObjId) -> &mut Line {
        match self.atomic_at.get(l as usize) {
            None => &mut self.atomics[l as usize],
            Some(&LineAt::Atomic(i)) => &mut self.atomics[i as usize],
            Some(&LineAt::Spinlock(i)) => self.spinlocks[i as usize].imp.word_mut(),
            Some(&LineAt::Mutex(i)) => &mut self.mutexes[i as usize].word,
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

    /// Line transfers so far on each object's cache lines, all instances.
    pub fn line_transfers(&self, spec: &Spec, nr_cpus: u32) -> Vec<u64> {
        spec.objects
            .iter()
            .enumerate()
            .map(|(id, obj)| {
                let base = self.base[id] as usize;
                let n = if obj.per_cpu { nr_cpus as usize } else { 1 };
                let range = base..base + n;
                match (self.kinds[id], &obj.kind) {
                    (Some(k), _) => sleeping::kind(k).imp.line_transfers(self, base, n),
                    (None, ObjectKind::Spinlock { .. }) => self.spinlocks[range]
                        .iter()
                        .map(|l| l.imp.line_stats().1)
                        .sum(),
                    (None, ObjectKind::PercpuRef) => range
                        .filter_map(|l| self.percpu_ref(l as u32))
                        .map(|p| p.line_transfers())
                        .sum(),
                    (None, ObjectKind::Atomic) => {
                        self.atomics[range].iter().map(|l| l.transfers).sum()
                    }
                    _ => 0,
                }
            })
            .collect()
    }
}

/// For each CPU, the first CPU of its NUMA node: the CPU that stands for
/// that node's memory as the home of lines allocated there.
fn node_homes(spec: &Spec, nr_cpus: u32) -> Vec<u32> {
    let topo = &spec.machine.topology;
    let mut first = vec![u32::MAX; topo.nr_nodes()];
    let nodes: Vec<usize> = (0..nr_cpus).map(|c| topo.place(c).node as usize).collect();
    for (c, &n) in nodes.iter().enumerate() {
        if let Some(f) = first.get_mut(n) {
            *f = (*f).min(c as u32);
        }
    }
    nodes
        .iter()
        .map(|&n| {
            first
                .get(n)
                .copied()
                .filter(|&f| f != u32::MAX)
                .unwrap_or(0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    /// A per-CPU instance's line starts at home in its CPU's node, so the
    /// first touch by its own CPU costs a same-node transfer, not a trip to
    /// node 0; a global object's line is homed at the boot CPU.
    #[test]
    fn per_cpu_lines_are_homed_in_their_cpus_node() {
        let mut m = preset_machine("amd-turin-384");
        m.topology.threads_per_core = 1;
        let nr = m.nr_cpus() as u32;
        let mut s = spec(m, 1);
        let per_cpu = mutex(&mut s, "pcp", true, true);
        mutex(&mut s, "global", true, false);
        let (o, _) = Objects::build(&s, nr);
        let homes = node_homes(&s, nr);
        let last = nr - 1;
        let node_of_last = s.machine.topology.place(last).node;
        assert_ne!(node_of_last, 0);
        assert_eq!(
            s.machine.topology.place(homes[last as usize]).node,
            node_of_last
        );
        let first = o.first_instance(per_cpu) as usize;
        assert_eq!(
            o.mutexes[first + last as usize].word.owner(),
            homes[last as usize]
        );
        assert_eq!(o.mutexes[first].word.owner(), 0);
        let global = o.first_instance(per_cpu + 1) as usize;
        assert_eq!(o.mutexes[global].word.owner(), 0);
    }

    fn atomic(s: &mut Spec, name: &str, per_cpu: bool) -> u32 {
        s.objects.push(crate::spec::ObjectDecl {
            name: name.into(),
            kind: ObjectKind::Atomic,
            per_cpu,
        });
        s.objects.len() as u32 - 1
    }

    /// An atomic on a spinlock's line writes the lock word's one `Line`;
    /// two atomics on a line write one `Line`; without a layout every
    /// atomic keeps its own.
    #[test]
    fn objects_on_one_line_share_its_line() {
        let m = preset_machine("generic-x86");
        let nr = m.nr_cpus() as u32;
        let cost = crate::costs::CostNs::new(&m);
        let mut s = spec(m, 1);
        let lock = spinning_lock(&mut s, "l", "qspinlock", Default::default());
        let a = atomic(&mut s, "a", false);
        let b = atomic(&mut s, "b", false);
        let c = atomic(&mut s, "c", false);
        s.layout.lines = vec![vec![lock, a], vec![b, c]];
        let (mut o, _) = Objects::build(&s, nr);
        let now = o.atomic_line(o.first_instance(a)).rmw(&cost, 3, 0);
        let word = o.spinlocks[o.first_instance(lock) as usize].imp.word();
        assert_eq!((word.owner(), word.rmws), (3, 1));
        o.atomic_line(o.first_instance(c)).rmw(&cost, 2, now);
        let b_line = o.atomic_line(o.first_instance(b));
        assert_eq!((b_line.owner(), b_line.rmws), (2, 1));
        assert_eq!(o.atomics[o.first_instance(c) as usize].rmws, 0);

        s.layout = Default::default();
        let (mut o, _) = Objects::build(&s, nr);
        o.atomic_line(o.first_instance(a)).rmw(&cost, 3, 0);
        let word = o.spinlocks[o.first_instance(lock) as usize].imp.word();
        assert_eq!(word.rmws, 0);
    }

    /// A packed per-CPU array: 16 atomics to a line, instance i on the
    /// line of instance i - i % 16.
    #[test]
    fn packed_per_cpu_atomics_share_lines_sixteen_at_a_time() {
        let mut m = preset_machine("generic-x86");
        m.topology.cores_per_llc = 32;
        m.topology.threads_per_core = 1;
        let nr = m.nr_cpus() as u32;
        assert!(nr >= 32, "{nr}");
        let cost = crate::costs::CostNs::new(&m);
        let mut s = spec(m, 1);
        let p = atomic(&mut s, "p", true);
        s.layout.packed = vec![(p, 16)];
        let (mut o, _) = Objects::build(&s, nr);
        let base = o.first_instance(p);
        o.atomic_line(base + 5).rmw(&cost, 5, 0);
        assert_eq!(o.atomic_line(base + 15).owner(), 5);
        assert_ne!(o.atomic_line(base + 16).owner(), 5);
        assert_eq!(o.atomics[base as usize].rmws, 1);
    }
}
