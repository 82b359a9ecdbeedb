//! `coherence::Line` takes short cuts to stay cheap per call (the farthest
//! sharer found by its largest transfer and largest data leg, one or two
//! re-fetches ordered without a sort, pollers joining the sharers without
//! a look-up, a transfer's costs from a per-class table). Here the model
//! is computed the plain way, as the module doc states it: every sharer's
//! invalidation timed and the latest kept, every write's re-fetches sorted
//! by distance, every sharer looked up before it is added. Random
//! operations on a few lines by random CPUs must give the same times and
//! the same counters from both.

use smpsim_engine::{Nanos, Rng};
use smpsim_kernel::coherence::Line;
use smpsim_kernel::costs::CostNs;
use smpsim_machine::{AtomicKind, Home, LoadReserve, Machine};

/// The coherence model of one line, computed the plain way.
struct PlainLine {
    owner: u32,
    /// Every CPU holding a copy, the owner included.
    sharers: Vec<u32>,
    free_at: Nanos,
    data_at: Nanos,
    /// (cpu, when the last write reached it), in the order they started.
    pollers: Vec<(u32, Nanos)>,
    /// LL/SC: (cpu, store-conditional issued, done) of queued RMWs.
    reservations: Vec<(u32, Nanos, Nanos)>,
    rmws: u64,
    sc_fails: u64,
    transfers: u64,
    refetches: u64,
}

impl PlainLine {
    fn new(home: u32) -> Self {
        PlainLine {
            owner: home,
            sharers: vec![home],
            free_at: 0,
            data_at: 0,
            pollers: Vec::new(),
            reservations: Vec::new(),
            rmws: 0,
            sc_fails: 0,
            transfers: 0,
            refetches: 0,
        }
    }

    fn add_sharer(&mut self, cpu: u32) {
        if !self.sharers.contains(&cpu) {
            self.sharers.push(cpu);
        }
    }

    /// `from` -> `to` is the request's pair: a pipelined home's occupancy
    /// depends on its transfer.
    fn busy_until(&self, c: &CostNs, start: Nanos, served: Nanos, from: u32, to: u32) -> Nanos {
        if c.blocking_home {
            served
        } else {
            start + c.busy(from, to)
        }
    }

    fn leg(&self, c: &CostNs, from: u32, to: u32, now: Nanos, start: Nanos) -> Nanos {
        let fwd = c.forwarded(from, to);
        (now + c.line_transfer(from, to))
            .max(start + fwd)
            .max(self.data_at + fwd)
    }

    fn rmw(&mut self, c: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        self.rmws += 1;
        if c.ll_sc {
            return self.ll_sc(c, cpu, now);
        }
        self.write(c, cpu, now, c.atomic)
    }

    fn store(&mut self, c: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if !c.ll_sc {
            return self.write(c, cpu, now, 0);
        }
        let broken = self.broken_reservations(c, cpu, now);
        let done = self.write(c, cpu, now, 0);
        if broken > 0 {
            for &(victim, sc_issued, _) in &self.reservations {
                if victim != cpu && sc_issued > now {
                    self.free_at += if c.blocking_home {
                        c.forwarded(cpu, victim)
                    } else {
                        c.busy(cpu, victim)
                    };
                    self.data_at += c.forwarded(cpu, victim);
                }
            }
            self.sc_fails += broken;
            self.transfers += broken;
        }
        done
    }

    fn broken_reservations(&mut self, c: &CostNs, cpu: u32, now: Nanos) -> u64 {
        if c.ll_sc_held {
            return 0;
        }
        self.reservations.retain(|&(_, _, done)| done > now);
        self.reservations
            .iter()
            .filter(|&&(r, sc_issued, _)| r != cpu && sc_issued > now)
            .count() as u64
    }

