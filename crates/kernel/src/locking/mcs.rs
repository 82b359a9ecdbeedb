//! A plain MCS lock (kernel/locking/mcs_spinlock.h, `mcs_spin_lock()` /
//! `mcs_spin_unlock()`): the queue qspinlock is built on, without its
//! pending bit and locked byte, for comparison.
//!
//! - Lock: `xchg(lock, node)` swaps this CPU's node in as the tail; with
//!   no previous tail the lock is ours, otherwise we link in behind it
//!   (`WRITE_ONCE(prev->next, node)`) and spin on our **own** node's
//!   `locked` (a line nobody else polls).
//! - Unlock: `READ_ONCE(node->next)` (our node's line, last written by
//!   the successor when it linked in); with no successor,
//!   `cmpxchg_release(lock, node, NULL)`; otherwise
//!   `arch_mcs_spin_unlock_contended(&next->locked)`: a store to the
//!   successor's node, which it sees when its re-fetch lands.
//!
//! A handoff is three transfers between the two CPUs (read our node,
//! write theirs, their re-fetch) whatever the number of waiters; only
//! arrivals and the last release touch the lock word.

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};

pub const KIND: LockKindInfo = LockKindInfo {
    id: 4,
    name: "mcs",
    object_type: "spinlock",
    default: false,
    options: &[],
    summary: "MCS queue lock: each waiter spins on its own node, the lock passes node to node (mcs_spinlock.h)",
    new: |_, at| Box::new(Mcs::new(at)),
};

pub struct Mcs {
    /// The lock: a pointer to the tail node.
    tail: Line,
    owner: Option<Taker>,
    /// Waiters in queue order.
    queue: VecDeque<Taker>,
}

impl Mcs {
    pub fn new(at: LineHome) -> Self {
        Mcs {
            tail: Line::at(at),
            owner: None,
            queue: VecDeque::new(),
        }
    }
}

impl SpinningLock for Mcs {
    fn owner(&self) -> Option<Taker> {
        self.owner
    }

    fn word(&self) -> &Line {
        &self.tail
    }

    fn word_mut(&mut self) -> &mut Line {
        &mut self.tail
    }

    fn lock(&mut self, env: &mut Env, me: Taker) -> Option<Nanos> {
        let swapped = self.tail.rmw(env.cost, me.cpu, env.now);
        if self.owner.is_none() && self.queue.is_empty() {
            self.owner = Some(me);
            return Some(swapped);
        }
        self.queue.push_back(me);
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        debug_assert_eq!(self.owner.map(|o| o.task), Some(me.task));
        self.owner = self.queue.pop_front();
        match self.owner {
            None => self.tail.rmw(env.cost, me.cpu, env.now),
            Some(next) => {
                // Our node's `next`, written by the successor; then the
                // store to its node, which it holds shared while spinning
                // on it; then its re-fetch.
                let x = env.cost.line_transfer(next.cpu, me.cpu);
                let stored = env.now + 2 * x;
                env.grants.push((next.task, next.mode, stored + x));
                stored
            }
        }
    }
}
