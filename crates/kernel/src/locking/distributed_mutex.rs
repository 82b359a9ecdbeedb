//! folly's `DistributedMutex` as `lock()` / `unlock()` use it (no
//! combining): `folly/synchronization/DistributedMutex-inl.h` at commit
//! 886a70d91 (2019-06-12), the commit SmallLocksBenchmark's published
//! results come from. Not a kernel lock: smpsim has it to compare the line
//! model with folly's contended benchmark (docs/contention.md).
//!
//! One central word `state_` holds `kUnlocked`, `kLocked`, or the address
//! of the last waiter to enqueue (with the locked bit). Each waiter's node
//! (`Waiter`: `futex_`, `next_` and the waker's metadata on one cache line)
//! is on its own stack.
//!
//! - Lock (`lockImplementation()`): `tryLockNoLoad()`, an
//!   `atomic_fetch_set()` of the locked bit on the word; if it was clear
//!   the lock is ours. Else `state_.exchange(node)` enqueues the node; its
//!   `next_` is the previous value (the waiter before it, or `kLocked`).
//!   The waiter then spins in `spin()`: every round `publish()` reads the
//!   timestamp counter and does `futex_.exchange(time | kWaiting)` on its
//!   own node, then a `pause`, until the exchange returns `kWake`.
//! - Unlock (`unlock()`): a holder woken from a chain with a `next_`
//!   wakes that waiter (`wake()`, `tryWake()`) and is done: the word is not
//!   touched. The last of a chain (or a holder that took the lock from the
//!   word) commits with `tryUnlockClean()`, a `compare_exchange_strong()`
//!   of the word to `kUnlocked`; if waiters enqueued meanwhile it fails,
//!   and `state_.exchange(kLocked)` takes all of them at once, newest
//!   first: the chain is woken in LIFO order, the chains in the order
//!   they were taken.
//! - A wake (`tryWake()`): load the waiter's `futex_` and `next_` (a read
//!   of its node, which the waiter holds exclusive, exchanging into it),
//!   then store the metadata and `kWake` into it. The source says what
//!   the waiter's exchanges do to that line: "an RFO from the enqueueing
//!   thread is highly likely and has the potential to cause an immediate
//!   invalidation; blocking the combiner thread from making progress until
//!   the line is pulled back" (`Waiter::next_`), and "each time we publish
//!   a timestamp, this thread has to submit an RFO to the remote core for
//!   the cacheline" (`publish()`).
//!
//! # In the model
//!
//! The word and each waiter's node are [`Line`]s. An arrival on a held
//! lock makes two RMWs on the word (the failed fetch-and-set, the
//! exchange); a chain end two (the failed CAS, the exchange) or one (the
//! CAS that unlocks). A wake is four requests on the waiter's node, served
//! in this order: the waker's read, the waiter's exchange taking the line
//! back (its copy was downgraded by the read; its next round misses), the
//! waker's store (a read-for-ownership from the waiter), and the waiter's
//! next exchange, which sees `kWake`: it owns the lock when that exchange
//! is done. The waiter's exchanges issue as soon as its copy is lost
//! (assumed: a round, `rdtsc`, an exchange that hits and a `pause`, takes
//! tens of ns; its miss queues at the line's home behind the request that
//! took the line anyway). Between two misses the waiter's exchanges hit
//! its own line: nobody else sees them, and its spinning is one interval,
//! no event per round.
//!
//! Left out, with why:
//!
//! - the waker's `rdtsc` between its load and its store (a few ns of the
//!   waker's own time, not a line transaction) is not costed;
//! - skipping a waiter that looks preempted (`preempted()`: a published
//!   timestamp more than `kScheduledAwaySpinThreshold` = 200 counter ticks
//!   old; the skipped waiter re-enqueues): a spinning waiter publishes
//!   every round, so its timestamp is up to a round and a data leg old
//!   when the waker reads it. Whether that passes 200 ticks depends on
//!   round times nobody measured (docs/contention.md has the arithmetic
//!   for folly's two machines); the model catches every waiter (assumed);
//! - sleeping after `kMaxSpins` = 4000 rounds (`Sleeper::sleep()`): a
//!   waiter waits for at most the rest of the chain being woken and its
//!   own chain, about 2N handoffs with N waiters; in folly's benchmark
//!   that is far below 4000 rounds (docs/contention.md has the figures);
//! - combining (`lock_combine()`), timed waiters and futex sleepers:
//!   `lock()` of the benchmark uses none of them.

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};

