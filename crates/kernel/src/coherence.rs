//! Cache-line coherence: every shared word the model touches (lock words,
//! refcounts, counters, queue nodes, `task_struct::on_cpu`) lives on a
//! [`Line`].
//!
//! # The model
//!
//! A line has one *owner* (the CPU that last wrote it, holding it Modified
//! or Owned) and a set of *sharers* holding read-only copies. Every miss on
//! the line is a request to the line's *home* (its directory, home agent
//! or probe filter), which takes the requests to one line in arrival
//! order. Two numbers per request:
//!
//! - its **latency**: an idle request pays one whole transfer from the
//!   owner (`line_transfer` by distance: a measured one-way, request and
//!   data). A request that waited at the home behind others pays only the
//!   *data leg* (`coherence.forward_fraction` of the transfer) from when
//!   the home took it and from when the owner had the line: a chain of
//!   RMWs passes the line owner to owner one data leg apart;
//! - the home's **occupancy**: a `blocking` home takes the next request
//!   only once the previous requester has its data (requests to one line
//!   are served one at a time); a `pipelined` home takes one per
//!   `coherence.occupancy` and the transfers overlap.
//!
//! Kinds of request:
//!
//! - a **read miss** gets the data from the owner; the reader joins the
//!   sharers;
//! - a **read-for-ownership** (an atomic RMW, or a plain store to a line it
//!   does not own alone) gets the data from the owner and invalidates every
//!   sharer in parallel (the farthest bounds the wait), plus, for an
//!   atomic, the machine's `atomic` execution cost. The writer is then the
//!   only holder;
//! - a CPU that **polls** the line (spins reading it: a ticket-lock waiter,
//!   the qspinlock queue head, a `mutex_spin_on_owner()` spinner,
//!   `csd_lock_wait()`) is registered with [`Line::poll`]. It costs nothing
//!   while the line does not change: its copy hits in its cache. After every
//!   write each poller misses once and **re-fetches**: its request is
//!   already at the home when the write is done, so each pays the data leg,
//!   nearest poller first, one home occupancy apart (pipelined) or one
//!   after another (blocking), and a later request queues behind them.
//!
//! Polling is an interval: a write to a line with K pollers queues K
//! re-fetches at once, it does not generate an event per loop iteration.
//! [`Line::seen_at`] tells when the write reached a given poller.
//!
//! # Worked example: a ticket lock with N waiters
//!
//! N CPUs wait for a ticket lock, all polling its word `L`; one transfer
//! between any two CPUs costs `x`, its data leg `h` (x/2 by default), the
//! home occupancy `o`. The holder releases (`head++`, a store): its
//! read-for-ownership pays `h` or `x` plus invalidating N sharers in
//! parallel. Then N re-fetches queue at `L`:
//!
//! - at a **blocking** home (the Opteron's HyperTransport) the k-th poller
//!   sees the new `head` at `k*h` after the store, and the next release
//!   queues behind all of them: the time per handoff grows linearly with
//!   the waiters, and throughput falls as 1/N past the knee (the collapse
//!   Boyd-Wickizer et al. describe);
//! - at a **pipelined** home the k-th poller sees it at `h + k*o`, and the
//!   home is free again `N*o` after the store: with `o` a few ns the
//!   handoff grows by a few ns per waiter.
//!
//! A qspinlock waiter instead polls its own MCS node; only the queue head
//! (and one pending waiter) poll `L`, so a release queues at most two
//! re-fetches whatever N is. docs/contention.md has the figures.
//!
//! # Cost per call
//!
//! Every lock operation goes through here, so the bookkeeping stays short:
//! a CPU pair's transfer (whole and data leg) is one table lookup
//! ([`CostNs::transfer`]); a write's invalidations need only the farthest
//! sharer (the largest whole transfer and the largest data leg, taken
//! separately: `max(now + x, start + h)` over sharers is `now + max x` or
//! `start + max h`); after a write the sharers are the writer alone, so
//! re-fetching pollers join without a look-up; one or two re-fetches are
//! ordered by a comparison, more by a sort. A test in
//! crates/kernel/tests/coherence.rs runs random operations against the
//! model computed the plain way and requires the same times and counters.

use smpsim_engine::Nanos;

use crate::costs::{CostNs, Transfer};

pub type LineId = u32;

/// Up to this many sharers a line keeps only the list of them.
const SHARERS_AS_LIST: usize = 16;

/// Where a new line lives: the machine's size (for its sharer set) and
/// the CPU standing for the memory it is in until it is first written: a
/// CPU of the node of that memory.
#[derive(Clone, Copy, Debug)]
pub struct LineHome {
    pub nr_cpus: usize,
    pub home: u32,
}

impl LineHome {
    /// A line of a machine of `nr_cpus` CPUs homed at CPU 0.
    pub fn cpu0(nr_cpus: usize) -> Self {
        LineHome { nr_cpus, home: 0 }
    }
}

