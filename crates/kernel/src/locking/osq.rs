//! The optimistic spin queue (kernel/locking/osq_lock.c): an MCS queue of
//! mutex (and rwsem) spinners, so that only its head spins on the lock
//! owner while the others each spin on their own `optimistic_spin_node`.
//!
//! `osq_lock()` is an `atomic_xchg()` of the queue's tail, which lives in
//! the lock itself (`struct mutex::osq`, on the lock's cache line): the
//! caller prices that on the lock's line. Passing the head role on is
//! `WRITE_ONCE(next->locked, 1)`: one transfer to the next spinner's CPU.

use std::collections::VecDeque;

use crate::task::TaskId;

#[derive(Default)]
pub struct Osq {
    /// Spinners, head first.
    nodes: VecDeque<TaskId>,
}

impl Osq {
    /// `osq_lock()`: queue `t`; true if it is the head (spins on the owner).
    pub fn lock(&mut self, t: TaskId) -> bool {
        self.nodes.push_back(t);
        self.nodes.len() == 1
    }

    pub fn head(&self) -> Option<TaskId> {
        self.nodes.front().copied()
    }

    /// The head leaves with the lock (`osq_unlock()` after acquiring);
    /// returns the new head.
    pub fn pop_head(&mut self) -> Option<TaskId> {
        self.nodes.pop_front();
        self.head()
    }

    /// `osq_unlock()` / the unqueue path of a spinner that gives up: true
    /// if it was the head (the next node becomes head).
    pub fn unqueue(&mut self, t: TaskId) -> Option<bool> {
        let i = self.nodes.iter().position(|&s| s == t)?;
        self.nodes.remove(i);
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
