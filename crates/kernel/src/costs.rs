//! The machine's costs as integer nanoseconds, with CPU places precomputed,
//! so the hot path neither rounds floats nor divides to find a distance.

use smpsim_machine::{AtomicKind, CpuPlace, LoadReserve, Machine};

pub struct CostNs {
    pub ipi_send: u64,
    pub ipi_latency: u64,
    pub irq_entry_exit: u64,
    pub syscall: u64,
    pub context_switch: u64,
    pub wakeup: u64,
    pub tlb_flush_full: u64,
    pub idle_exit: u64,
    /// Extra time of an atomic RMW over a plain access (0 when the line
    /// transfers were measured with atomics).
    pub atomic: u64,
    /// An idle CPU polls its thread flags (`TIF_POLLING_NRFLAG`): waking it
    /// takes no IPI.
    pub idle_polling: bool,
    /// Atomics are load-linked / store-conditional: an RMW is a fetch and
    /// an upgrade, two transactions on the line (see `coherence`).
    pub ll_sc: bool,
    /// LL/SC with the reserved line held until the store-conditional
    /// (`load_reserve = "held"`): no reservation is lost to other CPUs.
    pub ll_sc_held: bool,
    /// Of a transfer, the part a request already queued at the owner still
    /// pays, in 1/1024ths (`coherence.forward_fraction`).
    forward_1024: u64,
    /// How long a line's home is busy accepting one request.
    pub occupancy: u64,
    /// The home takes the next request only when the previous requester
    /// has its data (`coherence.home = "blocking"`).
    pub blocking_home: bool,
    /// One coherence transaction by distance: local, SMT, LLC, node, socket, remote.
    line: [u64; 6],
    /// With a node distance table: the cross-socket transfer between each
    /// pair of nodes (`nodes x nodes`), else empty.
    node_line: Vec<u64>,
    nr_nodes: usize,
    places: Vec<CpuPlace>,
    /// `work` does not run at one speed everywhere: some CPU has less
    /// than full capacity, or SMT co-running slows work down.
    pub scales_work: bool,
    /// Every CPU's capacity (`arch_scale_cpu_capacity()`, 1024 = fastest);
    /// empty when all are 1024.
    pub capacity: Vec<u32>,
    /// `work` on a thread whose sibling is busy, in 1/1024ths (0: no
    /// slowdown modelled).
    pub smt_corun_1024: u64,
    /// Each CPU's SMT siblings (itself left out); empty without
    /// `smt_corun`.
    pub siblings: Vec<Vec<u32>>,
    /// Broadcast TLB invalidation: (`INVLPGB`, `TLBSYNC`, `invlpgb_count_max`),
    /// if the machine has it.
    pub tlb_broadcast: Option<(u64, u64, u64)>,
}

impl CostNs {
    pub fn new(m: &Machine) -> Self {
        let c = &m.costs;
        let lt = &c.line_transfer;
        let ll_sc = m.atomics.kind == AtomicKind::LlSc;
        // A machine's line_transfer figures are CAS ping-pong one-way
        // latencies. Under LL/SC that is two transactions, the waiter's
        // shared fetch and its store-conditional's upgrade; assumed: both
        // cost the same, so one transaction is half the figure. A hit in
        // the CPU's own cache (`local`) is no transaction.
        let per_transaction = |ns: f64| {
            if ll_sc {
                (ns / 2.0).round() as u64
            } else {
                ns.round() as u64
            }
        };
        CostNs {
            ipi_send: c.ipi_send.nanos(),
            ipi_latency: c.ipi_latency.nanos(),
            irq_entry_exit: c.irq_entry_exit.nanos(),
            syscall: c.syscall.nanos(),
            context_switch: c.context_switch.nanos(),
            wakeup: c.wakeup.nanos(),
            tlb_flush_full: c.tlb_flush_full.nanos(),
            idle_exit: c.idle_exit.as_ref().map_or(0, |x| x.nanos()),
            idle_polling: m.idle.polling,
            ll_sc,
            ll_sc_held: m.atomics.load_reserve == LoadReserve::Held,
            atomic: c.atomic.as_ref().map_or(0, |x| x.nanos()),
            forward_1024: (m.coherence.forward_fraction.clamp(0.0, 1.0) * 1024.0).round() as u64,
            occupancy: m.coherence.occupancy.nanos(),
            blocking_home: m.coherence.home == smpsim_machine::Home::Blocking,
            node_line: match &m.topology.node_distance {
                None => Vec::new(),
                Some(table) => table
                    .iter()
                    .flatten()
                    .map(|&d| {
                        lt.by_node_distance
                            .iter()
                            .find(|c| c.distance == d)
                            .map_or(per_transaction(lt.cross_socket.ns), |c| {
                                per_transaction(c.ns)
                            })
                    })
                    .collect(),
            },
            nr_nodes: m.topology.nr_nodes(),
            line: [
                lt.local.nanos(),
                per_transaction(lt.smt_sibling.ns),
                per_transaction(lt.same_llc.ns),
                per_transaction(lt.same_node.ns),
                per_transaction(lt.same_socket.ns),
                per_transaction(lt.cross_socket.ns),
            ],
            places: (0..m.nr_cpus() as u32)
                .map(|c| m.topology.place(c))
                .collect(),
            scales_work: false,
            capacity: Vec::new(),
            smt_corun_1024: 0,
            siblings: Vec::new(),
            tlb_broadcast: m
                .tlb
                .as_ref()
                .filter(|t| t.broadcast)
                .map(|t| (t.invlpgb.nanos(), t.tlbsync.nanos(), t.count_max as u64)),
        }
        .with_capacity(m)
    }

