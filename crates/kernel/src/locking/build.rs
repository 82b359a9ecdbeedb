//! Builds the object table ([`Objects`]) from a spec, through the
//! registries: each sleeping kind builds its own instances
//! ([`super::sleeping::SleepingLock::build`]), a spinning lock its
//! implementation's ([`super::LOCK_KINDS`]), a registered object type
//! its own ([`super::OBJECT_TYPES`]); atomics and variables are made
//! here. Sits above the kinds and the table, so
//! that neither names the other's registry.

use crate::coherence::{Line, LineHome};
use crate::ids::ObjId;
use crate::locking::mutex;
use crate::locking::objects::{LineAt, Objects};
use crate::locking::sleeping::{self, Build};
use crate::locking::spinning::LockInstance;
use crate::result::LockStat;
use crate::spec::{ObjectKind, Spec};

/// Every object's instances (one per CPU for a per-CPU object), and an
/// empty `lock_stat` row per object.
pub fn objects(spec: &Spec, nr_cpus: u32) -> (Objects, Vec<LockStat>) {
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
            ObjectKind::Registered(t) => (t.info().build)(&mut o, id, n, nr_cpus),
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
        o.declare(base as ObjId, kind.map(|k| k.id));
        stats.push(LockStat {
            name: obj.name.clone(),
            instances: n,
            read: (matches!(obj.kind, ObjectKind::Rwsem { .. } | ObjectKind::Seqcount)
                || kind.is_some_and(|k| k.imp.has_read_side()))
            .then(crate::result::ReadSide::default),
            ..Default::default()
        });
    }
    split(&mut o, spec, nr_cpus, &homes);
    place(&mut o, spec, nr_cpus);
    (o, stats)
}

/// Gives each rwsem that straddles two lines (`line = ["a", "b"]`) its
/// `wait_lock` line, homed as its first, and points the atomics on that
/// second line at it.
fn split(o: &mut Objects, spec: &Spec, nr_cpus: u32, homes: &[u32]) {
    use crate::locking::rwsem;
    for (sem, beside) in &spec.layout.split {
        let sem_decl = &spec.objects[*sem as usize];
        assert!(
            matches!(sem_decl.kind, ObjectKind::Rwsem { .. }),
            "only an rwsem straddles two lines"
        );
        let n = if sem_decl.per_cpu { nr_cpus } else { 1 };
        let base = o.first_instance(*sem);
        for i in 0..n {
            let home = if sem_decl.per_cpu {
                homes[i as usize]
            } else {
                0
            };
            rwsem::split(
                o,
                base + i,
                LineHome {
                    nr_cpus: nr_cpus as usize,
                    home,
                },
            );
        }
        for &obj in beside {
            assert_eq!(
                spec.objects[obj as usize].kind,
                ObjectKind::Atomic,
                "only atomics share a line's host"
            );
            let abase = o.first_instance(obj);
            for i in 0..n {
                o.place_atomic(abase + i, LineAt::Word(rwsem::wait_line_mut, base + i));
            }
        }
    }
}