#[derive(Clone, Debug)]
pub struct Line {
    /// CPU holding the line Modified/Owned: the last writer (or, before
    /// any write, the CPU standing for the line's home node).
    owner: u32,
    /// CPUs holding a copy (bitset), the owner included; allocated only
    /// once the line has more than a few sharers (there may be a line per
    /// CPU, and a bitset per line would be CPUs^2 of memory).
    sharers: Vec<u64>,
    /// Words the bitset has when allocated.
    words: u32,
    /// The same CPUs as a list, so a write touches only them (the list's
    /// capacity is kept: no allocation once warm). The owner is always
    /// first: a write leaves it alone in the list, readers join after it.
    sharer_list: Vec<u32>,
    /// When the line's home can accept the next request (it is busy
    /// `occupancy` per request, not a whole transfer).
    free_at: Nanos,
    /// When the owner has the line's latest value: the last write's end.
    /// A request queued behind that write gets its data from then on.
    data_at: Nanos,
    /// CPUs polling the line, in the order they started.
    pollers: Vec<Poller>,
    /// The CPU standing for the line's home (its memory's node).
    home: u32,
    /// Far atomics: the last RMW was done at the home, which holds the
    /// line's value; no CPU holds it unique (`owner` is `home`).
    at_home: bool,
    /// Scratch for ordering re-fetches, as (whole transfer from the
    /// writer, index in `pollers`, the transfer); kept: no allocation once warm.
    order: Vec<(u64, u32, Transfer)>,
    /// LL/SC machines: RMWs queued on the line and not yet done, as
    /// (cpu, when its store-conditional was issued, when it is done).
    reservations: Vec<(u32, Nanos, Nanos)>,
    /// The owners write requests took the line from, while each request's
    /// snoop is on its way to it (`coherence.snoop_fraction`): their own
    /// writes done before the snoop arrives hit. One entry a CPU; at most
    /// one unless [`WINDOW_PER_LENDER`] (kept: no allocation once warm).
    lent: Vec<Lent>,
    pub rmws: u64,
    /// Writes that changed the value (RMWs, stores, a cmpxchg that
    /// succeeded): what a cmpxchg compares against.
    writes: u64,
    /// Compare-and-exchanges that failed: another CPU wrote the line
    /// after this one read it.
    pub cmpxchg_fails: u64,
    /// LL/SC machines: store-conditionals that failed because another
    /// CPU's store reached the line after the load-reserve.
    pub sc_fails: u64,
    /// Misses that moved the line (reads, RFOs, re-fetches).
    pub transfers: u64,
    /// Of those, re-fetches by polling CPUs.
    pub refetches: u64,
}

/// The CPU that still holds a line another CPU's request was taken for,
/// until that request's snoop reaches it.
#[derive(Clone, Copy, Debug)]
struct Lent {
    cpu: u32,
    /// When the snoop arrives: the line leaves then.
    until: Nanos,
    /// When its latest write there is done.
    data_at: Nanos,
}

/// Issue 38, candidate (b), tried and off (docs/contention.md, "tried"):
/// every owner a write request took the line from keeps its snoop window
/// until that request's snoop arrives, also once later requests have
/// taken the line on (a chain of queued RMWs). Off, only the last lender
/// has one: from 3 threads on a tight loop, the next request replaces it
/// before the lender's next write is issued.
const WINDOW_PER_LENDER: bool = true;

/// A CPU polling a line and when the last write reached it.
#[derive(Clone, Copy, Debug)]
struct Poller {
    cpu: u32,
    seen: Nanos,
}

impl Line {
    /// A line homed as `at` says.
    pub fn at(at: LineHome) -> Self {
        Line::new(at.nr_cpus, at.home)
    }

    pub fn new(nr_cpus: usize, home: u32) -> Self {
        Line {
            owner: home,
            sharers: Vec::new(),
            words: nr_cpus.div_ceil(64).max(1) as u32,
            sharer_list: vec![home],
            free_at: 0,
            data_at: 0,
            pollers: Vec::new(),
            home,
            at_home: false,
            order: Vec::new(),
            reservations: Vec::new(),
            lent: Vec::new(),
            rmws: 0,
            writes: 0,
            cmpxchg_fails: 0,
            sc_fails: 0,
            transfers: 0,
            refetches: 0,
        }
    }

    #[inline(always)]
    fn has(&self, cpu: u32) -> bool {
        if self.sharers.is_empty() {
            return self.sharer_list.contains(&cpu);
        }
        self.sharers[cpu as usize / 64] & (1 << (cpu % 64)) != 0
    }

    fn add_sharer(&mut self, cpu: u32) {
        if !self.has(cpu) {
            self.push_sharer(cpu);
        }
    }

    /// `cpu`, which holds no copy, joins the sharers.
    #[inline]
    fn push_sharer(&mut self, cpu: u32) {
        debug_assert!(!self.has(cpu), "cpu {cpu} already shares the line");
        self.sharer_list.push(cpu);
        if !self.sharers.is_empty() {
            self.sharers[cpu as usize / 64] |= 1 << (cpu % 64);
        } else if self.sharer_list.len() > SHARERS_AS_LIST {
            self.start_bitset();
        }
    }

    /// Many sharers: a bitset answers `has` in one step from now on.
    #[cold]
    fn start_bitset(&mut self) {
        self.sharers = vec![0; self.words as usize];
        for &s in &self.sharer_list {
            self.sharers[s as usize / 64] |= 1 << (s % 64);
        }
    }

    /// `cpu`, the writer, becomes the only holder: every other copy is
    /// invalidated.
    #[inline(always)]
    fn keep_only(&mut self, cpu: u32) {
        if !self.sharers.is_empty() {
            for &s in &self.sharer_list {
                self.sharers[s as usize / 64] &= !(1 << (s % 64));
            }
            self.sharers[cpu as usize / 64] |= 1 << (cpu % 64);
        }
        // The list always holds the owner: one entry is left to overwrite.
        self.sharer_list.truncate(1);
        self.sharer_list[0] = cpu;
    }

    /// An atomic read-modify-write by `cpu` issued at `now`; returns when
    /// it completes.
    pub fn rmw(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        self.rmws += 1;
        if cost.ll_sc {
            return self.ll_sc(cost, cpu, now);
        }
        if cost.far_atomics && !self.held_unique_by(cpu) {
            return self.far(cost, cpu, now, false);
        }
        self.write(cost, cpu, now, cost.atomic)
    }

