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
//!   loop, plus its `Sleeper` (the `sleeper` option, below).
//! - Unlock: `movb $1, lock` (`__raw_spin_unlock()`): a plain store.
//!
//! In the model every waiter polls the word (a shared copy: nothing while
//! the lock is held, one re-fetch per write to it, [`Line::poll`]). A
//! release reaches every poller at its re-fetch; each of them saw the
//! byte free and issues its atomic, in the order they saw it. The first
//! takes the lock; the others fail, each still taking the line exclusive
//! (a failed locked instruction writes the line as well), and go back to
//! reading it. So a handoff with K waiters costs the line about 4K + 2
//! requests: the arrival's atomic and the K re-fetches it causes, its
//! first read; the release and its K re-fetches; K racing atomics; K - 1
//! re-reads (docs/lock-scaling.md derives it and checks it against
//! lock_stat: 186.8 per acquisition with 46 waiters). Which waiter wins is the
//! line's order, not FIFO: the waiters nearest the releasing CPU see the
//! release first.
//!
//! # `sleeper`: folly's `detail::Sleeper`
//!
//! `MicroSpinLock::lock()` (folly/synchronization/MicroSpinLock.h at
//! commit 886a70d91, the one SmallLocksBenchmark's results come from) is
//! `while (!try_lock()) { do { sleeper.wait(); } while (payload() ==
//! LOCKED); }`, one `Sleeper` per call. `Sleeper::wait()`
//! (folly/synchronization/detail/Sleeper.h, same commit) is one
//! `asm_volatile_pause()` for each of the first `kMaxActiveSpin = 4000`
//! calls, then `nanosleep()` of 500 us on every later one. So a waiter
//! reads the byte once per pause for 4000 pauses, then once per sleep.
//!
//! In the model a waiter polls the word until it has been round the read
//! loop `max_active_spin` times. A round on a valid copy takes `pause`; a
//! write that makes the waiter re-fetch (an arrival's failed atomic, a
//! release) makes one round last until the line is back, and the race
//! after a release takes two (the read that saw the byte free, the failed
//! atomic and the read after it). So the budget is `max_active_spin x
//! pause` on a quiet line, longer on a busy one, whose misses the loop
//! waits for. Past the budget the waiter stops polling (off the line: it no longer
//! re-fetches anything) and reads the byte once per `sleep`, each read a
//! lock timer, never an event per loop iteration. A read that finds the
//! lock held starts another sleep; one that finds it free issues the
//! atomic and takes it. A release with no waiter polling leaves the lock
//! free until the first sleeper's read or the next arrival, whichever
//! comes first.
//!
//! The sleeping waiter's CPU stays with it and counts as spinning
//! (assumed: folly's benchmark runs one thread per CPU, so nothing else
//! would run there; what the CPU's idleness would give an SMT sibling is
//! not modelled). A kernel spinlock never sleeps: without the option every
//! waiter polls until it gets the lock.

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};
use crate::spec::Sleeper;

pub const KIND: LockKindInfo = LockKindInfo {
    id: 3,
    name: "ttas",
    object_type: "spinlock",
    default: false,
    options: &["sleeper"],
    summary: "test-and-test-and-set: waiters poll the word and race their atomic when it looks free (x86 before 2.6.25; sleeper: folly's MicroSpinLock)",
    new: |options, at| Box::new(Ttas::new(options.sleeper, at)),
};

/// A waiter, polling the word or (with a sleeper) asleep between reads.
#[derive(Clone, Copy)]
struct Waiter {
    taker: Taker,
    /// When its rounds of the read loop run out if no write makes it miss
    /// again (never, without a sleeper).
    spins_until: Nanos,
    /// When its last miss was served: from then on it pauses on its copy.
    back_at: Nanos,
    /// Asleep: when it next reads the byte. `None` while it polls.
    wakes_at: Option<Nanos>,
}

impl Waiter {
    /// A write issued at `at` invalidated the waiter's copy and its read
    /// was served at `back`: `rounds` rounds of its loop (each a pause and
    /// a read) spent, the loop stalled from the later of `at` and its last
    /// miss until `back`. Its remaining pauses are spent from `back` on.
    fn missed(&mut self, at: Nanos, back: Nanos, rounds: u32, pause: Nanos) {
        let from = at.max(self.back_at);
        let left = self
            .spins_until
            .saturating_sub(from)
            .saturating_sub(Nanos::from(rounds) * pause);
        self.back_at = back.max(self.back_at);
        self.spins_until = self.back_at.saturating_add(left);
    }
}

