//! The machine's costs as integer nanoseconds, with CPU places precomputed,
//! so the hot path neither rounds floats nor divides to find a distance.
//!
//! A cache-line transfer's cost depends only on the distance between the
//! two CPUs (and, across sockets, on the pair of nodes when the machine
//! gives a node distance table). Every CPU's place is packed into one
//! word, socket in the top bits, then the node within the socket, the LLC
//! within the node, the core within the LLC and the thread within the
//! core: two CPUs first differ at the level of the highest bit their words
//! differ in, so the distance is one XOR and a count of leading zeros, and
//! each distance's costs (whole and data leg) are a table entry.

use smpsim_machine::{AtomicKind, LoadReserve, Machine, Topology};

/// The costs of one coherence transaction between a pair of CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Transfer {
    /// The whole transaction: request and data (`line_transfer`).
    pub whole: u64,
    /// Its data leg: what a request already queued at the owner still
    /// pays (`coherence.forward_fraction` of it, rounded up).
    pub data_leg: u64,
    /// How long the line's home is busy taking this request before it
    /// takes the next, at a pipelined home (`coherence.occupancy` plus
    /// `coherence.occupancy_per_transfer` of the whole transfer).
    pub busy: u64,
}

/// `class_by_lz` entry for a pair on different sockets whose cost is
/// looked up by their nodes.
const BY_NODE_PAIR: u8 = u8::MAX;
/// `by_lz` entry for a pair looked up by their nodes: no machine's
/// transfer lasts `u64::MAX` ns (it would overflow any time it is added to).
const BY_NODE_PAIR_TRANSFER: Transfer = Transfer {
    whole: u64::MAX,
    data_leg: u64::MAX,
    busy: u64::MAX,
};
/// Transfer classes by distance: local, SMT, LLC, node, socket, remote;
/// the node pairs of a distance table follow.
const NR_DISTANCE_CLASSES: usize = 6;

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
    /// Atomics executed at the line's home (`atomics.kind = "far"`).
    pub far_atomics: bool,
    /// How long the home is busy executing one far atomic: the
    /// occupancy of a request that moves no line.
    pub far_busy: u64,
    /// `coherence.snoop_fraction` in 1/1024ths: of a transfer, how long
    /// the next request's snoop takes to reach the owner.
    pub snoop_1024: u64,
    /// The home takes the next request only when the previous requester
    /// has its data (`coherence.home = "blocking"`).
    pub blocking_home: bool,
    /// Each CPU's place packed into one word (see the module doc).
    place_keys: Vec<u32>,
    /// The transfer of two CPUs by the leading zeros of their keys' XOR
    /// (32: the same CPU), [`BY_NODE_PAIR_TRANSFER`] where it depends on
    /// their nodes: one lookup, no bounds check, for the common case.
    by_lz: [Transfer; 33],
    /// One coherence transaction by class: local, SMT, LLC, node, socket,
    /// remote, then with a node distance table the cross-socket transfer
    /// between each pair of nodes (`nodes x nodes`).
    by_class: Vec<Transfer>,
    nr_nodes: usize,
    /// Each CPU's NUMA node.
    nodes: Vec<u32>,
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
        // With a node distance table: the cross-socket transfer between
        // each pair of nodes (`nodes x nodes`), else none.
        let node_line: Vec<u64> = match &m.topology.node_distance {
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
        };
        let line = [
            lt.local.nanos(),
            per_transaction(lt.smt_sibling.ns),
            per_transaction(lt.same_llc.ns),
            per_transaction(lt.same_node.ns),
            per_transaction(lt.same_socket.ns),
            per_transaction(lt.cross_socket.ns),
        ];
        // Of a transfer, the part a request already queued at the owner
        // still pays, in 1/1024ths (`coherence.forward_fraction`).
        let by_class: Vec<Transfer> = line
            .into_iter()
            .chain(node_line)
            .map(|whole| Transfer::of(&m.coherence, whole))
            .collect();
        let class_by_lz = class_by_lz(&m.topology, by_class.len() > NR_DISTANCE_CLASSES);
        let mut by_lz = [BY_NODE_PAIR_TRANSFER; 33];
        for (t, &class) in by_lz.iter_mut().zip(&class_by_lz) {
            if class != BY_NODE_PAIR {
                *t = by_class[class as usize];
            }
        }
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
            far_atomics: m.atomics.kind == AtomicKind::Far,
            far_busy: Transfer::of(&m.coherence, 0).busy,
            snoop_1024: (m.coherence.snoop_fraction.clamp(0.0, 1.0) * 1024.0).round() as u64,
            atomic: c.atomic.as_ref().map_or(0, |x| x.nanos()),
            blocking_home: m.coherence.home != smpsim_machine::Home::Pipelined,
            place_keys: (0..m.nr_cpus() as u32)
                .map(|c| place_key(&m.topology, c))
                .collect(),
            by_lz,
            by_class,
            nr_nodes: m.topology.nr_nodes(),
            nodes: (0..m.nr_cpus() as u32)
                .map(|c| m.topology.place(c).node)
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

    /// Both costs of one coherence transaction moving a cache line last
    /// written by `from` to `to`: by the level of the highest bit their
    /// place keys differ in.
    #[inline]
    pub fn transfer(&self, from: u32, to: u32) -> Transfer {
        let differ = self.place_keys[from as usize] ^ self.place_keys[to as usize];
        let x = self.by_lz[differ.leading_zeros() as usize];
        if x == BY_NODE_PAIR_TRANSFER {
            return self.node_pair_transfer(from, to);
        }
        x
    }

    /// Across sockets on a machine with a node distance table: by the pair
    /// of nodes. Out of line: inlined it would make every caller save more
    /// registers.
    #[inline(never)]
    fn node_pair_transfer(&self, from: u32, to: u32) -> Transfer {
        let (a, b) = (self.nodes[from as usize], self.nodes[to as usize]);
        self.by_class[NR_DISTANCE_CLASSES + a as usize * self.nr_nodes + b as usize]
    }

    /// Cost of one coherence transaction moving a cache line last written
    /// by `from` to `to` (a read miss, a read-for-ownership, an upgrade).
    #[inline]
    pub fn line_transfer(&self, from: u32, to: u32) -> u64 {
        self.transfer(from, to).whole
    }

    /// The NUMA node of `cpu`.
    #[inline]
    pub fn node(&self, cpu: u32) -> u32 {
        self.nodes[cpu as usize]
    }

    /// The data leg of a transfer from `from` to `to`: what a request that
    /// was already waiting at `from` pays once `from` has the line.
    #[inline]
    pub fn forwarded(&self, from: u32, to: u32) -> u64 {
        self.transfer(from, to).data_leg
    }

    /// How long a pipelined home is busy taking a request by `to` for a
    /// line last written by `from`.
    #[inline]
    pub fn busy(&self, from: u32, to: u32) -> u64 {
        self.transfer(from, to).busy
    }
}