    /// An atomic RMW whose result is not used (`atomic_inc()`,
    /// `atomic_add()`): as [`Line::rmw`], except that a far atomic is
    /// posted (`STADD`): the CPU goes on once the home has taken it.
    pub fn rmw_void(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if cost.far_atomics && !self.held_unique_by(cpu) {
            self.rmws += 1;
            return self.far(cost, cpu, now, true);
        }
        self.rmw(cost, cpu, now)
    }

    /// A compare-and-exchange by `cpu` at `now` that expects the line to
    /// have seen `expected` writes (what the read it follows found,
    /// [`Line::writes`]): it succeeds only if no other CPU's write was
    /// ordered at the line in between. Returns when it is done and whether
    /// it succeeded.
    ///
    /// How a failure goes depends on the atomics:
    /// - locked (`lock cmpxchg`): the failed attempt is a read-for-ownership
    ///   that leaves the line Modified in this CPU's cache, with the value
    ///   it found; the loop's next attempt follows within a few cycles and
    ///   hits there before the next request's snoop can arrive (that needs
    ///   a hop from the home after the data did), so it succeeds. A loop
    ///   costs its read and at most two attempts.
    /// - LL/SC: a load-reserve that finds another value leaves the loop
    ///   without its store-conditional (a read); the next attempt is
    ///   another fetch.
    /// - far atomics: the failed `CAS` was done at the home; the next one
    ///   goes there again.
    pub fn cmpxchg(&mut self, cost: &CostNs, cpu: u32, now: Nanos, expected: u64) -> (Nanos, bool) {
        if self.writes == expected {
            return (self.rmw(cost, cpu, now), true);
        }
        self.cmpxchg_fails += 1;
        if cost.ll_sc {
            return (self.read(cost, cpu, now), false);
        }
        if cost.far_atomics && !self.held_unique_by(cpu) {
            let done = self.rmw(cost, cpu, now);
            // Nothing was written.
            self.writes -= 1;
            return (done, false);
        }
        // The failed attempt is still a locked write: the destination is
        // written back with the value it had (Intel SDM vol. 2A, CMPXCHG:
        // "the destination operand is written back if the comparison
        // fails"; "the processor never produces a locked read without also
        // producing a locked write"), so on the line it is an RFO like any
        // RMW. But the value is unchanged: it is not counted as a write
        // that a later compare would miss, as in `try_cmpxchg`.
        let before = self.writes;
        let failed = self.rmw(cost, cpu, now);
        self.writes = before;
        // The retry, on the line it now holds alone.
        (self.rmw(cost, cpu, failed), true)
    }

    /// One `atomic_try_cmpxchg()` by `cpu` at `now` that expects the line
    /// to have seen `expected` writes (what the read that set `old` found):
    /// unlike [`Line::cmpxchg`], a failure is not retried here; the caller's
    /// loop retries, after whatever it runs in between (`cpu_relax()`).
    /// Returns when it is done and whether it succeeded.
    ///
    /// A failure writes nothing (the value is unchanged), but costs what
    /// the atomics make it cost:
    /// - locked (`lock cmpxchg`): a read-for-ownership that leaves the line
    ///   Modified in this CPU's cache with the value it found (Intel SDM
    ///   vol. 2, CMPXCHG: the destination gets a write cycle either way), so
    ///   an immediate retry hits unless another CPU's request took it;
    /// - LL/SC: the load-reserve found another value and the loop leaves
    ///   without its store-conditional: a read;
    /// - far atomics: a `CAS` done at the home.
    pub fn try_cmpxchg(
        &mut self,
        cost: &CostNs,
        cpu: u32,
        now: Nanos,
        expected: u64,
    ) -> (Nanos, bool) {
        if self.writes == expected {
            return (self.rmw(cost, cpu, now), true);
        }
        self.cmpxchg_fails += 1;
        if cost.ll_sc {
            return (self.read(cost, cpu, now), false);
        }
        let before = self.writes;
        let done = self.rmw(cost, cpu, now);
        debug_assert_eq!(self.writes, before + 1, "an RMW is one write");
        // Nothing changed: a read that follows still matches.
        self.writes = before;
        (done, false)
    }

    /// Writes that changed the line's value so far.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// `cpu` holds the line's only copy in its cache.
    #[inline(always)]
    fn held_unique_by(&self, cpu: u32) -> bool {
        self.owner == cpu && self.sharer_list.len() == 1 && !self.at_home
    }

    /// A far atomic by `cpu` issued at `now`: the home takes it when free,
    /// first invalidating every copy (the farthest bounds it), executes it
    /// in `far_busy` and keeps the line; the requester has the result a
    /// data leg later, or, `posted`, goes on as soon as the home took it.
    #[cold]
    fn far(&mut self, cost: &CostNs, cpu: u32, now: Nanos, posted: bool) -> Nanos {
        self.lent.clear();
        let home = self.home;
        let x = cost.transfer(home, cpu);
        let mut start = now.max(self.free_at);
        for &s in &self.sharer_list {
            if s != home {
                start = start.max(now + cost.transfer(s, home).whole);
            }
        }
        let executed = start + cost.far_busy;
        self.transfers += 1;
        self.writes += 1;
        self.keep_only(home);
        self.owner = home;
        self.at_home = true;
        self.free_at = executed;
        self.data_at = executed;
        self.refetch(cost, home, executed);
        if posted {
            // Issued like a store: at least an L1 access.
            start.max(now + cost.line_transfer(cpu, cpu))
        } else {
            (now + x.whole).max(executed + x.data_leg)
        }
    }

