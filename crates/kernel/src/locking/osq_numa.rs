//! A NUMA-aware OSQ for the mutex's optimistic spinning: **the model's own
//! variant**, not a kernel one. `kind = "numa_osq"` on a `mutex`.
//!
//! The idea is CNA's (Alex Kogan's "Add NUMA-awareness to qspinlock"
//! series, v1-v15, 2019-2021, never merged; the model's `cna` spinlock,
//! [`super::cna`]), carried from qspinlock's MCS queue to the mutex's OSQ
//! (kernel/locking/osq_lock.c), which is an MCS queue too. The CNA series
//! changed only qspinlock's slow path; no NUMA-aware `osq_lock()` was
//! posted to LKML as far as this project found (the closest published
//! work is research on NUMA-aware blocking locks: Kashyap, Min and Kim,
//! "Scalable NUMA-aware Blocking Synchronization Primitives", USENIX ATC
//! 2017, and the same authors' ShflLocks, SOSP 2019).
//!
//! What changes, and only that: when the OSQ head takes the mutex and
//! `osq_unlock()` passes the head role on, the role goes to the first
//! spinner queued on the **same NUMA node** as the leaving head (the new
//! owner), not to the next in arrival order; so the next acquisition is
//! likely on the node that has the mutex's line. Spinners of other nodes
//! keep their order behind it. Starvation is bounded as CNA bounds it:
//! once the longest-queued spinner has waited past the threshold, the
//! role goes in arrival order. Everything else is the mutex's: the fast
//! path, the head's spin on the owner, the wait list, handoff.
//!
//! Both the default OSQ and this one count each pass of the head role as
//! within a node or across nodes ([`Passes`]): the figure that shows
//! what the variant does.

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use crate::locking::mutex;
use crate::locking::objects::Objects;
use crate::locking::osq::Osq;
use crate::locking::sleeping::{Build, SleepingKindInfo, SleepingLock, SleepingLockOps};
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::spec::ObjectKind;
use crate::task::TaskId;

/// assumed: CNA's `numa_spinlock_threshold`, the v13 default, 10 ms
/// ("[PATCH v13 4/6] locking/qspinlock: Introduce starvation avoidance
/// into CNA"), taken as is for the OSQ.
pub const THRESHOLD: Nanos = 10_000_000;

/// Passes of an OSQ's head role (`osq_unlock()` to the next spinner)
/// between spinners whose NUMA node is known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Passes {
    /// To a spinner on the leaving head's node.
    pub within_node: u64,
    /// To a spinner on another node.
    pub across_nodes: u64,
}

impl Passes {
    pub(crate) fn count(&mut self, same_node: bool) {
        if same_node {
            self.within_node += 1;
        } else {
            self.across_nodes += 1;
        }
    }
}

/// The variant's choice of the next head.
#[derive(Clone, Copy, Debug, Default)]
pub struct NumaOrder;

impl NumaOrder {
    /// The queue position (past the front) of the spinner that should
    /// become head after a head on `node` left at `now`, given each queued
    /// spinner's (node, queued at): the first one on `node`, unless the
    /// front is one already, none is, or the longest-queued spinner has
    /// waited past [`THRESHOLD`].
    pub(crate) fn next(&self, at: &VecDeque<(u32, Nanos)>, node: u32, now: Nanos) -> Option<usize> {
        let oldest = at.iter().map(|&(_, since)| since).min()?;
        if now.saturating_sub(oldest) > THRESHOLD {
            return None;
        }
        at.iter().position(|&(n, _)| n == node).filter(|&i| i > 0)
    }
}

/// `mutex` of kind `numa_osq` in the sleeping-lock registry: a `struct
/// mutex` whose OSQ is the NUMA-aware variant. Its instances live in the
/// mutex's own table, and every op is the mutex's.
pub const KIND: SleepingKindInfo = SleepingKindInfo {
    perf_type: "mutex",
    id: 6,
    name: "numa_osq",
    object_type: "mutex",
    default: false,
    summary: "`struct mutex` with a NUMA-aware OSQ: the spin-queue head role passes to a spinner on the new owner's node first (the model's own variant, after CNA; never posted for the OSQ)",
    imp: &NumaOsqMutex,
};

