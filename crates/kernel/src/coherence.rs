//! Cache-line coherence: every shared word the model touches (lock words,
//! refcounts, counters, queue nodes, `task_struct::on_cpu`) lives on a
//! [`Line`].
//!
//! # The model
//!
//! A line has one *owner* (the CPU that last wrote it, holding it Modified
//! or Owned) and a set of *sharers* holding read-only copies. Every miss on
//! the line is a transaction served **at the line, one at a time, in
//! arrival order** (the home agent or directory serializes them, as the
//! coherence protocols of every multi-socket machine do):
//!
//! - a **read miss** waits until the line is free, then pays one transfer
//!   from the owner to the reader; the reader joins the sharers;
//! - a **read-for-ownership** (an atomic RMW, or a plain store to a line it
//!   does not own alone) waits until the line is free, then pays the
//!   transfer from the owner and the invalidation of every sharer (sent in
//!   parallel: the farthest sharer bounds it), plus, for an atomic, the
//!   machine's `atomic` execution cost. The writer is then the only holder;
//! - a CPU that **polls** the line (spins reading it: a ticket-lock waiter,
//!   the qspinlock queue head, a `mutex_spin_on_owner()` spinner,
//!   `csd_lock_wait()`) is registered with [`Line::poll`]. It costs nothing
//!   while the line does not change: its copy hits in its cache. After every
//!   write each poller misses once and **re-fetches**; those re-fetches are
//!   transactions like any other and queue at the line, nearest poller
//!   first (its request arrives first), ahead of any later RMW.
//!
//! Polling is an interval: a write to a line with K pollers queues K
//! re-fetches at once, it does not generate an event per loop iteration.
//! [`Line::seen_at`] tells when the write reached a given poller.
//!
//! # Worked example: a ticket lock with N waiters
//!
//! N CPUs wait for a ticket lock, all polling its word `L`; one transfer
//! between any two CPUs costs `x`. The holder releases (`head++`, a store):
//! its read-for-ownership pays `x` plus invalidating N sharers (in
//! parallel, so about `x` more at most). Then N re-fetches queue at `L`:
//! the k-th poller in line sees the new `head` at `k*x` after the store.
//! The next ticket holder is somewhere in that line; it enters its critical
//! section when its copy arrives. Its own release is a store to `L` that
//! queues behind the re-fetches still outstanding, so it completes no
//! earlier than `N*x` after the previous release: the time per handoff
//! grows linearly with the number of waiters, which is why ticket-lock
//! throughput falls as CPUs are added. A qspinlock waiter instead polls its
//! own MCS node; only the queue head (and one pending waiter) poll `L`, so
//! a release queues at most two re-fetches whatever N is.

use smpsim_engine::Nanos;