    /// A plain store (`smp_store_release()`, a non-atomic `head++`) by
    /// `cpu` at `now`: a read-for-ownership without the atomic's cost.
    pub fn store(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if cost.ll_sc {
            // A store that reaches the line before a queued RMW's
            // store-conditional breaks that reservation: the RMW fetches
            // the line once more, after the store.
            let broken = self.broken_reservations(cost, cpu, now);
            let done = self.write(cost, cpu, now, 0);
            if broken > 0 {
                for &(victim, sc_issued, _) in &self.reservations {
                    if victim != cpu && sc_issued > now {
                        // The victim's fetch again, after the store.
                        let x = cost.transfer(cpu, victim);
                        self.free_at += if cost.blocking_home {
                            x.data_leg
                        } else {
                            x.busy
                        };
                        self.data_at += cost.forwarded(cpu, victim);
                    }
                }
                self.sc_fails += broken;
                self.transfers += broken;
            }
            return done;
        }
        self.write(cost, cpu, now, 0)
    }

    /// RMWs of other CPUs queued on the line whose store-conditional
    /// issues after `now`: a request made at `now` reaches the line before
    /// their upgrade does (the line serves requests in arrival order).
    fn broken_reservations(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> u64 {
        if cost.ll_sc_held {
            return 0;
        }
        self.reservations.retain(|&(_, _, done)| done > now);
        self.reservations
            .iter()
            .filter(|&&(c, sc_issued, _)| c != cpu && sc_issued > now)
            .count() as u64
    }

    /// A load-linked / store-conditional RMW (`lwarx`..`stwcx.`, `ldxr`..
    /// `stxr`): the load-reserve fetches the line shared (a hit if this
    /// CPU has a copy), the store-conditional upgrades it, invalidating
    /// the other copies.
    ///
    /// With `load_reserve = "shared"`, every RMW of another CPU queued
    /// ahead whose store-conditional comes after this CPU's request
    /// breaks the reservation (`stwcx.` fails) and the loop fetches
    /// again: with K CPUs arriving together the k-th fetches k times, so a
    /// contended line serves O(K^2) fetches where locked atomics take K
    /// RFOs. The line is serial in the order requests are made, so a
    /// victim pays its retries after the RMWs it lost to: the line's busy
    /// time is the same, only who waits for the wasted fetches differs.
    /// With `"held"` the reserving CPU keeps the line until its upgrade:
    /// no reservation is lost.
    fn ll_sc(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        self.lent.clear();
        self.writes += 1;
        if self.owner == cpu && self.sharer_list.len() == 1 {
            // Held exclusive: the reservation holds, nothing to wait for.
            let done = now.max(self.data_at) + cost.line_transfer(cpu, cpu) + cost.atomic;
            self.data_at = done;
            self.refetch(cost, cpu, done);
            return done;
        }
        let broken = self.broken_reservations(cost, cpu, now);
        let fetches = broken + u64::from(!self.has(cpu));
        let x = cost.transfer(self.owner, cpu);
        let busy = x.busy;
        let start = now.max(self.free_at);
        // Each fetch (the first, then one per reservation lost to an RMW
        // queued ahead) is a leg from the owner; the retries queue behind
        // the RMWs that broke them.
        let mut t = now;
        if fetches > 0 {
            t = self.leg(x, now, start);
            t += (fetches - 1) * x.data_leg;
        }
        let sc_issued = if fetches == 0 { now } else { t };
        let queued = start > now || self.data_at > now;
        self.add_sharer(cpu);
        // The upgrade invalidates every other copy in parallel (behind
        // other requests, only the acknowledgement leg is left).
        let mut worst = 0;
        for &s in &self.sharer_list {
            if s != cpu {
                let leg = if queued {
                    cost.forwarded(s, cpu)
                } else {
                    cost.line_transfer(s, cpu)
                };
                worst = worst.max(leg);
            }
        }
        self.keep_only(cpu);
        let done = t + worst + cost.atomic;
        self.transfers += fetches + 1;
        self.sc_fails += broken;
        self.free_at = if cost.blocking_home {
            done
        } else {
            start + (fetches + 1) * busy
        };
        self.data_at = done;
        self.owner = cpu;
        if !cost.ll_sc_held {
            self.reservations.push((cpu, sc_issued, done));
        }
        self.refetch(cost, cpu, done);
        done
    }

    /// When a request issued at `now` and accepted by the home at `start`
    /// has its data over transfer `x` from the owner: one whole transfer
    /// after it was issued if nothing was ahead of it, else the data leg
    /// after the home took it and after the owner had the line.
    #[inline(always)]
    fn leg(&self, x: Transfer, now: Nanos, start: Nanos) -> Nanos {
        (now + x.whole)
            .max(start + x.data_leg)
            .max(self.data_at + x.data_leg)
    }

    /// When the home takes its next request after taking one at `start`
    /// whose requester has its data at `served`; `busy` is how long a
    /// pipelined home is busy with it ([`Transfer::busy`]).
    #[inline(always)]
    fn busy_until(&self, cost: &CostNs, start: Nanos, served: Nanos, busy: u64) -> Nanos {
        if cost.blocking_home {
            served
        } else {
            start + busy
        }
    }

    #[inline(always)]
    fn write(&mut self, cost: &CostNs, cpu: u32, now: Nanos, extra: u64) -> Nanos {
        if !self.lent.is_empty() {
            if let Some(i) = self.lent.iter().position(|l| l.cpu == cpu) {
                if let Some(done) = self.write_before_snoop(cost, i, now, extra) {
                    return done;
                }
            }
        }
        let alone = self.held_unique_by(cpu);
        let lender = self.owner;
        let lent = !alone && self.pollers.is_empty() && self.held_unique_by(lender);
        self.at_home = false;
        self.writes += 1;
        let done = if alone {
            // A hit on a line held exclusively: nothing to wait for at the line.
            now.max(self.data_at) + cost.line_transfer(cpu, cpu) + extra
        } else {
            let start = now.max(self.free_at);
            // Fetch from the owner; invalidations go to every sharer in
            // parallel, so the farthest one bounds the wait: each would
            // take `now + whole` or, queued, `start + data leg`.
            let x = cost.transfer(self.owner, cpu);
            let fetched = self.leg(x, now, start);
            // The owner heads the sharer list and was counted by `leg`.
            debug_assert_eq!(self.sharer_list[0], self.owner);
            let (mut whole, mut data_leg) = (0, 0);
            for &s in self.sharer_list.iter().skip(1) {
                if s != cpu {
                    let x = cost.transfer(s, cpu);
                    whole = whole.max(x.whole);
                    data_leg = data_leg.max(x.data_leg);
                }
            }
            // `fetched` is at least `now` and `start`: no other sharer
            // (both 0) leaves it as it is.
            let arrive = fetched.max(now + whole).max(start + data_leg);
            self.transfers += 1;
            self.keep_only(cpu);
            self.free_at = self.busy_until(cost, start, arrive, x.busy);
            self.lend(cost, lent, lender, x.whole, now, start);
            arrive + extra
        };
        self.data_at = done;
        self.owner = cpu;
        self.refetch(cost, cpu, done);
        done
    }

    /// A write request took the line from `lender`, which held it alone,
    /// at `start`: its snoop reaches the lender `snoop_fraction` of the
    /// transfer later, and the lender's writes until then hit.
    #[inline(always)]
    fn lend(
        &mut self,
        cost: &CostNs,
        lent: bool,
        lender: u32,
        whole: u64,
        now: Nanos,
        start: Nanos,
    ) {
        let data_at = self.lent_data_at(lender);
        if WINDOW_PER_LENDER {
            // A window whose snoop has arrived is over; the lender's own
            // is replaced by the new one.
            self.lent.retain(|l| l.until > now && l.cpu != lender);
        } else {
            self.lent.clear();
        }
        if lent && cost.snoop_1024 > 0 {
            self.lent.push(Lent {
                cpu: lender,
                until: start + (whole * cost.snoop_1024) / 1024,
                data_at,
            });
        }
    }

    /// When `lender`'s last write is done: the line's until another's.
    fn lent_data_at(&self, lender: u32) -> Nanos {
        match self.lent.iter().find(|l| l.cpu == lender) {
            Some(l) => l.data_at.max(self.data_at),
            None => self.data_at,
        }
    }

    /// A write by the CPU the line was taken from, before the request's
    /// snoop reached it: a hit if it is done by then (the request that
    /// took the line is served after it, its time unchanged).
    #[cold]
    fn write_before_snoop(
        &mut self,
        cost: &CostNs,
        i: usize,
        now: Nanos,
        extra: u64,
    ) -> Option<Nanos> {
        let l = self.lent[i];
        let done = now.max(l.data_at) + cost.line_transfer(l.cpu, l.cpu) + extra;
        if done > l.until || !self.pollers.is_empty() {
            self.lent.swap_remove(i);
            return None;
        }
        self.lent[i].data_at = done;
        self.writes += 1;
        Some(done)
    }

    /// Every poller but the writer misses and re-fetches the line written
    /// by `writer` at `at`. Their requests are already waiting at the home
    /// when the write is done: it accepts one per `occupancy`, nearest
    /// first (the earlier poller first between equals), and each gets the
    /// data leg from the writer.
    ///
    /// The write left the writer the only sharer, so every re-fetching
    /// poller joins the sharers without a look-up.
    #[inline(always)]
    fn refetch(&mut self, cost: &CostNs, writer: u32, at: Nanos) {
        match self.pollers.len() {
            0 => {}
            1 => {
                if self.pollers[0].cpu == writer {
                    // Nothing to re-fetch; the home still takes its next
                    // request only once the write is done, as after any
                    // write to a polled line (`refetch_in_order`).
                    self.pollers[0].seen = at;
                    self.free_at = self.free_at.max(at);
                } else {
                    let x = cost.transfer(writer, self.pollers[0].cpu);
                    let start = self.free_at.max(at);
                    self.free_at = self.serve_refetch(cost, 0, x, start);
                    self.transfers += 1;
                    self.refetches += 1;
                }
            }
            _ => self.refetch_in_order(cost, writer, at),
        }
    }

    /// [`Line::refetch`] for two pollers or more: in order of their
    /// distance from the writer.
    fn refetch_in_order(&mut self, cost: &CostNs, writer: u32, at: Nanos) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for (i, p) in self.pollers.iter_mut().enumerate() {
            if p.cpu == writer {
                p.seen = at;
            } else {
                let x = cost.transfer(writer, p.cpu);
                order.push((x.whole, i as u32, x));
            }
        }
        // Indices are distinct: the data leg never decides the order.
        match order.as_mut_slice() {
            [a, b] if *b < *a => std::mem::swap(a, b),
            [_, _] => {}
            more => more.sort_unstable(),
        }
        let mut start = self.free_at.max(at);
        for &(_, i, x) in &order {
            start = self.serve_refetch(cost, i as usize, x, start);
        }
        self.transfers += order.len() as u64;
        self.refetches += order.len() as u64;
        self.free_at = start;
        self.order = order;
    }