    /// The CPU capacities and the SMT co-run slowdown of the machine.
    fn with_capacity(mut self, m: &Machine) -> Self {
        let topo = &m.topology;
        if !topo.core_types.is_empty() {
            let caps = topo.capacities();
            if caps
                .iter()
                .any(|&c| c != smpsim_machine::SCHED_CAPACITY_SCALE)
            {
                self.capacity = caps;
            }
        }
        if let Some(s) = &topo.smt_corun {
            let f = (s.factor * 1024.0).round() as u64;
            if f > 1024 && topo.threads_per_core > 1 {
                self.smt_corun_1024 = f;
                self.siblings = (0..m.nr_cpus() as u32)
                    .map(|c| {
                        let mut v = topo.core_siblings(c);
                        v.retain(|&x| x != c);
                        v
                    })
                    .collect();
            }
        }
        self.scales_work = !self.capacity.is_empty() || self.smt_corun_1024 != 0;
        self
    }

    /// CPU `c`'s capacity (1024 = the fastest).
    #[inline]
    pub fn capacity_of(&self, c: u32) -> u32 {
        self.capacity
            .get(c as usize)
            .copied()
            .unwrap_or(smpsim_machine::SCHED_CAPACITY_SCALE)
    }

    /// Cost of one coherence transaction moving a cache line last written
    /// by `from` to `to` (a read miss, a read-for-ownership, an upgrade).
    #[inline]
    pub fn line_transfer(&self, from: u32, to: u32) -> u64 {
        if from == to {
            return self.line[0];
        }
        let (a, b) = (&self.places[from as usize], &self.places[to as usize]);
        let d = if a.core == b.core {
            1
        } else if a.llc == b.llc {
            2
        } else if a.node == b.node {
            3
        } else if a.socket == b.socket {
            4
        } else if !self.node_line.is_empty() {
            return self.node_line[a.node as usize * self.nr_nodes + b.node as usize];
        } else {
            5
        };
        self.line[d]
    }

    /// The NUMA node of `cpu`.
    #[inline]
    pub fn node(&self, cpu: u32) -> u32 {
        self.places[cpu as usize].node
    }

    /// The data leg of a transfer from `from` to `to`: what a request that
    /// was already waiting at `from` pays once `from` has the line.
    #[inline]
    pub fn forwarded(&self, from: u32, to: u32) -> u64 {
        (self.line_transfer(from, to) * self.forward_1024).div_ceil(1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_machine_model() {
        let m = smpsim_machine::preset("amd-turin-384").unwrap().unwrap();
        let c = CostNs::new(&m);
        for (a, b) in [(0, 0), (0, 192), (0, 5), (0, 9), (0, 100), (383, 2)] {
            assert_eq!(c.line_transfer(a, b), m.line_transfer(a, b), "{a}->{b}");
        }
    }
}