/// Points atomics placed on a shared line at that line's one `Line`
/// (the host's: the first object placed on it), and packed per-CPU
/// atomics at the first element of their line. Nothing to do without
/// a layout: the hot path then indexes `atomics` directly.
fn place(o: &mut Objects, spec: &Spec, nr_cpus: u32) {
    let layout = &spec.layout;
    if layout.lines.is_empty() && layout.packed.is_empty() {
        return;
    }
    let n_of = |obj: u32| {
        if spec.objects[obj as usize].per_cpu {
            nr_cpus
        } else {
            1
        }
    };
    for &(obj, per_line) in &layout.packed {
        let base = o.first_instance(obj);
        for i in 0..n_of(obj) {
            o.place_atomic(base + i, LineAt::Atomic(base + i / per_line * per_line));
        }
    }
    for group in &layout.lines {
        let Some((&host, rest)) = group.split_first() else {
            continue;
        };
        let hbase = o.first_instance(host);
        let word = o.sleeping_kind(host).map(|k| {
            sleeping_line(k)
                .unwrap_or_else(|| panic!("a {} cannot host a shared line", sleeping::kind(k).name))
        });
        let at = |i: u32| match (&spec.objects[host as usize].kind, word) {
            (ObjectKind::Atomic, _) => LineAt::Atomic(hbase + i),
            (ObjectKind::Spinlock { .. }, _) => LineAt::Spinlock(hbase + i),
            (_, Some(word)) => LineAt::Word(word, hbase + i),
            (k, None) => panic!("an object of kind {k:?} cannot host a shared line"),
        };
        let mut moves = Vec::new();
        for &obj in rest {
            assert_eq!(
                spec.objects[obj as usize].kind,
                ObjectKind::Atomic,
                "only atomics share a line's host"
            );
            let base = o.first_instance(obj);
            for i in 0..n_of(obj) {
                moves.push((base + i, at(i)));
            }
        }
        for (inst, to) in moves {
            o.place_atomic(inst, to);
        }
    }
}

/// The function that reaches an instance's line, for a sleeping-lock kind
/// that keeps its state on one modelled line (the line a `line = "NAME"`
/// places atomics beside). `percpu_rw_semaphore` has none: its readers'
/// counts are per-CPU and its writer's `block` is not modelled.
pub(crate) fn sleeping_line(kind: u8) -> Option<fn(&mut Objects, u32) -> &mut Line> {
    use crate::locking::{osq_numa, rt_mutex, rwsem, semaphore, seqcount};
    let word: fn(&mut Objects, u32) -> &mut Line = match kind {
        k if k == mutex::KIND.id || k == osq_numa::KIND.id => mutex::word_mut,
        k if k == rwsem::KIND.id => rwsem::line_mut,
        k if k == semaphore::KIND.id => semaphore::line_mut,
        k if k == seqcount::KIND.id => seqcount::line_mut,
        k if k == rt_mutex::KIND.id => rt_mutex::line_mut,
        _ => return None,
    };
    Some(word)
}