    /// Poller `i`'s re-fetch, taken by the home at `start`, its data leg
    /// `data_leg` from the writer; returns when the home takes the next.
    #[inline]
    fn serve_refetch(&mut self, cost: &CostNs, i: usize, x: Transfer, start: Nanos) -> Nanos {
        let seen = start + x.data_leg;
        self.pollers[i].seen = seen;
        let cpu = self.pollers[i].cpu;
        self.push_sharer(cpu);
        self.busy_until(cost, start, seen, x.busy)
    }

    /// A read by `cpu` at `now`; returns when the value is there.
    pub fn read(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if self.has(cpu) {
            return now + cost.line_transfer(cpu, cpu);
        }
        if let Some(l) = self.lent.iter().find(|l| l.cpu == cpu) {
            // Its copy is still there until the snoop arrives.
            let seen = now.max(l.data_at) + cost.line_transfer(cpu, cpu);
            if seen <= l.until {
                return seen;
            }
        }
        let start = now.max(self.free_at);
        let x = cost.transfer(self.owner, cpu);
        let seen = self.leg(x, now, start);
        // A miss: `cpu` holds no copy, no need to look again.
        self.push_sharer(cpu);
        self.transfers += 1;
        self.free_at = self.busy_until(cost, start, seen, x.busy);
        seen
    }

