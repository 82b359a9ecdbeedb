//! `spinlock_t` as mainline has it: the queued spinlock
//! (kernel/locking/qspinlock.c).
//!
//! - Fast path: `atomic_try_cmpxchg_acquire(&lock->val, 0, _Q_LOCKED_VAL)`.
//! - One waiter, when only the locked byte is set, takes the *pending* bit
//!   and spins on the lock word (`atomic_cond_read_acquire(&lock->locked,
//!   !VAL)`), then `clear_pending_set_locked()`.
//! - Everyone else joins the MCS queue: `xchg_tail()` on the lock word,
//!   then spins on its **own** `mcs_spinlock` node (a line nobody else
//!   polls). Only the queue head polls the lock word, waiting for both
//!   locked and pending to clear; it sets the locked byte and hands the
//!   head role on by writing `next->locked`
//!   (`arch_mcs_spin_unlock_contended()`).
//! - Unlock: `smp_store_release(&lock->locked, 0)`.
//!
//! So a release is seen by at most two polling CPUs (the pending waiter and
//! the queue head) however many wait: the handoff costs a constant number
//! of line transfers.

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};

pub const KIND: LockKindInfo = LockKindInfo {
    id: 0,
    name: "qspinlock",
    object_type: "spinlock",
    default: true,
    options: &[],
    summary: "queued spinlock: pending bit, then an MCS queue; only the head polls the lock word (mainline)",
    new: |_, at| Box::new(Qspinlock::new(at)),
};

pub struct Qspinlock {
    /// `lock->val`: locked byte, pending bit and tail.
    word: Line,
    owner: Option<Taker>,
    pending: Option<Taker>,
    /// The MCS queue, head first (a slow path such as CNA may reorder the
    /// waiters behind the head).
    pub(super) queue: VecDeque<Taker>,
}

impl Qspinlock {
    pub fn new(at: LineHome) -> Self {
        Qspinlock {
            word: Line::at(at),
            owner: None,
            pending: None,
            queue: VecDeque::new(),
        }
    }

    /// `next` becomes the queue head at `at` and starts polling the word.
    fn new_head(&mut self, env: &Env, next: Taker, at: Nanos) {
        self.word.poll(env.cost, next.cpu, at);
    }
}

impl SpinningLock for Qspinlock {
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
        let cost = env.cost;
        let done = self.word.rmw(cost, me.cpu, env.now);
        if self.owner.is_none() && self.pending.is_none() && self.queue.is_empty() {
            self.owner = Some(me);
            return Some(done);
        }
        if self.pending.is_none() && self.queue.is_empty() {
            // The cmpxchg failed; queued_fetch_set_pending_acquire() wins
            // the pending bit; spin on the locked byte.
            let set = self.word.rmw(cost, me.cpu, done);
            self.word.poll(cost, me.cpu, set);
            self.pending = Some(me);
            return None;
        }
        // xchg_tail(), then publish ourselves in the previous tail's node.
        let queued = self.word.rmw(cost, me.cpu, done);
        match self.queue.back() {
            // WRITE_ONCE(prev->next, node): a write to the previous tail's node.
            Some(_) => {}
            None => self.new_head(env, me, queued),
        }
        self.queue.push_back(me);
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        let cost = env.cost;
        debug_assert_eq!(self.owner.map(|o| o.task), Some(me.task));
        self.owner = None;
        let released = self.word.store(cost, me.cpu, env.now);
        if let Some(p) = self.pending.take() {
            // The pending waiter sees the locked byte clear, then
            // clear_pending_set_locked().
            let seen = self.word.take_poll(p.cpu).unwrap_or(released);
            let got = self.word.store(cost, p.cpu, seen);
            self.owner = Some(p);
            env.grants.push((p.task, p.mode, got));
        } else if let Some(head) = self.queue.pop_front() {
            let seen = self.word.take_poll(head.cpu).unwrap_or(released);
            // The last in the queue must clear the tail with a cmpxchg;
            // otherwise set_locked() is a plain store.
            let got = if self.queue.is_empty() {
                self.word.rmw(cost, head.cpu, seen)
            } else {
                self.word.store(cost, head.cpu, seen)
            };
            self.owner = Some(head);
            env.grants.push((head.task, head.mode, got));
            if let Some(&next) = self.queue.front() {
                // arch_mcs_spin_unlock_contended(&next->locked).
                let handed = got + cost.line_transfer(head.cpu, next.cpu);
                self.new_head(env, next, handed);
            }
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rig;
    use super::*;
    use crate::program::LockMode;

    /// queued_spin_lock_slowpath(): the second CPU takes the pending bit,
    /// the third queues with xchg_tail(); every arrival writes the lock
    /// word; the pending waiter gets the lock first, then the queue head.
    #[test]
    fn arrivals_write_the_word_and_pending_goes_before_the_queue() {
        let mut rig = Rig::new(4);
        let mut l = Qspinlock::new(LineHome::cpu0(4));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        let rmws = l.word.rmws;
        assert!(rig.lock(&mut l, 1_000, 1).is_none());
        // The failed cmpxchg, then queued_fetch_set_pending_acquire().
        assert_eq!(l.word.rmws, rmws + 2);
        assert!(rig.lock(&mut l, 2_000, 2).is_none());
        // The failed cmpxchg, then xchg_tail().
        assert_eq!(l.word.rmws, rmws + 4);
        let pollers = l.word.nr_pollers();
        assert_eq!(pollers, 2, "the pending waiter and the queue head");
        rig.unlock(&mut l, 10_000, 0);
        assert_eq!(rig.grants.len(), 1);
        assert_eq!(rig.grants[0].0, 1, "the pending waiter first");
        assert!(rig.grants[0].2 > 10_000);
        rig.unlock(&mut l, 20_000, 1);
        assert_eq!(rig.grants[0].0, 2);
        assert!(l.holds(2, LockMode::Exclusive));
        assert_eq!(l.word.nr_pollers(), 0);
    }
}
