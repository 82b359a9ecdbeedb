//! The ticket spinlock of x86 before 4.2 (`arch/x86/include/asm/spinlock.h`,
//! `arch_spin_lock()` until commit 62c7a1e9ae54, "locking/pvqspinlock:
//! Rename QUEUED_SPINLOCK to QUEUED_SPINLOCKS" switched x86 to qspinlock).
//!
//! - Lock: `xadd` on the tail half of the word takes a ticket; if it equals
//!   the head the lock is ours, else **every** waiter spins reading the
//!   head (`READ_ONCE(lock->tickets.head)` under `cpu_relax()`).
//! - Unlock: `head++` (`__add(&lock->tickets.head, TICKET_LOCK_INC,
//!   UNLOCK_LOCK_PREFIX)`, a plain add on most configurations): a store.
//!
//! Every release invalidates every waiter's copy and each re-fetches it,
//! so the line is busy for one transfer per waiter after each handoff, and
//! the next release queues behind that: handoff time grows with the number
//! of waiters (Boyd-Wickizer et al., "Non-scalable locks are dangerous",
//! Linux Symposium 2012).

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};

pub const KIND: LockKindInfo = LockKindInfo {
    id: 1,
    name: "ticket",
    object_type: "spinlock",
    default: false,
    options: &[],
    summary: "ticket spinlock: FIFO tickets, every waiter polls the lock word (x86 before 4.2)",
    new: |_, at| Box::new(Ticket::new(at)),
};

pub struct Ticket {
    /// `arch_spinlock_t`: head and tail tickets in one word.
    word: Line,
    owner: Option<Taker>,
    /// Waiters in ticket order.
    waiters: VecDeque<Taker>,
}

impl Ticket {
    pub fn new(at: LineHome) -> Self {
        Ticket {
            word: Line::at(at),
            owner: None,
            waiters: VecDeque::new(),
        }
    }
}

impl SpinningLock for Ticket {
    fn owner(&self) -> Option<Taker> {
        self.owner
    }

    fn word(&self) -> &Line {
        &self.word
    }

    fn word_mut(&mut self) -> &mut Line {
        &mut self.word
    }

    fn lock(&mut self, env: &mut Env, me: Taker) -> Option<Nanos> {
        let ticket = self.word.rmw(env.cost, me.cpu, env.now);
        if self.owner.is_none() && self.waiters.is_empty() {
            self.owner = Some(me);
            return Some(ticket);
        }
        self.word.poll(env.cost, me.cpu, ticket);
        self.waiters.push_back(me);
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        debug_assert_eq!(self.owner.map(|o| o.task), Some(me.task));
        let released = self.word.store(env.cost, me.cpu, env.now);
        self.owner = self.waiters.pop_front();
        if let Some(next) = self.owner {
            // The next ticket's holder owns the lock once its re-fetch of
            // the head shows its number: no further atomic.
            let seen = self.word.take_poll(next.cpu).unwrap_or(released);
            env.grants.push((next.task, next.mode, seen));
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rig;
    use super::*;

    /// arch_spin_unlock(): head++ is a store every waiter re-fetches; the
    /// next ticket owns the lock when its copy shows its number, in ticket
    /// order whatever the re-fetch order.
    #[test]
    fn tickets_are_served_in_order_and_every_waiter_refetches() {
        let mut rig = Rig::new(8);
        let mut l = Ticket::new(LineHome::cpu0(8));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        for w in [5, 2, 7] {
            assert!(rig.lock(&mut l, 100, w).is_none());
        }
        let before = l.word.refetches;
        rig.unlock(&mut l, 10_000, 0);
        assert_eq!(l.word.refetches - before, 3, "every waiter re-fetches");
        assert_eq!(rig.grants.len(), 1);
        assert_eq!(rig.grants[0].0, 5, "the first ticket");
        rig.unlock(&mut l, 20_000, 5);
        assert_eq!(rig.grants[0].0, 2);
    }
}