pub struct Ttas {
    /// The lock byte.
    word: Line,
    sleeper: Option<Sleeper>,
    owner: Option<Taker>,
    /// Waiters, polling or asleep, in the order they arrived (but for the
    /// winners taken out of it).
    waiters: Vec<Waiter>,
    /// Scratch: (when a waiter saw the release, its index), in that order.
    race: Vec<(Nanos, u32)>,
    /// The earliest lock timer asked for and not yet fired.
    armed: Option<Nanos>,
}

impl Ttas {
    pub fn new(sleeper: Option<Sleeper>, at: LineHome) -> Self {
        Ttas {
            word: Line::at(at),
            sleeper,
            owner: None,
            waiters: Vec::new(),
            race: Vec::new(),
            armed: None,
        }
    }

    /// Waiters with no round of the read loop left after `now` (or after
    /// the read they are waiting for, which is their last) stop polling:
    /// they will not read the line again before their sleep, which starts
    /// when their last round ends.
    fn fall_asleep(&mut self, now: Nanos) {
        let Some(s) = self.sleeper else { return };
        for w in &mut self.waiters {
            if w.wakes_at.is_none() && w.spins_until.saturating_sub(now.max(w.back_at)) < s.pause {
                self.word.unpoll(w.taker.cpu);
                w.wakes_at = Some(w.spins_until.saturating_add(s.sleep));
            }
        }
    }

    /// A write issued at `at` made every polling waiter re-fetch: one
    /// round of each one's read loop lasts until it has the line again.
    fn stall_pollers(&mut self, at: Nanos) {
        let Some(s) = self.sleeper else { return };
        for w in &mut self.waiters {
            if w.wakes_at.is_none() {
                let back = self.word.seen_at(w.taker.cpu).unwrap_or(at);
                w.missed(at, back, 1, s.pause);
            }
        }
    }