pub const KIND: LockKindInfo = LockKindInfo {
    id: 6,
    name: "distributed_mutex",
    object_type: "spinlock",
    default: false,
    options: &[],
    summary: "folly's DistributedMutex: waiters exchange into their own node, LIFO chains taken off the central word, woken node to node (folly, not the kernel)",
    new: |_, at| Box::new(DistributedMutex::new(at)),
};

/// A waiter and the node on its stack.
struct Waiter {
    taker: Taker,
    /// `Waiter::futex_`, `next_` and the waker's metadata: one line, held
    /// by the waiter (it exchanges into it every round).
    node: Line,
}

pub struct DistributedMutex {
    /// `state_`: unlocked, locked, or the last enqueued waiter.
    state: Line,
    nr_cpus: usize,
    owner: Option<Taker>,
    /// The chain the holder took off the word (or was woken from), the
    /// next to wake first: newest arrival first.
    chain: VecDeque<Waiter>,
    /// Waiters enqueued on the word since it was last taken, oldest first.
    enqueued: Vec<Waiter>,
    /// RMWs and transfers on the nodes of waiters already woken.
    node_rmws: u64,
    node_transfers: u64,
}

impl DistributedMutex {
    pub fn new(at: LineHome) -> Self {
        DistributedMutex {
            state: Line::at(at),
            nr_cpus: at.nr_cpus,
            owner: None,
            chain: VecDeque::new(),
            enqueued: Vec::new(),
            node_rmws: 0,
            node_transfers: 0,
        }
    }

    /// `tryWake()` by `waker` from `at`: the waiter owns the lock when its
    /// exchange returns `kWake`; returns when the waker's store is done.
    fn wake(&mut self, env: &mut Env, waker: Taker, mut w: Waiter, at: Nanos) -> Nanos {
        let cost = env.cost;
        let cpu = w.taker.cpu;
        // `futex_.load()` and `next_.load()`: one read of the node.
        let read = w.node.read(cost, waker.cpu, at);
        // The waiter's next round takes its line back.
        w.node.rmw(cost, cpu, read);
        // `new (&waiter->metadata_) ...; futex_.store(kWake)`.
        let stored = w.node.store(cost, waker.cpu, read);
        // The waiter's next exchange misses and returns kWake.
        let woken = w.node.rmw(cost, cpu, stored);
        self.node_rmws += w.node.rmws;
        self.node_transfers += w.node.transfers;
        self.owner = Some(w.taker);
        env.grants.push((w.taker.task, w.taker.mode, woken));
        stored
    }
}

impl SpinningLock for DistributedMutex {
    fn owner(&self) -> Option<Taker> {
        self.owner
    }

    fn word(&self) -> &Line {
        &self.state
    }

    fn word_mut(&mut self) -> &mut Line {
        &mut self.state
    }

