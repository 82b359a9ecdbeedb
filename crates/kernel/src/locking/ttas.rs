//! The test-and-test-and-set spinlock x86 had before ticket locks:
//! `__raw_spin_lock()` of v2.6.24 (`include/asm-x86/spinlock_32.h`, and
//! `spinlock_64.h` with `decl` on a word; replaced in 2.6.25 by Nick
//! Piggin's "x86: FIFO ticket spinlocks", the `ticket` kind).
//!
//! - Lock: `lock; decb` on the lock byte (an atomic); if the result is
//!   not negative the lock is ours. Else the waiter spins *reading* the
//!   byte (`2: rep;nop; cmpb $0,lock; jle 2b`) until it looks free, then
//!   goes back to the atomic (`jmp 1b`). folly's `MicroSpinLock::lock()` is the same
//!   shape with `cas(FREE, LOCKED)` as the atomic and `pause` in the read
//!   loop (without its `Sleeper`: see below).
//! - Unlock: `movb $1, lock` (`__raw_spin_unlock()`): a plain store.
//!
//! In the model every waiter polls the word (a shared copy: nothing while
//! the lock is held, one re-fetch per write to it, [`Line::poll`]). A
//! release reaches every poller at its re-fetch; each of them saw the
//! byte free and issues its atomic, in the order they saw it. The first
//! takes the lock; the others fail, each still taking the line exclusive
//! (a failed locked instruction writes the line as well), and go back to
//! reading it. So a handoff with K waiters costs the line about 3K
//! requests: K re-fetches of the release, K atomics, K - 1 re-reads,
//! and the next release queues behind them. Which waiter wins is the
//! line's order, not FIFO: the waiters nearest the releasing CPU see the
//! release first.
//!
//! Not modelled: folly's `Sleeper` (after 4000 `pause`s a waiter sleeps
//! 500 us at a time); a kernel spinlock never sleeps.

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};

pub const KIND: LockKindInfo = LockKindInfo {
    name: "ttas",
    object_type: "spinlock",
    default: false,
    options: &[],
    summary: "test-and-test-and-set: waiters poll the word and race their atomic when it looks free (x86 before 2.6.25)",
    new: |_, at| Box::new(Ttas::new(at)),
};

pub struct Ttas {
    /// The lock byte.
    word: Line,
    owner: Option<Taker>,
    /// Waiters, all polling the word, in the order they arrived.
    waiters: Vec<Taker>,
    /// Scratch: (when a waiter saw the release, its index), in that order.
    race: Vec<(Nanos, u32)>,
}

impl Ttas {
    pub fn new(at: LineHome) -> Self {
        Ttas {
            word: Line::at(at),
            owner: None,
            waiters: Vec::new(),
            race: Vec::new(),
        }
    }
}

impl SpinningLock for Ttas {
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
        // `lock; decb`: an atomic whether or not the lock is free.
        let done = self.word.rmw(env.cost, me.cpu, env.now);
        if self.owner.is_none() {
            self.owner = Some(me);
            return Some(done);
        }
        // Taken: spin reading the byte (our copy is the line itself, held
        // exclusive after the atomic, until the next write).
        self.word.poll(env.cost, me.cpu, done);
        self.waiters.push(me);
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        debug_assert_eq!(self.owner.map(|o| o.task), Some(me.task));
        let cost = env.cost;
        self.owner = None;
        // `movb $1, lock`: every poller re-fetches and sees the byte free.
        let released = self.word.store(cost, me.cpu, env.now);
        if self.waiters.is_empty() {
            return released;
        }
        let mut race = std::mem::take(&mut self.race);
        race.clear();
        for (i, w) in self.waiters.iter().enumerate() {
            let seen = self.word.seen_at(w.cpu).unwrap_or(released);
            race.push((seen, i as u32));
        }
        // Ties by arrival: the order the waiters' requests reached the line.
        race.sort_unstable();
        // Every poller that saw it free issues its atomic; the line serves
        // them in the order they were issued. While they are in flight the
        // pollers are not reading (each one's read is its atomic), so the
        // atomics do not make them re-fetch one by one.
        for w in &self.waiters {
            self.word.unpoll(w.cpu);
        }
        let mut winner = None;
        let mut last = released;
        for &(seen, i) in &race {
            let w = self.waiters[i as usize];
            last = self.word.rmw(cost, w.cpu, seen);
            winner.get_or_insert((i, last));
        }
        let (won, got) = winner.expect("a waiter raced");
        let next = self.waiters.swap_remove(won as usize);
        // The losers read the byte again once the last atomic is done: it
        // is held, so they spin on their copies until the next release.
        for w in &self.waiters {
            self.word.poll(cost, w.cpu, last);
        }
        self.owner = Some(next);
        env.grants.push((next.task, next.mode, got));
        self.race = race;
        released
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rig;
    use super::*;
    use crate::program::LockMode;

    /// __raw_spin_lock(): a taken lock makes the waiter poll; a release
    /// makes every waiter re-fetch and race its atomic: all K of them
    /// write the line, one wins, the others poll again.
    #[test]
    fn a_release_makes_every_waiter_race_its_atomic_and_one_wins() {
        let mut rig = Rig::new(8);
        let mut l = Ttas::new(LineHome::cpu0(8));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        for w in [5, 2, 7] {
            assert!(rig.lock(&mut l, 100, w).is_none());
        }
        assert_eq!(l.word.nr_pollers(), 3);
        let (rmws, refetches) = (l.word.rmws, l.word.refetches);
        rig.unlock(&mut l, 10_000, 0);
        assert_eq!(l.word.rmws - rmws, 3, "every waiter tries");
        assert_eq!(l.word.refetches - refetches, 3, "every waiter re-fetches");
        assert_eq!(rig.grants.len(), 1);
        let winner = rig.grants[0].0;
        assert!(l.holds(winner, LockMode::Exclusive));
        assert!(rig.grants[0].2 > 10_000);
        assert_eq!(l.word.nr_pollers(), 2, "the losers poll again");
        // The next release goes to one of the two left.
        rig.unlock(&mut l, 20_000, winner);
        assert_ne!(rig.grants[0].0, winner);
        assert_eq!(l.word.nr_pollers(), 1);
    }

    /// With more waiters a handoff keeps the line busy longer: each waiter
    /// adds a re-fetch, an atomic and a re-read ahead of the next release.
    #[test]
    fn a_handoff_costs_more_line_time_with_more_waiters() {
        let busy = |waiters: u32| {
            let mut rig = Rig::new(16);
            let mut l = Ttas::new(LineHome::cpu0(16));
            assert!(rig.lock(&mut l, 0, 0).is_some());
            for w in 1..=waiters {
                assert!(rig.lock(&mut l, 100, w).is_none());
            }
            rig.unlock(&mut l, 100_000, 0);
            l.word.free_at() - 100_000
        };
        assert!(busy(8) > busy(2), "{} vs {}", busy(8), busy(2));
    }
}