/// Line transfers so far on each object's cache lines, all instances.
pub fn line_transfers(o: &Objects, spec: &Spec, nr_cpus: u32) -> Vec<u64> {
    spec.objects
        .iter()
        .enumerate()
        .map(|(id, obj)| {
            let base = o.first_instance(id as u32) as usize;
            let n = if obj.per_cpu { nr_cpus as usize } else { 1 };
            let range = base..base + n;
            match (o.sleeping_kind(id as u32), &obj.kind) {
                (Some(k), _) => sleeping::kind(k).imp.line_transfers(o, base, n),
                (None, ObjectKind::Spinlock { .. }) => o.spinlocks[range]
                    .iter()
                    .map(|l| l.imp.line_stats().1)
                    .sum(),
                (None, ObjectKind::Registered(t)) => (t.info().line_transfers)(o, base, n),
                (None, ObjectKind::Atomic) => o.atomics[range].iter().map(|l| l.transfers).sum(),
                _ => 0,
            }
        })
        .collect()
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
        let (mut o, _) = objects(&s, nr);
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
            mutex::word_mut(&mut o, first as u32 + last).owner(),
            homes[last as usize]
        );
        assert_eq!(mutex::word_mut(&mut o, first as u32).owner(), 0);
        let global = o.first_instance(per_cpu + 1) as usize;
        assert_eq!(mutex::word_mut(&mut o, global as u32).owner(), 0);
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
        let (mut o, _) = objects(&s, nr);
        let now = o.atomic_line(o.first_instance(a)).rmw(&cost, 3, 0);
        let word = o.spinlocks[o.first_instance(lock) as usize].imp.word();
        assert_eq!((word.owner(), word.rmws), (3, 1));
        o.atomic_line(o.first_instance(c)).rmw(&cost, 2, now);
        let b_line = o.atomic_line(o.first_instance(b));
        assert_eq!((b_line.owner(), b_line.rmws), (2, 1));
        assert_eq!(o.atomics[o.first_instance(c) as usize].rmws, 0);

        s.layout = Default::default();
        let (mut o, _) = objects(&s, nr);
        o.atomic_line(o.first_instance(a)).rmw(&cost, 3, 0);
        let word = o.spinlocks[o.first_instance(lock) as usize].imp.word();
        assert_eq!(word.rmws, 0);
    }

    /// An atomic placed beside any sleeping lock that keeps one line
    /// (rwsem, semaphore, seqcount, rt_mutex, mutex) writes that lock's
    /// line: its RMW takes the line to the atomic's CPU.
    #[test]
    fn an_atomic_beside_each_sleeping_kind_writes_its_line() {
        use crate::locking::{rt_mutex, rwsem, semaphore, seqcount};
        let kinds = [
            ObjectKind::Rwsem {
                spin: true,
                reader_spin: false,
            },
            ObjectKind::Semaphore { initial: 1 },
            ObjectKind::Seqcount,
            ObjectKind::Sleeping {
                kind: rt_mutex::KIND.handle(),
                spin: true,
            },
            ObjectKind::Mutex { spin: true },
        ];
        let words: [fn(&mut Objects, u32) -> &mut Line; 5] = [
            rwsem::line_mut,
            semaphore::line_mut,
            seqcount::line_mut,
            rt_mutex::line_mut,
            mutex::word_mut,
        ];
        for (kind, word) in kinds.into_iter().zip(words) {
            let m = preset_machine("generic-x86");
            let nr = m.nr_cpus() as u32;
            let cost = crate::costs::CostNs::new(&m);
            let mut s = spec(m, 1);
            s.objects.push(crate::spec::ObjectDecl {
                name: "lock".into(),
                kind: kind.clone(),
                per_cpu: false,
            });
            let a = atomic(&mut s, "a", false);
            s.layout.lines = vec![vec![0, a]];
            let (mut o, _) = objects(&s, nr);
            o.atomic_line(o.first_instance(a)).rmw(&cost, 3, 0);
            let lock = o.first_instance(0);
            let line = word(&mut o, lock);
            assert_eq!((line.owner(), line.rmws), (3, 1), "{kind:?}");
        }
        assert!(sleeping_line(crate::locking::percpu_rwsem::KIND.id).is_none());
    }

    /// An rwsem on two lines: an atomic beside its first line writes
    /// `count`'s line, one beside its second writes `wait_lock`'s, and
    /// the two are apart.
    #[test]
    fn an_atomic_beside_each_line_of_a_split_rwsem_writes_that_line() {
        use crate::locking::rwsem;
        let m = preset_machine("generic-x86");
        let nr = m.nr_cpus() as u32;
        let cost = crate::costs::CostNs::new(&m);
        let mut s = spec(m, 1);
        s.objects.push(crate::spec::ObjectDecl {
            name: "sem".into(),
            kind: ObjectKind::Rwsem {
                spin: true,
                reader_spin: false,
            },
            per_cpu: false,
        });
        let a = atomic(&mut s, "a", false);
        let b = atomic(&mut s, "b", false);
        s.layout.lines = vec![vec![0, a]];
        s.layout.split = vec![(0, vec![b])];
        let (mut o, _) = objects(&s, nr);
        o.atomic_line(o.first_instance(a)).rmw(&cost, 3, 0);
        o.atomic_line(o.first_instance(b)).rmw(&cost, 2, 0);
        let sem = o.first_instance(0);
        let count = rwsem::line_mut(&mut o, sem);
        assert_eq!((count.owner(), count.rmws), (3, 1));
        let wait = rwsem::wait_line_mut(&mut o, sem);
        assert_eq!((wait.owner(), wait.rmws), (2, 1));
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
        let (mut o, _) = objects(&s, nr);
        let base = o.first_instance(p);
        o.atomic_line(base + 5).rmw(&cost, 5, 0);
        assert_eq!(o.atomic_line(base + 15).owner(), 5);
        assert_ne!(o.atomic_line(base + 16).owner(), 5);
        assert_eq!(o.atomics[base as usize].rmws, 1);
    }
}