    fn lock(&mut self, env: &mut Env, me: Taker) -> Option<Nanos> {
        // tryLockNoLoad(): atomic_fetch_set() of the locked bit.
        let set = self.state.rmw(env.cost, me.cpu, env.now);
        if self.owner.is_none() {
            debug_assert!(self.chain.is_empty() && self.enqueued.is_empty());
            self.owner = Some(me);
            return Some(set);
        }
        // state_.exchange(node): enqueued. The node is on our stack, held
        // exclusive: initialising it and the spin's exchanges hit.
        self.state.rmw(env.cost, me.cpu, set);
        self.enqueued.push(Waiter {
            taker: me,
            node: Line::new(self.nr_cpus, me.cpu),
        });
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        debug_assert_eq!(self.owner.map(|o| o.task), Some(me.task));
        self.owner = None;
        if let Some(next) = self.chain.pop_front() {
            // Woken from a chain with a next_: wake it, leave the word.
            return self.wake(env, me, next, env.now);
        }
        // tryUnlockClean(): compare_exchange_strong(expected, kUnlocked).
        let cas = self.state.rmw(env.cost, me.cpu, env.now);
        if self.enqueued.is_empty() {
            return cas;
        }
        // It failed: state_.exchange(kLocked) takes the new chain.
        let taken = self.state.rmw(env.cost, me.cpu, cas);
        self.chain.extend(self.enqueued.drain(..).rev());
        let next = self.chain.pop_front().expect("a chain was taken");
        self.wake(env, me, next, taken)
    }

    fn line_stats(&self) -> (u64, u64) {
        (
            self.state.rmws + self.node_rmws,
            self.state.transfers + self.node_transfers,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rig;
    use super::*;
    use crate::program::LockMode;

    /// Arrivals enqueue with two RMWs on the word; a holder with nobody
    /// behind it in a chain takes the waiters off the word with a failed
    /// CAS and an exchange, and wakes them newest first; a chain member
    /// wakes the next without touching the word; arrivals during a chain
    /// wait for the next chain.
    #[test]
    fn chains_are_taken_off_the_word_and_woken_newest_first() {
        let mut rig = Rig::new(8);
        let mut l = DistributedMutex::new(LineHome::cpu0(8));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        let rmws = l.state.rmws;
        for w in [1, 2, 3] {
            assert!(rig.lock(&mut l, 100 * u64::from(w), w).is_none());
        }
        assert_eq!(l.state.rmws, rmws + 6, "fetch_set and exchange each");
        let at_release = l.state.rmws;
        rig.unlock(&mut l, 10_000, 0);
        assert_eq!(l.state.rmws, at_release + 2, "the failed CAS, the exchange");
        assert_eq!(rig.grants[0].0, 3, "the newest waiter first");
        assert!(rig.lock(&mut l, 11_000, 4).is_none());
        let word = l.state.rmws;
        rig.unlock(&mut l, 20_000, 3);
        assert_eq!(rig.grants[0].0, 2);
        rig.unlock(&mut l, 30_000, 2);
        assert_eq!(rig.grants[0].0, 1, "the end of the chain");
        assert_eq!(l.state.rmws, word, "a chain's wakes leave the word alone");
        rig.unlock(&mut l, 40_000, 1);
        assert_eq!(rig.grants[0].0, 4, "the next chain");
        assert!(l.holds(4, LockMode::Exclusive));
        rig.unlock(&mut l, 50_000, 4);
        assert!(rig.grants.is_empty());
        assert_eq!(l.owner(), None);
        assert!(rig.lock(&mut l, 60_000, 5).is_some());
    }

    /// A wake is four requests on the waiter's node, one after the other:
    /// the waker's read, the waiter taking it back, the waker's store, the
    /// waiter's exchange that sees kWake; so on a flat machine the waiter
    /// owns the lock no sooner than the MCS lock's three transfers.
    #[test]
    fn a_wake_is_four_requests_on_the_waiters_node() {
        let mut rig = Rig::new(4);
        let x = rig.cost.line_transfer(0, 1);
        let mut l = DistributedMutex::new(LineHome::cpu0(4));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        assert!(rig.lock(&mut l, 100, 1).is_none());
        assert!(rig.lock(&mut l, 10_000, 2).is_none());
        // The chain end takes [2, 1] off the word and wakes 2.
        rig.unlock(&mut l, 20_000, 0);
        let before = l.node_transfers;
        let stored = rig.unlock(&mut l, 30_000, 2);
        assert_eq!(l.node_transfers - before, 4);
        let (task, _, woken) = rig.grants[0];
        assert_eq!(task, 1);
        assert!(stored > 30_000 && woken > stored);
        assert!(woken >= 30_000 + 3 * x, "{} vs 3 x {x}", woken - 30_000);
    }
}