pub(crate) struct NumaOsqMutex;

/// The mutex kind everything is delegated to.
fn plain() -> &'static dyn SleepingLock {
    mutex::KIND.imp
}

impl SleepingLock for NumaOsqMutex {
    fn build(&self, o: &mut Objects, b: &Build) -> usize {
        let ObjectKind::Sleeping { spin, .. } = *b.kind else {
            unreachable!("a numa_osq mutex declared as {:?}", b.kind)
        };
        mutex::build_with(o, b, spin, Osq::numa)
    }

    fn object(&self, o: &Objects, l: u32) -> u32 {
        plain().object(o, l)
    }

    fn line_transfers(&self, o: &Objects, first: usize, n: usize) -> u64 {
        plain().line_transfers(o, first, n)
    }

    fn lock_fn(&self, mode: LockMode) -> String {
        plain().lock_fn(mode)
    }
}

/// The mutex kind's ops, which every op is delegated to.
fn plain_ops<'a, K: LockingEnv + 'a>() -> &'a dyn SleepingLockOps<K> {
    crate::locking::sleeping_ops(mutex::KIND.id)
}

impl<K: LockingEnv> SleepingLockOps<K> for NumaOsqMutex {
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode, step: Option<u8>) -> Flow {
        plain_ops().lock(k, c, t, l, mode, step)
    }

    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode) -> Flow {
        plain_ops().unlock(k, c, t, l, mode)
    }

    /// The mutex table is shared: when plain mutexes are declared too,
    /// their kind already walks the owner's mutexes.
    fn owner_leaves_cpu(&self, k: &mut K, owner: TaskId) {
        if !k.locking().objects.used_kinds().contains(&mutex::KIND.id) {
            plain_ops().owner_leaves_cpu(k, owner);
        }
    }

    fn spin_need_resched(&self, k: &mut K, c: u32, t: TaskId, l: u32) {
        plain_ops().spin_need_resched(k, c, t, l)
    }

    fn spin_finished(&self, k: &mut K, c: u32, t: TaskId, l: u32) -> bool {
        plain_ops().spin_finished(k, c, t, l)
    }
}

/// Head-role passes of every instance of mutex object `object` (either
/// OSQ variant).
pub fn passes(o: &Objects, object: u32, n: u32) -> Passes {
    let first = o.first_instance(object);
    (first..first + n).fold(Passes::default(), |mut p, m| {
        let q = mutex::osq(o, m).passes;
        p.within_node += q.within_node;
        p.across_nodes += q.across_nodes;
        p
    })
}

