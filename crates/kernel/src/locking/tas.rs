//! Test-and-set spinlocks, for comparison (the kernel's own spinlocks were
//! never this naive on x86; `lib/` and some architectures' early locks were).
//!
//! - `backoff = false`: every waiter loops on `xchg(&lock, 1)`. Each
//!   attempt is an atomic that takes the line exclusively, so while the
//!   lock is held the line is saturated: every waiter has one attempt
//!   outstanding, and the holder's releasing store queues behind one
//!   attempt of each waiter. The first attempt served after the release
//!   wins; it is the next waiter in the line's round-robin.
//! - `backoff = true`: the same `xchg` loop with exponential backoff:
//!   after each failed attempt a waiter leaves the line alone for a delay
//!   that doubles with every failure up to a cap. Its attempts are
//!   transactions on the line like any other; they are accounted when the
//!   lock is next released (the attempts of a hold, in time order, ahead
//!   of the releasing store), and the first waiter to try after the
//!   release takes the lock. Between attempts the lock may sit free.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};

pub const KIND: LockKindInfo = LockKindInfo {
    id: 2,
    name: "tas",
    object_type: "spinlock",
    default: false,
    options: &["backoff"],
    summary: "test-and-set: waiters hammer the word with xchg (backoff = true: exponential backoff between attempts)",
    new: |options, at| Box::new(Tas::new(options.backoff, at)),
};

/// First backoff after a failed attempt. assumed: of the order of one
/// cross-socket line transfer (ssync's TTAS lock starts its backoff at a
/// few hundred cycles; not checked against its source).
const BACKOFF_MIN: Nanos = 128;
/// Backoff cap. assumed: 32 x the first delay (a common cap for bounded
/// exponential backoff; not from a measurement).
const BACKOFF_MAX: Nanos = 4_096;

struct Waiter {
    taker: Taker,
    /// Consecutive failed attempts.
    fails: u32,
    /// With `backoff`: the next attempt.
    retry_at: Nanos,
}

/// Attempts older than this before a release are not replayed on the
/// line: each waiter has at most one attempt outstanding, so the line
/// drained them long before the release (they only count as failures).
const REPLAY_WINDOW: Nanos = 64 * BACKOFF_MAX;

pub struct Tas {
    word: Line,
    backoff: bool,
    owner: Option<Taker>,
    /// Waiters; without backoff, in the round-robin order their attempts
    /// are served in.
    waiters: VecDeque<Waiter>,
    /// Scratch: the next attempt of each waiter, earliest first.
    attempts: BinaryHeap<Reverse<(Nanos, u32)>>,
}

impl Tas {
    pub fn new(backoff: bool, at: LineHome) -> Self {
        Tas {
            word: Line::at(at),
            backoff,
            owner: None,
            waiters: VecDeque::new(),
            attempts: BinaryHeap::new(),
        }
    }

    fn delay(fails: u32) -> Nanos {
        BACKOFF_MIN
            .saturating_mul(1 << fails.clamp(1, 20).saturating_sub(1))
            .min(BACKOFF_MAX)
    }

    /// With backoff: every attempt made before `until` failed (the lock was
    /// held). The recent ones are replayed on the line in time order, each
    /// waiter's next attempt starting its backoff when the previous one
    /// completed, so a saturated line slows the attempts down as it does
    /// on the machine.
    fn fail_attempts_before(&mut self, env: &Env, until: Nanos) {
        let window_start = until.saturating_sub(REPLAY_WINDOW);
        let mut attempts = std::mem::take(&mut self.attempts);
        attempts.clear();
        for (i, w) in self.waiters.iter_mut().enumerate() {
            while w.retry_at < window_start {
                w.fails += 1;
                w.retry_at += Self::delay(w.fails);
            }
            if w.retry_at < until {
                attempts.push(Reverse((w.retry_at, i as u32)));
            }
        }
        while let Some(Reverse((at, i))) = attempts.pop() {
            let w = &mut self.waiters[i as usize];
            let done = self.word.rmw(env.cost, w.taker.cpu, at);
            w.fails += 1;
            w.retry_at = done + Self::delay(w.fails);
            if w.retry_at < until {
                attempts.push(Reverse((w.retry_at, i)));
            }
        }
        self.attempts = attempts;
    }

    /// With backoff and the lock free: waiters whose attempt is due by now
    /// try, in time order; the first takes the lock.
    fn try_due(&mut self, env: &mut Env) {
        let due = self
            .waiters
            .iter()
            .enumerate()
            .filter(|(_, w)| w.retry_at <= env.now)
            .min_by_key(|(_, w)| (w.retry_at, w.taker.task))
            .map(|(i, _)| i);
        if let Some(i) = due {
            let w = self.waiters.remove(i).expect("due waiter");
            let got = self
                .word
                .rmw(env.cost, w.taker.cpu, w.retry_at.max(env.now));
            self.owner = Some(w.taker);
            env.grants.push((w.taker.task, w.taker.mode, got));
        } else {
            env.timer = self.waiters.iter().map(|w| w.retry_at).min();
        }
    }
}

impl SpinningLock for Tas {
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
        let done = self.word.rmw(env.cost, me.cpu, env.now);
        if self.owner.is_none() {
            self.owner = Some(me);
            return Some(done);
        }
        self.waiters.push_back(Waiter {
            taker: me,
            fails: 1,
            retry_at: done + Self::delay(1),
        });
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        debug_assert_eq!(self.owner.map(|o| o.task), Some(me.task));
        let cost = env.cost;
        self.owner = None;
        if !self.backoff {
            // One outstanding xchg per waiter is ahead of the release.
            for w in &self.waiters {
                self.word.rmw(cost, w.taker.cpu, env.now);
            }
            let released = self.word.store(cost, me.cpu, env.now);
            if let Some(w) = self.waiters.pop_front() {
                let got = self.word.rmw(cost, w.taker.cpu, released);
                self.owner = Some(w.taker);
                env.grants.push((w.taker.task, w.taker.mode, got));
            }
            return released;
        }
        self.fail_attempts_before(env, env.now);
        let released = self.word.store(cost, me.cpu, env.now);
        // The next attempt after the store wins; until then the lock is free.
        env.timer = self.waiters.iter().map(|w| w.retry_at.max(released)).min();
        released
    }

    fn timer(&mut self, env: &mut Env) {
        if self.owner.is_none() {
            self.try_due(env);
        }
    }
}