    fn ll_sc(&mut self, c: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if self.sharers == [cpu] {
            let done = now.max(self.data_at) + c.line_transfer(cpu, cpu) + c.atomic;
            self.data_at = done;
            self.refetch(c, cpu, done);
            return done;
        }
        let broken = self.broken_reservations(c, cpu, now);
        let fetches = broken + u64::from(!self.sharers.contains(&cpu));
        let start = now.max(self.free_at);
        let mut t = now;
        if fetches > 0 {
            t = self.leg(c, self.owner, cpu, now, start);
            t += (fetches - 1) * c.forwarded(self.owner, cpu);
        }
        let sc_issued = if fetches == 0 { now } else { t };
        let queued = start > now || self.data_at > now;
        self.add_sharer(cpu);
        let worst = self
            .sharers
            .iter()
            .filter(|&&s| s != cpu)
            .map(|&s| {
                if queued {
                    c.forwarded(s, cpu)
                } else {
                    c.line_transfer(s, cpu)
                }
            })
            .max()
            .unwrap_or(0);
        self.sharers = vec![cpu];
        let done = t + worst + c.atomic;
        self.transfers += fetches + 1;
        self.sc_fails += broken;
        self.free_at = if c.blocking_home {
            done
        } else {
            start + (fetches + 1) * c.busy(self.owner, cpu)
        };
        self.data_at = done;
        self.owner = cpu;
        if !c.ll_sc_held {
            self.reservations.push((cpu, sc_issued, done));
        }
        self.refetch(c, cpu, done);
        done
    }

    fn write(&mut self, c: &CostNs, cpu: u32, now: Nanos, extra: u64) -> Nanos {
        let done = if self.sharers == [cpu] {
            now.max(self.data_at) + c.line_transfer(cpu, cpu) + extra
        } else {
            let start = now.max(self.free_at);
            let mut arrive = self.leg(c, self.owner, cpu, now, start);
            for &s in &self.sharers {
                if s != cpu && s != self.owner {
                    let inval = (now + c.line_transfer(s, cpu)).max(start + c.forwarded(s, cpu));
                    arrive = arrive.max(inval);
                }
            }
            self.transfers += 1;
            self.sharers = vec![cpu];
            self.free_at = self.busy_until(c, start, arrive, self.owner, cpu);
            arrive + extra
        };
        self.data_at = done;
        self.owner = cpu;
        self.refetch(c, cpu, done);
        done
    }

    fn refetch(&mut self, c: &CostNs, writer: u32, at: Nanos) {
        if self.pollers.is_empty() {
            return;
        }
        let mut order = Vec::new();
        for (i, p) in self.pollers.iter_mut().enumerate() {
            if p.0 == writer {
                p.1 = at;
            } else {
                order.push((c.line_transfer(writer, p.0), i));
            }
        }
        order.sort();
        let mut start = self.free_at.max(at);
        for &(_, i) in &order {
            let p = self.pollers[i].0;
            let seen = start + c.forwarded(writer, p);
            self.pollers[i].1 = seen;
            start = self.busy_until(c, start, seen, writer, p);
            self.add_sharer(p);
        }
        self.transfers += order.len() as u64;
        self.refetches += order.len() as u64;
        self.free_at = start;
    }

    fn read(&mut self, c: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if self.sharers.contains(&cpu) {
            return now + c.line_transfer(cpu, cpu);
        }
        let start = now.max(self.free_at);
        let seen = self.leg(c, self.owner, cpu, now, start);
        self.add_sharer(cpu);
        self.transfers += 1;
        self.free_at = self.busy_until(c, start, seen, self.owner, cpu);
        seen
    }

    fn poll(&mut self, c: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        let seen = self.read(c, cpu, now);
        match self.pollers.iter_mut().find(|p| p.0 == cpu) {
            Some(p) => p.1 = seen,
            None => self.pollers.push((cpu, seen)),
        }
        seen
    }

    fn unpoll(&mut self, cpu: u32) {
        self.pollers.retain(|p| p.0 != cpu);
    }

    fn seen_at(&self, cpu: u32) -> Option<Nanos> {
        self.pollers.iter().find(|p| p.0 == cpu).map(|p| p.1)
    }
}