    /// Asks for a timer at the first read of a sleeper (or of a poller
    /// once its budget runs out), unless one at or before it is pending.
    fn arm(&mut self, env: &mut Env) {
        let Some(s) = self.sleeper else { return };
        let next = self
            .waiters
            .iter()
            .map(|w| {
                w.wakes_at
                    .unwrap_or_else(|| w.spins_until.saturating_add(s.sleep))
            })
            .min();
        if let Some(next) = next {
            if self.armed.is_none_or(|a| next < a) {
                self.armed = Some(next);
                env.timer = Some(next);
            }
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
        self.fall_asleep(env.now);
        // `lock; decb`: an atomic whether or not the lock is free.
        let done = self.word.rmw(env.cost, me.cpu, env.now);
        if self.owner.is_none() {
            self.owner = Some(me);
            return Some(done);
        }
        self.stall_pollers(env.now);
        let waiter = match self.sleeper {
            // No pause allowed: the first wait is already a sleep.
            Some(s) if s.max_active_spin == 0 => Waiter {
                taker: me,
                spins_until: done,
                back_at: done,
                wakes_at: Some(done.saturating_add(s.sleep)),
            },
            _ => {
                // Taken: spin reading the byte (our copy is the line itself,
                // held exclusive after the atomic, until the next write).
                // The first round (a pause, this read) is spent.
                let seen = self.word.poll(env.cost, me.cpu, done);
                let budget = self.sleeper.map_or(Nanos::MAX, |s| {
                    Nanos::from(s.max_active_spin - 1).saturating_mul(s.pause)
                });
                Waiter {
                    taker: me,
                    spins_until: seen.saturating_add(budget),
                    back_at: seen,
                    wakes_at: None,
                }
            }
        };
        self.waiters.push(waiter);
        self.arm(env);
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        debug_assert_eq!(self.owner.map(|o| o.task), Some(me.task));
        let cost = env.cost;
        self.fall_asleep(env.now);
        self.owner = None;
        // `movb $1, lock`: every poller re-fetches and sees the byte free.
        let released = self.word.store(cost, me.cpu, env.now);
        let mut race = std::mem::take(&mut self.race);
        race.clear();
        for (i, w) in self.waiters.iter().enumerate() {
            if w.wakes_at.is_none() {
                let seen = self.word.seen_at(w.taker.cpu).unwrap_or(released);
                race.push((seen, i as u32));
            }
        }
        if race.is_empty() {
            // Nobody polls: free until a sleeper reads it or someone arrives.
            self.race = race;
            self.arm(env);
            return released;
        }
        // Ties by arrival: the order the waiters' requests reached the line.
        race.sort_unstable();
        // Every poller that saw it free issues its atomic; the line serves
        // them in the order they were issued. While they are in flight the
        // pollers are not reading (each one's read is its atomic), so the
        // atomics do not make them re-fetch one by one.
        for &(_, i) in &race {
            self.word.unpoll(self.waiters[i as usize].taker.cpu);
        }
        let mut winner = None;
        let mut last = released;
        for &(seen, i) in &race {
            let w = self.waiters[i as usize];
            last = self.word.rmw(cost, w.taker.cpu, seen);
            winner.get_or_insert((i, last));
        }
        let (won, got) = winner.expect("a waiter raced");
        let next = self.waiters.swap_remove(won as usize).taker;
        // The losers read the byte again once the last atomic is done: it
        // is held, so they spin on their copies until the next release.
        // Two rounds each: the read that saw it free, and after the failed
        // atomic a pause and this read.
        for w in &mut self.waiters {
            if w.wakes_at.is_none() {
                let back = self.word.poll(cost, w.taker.cpu, last);
                if let Some(s) = self.sleeper {
                    w.missed(env.now, back, 2, s.pause);
                }
            }
        }
        self.owner = Some(next);
        env.grants.push((next.task, next.mode, got));
        self.race = race;
        self.arm(env);
        released
    }

    /// A sleeper's read is due (or a poller's budget ran out): each due
    /// sleeper, earliest first, reads the byte; the first to find it free
    /// takes it with its atomic, the others sleep again.
    fn timer(&mut self, env: &mut Env) {
        let Some(s) = self.sleeper else { return };
        if self.armed.is_some_and(|a| a <= env.now) {
            self.armed = None;
        }
        self.fall_asleep(env.now);
        loop {
            let due = self
                .waiters
                .iter()
                .enumerate()
                .filter_map(|(i, w)| w.wakes_at.filter(|&t| t <= env.now).map(|t| (t, i)))
                .min();
            let Some((_, i)) = due else { break };
            let cpu = self.waiters[i].taker.cpu;
            let seen = self.word.read(env.cost, cpu, env.now);
            if self.owner.is_none() {
                let w = self.waiters.remove(i).taker;
                let got = self.word.rmw(env.cost, cpu, seen);
                self.owner = Some(w);
                env.grants.push((w.task, w.mode, got));
            } else {
                self.waiters[i].wakes_at = Some(seen.saturating_add(s.sleep));
            }
        }
        self.arm(env);
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
        let mut l = Ttas::new(None, LineHome::cpu0(8));
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
            let mut l = Ttas::new(None, LineHome::cpu0(16));
            assert!(rig.lock(&mut l, 0, 0).is_some());
            for w in 1..=waiters {
                assert!(rig.lock(&mut l, 100, w).is_none());
            }
            rig.unlock(&mut l, 100_000, 0);
            l.word.free_at() - 100_000
        };
        assert!(busy(8) > busy(2), "{} vs {}", busy(8), busy(2));
    }

    /// folly's Sleeper at 4000 pauses of 4 ns and 550 us sleeps.
    const FOLLY: Sleeper = Sleeper {
        max_active_spin: 4000,
        pause: 4,
        sleep: 550_000,
    };

    fn timer(rig: &mut Rig, l: &mut Ttas, now: Nanos) -> Option<Nanos> {
        rig.grants.clear();
        let mut env = rig.env(now);
        l.timer(&mut env);
        env.timer
    }