impl Transfer {
    /// A transaction of `whole` ns under the machine's coherence rules:
    /// its data leg (`forward_fraction` of it, in 1/1024ths, rounded up)
    /// and the home's occupancy for it.
    pub fn of(c: &smpsim_machine::Coherence, whole: u64) -> Transfer {
        // A retried request pays the whole transfer again.
        let forward = if c.home == smpsim_machine::Home::Retry {
            1.0
        } else {
            c.forward_fraction
        };
        let forward_1024 = (forward.clamp(0.0, 1.0) * 1024.0).round() as u64;
        let busy = c.occupancy.ns + c.occupancy_per_transfer * whole as f64;
        Transfer {
            whole,
            data_leg: (whole * forward_1024).div_ceil(1024),
            busy: busy.round().max(0.0) as u64,
        }
    }
}

/// Bits to number `n` things (0 for one).
fn bits_for(n: u32) -> u32 {
    u32::BITS - n.saturating_sub(1).leading_zeros()
}

/// The widths of a place key's fields, lowest first: thread in core, core
/// in LLC, LLC in node, node in socket, socket. Together at most 25 bits
/// (a topology has at most 2^20 CPUs, and each field rounds up by less
/// than one bit).
fn key_widths(t: &Topology) -> [u32; 5] {
    [
        bits_for(t.threads_per_core),
        bits_for(t.cores_per_llc),
        bits_for(t.llcs_per_node),
        bits_for(t.numa_nodes_per_socket),
        bits_for(t.sockets),
    ]
}

/// CPU `cpu`'s place packed into one word, socket highest: two CPUs' keys
/// agree above a level exactly when the CPUs share that level's parent.
fn place_key(t: &Topology, cpu: u32) -> u32 {
    let p = t.place(cpu);
    let fields = [
        p.thread,
        p.core % t.cores_per_llc,
        p.llc % t.llcs_per_node,
        p.node % t.numa_nodes_per_socket,
        p.socket,
    ];
    let (mut key, mut shift) = (0, 0);
    for (field, width) in fields.into_iter().zip(key_widths(t)) {
        key |= field << shift;
        shift += width;
    }
    debug_assert!(shift <= u32::BITS, "a place key of {shift} bits");
    key
}

