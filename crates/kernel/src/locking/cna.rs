//! Compact NUMA-aware locks (CNA): the qspinlock slow path of Alex Kogan's
//! series "Add NUMA-awareness to qspinlock" (v11-v13, 2020-2021;
//! `kernel/locking/qspinlock_cna.h` in the series, never merged).
//!
//! Everything on the lock word is qspinlock's (fast path, pending bit,
//! `xchg_tail()`, the queue head polling the word, `set_locked()`): this
//! kind wraps [`Qspinlock`] and changes only who comes next in the MCS
//! queue. The head of the queue, while it waits for the lock word, moves
//! successors that run on another NUMA node than its own into a secondary
//! queue (`cna_order_queue()`), so the MCS lock passes to a waiter on the
//! same node (`cna_lock_handoff()`). When no waiter on that node is left,
//! the secondary queue is spliced back at the head (`cna_splice_head()`)
//! and the preference moves to the node of its first waiter; so does it
//! once the first waiter of the secondary queue has waited longer than
//! `numa_spinlock_threshold` (starvation avoidance, 10 ms by default in
//! v13).
//!
//! Modelled as an ordering of the one queue: behind the head, waiters on
//! the head's node first, then the others in arrival order, unless the
//! oldest of those has waited past the threshold. Moving a waiter writes
//! MCS nodes only, off the lock word and off the handoff's critical path;
//! it is taken as free (assumed).

use smpsim_engine::Nanos;

use super::qspinlock::Qspinlock;
use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};
use crate::ids::TaskId;

pub const KIND: LockKindInfo = LockKindInfo {
    id: 5,
    name: "cna",
    object_type: "spinlock",
    default: false,
    options: &[],
    summary: "qspinlock with a NUMA-aware MCS queue (CNA): the lock passes to a waiter on the holder's node first (posted series, not mainline)",
    new: |_, at| Box::new(Cna::new(at)),
};

/// `numa_spinlock_threshold`: the v13 default, 10 ms ("[PATCH v13 4/6]
/// locking/qspinlock: Introduce starvation avoidance into CNA").
const THRESHOLD: Nanos = 10_000_000;

pub struct Cna {
    q: Qspinlock,
    /// When each waiter queued, in queue order of arrival (for the
    /// starvation threshold).
    since: Vec<(TaskId, Nanos)>,
    /// Scratch for the reordering (kept: no allocation once warm).
    remote: Vec<Taker>,
}

impl Cna {
    pub fn new(at: LineHome) -> Self {
        Cna {
            q: Qspinlock::new(at),
            since: Vec::new(),
            remote: Vec::new(),
        }
    }

    fn queued_at(since: &[(TaskId, Nanos)], task: TaskId) -> Nanos {
        since.iter().find(|s| s.0 == task).map_or(0, |s| s.1)
    }

    /// `cna_order_queue()` as the head sees it: behind the head, waiters on
    /// the head's node, then the rest (the secondary queue) in order;
    /// unless the oldest remote waiter is past the threshold (flush).
    fn order(&mut self, env: &Env) {
        let queue = &mut self.q.queue;
        let Some(&head) = queue.front() else { return };
        let node = env.cost.node(head.cpu);
        let mut remote = std::mem::take(&mut self.remote);
        remote.clear();
        let mut local = 1;
        for i in 1..queue.len() {
            let w = queue[i];
            if env.cost.node(w.cpu) == node {
                queue[local] = w;
                local += 1;
            } else {
                remote.push(w);
            }
        }
        let oldest = remote
            .iter()
            .map(|w| Self::queued_at(&self.since, w.task))
            .min();
        let starving = oldest.is_some_and(|t| env.now.saturating_sub(t) > THRESHOLD);
        if starving {
            // Flush: the secondary queue goes right behind the head, the
            // local waiters after it.
            let locals: Vec<Taker> = queue.range(1..local).copied().collect();
            for (i, w) in remote.iter().chain(locals.iter()).enumerate() {
                queue[1 + i] = *w;
            }
        } else {
            for (i, w) in remote.iter().enumerate() {
                queue[local + i] = *w;
            }
        }
        self.remote = remote;
    }
}

impl SpinningLock for Cna {
    fn owner(&self) -> Option<Taker> {
        self.q.owner()
    }

    fn word(&self) -> &Line {
        self.q.word()
    }

    fn word_mut(&mut self) -> &mut Line {
        self.q.word_mut()
    }

    fn lock(&mut self, env: &mut Env, me: Taker) -> Option<Nanos> {
        let got = self.q.lock(env, me);
        if got.is_none() {
            self.since.push((me.task, env.now));
        }
        got
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        // The queue head (the next MCS lock holder) has ordered its
        // successors while it waited for the lock word.
        self.order(env);
        let before = env.grants.len();
        let released = self.q.unlock(env, me);
        for &(task, _, _) in &env.grants[before..] {
            self.since.retain(|s| s.0 != task);
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rig;
    use super::*;

    /// On a 2-socket machine (CPUs 0-3 and 4-7), waiters queued remote,
    /// local, remote behind the head get the lock local first: the head's
    /// node keeps it, then the remote ones in order. A plain qspinlock
    /// serves them in arrival order.
    #[test]
    fn the_lock_stays_on_the_holders_node() {
        let serve = |l: &mut dyn SpinningLock| {
            let mut rig = Rig::new_sockets(2, 4);
            assert!(rig.lock(l, 0, 0).is_some());
            // CPU 1 takes the pending bit; the rest queue, CPU 2 heads it.
            for (i, cpu) in [1, 2, 4, 3, 5].into_iter().enumerate() {
                assert!(rig.lock(l, 100 * (i as u64 + 1), cpu).is_none());
            }
            let mut order = Vec::new();
            let mut holder = 0;
            for i in 0..5 {
                rig.unlock(l, 10_000 * (i + 1), holder);
                holder = rig.grants[0].0;
                order.push(holder);
            }
            order
        };
        let mut cna = Cna::new(LineHome::cpu0(8));
        assert_eq!(serve(&mut cna), vec![1, 2, 3, 4, 5]);
        let mut q = Qspinlock::new(LineHome::cpu0(8));
        assert_eq!(serve(&mut q), vec![1, 2, 4, 3, 5]);
    }
}