    /// `cpu` starts spinning on the line at `now` (its first read); returns
    /// when it has the value.
    pub fn poll(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        let seen = self.read(cost, cpu, now);
        match self.pollers.iter_mut().find(|p| p.cpu == cpu) {
            Some(p) => p.seen = seen,
            None => self.pollers.push(Poller { cpu, seen }),
        }
        seen
    }

    /// `cpu` stops spinning on the line.
    pub fn unpoll(&mut self, cpu: u32) {
        self.take_poll(cpu);
    }

    /// `cpu` stops spinning on the line because it saw what it waited
    /// for: when the last write reached it ([`Line::seen_at`]), then
    /// [`Line::unpoll`], in one search of the pollers.
    pub fn take_poll(&mut self, cpu: u32) -> Option<Nanos> {
        let i = self.pollers.iter().position(|p| p.cpu == cpu)?;
        Some(self.pollers.remove(i).seen)
    }

    /// When the last write reached polling CPU `cpu` (its re-fetch done).
    pub fn seen_at(&self, cpu: u32) -> Option<Nanos> {
        self.pollers.iter().find(|p| p.cpu == cpu).map(|p| p.seen)
    }

    pub fn nr_pollers(&self) -> usize {
        self.pollers.len()
    }

    /// The CPU that last wrote the line.
    pub fn owner(&self) -> u32 {
        self.owner
    }