/// The machines to run on: NUMA with a node distance table and a
/// blocking home, the same with a pipelined home, a large x86, and LL/SC
/// with the load-reserve held and shared.
fn machines() -> Vec<(&'static str, Machine)> {
    // The plain model has no snoop window (its own test is in the
    // coherence module): the global rule is switched off here.
    let preset = |n: &str| {
        let mut m = smpsim_machine::preset(n).unwrap().unwrap();
        m.coherence.snoop_fraction = 0.0;
        m
    };
    let mut pipelined = preset("opteron-6172-48");
    pipelined.coherence.home = Home::Pipelined;
    // A home busy for a part of each request's transfer, by its pair.
    let mut by_pair = pipelined.clone();
    by_pair.coherence.occupancy.ns = 7.0;
    by_pair.coherence.occupancy_per_transfer = 0.8;
    let mut shared = preset("power8-192");
    shared.atomics.load_reserve = LoadReserve::Shared;
    let mut held = preset("power8-192");
    held.atomics.load_reserve = LoadReserve::Held;
    assert_eq!(held.atomics.kind, AtomicKind::LlSc);
    vec![
        ("opteron-6172-48", preset("opteron-6172-48")),
        ("opteron pipelined", pipelined),
        ("opteron pipelined, occupancy by pair", by_pair),
        ("amd-turin-384", preset("amd-turin-384")),
        ("power8 held", held),
        ("power8 shared", shared),
    ]
}

#[test]
fn the_fast_paths_give_the_plain_model_times_and_counters() {
    for (name, m) in machines() {
        let c = CostNs::new(&m);
        let nr_cpus = m.nr_cpus() as u32;
        for seed in 0..20 {
            let mut rng = Rng::seed_from_u64(seed);
            // A few CPUs that contend (so lines gather pollers and
            // sharers), drawn anywhere on the machine; now and then any
            // CPU, so a line passes the sharers its list holds.
            let busy: Vec<u32> = (0..2 + rng.below(6))
                .map(|_| rng.below(nr_cpus as u64) as u32)
                .collect();
            let mut fast: Vec<Line> = Vec::new();
            let mut plain: Vec<PlainLine> = Vec::new();
            for _ in 0..3 {
                let home = rng.below(nr_cpus as u64) as u32;
                fast.push(Line::new(nr_cpus as usize, home));
                plain.push(PlainLine::new(home));
            }
            let mut now: Nanos = 0;
            for step in 0..2_000 {
                // Often at the same time (contention), else a little later.
                if rng.below(3) == 0 {
                    now += rng.below(2_000);
                }
                let l = rng.below(fast.len() as u64) as usize;
                let cpu = if rng.below(8) == 0 {
                    rng.below(nr_cpus as u64) as u32
                } else {
                    busy[rng.below(busy.len() as u64) as usize]
                };
                let (f, p) = (&mut fast[l], &mut plain[l]);
                if rng.below(50) == 0 {
                    // A burst of readers: a line with more sharers than
                    // its list holds.
                    for _ in 0..20 {
                        let r = rng.below(nr_cpus as u64) as u32;
                        assert_eq!(f.read(&c, r, now), p.read(&c, r, now));
                    }
                }
                let (got, want) = match rng.below(5) {
                    0 => (f.rmw(&c, cpu, now), p.rmw(&c, cpu, now)),
                    1 => (f.store(&c, cpu, now), p.store(&c, cpu, now)),
                    2 => (f.read(&c, cpu, now), p.read(&c, cpu, now)),
                    3 => (f.poll(&c, cpu, now), p.poll(&c, cpu, now)),
                    _ => {
                        f.unpoll(cpu);
                        p.unpoll(cpu);
                        (0, 0)
                    }
                };
                let at = format!("{name} seed {seed} step {step} line {l} cpu {cpu}");
                assert_eq!(got, want, "{at}");
                assert_eq!(f.owner(), p.owner, "{at}");
                assert_eq!(f.free_at(), p.free_at, "{at}");
                assert_eq!(f.nr_pollers(), p.pollers.len(), "{at}");
                for &(poller, _) in &p.pollers {
                    assert_eq!(f.seen_at(poller), p.seen_at(poller), "{at}");
                }
                assert_eq!(
                    (f.rmws, f.sc_fails, f.transfers, f.refetches),
                    (p.rmws, p.sc_fails, p.transfers, p.refetches),
                    "{at}"
                );
            }
        }
    }
}