/// The transfer class for each count of leading zeros of two keys' XOR:
/// the field holding the highest differing bit names the nearest level
/// the two CPUs do not share.
fn class_by_lz(t: &Topology, by_node_pair: bool) -> [u8; 33] {
    let mut classes = [0; 33];
    let widths = key_widths(t);
    for (lz, class) in classes.iter_mut().enumerate().take(32) {
        let bit = 31 - lz as u32;
        // Differing in the thread field: SMT siblings (class 1); in the
        // core field: the same LLC (2); ... in the socket field: remote.
        let mut top = 0;
        let field = widths.iter().position(|&w| {
            top += w;
            bit < top
        });
        *class = match field {
            Some(f) if f < 4 => f as u8 + 1,
            _ if by_node_pair => BY_NODE_PAIR,
            _ => 5,
        };
    }
    classes
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

    /// The transfer the walk down two CPUs' places gives (core, LLC, node,
    /// socket, then the node pair), and its data leg by the multiply the
    /// forward fraction stands for: what the packed keys and the class
    /// table must reproduce.
    fn by_places(m: &Machine, c: &CostNs, from: u32, to: u32) -> Transfer {
        let lt = &m.costs.line_transfer;
        let half = |ns: f64| {
            if c.ll_sc {
                (ns / 2.0).round() as u64
            } else {
                ns.round() as u64
            }
        };
        let (a, b) = (m.topology.place(from), m.topology.place(to));
        let whole = if from == to {
            lt.local.nanos()
        } else if a.core == b.core {
            half(lt.smt_sibling.ns)
        } else if a.llc == b.llc {
            half(lt.same_llc.ns)
        } else if a.node == b.node {
            half(lt.same_node.ns)
        } else if a.socket == b.socket {
            half(lt.same_socket.ns)
        } else {
            // With a node distance table, the figure for the nodes'
            // distance if the machine gives one.
            let by_node = m.topology.node_distance.as_ref().and_then(|table| {
                let d = table[a.node as usize][b.node as usize];
                lt.by_node_distance.iter().find(|c| c.distance == d)
            });
            half(by_node.map_or(lt.cross_socket.ns, |c| c.ns))
        };
        let forward_1024 = (m.coherence.forward_fraction.clamp(0.0, 1.0) * 1024.0).round() as u64;
        let busy = m.coherence.occupancy.ns + m.coherence.occupancy_per_transfer * whole as f64;
        Transfer {
            whole,
            data_leg: (whole * forward_1024).div_ceil(1024),
            busy: busy.round() as u64,
        }
    }

    /// Every preset (both SMT numberings, a node distance table, LL/SC),
    /// and odd-sized levels whose key fields round up: every pair of CPUs
    /// (a sample of the large ones) gets the same transfer from the class
    /// table as from walking their places.
    #[test]
    fn the_class_table_gives_every_pair_its_transfer_by_places() {
        let mut machines: Vec<Machine> = smpsim_machine::preset_names()
            .map(|n| smpsim_machine::preset(n).unwrap().unwrap())
            .collect();
        let mut odd = smpsim_machine::preset("opteron-6172-48").unwrap().unwrap();
        odd.topology.llcs_per_node = 3;
        odd.topology.cores_per_llc = 5;
        odd.topology.threads_per_core = 3;
        odd.coherence.forward_fraction = 0.37;
        machines.push(odd.clone());
        // Threads of a core numbered adjacent, as power8-192's are.
        let power8 = smpsim_machine::preset("power8-192").unwrap().unwrap();
        odd.topology.smt_numbering = power8.topology.smt_numbering;
        odd.topology.node_distance = None;
        machines.push(odd);
        for m in &machines {
            let c = CostNs::new(m);
            let n = m.nr_cpus() as u32;
            // Every pair up to 200 CPUs, else CPUs a prime stride apart.
            let stride = if n <= 200 { 1 } else { 7 };
            for from in (0..n).step_by(stride) {
                for to in 0..n {
                    let want = by_places(m, &c, from, to);
                    assert_eq!(c.transfer(from, to), want, "{from}->{to} on {m:?}");
                    assert_eq!(c.line_transfer(from, to), want.whole);
                    assert_eq!(c.forwarded(from, to), want.data_leg);
                }
            }
        }
    }
}
