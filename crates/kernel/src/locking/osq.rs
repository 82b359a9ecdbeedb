//! The optimistic spin queue (kernel/locking/osq_lock.c): an MCS queue of
//! mutex (and rwsem) spinners, so that only its head spins on the lock
//! owner while the others each spin on their own `optimistic_spin_node`.
//!
//! `osq_lock()` is an `atomic_xchg()` of the queue's tail, which lives in
//! the lock itself (`struct mutex::osq`, on the lock's cache line): the
//! caller prices that on the lock's line. Passing the head role on is
//! `WRITE_ONCE(next->locked, 1)`: one transfer to the next spinner's CPU.

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use super::osq_numa::{NumaOrder, Passes};
use crate::task::TaskId;

/// The NUMA node of a spinner queued without one (`Osq::lock`).
const NO_NODE: u32 = u32::MAX;

#[derive(Default)]
pub struct Osq {
    /// Spinners, head first.
    nodes: VecDeque<TaskId>,
    /// Each spinner's NUMA node and when it queued, in `nodes`' order
    /// (`NO_NODE` when queued by `lock`).
    at: VecDeque<(u32, Nanos)>,
    /// The model's NUMA-aware variant ([`super::osq_numa`]); `None` is the
    /// kernel's FIFO queue.
    numa: Option<NumaOrder>,
    /// Head-role passes within and across NUMA nodes.
    pub passes: Passes,
}

impl Osq {
    /// The NUMA-aware variant ([`super::osq_numa`]).
    pub fn numa() -> Self {
        Osq {
            numa: Some(NumaOrder),
            ..Osq::default()
        }
    }

    /// `osq_lock()`: queue `t`; true if it is the head (spins on the owner).
    pub fn lock(&mut self, t: TaskId) -> bool {
        self.lock_from(t, NO_NODE, 0)
    }

    /// [`Self::lock`] by a spinner on NUMA node `node` at `now` (what the
    /// NUMA-aware variant orders by and the pass counts use).
    pub fn lock_from(&mut self, t: TaskId, node: u32, now: Nanos) -> bool {
        self.nodes.push_back(t);
        self.at.push_back((node, now));
        self.nodes.len() == 1
    }

    pub fn head(&self) -> Option<TaskId> {
        self.nodes.front().copied()
    }

    /// The head leaves with the lock (`osq_unlock()` after acquiring);
    /// returns the new head.
    pub fn pop_head(&mut self) -> Option<TaskId> {
        self.pop_head_at(0)
    }

    /// [`Self::pop_head`] at `now`: the NUMA-aware variant first moves a
    /// spinner of the leaving head's node to the front; both count the
    /// pass as within or across nodes.
    pub fn pop_head_at(&mut self, now: Nanos) -> Option<TaskId> {
        self.nodes.pop_front()?;
        let (node, _) = self.at.pop_front().unwrap_or((NO_NODE, 0));
        if let Some(order) = &self.numa {
            if node != NO_NODE {
                if let Some(i) = order.next(&self.at, node, now) {
                    let t = self.nodes.remove(i).expect("a queued spinner");
                    let a = self.at.remove(i).expect("its node");
                    self.nodes.push_front(t);
                    self.at.push_front(a);
                }
            }
        }
        if let Some(&(next, _)) = self.at.front() {
            if node != NO_NODE && next != NO_NODE {
                self.passes.count(node == next);
            }
        }
        self.head()
    }

    /// `osq_unlock()` / the unqueue path of a spinner that gives up: true
    /// if it was the head (the next node becomes head).
    pub fn unqueue(&mut self, t: TaskId) -> Option<bool> {
        let i = self.nodes.iter().position(|&s| s == t)?;
        self.nodes.remove(i);
        self.at.remove(i);
        Some(i == 0)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn get(&self, k: usize) -> Option<TaskId> {
        self.nodes.get(k).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_passes_in_order() {
        let mut q = Osq::default();
        assert!(q.lock(7));
        assert!(!q.lock(8));
        assert!(!q.lock(9));
        assert_eq!(q.unqueue(8), Some(false));
        assert_eq!(q.pop_head(), Some(9));
        assert_eq!(q.unqueue(9), Some(true));
        assert!(q.is_empty());
        assert_eq!(q.unqueue(1), None);
    }
}
