//! Cache-line coherence: every shared word the model touches (lock words,
//! refcounts, counters, cpumasks) lives on a [`Line`].
//!
//! A line has one owner with the line exclusive, plus the CPUs sharing it
//! after reads. A read-modify-write needs the line exclusively: it pays a
//! transfer from the farthest current holder (invalidating the sharers)
//! unless this CPU already owns it alone. RMWs on one line serialize: each
//! starts when the previous one has the line (`free_at`), so N CPUs
//! hammering one line get at most one transfer per transfer-time in total.
//! A read of a line held elsewhere pays one transfer and joins the sharers;
//! reads do not serialize with each other.

use smpsim_engine::Nanos;

use crate::costs::CostNs;

pub type LineId = u32;

#[derive(Clone, Debug)]
pub struct Line {
    /// CPU holding the line exclusively or last writer.
    owner: u32,
    /// CPUs holding a shared copy (bitset), the owner included.
    sharers: Vec<u64>,
    /// The same CPUs as a list, so an RMW touches only them (the list's
    /// capacity is kept: no allocation once warm).
    sharer_list: Vec<u32>,
    nr_sharers: u32,
    /// When the last RMW completes: the next one starts no earlier.
    free_at: Nanos,
    pub rmws: u64,
    pub transfers: u64,
}

impl Line {
    pub fn new(nr_cpus: usize, home: u32) -> Self {
        let mut sharers = vec![0u64; nr_cpus.div_ceil(64)];
        sharers[home as usize / 64] |= 1 << (home % 64);
        Line {
            owner: home,
            sharers,
            sharer_list: vec![home],
            nr_sharers: 1,
            free_at: 0,
            rmws: 0,
            transfers: 0,
        }
    }

    fn has(&self, cpu: u32) -> bool {
        self.sharers[cpu as usize / 64] & (1 << (cpu % 64)) != 0
    }

    /// A read-modify-write by `cpu` issued at `now`; returns when it
    /// completes.
    pub fn rmw(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        let start = now.max(self.free_at);
        let alone = self.owner == cpu && self.nr_sharers == 1;
        let latency = if alone {
            cost.line_transfer(cpu, cpu)
        } else {
            // Fetch from the owner; invalidations to sharers go in parallel,
            // so the farthest one bounds the wait.
            let mut worst = cost.line_transfer(self.owner, cpu);
            for &s in &self.sharer_list {
                if s != cpu {
                    worst = worst.max(cost.line_transfer(s, cpu));
                }
            }
            self.transfers += 1;
            worst
        };
        if !alone {
            for &s in &self.sharer_list {
                self.sharers[s as usize / 64] &= !(1 << (s % 64));
            }
            self.sharer_list.clear();
            self.sharer_list.push(cpu);
            self.sharers[cpu as usize / 64] |= 1 << (cpu % 64);
            self.nr_sharers = 1;
        }
        self.owner = cpu;
        self.rmws += 1;
        self.free_at = start + latency;
        self.free_at
    }

    /// A read by `cpu` at `now`; returns when the value is there.
    pub fn read(&mut self, cost: &CostNs, cpu: u32, now: Nanos) -> Nanos {
        if self.has(cpu) {
            return now + cost.line_transfer(cpu, cpu);
        }
        let start = now.max(self.free_at);
        self.sharers[cpu as usize / 64] |= 1 << (cpu % 64);
        self.sharer_list.push(cpu);
        self.nr_sharers += 1;
        self.transfers += 1;
        start + cost.line_transfer(self.owner, cpu)
    }

    /// The CPU that last wrote the line.
    pub fn owner(&self) -> u32 {
        self.owner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        m.costs.line_transfer.same_llc.ns = 100.0;
        m.costs.line_transfer.cross_socket.ns = 300.0;
        m.costs.line_transfer.local.ns = 1.0;
        CostNs::new(&m)
    }

    /// Ping-pong of one line between two CPUs for 100 RMWs each.
    fn ping_pong(a: u32, b: u32) -> Nanos {
        let c = costs();
        let mut line = Line::new(8, a);
        let mut t = 0;
        for i in 0..200 {
            t = line.rmw(&c, if i % 2 == 0 { a } else { b }, t);
        }
        t
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
        for round in 0..50 {
            for cpu in 0..4u32 {
                let _ = round;
                done = line.rmw(&c, cpu, 0);
            }
        }
        // 200 RMWs, each after the previous has the line: >= 1 transfer-time each.
        assert!(done >= 199 * 100, "{done}");
        assert_eq!(line.rmws, 200);
    }

    #[test]
    fn many_readers_after_one_write_refetch_once_each() {
        let c = costs();
        let mut line = Line::new(8, 0);
        let w = line.rmw(&c, 0, 0);
        let before = line.transfers;
        for cpu in 1..8 {
            line.read(&c, cpu, w);
        }
        assert_eq!(line.transfers - before, 7);
        // Reading again is a local hit: no more transfers.
        for cpu in 1..8 {
            line.read(&c, cpu, w + 10_000);
        }
        assert_eq!(line.transfers - before, 7);
        // The next write invalidates all 7 sharers: it waits for the farthest.
        let t = line.rmw(&c, 0, w + 20_000);
        assert_eq!(t, w + 20_000 + 300);
    }
}