use crate::costs::CostNs;

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
    /// capacity is kept: no allocation once warm).
    sharer_list: Vec<u32>,
    /// When the line has served every transaction queued so far.
    free_at: Nanos,
    /// CPUs polling the line, in the order they started, and when the
    /// last write reached each of them.
    pollers: Vec<u32>,
    poll_seen: Vec<Nanos>,
    /// Scratch for ordering re-fetches (kept: no allocation once warm).
    order: Vec<(u64, u32)>,
    /// LL/SC machines: RMWs queued on the line and not yet done, as
    /// (cpu, when its store-conditional was issued, when it is done).
    reservations: Vec<(u32, Nanos, Nanos)>,
    pub rmws: u64,
    /// LL/SC machines: store-conditionals that failed because another
    /// CPU's store reached the line after the load-reserve.
    pub sc_fails: u64,
    /// Misses that moved the line (reads, RFOs, re-fetches).
    pub transfers: u64,
    /// Of those, re-fetches by polling CPUs.
    pub refetches: u64,
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
            pollers: Vec::new(),
            poll_seen: Vec::new(),
            order: Vec::new(),
            reservations: Vec::new(),
            rmws: 0,
            sc_fails: 0,
            transfers: 0,
            refetches: 0,
        }
    }

    fn has(&self, cpu: u32) -> bool {
        if self.sharers.is_empty() {
            return self.sharer_list.contains(&cpu);
        }
        self.sharers[cpu as usize / 64] & (1 << (cpu % 64)) != 0
    }

    fn add_sharer(&mut self, cpu: u32) {
        if self.has(cpu) {
            return;
        }
        self.sharer_list.push(cpu);
        if !self.sharers.is_empty() {
            self.sharers[cpu as usize / 64] |= 1 << (cpu % 64);
        } else if self.sharer_list.len() > SHARERS_AS_LIST {
            // Many sharers: a bitset answers `has` in one step from now on.
            self.sharers = vec![0; self.words as usize];
            for &s in &self.sharer_list {
                self.sharers[s as usize / 64] |= 1 << (s % 64);
            }
        }
    }

    /// An atomic read-modify-write by `cpu` issued at `now`; returns when
    /// it completes.
    pub fn rmw(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        self.rmws += 1;
        if cost.ll_sc {
            return self.ll_sc(cost, cpu, now);
        }
        self.write(cost, cpu, now, cost.atomic)
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
                        self.free_at += cost.line_transfer(cpu, victim);
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
        if self.owner == cpu && self.sharer_list.len() == 1 {
            // Held exclusive: the reservation holds, nothing to wait for.
            let done = now + cost.line_transfer(cpu, cpu) + cost.atomic;
            self.refetch(cost, cpu, done);
            return done;
        }
        let broken = self.broken_reservations(cost, cpu, now);
        let fetches = broken + u64::from(!self.has(cpu));
        let mut t = now.max(self.free_at);
        let fetch = cost.line_transfer(self.owner, cpu);
        t += fetches * fetch;
        let sc_issued = if fetches == 0 { now } else { t };
        self.add_sharer(cpu);
        // The upgrade invalidates every other copy in parallel.
        let mut worst = 0;
        for &s in &self.sharer_list {
            if s != cpu {
                worst = worst.max(cost.line_transfer(s, cpu));
            }
            if !self.sharers.is_empty() {
                self.sharers[s as usize / 64] &= !(1 << (s % 64));
            }
        }
        self.sharer_list.clear();
        self.sharer_list.push(cpu);
        if !self.sharers.is_empty() {
            self.sharers[cpu as usize / 64] |= 1 << (cpu % 64);
        }
        let done = t + worst + cost.atomic;
        self.transfers += fetches + 1;
        self.sc_fails += broken;
        self.free_at = done;
        self.owner = cpu;
        if !cost.ll_sc_held {
            self.reservations.push((cpu, sc_issued, done));
        }
        self.refetch(cost, cpu, done);
        done
    }

    fn write(&mut self, cost: &CostNs, cpu: u32, now: Nanos, extra: u64) -> Nanos {
        let alone = self.owner == cpu && self.sharer_list.len() == 1;
        let done = if alone {
            // A hit on a line held exclusively: nothing to wait for at the line.
            now + cost.line_transfer(cpu, cpu) + extra
        } else {
            let start = now.max(self.free_at);
            // Fetch from the owner; invalidations go to every sharer in
            // parallel, so the farthest one bounds the wait.
            let mut worst = cost.line_transfer(self.owner, cpu);
            for &s in &self.sharer_list {
                if s != cpu && s != self.owner {
                    worst = worst.max(cost.line_transfer(s, cpu));
                }
                if !self.sharers.is_empty() {
                    self.sharers[s as usize / 64] &= !(1 << (s % 64));
                }
            }
            self.transfers += 1;
            self.sharer_list.clear();
            self.sharer_list.push(cpu);
            if !self.sharers.is_empty() {
                self.sharers[cpu as usize / 64] |= 1 << (cpu % 64);
            }
            let done = start + worst + extra;
            self.free_at = done;
            done
        };
        self.owner = cpu;
        self.refetch(cost, cpu, done);
        done
    }

    /// Every poller but the writer misses and re-fetches the line written
    /// by `writer` at `at`: nearest first, one at a time.
    fn refetch(&mut self, cost: &CostNs, writer: u32, at: Nanos) {
        if self.pollers.is_empty() {
            return;
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for (i, &p) in self.pollers.iter().enumerate() {
            if p == writer {
                self.poll_seen[i] = at;
            } else {
                order.push((cost.line_transfer(writer, p), i as u32));
            }
        }
        order.sort_unstable();
        let mut t = self.free_at.max(at);
        for &(x, i) in &order {
            t += x;
            self.poll_seen[i as usize] = t;
            let p = self.pollers[i as usize];
            self.add_sharer(p);
        }
        self.transfers += order.len() as u64;
        self.refetches += order.len() as u64;
        self.free_at = t;
        self.order = order;
    }

    /// A read by `cpu` at `now`; returns when the value is there.
    pub fn read(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if self.has(cpu) {
            return now + cost.line_transfer(cpu, cpu);
        }
        let start = now.max(self.free_at);
        self.add_sharer(cpu);
        self.transfers += 1;
        self.free_at = start + cost.line_transfer(self.owner, cpu);
        self.free_at
    }

    /// `cpu` starts spinning on the line at `now` (its first read); returns
    /// when it has the value.
    pub fn poll(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        let seen = self.read(cost, cpu, now);
        if let Some(i) = self.pollers.iter().position(|&p| p == cpu) {
            self.poll_seen[i] = seen;
        } else {
            self.pollers.push(cpu);
            self.poll_seen.push(seen);
        }
        seen
    }

    /// `cpu` stops spinning on the line.
    pub fn unpoll(&mut self, cpu: u32) {
        if let Some(i) = self.pollers.iter().position(|&p| p == cpu) {
            self.pollers.remove(i);
            self.poll_seen.remove(i);
        }
    }

    /// When the last write reached polling CPU `cpu` (its re-fetch done).
    pub fn seen_at(&self, cpu: u32) -> Option<Nanos> {
        let i = self.pollers.iter().position(|&p| p == cpu)?;
        Some(self.poll_seen[i])
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

    fn costs() -> CostNs {
        // 2 sockets x 4 cores: same socket 100 ns, cross socket 300 ns.
        let mut m = smpsim_machine::preset("generic-x86").unwrap().unwrap();
        m.topology = smpsim_machine::Topology {
            sockets: 2,
            numa_nodes_per_socket: 1,
            llcs_per_node: 1,
            cores_per_llc: 4,
            threads_per_core: 1,
            smt_numbering: Default::default(),
            node_distance: None,
        };
        m.costs.line_transfer.same_llc.ns = 100.0;
        m.costs.line_transfer.cross_socket.ns = 300.0;
        m.costs.line_transfer.local.ns = 1.0;
        m.costs.atomic = None;
        CostNs::new(&m)
    }

    /// The same machine with load-linked / store-conditional atomics whose
    /// load-reserve is `held` or `shared`.
    fn ll_sc_costs(load_reserve: smpsim_machine::LoadReserve) -> CostNs {
        let mut m = smpsim_machine::preset("generic-x86").unwrap().unwrap();
        m.topology = smpsim_machine::Topology::flat(8);
        m.costs.line_transfer.same_llc.ns = 300.0;
        m.costs.line_transfer.local.ns = 1.0;
        m.costs.atomic = None;
        m.atomics.kind = smpsim_machine::AtomicKind::LlSc;
        m.atomics.load_reserve = load_reserve;
        CostNs::new(&m)
    }

    fn locked_costs() -> CostNs {
        let mut m = smpsim_machine::preset("generic-x86").unwrap().unwrap();
        m.topology = smpsim_machine::Topology::flat(8);
        m.costs.line_transfer.same_llc.ns = 300.0;
        m.costs.line_transfer.local.ns = 1.0;
        m.costs.atomic = None;
        CostNs::new(&m)
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
    /// (x86 `lock xadd`) are K read-for-ownerships. Under LL/SC with a
    /// shared load-reserve the RMWs queued ahead each break a later CPU's
    /// reservation (its `stwcx.` fails, the `lwarx` loop fetches again):
    /// the k-th CPU fetches k times, K(K-1)/2 failed store-conditionals in
    /// all. With the reserved line held, each RMW is a fetch and an
    /// upgrade, no retry.
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
        assert_eq!(t_locked, 4 * 300);
        assert_eq!(fails_llsc, 1 + 2 + 3);
        // 4 upgrades, 4 first fetches and 6 re-fetches of 150 ns each.
        assert_eq!(x_llsc, 4 + 4 + 6);
        assert_eq!(t_llsc, 14 * 150);
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
        let stored = line.store(&c, 2, 100);
        assert_eq!(line.sc_fails, 1);
        assert_eq!(stored, 300 + 150);
        assert_eq!(line.free_at(), 300 + 150 + 150, "cpu 1 fetches again");
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

    #[test]
    fn concurrent_rmws_serialize_one_transfer_at_a_time() {
        let c = costs();
        let mut line = Line::new(8, 0);
        // All 4 CPUs of socket 0 issue 50 RMWs each at time 0.
        let mut done = 0;
        for _round in 0..50 {
            for cpu in 0..4u32 {
                done = line.rmw(&c, cpu, 0);
            }
        }
        // 200 RMWs, each after the previous has the line: >= 1 transfer-time each.
        assert!(done >= 199 * 100, "{done}");
        assert_eq!(line.rmws, 200);
    }

    #[test]
    fn reads_of_a_line_serialize_too() {
        let c = costs();
        let mut line = Line::new(8, 0);
        let w = line.rmw(&c, 0, 0);
        let before = line.transfers;
        let mut last = 0;
        for cpu in 1..4 {
            last = line.read(&c, cpu, w);
        }
        assert_eq!(line.transfers - before, 3);
        assert_eq!(last, w + 300, "three same-socket misses, one after another");
        // Reading again is a local hit: no more transfers.
        for cpu in 1..4 {
            line.read(&c, cpu, last + 10_000);
        }
        assert_eq!(line.transfers - before, 3);
        // The next write invalidates the 3 sharers in parallel.
        let t = line.rmw(&c, 0, w + 20_000);
        assert_eq!(t, w + 20_000 + 100);
    }

    #[test]
    fn pollers_refetch_after_each_write_nearest_first() {
        let c = costs();
        let mut line = Line::new(8, 0);
        // CPU 5 (far) starts polling before CPUs 1 and 2 (near).
        line.poll(&c, 5, 0);
        line.poll(&c, 1, 0);
        line.poll(&c, 2, 0);
        let settled = line.free_at();
        let w = line.store(&c, 0, settled);
        // Near pollers come first, then the far one.
        assert_eq!(line.seen_at(1), Some(w + 100));
        assert_eq!(line.seen_at(2), Some(w + 200));
        assert_eq!(line.seen_at(5), Some(w + 500));
        assert_eq!(line.refetches, 3);
        // A write right after queues behind the three re-fetches.
        let next = line.rmw(&c, 3, w);
        assert_eq!(next, w + 500 + 300);
        line.unpoll(5);
        assert_eq!(line.nr_pollers(), 2);
        assert_eq!(line.seen_at(5), None);
    }

    #[test]
    fn a_release_with_more_pollers_frees_the_line_later() {
        let c = costs();
        let busy = |n: u32| {
            let mut line = Line::new(8, 0);
            for p in 1..=n {
                line.poll(&c, p, 0);
            }
            let w = line.store(&c, 0, 10_000);
            line.free_at() - w
        };
        assert!(busy(3) > busy(1));
        assert_eq!(busy(3), 100 + 100 + 100);
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