    /// MicroSpinLock::lock(): a waiter polls for its 4000 pauses, then
    /// stops reading the line; a release with nobody polling leaves the
    /// lock free, and the sleeper's read after its sleep takes it.
    #[test]
    fn a_waiter_past_its_pauses_sleeps_and_takes_a_free_lock_at_its_next_read() {
        let mut rig = Rig::new(8);
        let mut l = Ttas::new(Some(FOLLY), LineHome::cpu0(8));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        assert!(rig.lock(&mut l, 100, 3).is_none());
        assert_eq!(l.word.nr_pollers(), 1);
        let w = l.waiters[0];
        assert!(w.wakes_at.is_none());
        // Its budget: 3999 more rounds of 4 ns after its first read.
        let first_read = l.word.seen_at(3).unwrap();
        assert_eq!(w.spins_until, first_read + 15_996);
        // Released after the budget: the waiter is asleep, off the line.
        rig.unlock(&mut l, 50_000, 0);
        assert!(rig.grants.is_empty(), "a sleeper does not see the release");
        assert!(l.owner.is_none());
        assert_eq!(l.word.nr_pollers(), 0);
        let wakes = l.waiters[0].wakes_at.expect("asleep");
        assert_eq!(wakes, first_read + 15_996 + 550_000);
        // The release asked for a timer at its read; nothing happens
        // before it (a stale timer asks for none), at it the lock is taken.
        assert_eq!(l.armed, Some(wakes));
        assert_eq!(timer(&mut rig, &mut l, wakes - 1), None);
        assert!(rig.grants.is_empty());
        assert_eq!(timer(&mut rig, &mut l, wakes), None);
        assert_eq!(rig.grants.len(), 1);
        assert_eq!(rig.grants[0].0, 3);
        assert!(rig.grants[0].2 > wakes);
        assert!(l.waiters.is_empty());
    }

    /// A sleeper that reads the byte while the lock is held sleeps again,
    /// and a newcomer takes a free lock before any sleeper reads it.
    #[test]
    fn a_sleeper_finding_the_lock_held_sleeps_again_and_a_newcomer_barges() {
        let mut rig = Rig::new(8);
        let mut l = Ttas::new(Some(FOLLY), LineHome::cpu0(8));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        assert!(rig.lock(&mut l, 100, 3).is_none());
        let wakes = l.waiters[0].spins_until + FOLLY.sleep;
        // Still held at its read: another sleep.
        let next = timer(&mut rig, &mut l, wakes).expect("its next read");
        assert!(rig.grants.is_empty());
        assert!(next >= wakes + FOLLY.sleep);
        assert_eq!(l.waiters[0].wakes_at, Some(next));
        // Released while it sleeps; a newcomer takes the free lock.
        rig.unlock(&mut l, wakes + 1_000, 0);
        assert!(l.owner.is_none());
        assert!(rig.lock(&mut l, wakes + 2_000, 5).is_some());
        // The sleeper's read finds it held again.
        assert!(timer(&mut rig, &mut l, next).is_some());
        assert!(rig.grants.is_empty());
        assert!(l.holds(5, LockMode::Exclusive));
    }

    /// The budget is counted in rounds of the read loop: a round whose
    /// read misses (another CPU's atomic wrote the line) lasts until the
    /// line is back, so the waiter's active spinning ends later by the
    /// miss, less the one pause that round would have taken anyway.
    #[test]
    fn a_miss_makes_one_round_of_the_read_loop_last_until_the_line_is_back() {
        let mut rig = Rig::new(8);
        let mut l = Ttas::new(Some(FOLLY), LineHome::cpu0(8));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        assert!(rig.lock(&mut l, 100, 3).is_none());
        let before = l.waiters[0].spins_until;
        // A newcomer's failed atomic makes the poller re-fetch.
        assert!(rig.lock(&mut l, 5_000, 6).is_none());
        let back = l.word.seen_at(3).unwrap();
        assert!(back > 5_000);
        assert_eq!(l.waiters[0].spins_until, before + (back - 5_000) - 4);
        // A second write while the first miss is outstanding costs one
        // more round, counted from when the first miss was served: the
        // stall is not counted twice.
        let mut w = l.waiters[0];
        let (until, first_back) = (w.spins_until, w.back_at);
        w.missed(first_back - 1, first_back + 500, 1, 4);
        assert_eq!(w.spins_until, until + 500 - 4);
    }

    /// `max_active_spin = 0`: the first wait is a sleep; the waiter never
    /// polls the line.
    #[test]
    fn no_active_spin_means_the_first_wait_is_a_sleep() {
        let mut rig = Rig::new(8);
        let s = Sleeper {
            max_active_spin: 0,
            ..FOLLY
        };
        let mut l = Ttas::new(Some(s), LineHome::cpu0(8));
        assert!(rig.lock(&mut l, 0, 0).is_some());
        assert!(rig.lock(&mut l, 100, 3).is_none());
        assert_eq!(l.word.nr_pollers(), 0);
        assert!(l.waiters[0].wakes_at.is_some());
        rig.unlock(&mut l, 1_000, 0);
        assert!(rig.grants.is_empty());
    }
}