/// Head-role passes of each declared object's OSQ, all its instances
/// (zero for an object that is not a mutex of either OSQ).
pub fn passes_by_object(o: &Objects, spec: &crate::Spec, nr_cpus: u32) -> Vec<Passes> {
    spec.objects
        .iter()
        .enumerate()
        .map(|(id, obj)| {
            let has_osq = match obj.kind {
                ObjectKind::Mutex { .. } => true,
                ObjectKind::Sleeping { kind, .. } => {
                    kind == KIND.handle() || kind == mutex::KIND.handle()
                }
                _ => false,
            };
            if !has_osq {
                return Passes::default();
            }
            let n = if obj.per_cpu { nr_cpus } else { 1 };
            passes(o, id as u32, n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(v: &[(u32, Nanos)]) -> VecDeque<(u32, Nanos)> {
        v.iter().copied().collect()
    }

    /// The first spinner on the leaving head's node is next, unless the
    /// front already is one, none is, or the oldest waited too long.
    #[test]
    fn the_next_head_is_on_the_leaving_heads_node() {
        let o = NumaOrder;
        let q = queue(&[(1, 10), (1, 20), (0, 30), (0, 40)]);
        assert_eq!(o.next(&q, 0, 100), Some(2));
        assert_eq!(o.next(&q, 1, 100), None, "the front is local already");
        assert_eq!(o.next(&q, 2, 100), None, "nobody on node 2");
        assert_eq!(o.next(&q, 0, 10 + THRESHOLD + 1), None, "starving");
        assert_eq!(o.next(&VecDeque::new(), 0, 0), None);
    }

    /// Through the OSQ: heads on node 0 pass to node-0 spinners first,
    /// then the node-1 ones in order; the FIFO OSQ passes in arrival
    /// order. The counts say which passes stayed on a node.
    #[test]
    fn the_numa_osq_keeps_the_head_role_on_a_node() {
        let serve = |mut q: Osq| {
            for (t, node) in [(0, 0), (1, 1), (2, 0), (3, 1), (4, 0)] {
                q.lock_from(t, node, 100 * t as u64);
            }
            let mut order = vec![q.head().unwrap()];
            while let Some(h) = q.pop_head_at(1_000) {
                order.push(h);
            }
            (order, q.passes)
        };
        let (order, passes) = serve(Osq::numa());
        assert_eq!(order, vec![0, 2, 4, 1, 3]);
        assert_eq!((passes.within_node, passes.across_nodes), (3, 1));
        let (order, passes) = serve(Osq::default());
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        assert_eq!((passes.within_node, passes.across_nodes), (0, 4));
    }

    /// Sixteen CPUs on two sockets (two NUMA nodes) contend one mutex with
    /// short holds, so spinners of both nodes queue on its OSQ. The
    /// NUMA-aware OSQ passes the head role within a node far more often
    /// than the FIFO one, by the model's own counts of the passes, and so
    /// hands the mutex over more often in the same time.
    #[test]
    fn on_two_sockets_it_passes_within_a_node_more_often() {
        use crate::program::{Dist, ObjRef, Op};
        use crate::testkit::*;
        use crate::Policy;
        const US: u64 = 1_000;
        let run = |numa: bool| {
            let mut m = flat_machine(16);
            m.topology.sockets = 2;
            m.topology.cores_per_llc = 8;
            let mut s = spec(m, 20_000 * US);
            let kind = if numa {
                ObjectKind::Sleeping {
                    kind: KIND.handle(),
                    spin: true,
                }
            } else {
                ObjectKind::Mutex { spin: true }
            };
            s.objects.push(crate::spec::ObjectDecl {
                name: "m".into(),
                kind,
                per_cpu: false,
            });
            let lock = ObjRef {
                object: 0,
                index: None,
            };
            task_group(
                &mut s,
                "locker",
                (0..16).collect(),
                Policy::Normal,
                0,
                vec![
                    Op::mutex_lock(lock.clone()),
                    Op::Work(Dist::Const(US)),
                    Op::mutex_unlock(lock),
                    Op::Work(Dist::Exp { mean: 2 * US }),
                    Op::Jump(0),
                ],
            );
            let mut k = crate::Kernel::new(&s);
            k.run();
            let p = passes(&k.locking.objects, 0, 1);
            let transfers = crate::locking::build::line_transfers(&k.locking.objects, &s, 16)[0];
            (p, transfers)
        };
        let (fifo, fifo_transfers) = run(false);
        let (numa, numa_transfers) = run(true);
        let share = |p: Passes| p.within_node as f64 / (p.within_node + p.across_nodes) as f64;
        assert!(fifo.within_node + fifo.across_nodes > 1000, "{fifo:?}");
        assert!(numa.within_node + numa.across_nodes > 1000, "{numa:?}");
        assert!(
            share(numa) > share(fifo) + 0.3,
            "numa {numa:?} ({:.2}) vs fifo {fifo:?} ({:.2})",
            share(numa),
            share(fifo)
        );
        // Cheaper handovers (the line moves within a node): more of them
        // in the same time, at about the same transfers per acquisition.
        let total = |p: Passes| p.within_node + p.across_nodes;
        assert!(total(numa) > total(fifo), "{numa:?} vs {fifo:?}");
        let per_pass = |t: u64, p: Passes| t as f64 / total(p) as f64;
        assert!(
            per_pass(numa_transfers, numa) < 1.1 * per_pass(fifo_transfers, fifo),
            "{numa_transfers} vs {fifo_transfers}"
        );
    }
}