    /// When the line has served everything queued on it so far.
    pub fn free_at(&self) -> Nanos {
        self.free_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smpsim_machine::LoadReserve;

    /// generic-x86 with 8 CPUs on one LLC: a transfer costs `same_llc` ns,
    /// a hit 1 ns, an atomic nothing of its own; `home` at the home; half
    /// of a transfer is its data leg, and no snoop window.
    fn flat_machine(same_llc: f64, home: smpsim_machine::Home) -> smpsim_machine::Machine {
        let mut m = smpsim_machine::preset("generic-x86").unwrap().unwrap();
        m.topology = smpsim_machine::Topology::flat(8);
        m.costs.line_transfer.same_llc.ns = same_llc;
        m.costs.line_transfer.local.ns = 1.0;
        m.costs.atomic = None;
        m.coherence.home = home;
        m.coherence.forward_fraction = 0.5;
        m.coherence.snoop_fraction = 0.0;
        m
    }

    fn costs() -> CostNs {
        // 2 sockets x 4 cores: same socket 100 ns, cross socket 300 ns.
        let mut m = flat_machine(100.0, smpsim_machine::Home::Blocking);
        m.topology = smpsim_machine::Topology {
            sockets: 2,
            numa_nodes_per_socket: 1,
            llcs_per_node: 1,
            cores_per_llc: 4,
            threads_per_core: 1,
            smt_numbering: Default::default(),
            node_distance: None,
            core_types: Vec::new(),
            smt_corun: None,
        };
        m.costs.line_transfer.cross_socket.ns = 300.0;
        CostNs::new(&m)
    }

    /// The same machine with a pipelined home taking a request every `occ` ns.
    fn pipelined_costs(occ: f64) -> CostNs {
        let mut m = flat_machine(100.0, smpsim_machine::Home::Pipelined);
        m.coherence.occupancy.ns = occ;
        m.coherence.occupancy_per_transfer = 0.0;
        CostNs::new(&m)
    }

    /// The same machine with load-linked / store-conditional atomics whose
    /// load-reserve is `held` or `shared`.
    fn ll_sc_costs(load_reserve: smpsim_machine::LoadReserve) -> CostNs {
        let mut m = flat_machine(300.0, smpsim_machine::Home::Blocking);
        m.atomics.kind = smpsim_machine::AtomicKind::LlSc;
        m.atomics.load_reserve = load_reserve;
        CostNs::new(&m)
    }

    fn locked_costs() -> CostNs {
        CostNs::new(&flat_machine(300.0, smpsim_machine::Home::Blocking))
    }

    /// A line CPU 0 has just written at 1 us, holding it alone: the line
    /// and when the write finished.
    fn held_by_cpu0(c: &CostNs) -> (Line, Nanos) {
        let mut line = Line::new(8, 0);
        let t = line.rmw(c, 0, 1_000);
        (line, t)
    }

    /// A write request takes the line from an owner that holds it alone;
    /// until its snoop reaches the owner (`snoop_fraction` of the
    /// transfer after the home took it) the owner's writes and reads hit,
    /// and the request's own time does not move.
    #[test]
    fn the_owner_keeps_writing_until_the_snoop_arrives() {
        let mut m = flat_machine(100.0, smpsim_machine::Home::Pipelined);
        m.coherence.forward_fraction = 1.0;
        m.coherence.snoop_fraction = 0.5;
        let c = CostNs::new(&m);
        let (mut line, t) = held_by_cpu0(&c);
        assert_eq!(t, 1_001, "CPU 0 holds it alone");
        let taken = line.rmw(&c, 1, t);
        assert_eq!(taken, t + 100, "a whole transfer");
        // The snoop reaches CPU 0 at t + 50: its RMWs until then hit.
        assert_eq!(line.rmw(&c, 0, t + 10), t + 11);
        assert_eq!(line.read(&c, 0, t + 20), t + 21);
        assert_eq!(line.rmw(&c, 0, t + 48), t + 49);
        assert_eq!(line.writes(), 4);
        assert_eq!(line.transfers, 1);
        // Past it, CPU 0 asks for the line again, behind CPU 1.
        let back = line.rmw(&c, 0, t + 60);
        assert!(back >= taken + 100, "{back}");
        assert_eq!(line.transfers, 2);
        // With no snoop time the line leaves at once.
        m.coherence.snoop_fraction = 0.0;
        let c = CostNs::new(&m);
        let (mut line, t) = held_by_cpu0(&c);
        line.rmw(&c, 1, t);
        assert!(line.rmw(&c, 0, t + 10) > t + 100);
    }

    /// Ping-pong of one line between two CPUs for 100 RMWs each.
    fn ping_pong(a: u32, b: u32) -> Nanos {
        ping_pong_with(&costs(), a, b)
    }

    fn ping_pong_with(c: &CostNs, a: u32, b: u32) -> Nanos {
        let mut line = Line::new(8, a);
        let mut t = 0;
        for i in 0..200 {
            t = line.rmw(c, if i % 2 == 0 { a } else { b }, t);
        }
        t
    }

    /// The machine's figure is a CAS ping-pong one-way latency; under
    /// LL/SC (powerpc `lwarx`/`stwcx.`) each one-way is the shared fetch
    /// plus the upgrade, half the figure each, so the uncontended
    /// ping-pong reproduces the figure it was calibrated on.
    #[test]
    fn ll_sc_ping_pong_reproduces_the_cas_figure() {
        let locked = locked_costs();
        for mode in [LoadReserve::Held, LoadReserve::Shared] {
            let llsc = ll_sc_costs(mode);
            assert_eq!(llsc.line_transfer(0, 1), 150, "one transaction");
            assert_eq!(ping_pong_with(&llsc, 0, 1), ping_pong_with(&locked, 0, 1));
            assert_eq!(ping_pong_with(&llsc, 0, 1), 199 * 300 + 1);
        }
    }

    /// K CPUs issue an atomic on one line at once. Locked atomics
    /// (x86 `lock xadd`) are K read-for-ownerships: the first pays a whole
    /// transfer, each later one, queued at the owner, the data leg. Under
    /// LL/SC with a shared load-reserve the RMWs queued ahead each break a
    /// later CPU's reservation (its `stwcx.` fails, the `lwarx` loop
    /// fetches again): the k-th CPU fetches k times, K(K-1)/2 failed
    /// store-conditionals in all. With the reserved line held, each RMW is
    /// a fetch and an upgrade, no retry, and the same time as locked.
    #[test]
    fn contended_ll_sc_retries_where_locked_atomics_do_not() {
        let (llsc, locked) = (ll_sc_costs(LoadReserve::Shared), locked_costs());
        let burst = |c: &CostNs| {
            let mut line = Line::new(8, 7);
            let mut done = 0;
            for cpu in 0..4 {
                done = done.max(line.rmw(c, cpu, 0));
            }
            (done, line.sc_fails, line.transfers)
        };
        let (t_locked, fails_locked, x_locked) = burst(&locked);
        let (t_llsc, fails_llsc, x_llsc) = burst(&llsc);
        assert_eq!((fails_locked, x_locked), (0, 4));
        assert_eq!(t_locked, 300 + 3 * 150);
        assert_eq!(fails_llsc, 1 + 2 + 3);
        // 4 upgrades, 4 first fetches and 6 re-fetches.
        assert_eq!(x_llsc, 4 + 4 + 6);
        assert!(t_llsc > t_locked, "{t_llsc} vs {t_locked}");
        let (t_held, fails_held, x_held) = burst(&ll_sc_costs(LoadReserve::Held));
        assert_eq!((fails_held, x_held), (0, 8));
        assert_eq!(t_held, t_locked);
    }

    /// An LL/SC RMW by a CPU that already has a copy (it was polling the
    /// line) hits with its load-reserve and pays only the upgrade; a
    /// locked RMW pays a whole read-for-ownership.
    #[test]
    fn ll_sc_rmw_from_a_sharer_is_only_the_upgrade() {
        for (c, want) in [(ll_sc_costs(LoadReserve::Held), 150), (locked_costs(), 300)] {
            let mut line = Line::new(8, 0);
            let seen = line.read(&c, 1, 0);
            let done = line.rmw(&c, 1, seen);
            assert_eq!(done - seen, want);
        }
    }

    /// A plain store that reaches the line between a queued RMW's
    /// load-reserve and its store-conditional breaks the reservation: the
    /// line serves one more fetch. RMWs already done are not affected.
    #[test]
    fn a_store_before_a_pending_store_conditional_breaks_it() {
        let c = ll_sc_costs(LoadReserve::Shared);
        let mut line = Line::new(8, 0);
        let done = line.rmw(&c, 1, 0);
        assert_eq!(done, 300, "fetch + upgrade");
        let busy = line.free_at();
        line.store(&c, 2, 100);
        assert_eq!(line.sc_fails, 1);
        assert!(line.free_at() > busy, "cpu 1 fetches again");
        line.store(&c, 3, 10_000);
        assert_eq!(line.sc_fails, 1, "no reservation was pending");
    }

    #[test]
    fn same_socket_ping_pong_is_faster_than_cross_socket() {
        let near = ping_pong(0, 1);
        let far = ping_pong(0, 4);
        assert!(near * 2 < far, "{near} vs {far}");
        assert_eq!(far, 199 * 300 + 1);
    }

    /// RMWs queued on one line pass it owner to owner: after the first,
    /// each pays the data leg (half the transfer here), in either kind of
    /// home, so a saturated line serves one RMW per leg.
    #[test]
    fn concurrent_rmws_pass_the_line_one_data_leg_apart() {
        for c in [costs(), pipelined_costs(2.0)] {
            let mut line = Line::new(8, 0);
            // All 4 CPUs of socket 0 issue 50 RMWs each at time 0.
            let mut done = 0;
            for _round in 0..50 {
                for cpu in 0..4u32 {
                    done = line.rmw(&c, cpu, 0);
                }
            }
            // CPU 0 hits (the line is homed there), CPU 1 pays a whole
            // transfer, the other 198 a data leg each.
            assert_eq!(done, 100 + 198 * 50);
            assert_eq!(line.rmws, 200);
        }
    }

    /// Reads of a line after a write: a blocking home serves them one after
    /// another, each a data leg; a pipelined one takes one per occupancy
    /// and they overlap.
    #[test]
    fn reads_after_a_write_queue_at_a_blocking_home_and_overlap_at_a_pipelined_one() {
        let reads = |c: &CostNs| {
            let mut line = Line::new(8, 0);
            let w = line.rmw(c, 0, 0);
            let seen: Vec<Nanos> = (1..4).map(|cpu| line.read(c, cpu, w) - w).collect();
            (seen, line)
        };
        let (blocking, mut line) = reads(&costs());
        assert_eq!(blocking, vec![100, 150, 200]);
        assert_eq!(line.transfers, 3);
        // Reading again is a local hit: no more transfers.
        for cpu in 1..4 {
            line.read(&costs(), cpu, 50_000);
        }
        assert_eq!(line.transfers, 3);
        // The next write invalidates the 3 sharers in parallel.
        let t = line.rmw(&costs(), 0, 60_000);
        assert_eq!(t, 60_000 + 100);
        let (pipelined, _) = reads(&pipelined_costs(2.0));
        assert_eq!(
            pipelined,
            vec![100, 100, 100],
            "one request per 2 ns, all overlapped"
        );
    }

    /// Polling CPUs re-fetch after each write, nearest first; a write
    /// right after queues behind them.
    #[test]
    fn pollers_refetch_after_each_write_nearest_first() {
        let c = costs();
        let mut line = Line::new(8, 0);
        // CPU 5 (far) starts polling before CPUs 1 and 2 (near).
        line.poll(&c, 5, 0);
        line.poll(&c, 1, 0);
        line.poll(&c, 2, 0);
        let settled = 10_000;
        let w = line.store(&c, 0, settled);
        // Near pollers come first, each a data leg after the one before.
        assert_eq!(line.seen_at(1), Some(w + 50));
        assert_eq!(line.seen_at(2), Some(w + 100));
        assert_eq!(line.seen_at(5), Some(w + 100 + 150));
        assert_eq!(line.refetches, 3);
        // A write right after queues behind the three re-fetches.
        let next = line.rmw(&c, 3, w);
        assert_eq!(next, w + 250 + 150);
        line.unpoll(5);
        assert_eq!(line.nr_pollers(), 2);
        assert_eq!(line.seen_at(5), None);
        // Taking the poll tells when the write reached it and stops it.
        let (seen1, seen2) = (line.seen_at(1), line.seen_at(2));
        assert!(seen1.is_some());
        assert_eq!(line.take_poll(1), seen1);
        assert_eq!(line.take_poll(1), None);
        assert_eq!(line.nr_pollers(), 1);
        assert_eq!(line.seen_at(2), seen2);
    }

    #[test]
    fn a_release_with_more_pollers_frees_the_line_later() {
        for (c, per_poller) in [(costs(), 50), (pipelined_costs(2.0), 2)] {
            let busy = |n: u32| {
                let mut line = Line::new(8, 0);
                for p in 1..=n {
                    line.poll(&c, p, 0);
                }
                let w = line.store(&c, 0, 10_000);
                line.free_at() - w
            };
            assert_eq!(busy(3) - busy(1), 2 * per_poller);
        }
    }

    /// A line lists its sharers and adds a bitset only past
    /// `SHARERS_AS_LIST` of them, so a machine of a million CPUs does not
    /// cost a million bits per line; either way a sharer hits and a write
    /// invalidates every copy.
    #[test]
    fn sharers_are_listed_until_there_are_many() {
        let mut m = smpsim_machine::preset("generic-x86").unwrap().unwrap();
        m.topology = smpsim_machine::Topology::flat(64);
        let c = CostNs::new(&m);
        let local = c.line_transfer(0, 0);
        let mut line = Line::new(1 << 20, 0);
        let mut t = 0;
        for round in 0..2 {
            for cpu in 0..64 {
                let done = line.read(&c, cpu, t);
                let hit = done == t + local;
                assert_eq!(hit, round == 1 || cpu == 0, "round {round} cpu {cpu}");
                if cpu as usize == SHARERS_AS_LIST - 1 && round == 0 {
                    assert!(line.sharers.is_empty(), "a bitset before it is needed");
                }
                t = done;
            }
        }
        assert_eq!(line.sharers.len(), (1 << 20) / 64);
        assert_eq!(line.transfers, 63);
        t = line.store(&c, 5, t);
        assert_eq!(line.read(&c, 5, t), t + local);
        assert!(
            line.read(&c, 6, t) > t + local,
            "the write invalidated cpu 6"
        );
        assert_eq!(line.transfers, 65);
    }
}
