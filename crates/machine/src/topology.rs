//! Sockets, NUMA nodes, last-level-cache groups, cores and SMT threads.

use serde::Deserialize;

pub type CpuId = u32;

/// How CPUs of one core are numbered.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SmtNumbering {
    /// x86: cpu `i` and `i + nr_cores` are siblings.
    #[default]
    SiblingLast,
    /// POWER: the threads of core `c` are `c * smt .. c * smt + smt`.
    SiblingAdjacent,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub sockets: u32,
    pub numa_nodes_per_socket: u32,
    /// Last-level-cache groups (AMD CCX, Intel: 1 per socket) per NUMA node.
    pub llcs_per_node: u32,
    pub cores_per_llc: u32,
    pub threads_per_core: u32,
    #[serde(default)]
    pub smt_numbering: SmtNumbering,
    /// The firmware's node distance table (ACPI SLIT, as `numactl
    /// --hardware` prints it): `node_distance[a][b]`, 10 on the diagonal,
    /// one row per NUMA node. Machines whose nodes are several hops apart
    /// (rings, twisted ladders, glued blades) give it with a line-transfer
    /// cost per distance; without it every pair of sockets is one distance.
    #[serde(default)]
    pub node_distance: Option<Vec<Vec<u32>>>,
    /// Core types of an asymmetric machine (big.LITTLE, hybrid x86 P/E
    /// cores): each a CPU range with its capacity. CPUs no core type lists
    /// have the full capacity, 1024. Empty: every CPU is alike.
    #[serde(default)]
    pub core_types: Vec<CoreType>,
    /// How much slower work runs on an SMT thread while its sibling is busy.
    #[serde(default)]
    pub smt_corun: Option<SmtCorun>,
}

/// `SCHED_CAPACITY_SCALE`: the capacity of the machine's fastest CPU.
pub const SCHED_CAPACITY_SCALE: u32 = 1024;

/// One kind of core and the CPUs that are of it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CoreType {
    pub name: String,
    /// A CPU list: `"0-15"`, `"0,2,4-7"`.
    pub cpus: String,
    /// `arch_scale_cpu_capacity()`: the CPU's speed relative to the
    /// machine's fastest, which is 1024 (`SCHED_CAPACITY_SCALE`). `work`
    /// on a CPU of capacity 512 takes twice as long.
    pub capacity: u32,
    pub source: String,
}

/// The SMT co-run slowdown: `work` on a thread whose sibling is busy
/// takes `factor` times as long.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SmtCorun {
    pub factor: f64,
    pub source: String,
}

/// Where a CPU sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuPlace {
    pub socket: u32,
    pub node: u32,
    pub llc: u32,
    pub core: u32,
    pub thread: u32,
}

/// Topological distance between two CPUs, nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    Local,
    SmtSibling,
    SameLlc,
    SameNode,
    SameSocket,
    CrossSocket,
}

impl Topology {
    /// A flat machine of `cpus` single-threaded cores in one LLC.
    pub fn flat(cpus: u32) -> Self {
        Topology {
            sockets: 1,
            numa_nodes_per_socket: 1,
            llcs_per_node: 1,
            cores_per_llc: cpus,
            threads_per_core: 1,
            smt_numbering: SmtNumbering::SiblingLast,
            node_distance: None,
            core_types: Vec::new(),
            smt_corun: None,
        }
    }

    /// Every CPU's capacity (1024 unless a core type says otherwise).
    /// Assumes a validated topology.
    pub fn capacities(&self) -> Vec<u32> {
        let mut out = vec![SCHED_CAPACITY_SCALE; self.nr_cpus()];
        for ct in &self.core_types {
            if let Ok(cpus) = parse_cpu_list(&ct.cpus) {
                for c in cpus {
                    if let Some(x) = out.get_mut(c as usize) {
                        *x = ct.capacity;
                    }
                }
            }
        }
        out
    }

    /// The topology's shape as reports print it: `2 sockets x 1 nodes x 1
    /// LLCs x 8 cores x 2 threads = 32 CPUs`.
    pub fn shape(&self) -> String {
        format!(
            "{} sockets x {} nodes x {} LLCs x {} cores x {} threads = {} CPUs",
            self.sockets,
            self.numa_nodes_per_socket,
            self.llcs_per_node,
            self.cores_per_llc,
            self.threads_per_core,
            self.nr_cpus()
        )
    }

    pub fn nr_nodes(&self) -> usize {
        (self.sockets * self.numa_nodes_per_socket) as usize
    }

    /// The SLIT distance between the nodes of two CPUs, if the machine
    /// gives a table.
    pub fn node_distance(&self, a: CpuId, b: CpuId) -> Option<u32> {
        let table = self.node_distance.as_ref()?;
        let (na, nb) = (self.place(a).node as usize, self.place(b).node as usize);
        Some(table[na][nb])
    }

    pub fn nr_cores(&self) -> usize {
        (self.sockets * self.numa_nodes_per_socket * self.llcs_per_node * self.cores_per_llc)
            as usize
    }

    pub fn nr_cpus(&self) -> usize {
        self.nr_cores() * self.threads_per_core as usize
    }

    /// Checks that every level has at least one member.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("sockets", self.sockets),
            ("numa_nodes_per_socket", self.numa_nodes_per_socket),
            ("llcs_per_node", self.llcs_per_node),
            ("cores_per_llc", self.cores_per_llc),
            ("threads_per_core", self.threads_per_core),
        ] {
            if v == 0 {
                return Err(format!("topology.{name} must be at least 1"));
            }
        }
        let cpus = [
            self.numa_nodes_per_socket,
            self.llcs_per_node,
            self.cores_per_llc,
            self.threads_per_core,
        ]
        .iter()
        .try_fold(self.sockets as u64, |n, &v| n.checked_mul(v as u64));
        if cpus.is_none_or(|n| n > 1 << 20) {
            return Err("more than 1,048,576 CPUs is not supported".into());
        }
        if let Some(table) = &self.node_distance {
            let n = self.nr_nodes();
            if table.len() != n || table.iter().any(|row| row.len() != n) {
                return Err(format!(
                    "topology.node_distance must be a {n} x {n} table (one row and column per NUMA node)"
                ));
            }
            for (a, row) in table.iter().enumerate() {
                if row[a] != 10 {
                    return Err(format!(
                        "topology.node_distance[{a}][{a}] must be 10 (a node's distance to itself)"
                    ));
                }
                if let Some(b) = (0..n).find(|&b| b != a && row[b] <= 10) {
                    return Err(format!(
                        "topology.node_distance[{a}][{b}] must be above 10 (only a node itself is local)"
                    ));
                }
            }
        }
        self.validate_capacity()
    }

    /// Core types: a capacity in 1..=1024, CPUs that exist, none listed by
    /// two types; an SMT co-run factor of at least 1.
    fn validate_capacity(&self) -> Result<(), String> {
        let nr = self.nr_cpus();
        let mut seen = vec![false; if self.core_types.is_empty() { 0 } else { nr }];
        for (i, ct) in self.core_types.iter().enumerate() {
            if !(1..=SCHED_CAPACITY_SCALE).contains(&ct.capacity) {
                return Err(format!(
                    "topology.core_types[{i}].capacity = {}: a capacity is between 1 and 1024 (SCHED_CAPACITY_SCALE, the fastest CPU)",
                    ct.capacity
                ));
            }
            let cpus = parse_cpu_list(&ct.cpus)
                .map_err(|e| format!("topology.core_types[{i}].cpus: {e}"))?;
            for c in cpus {
                if c as usize >= nr {
                    return Err(format!(
                        "topology.core_types[{i}].cpus: CPU {c} does not exist (the machine has CPUs 0-{})",
                        nr - 1
                    ));
                }
                if std::mem::replace(&mut seen[c as usize], true) {
                    return Err(format!(
                        "topology.core_types[{i}].cpus: CPU {c} already has a core type"
                    ));
                }
            }
        }
        if let Some(s) = &self.smt_corun {
            if !s.factor.is_finite() || !(1.0..=100.0).contains(&s.factor) {
                return Err(format!(
                    "topology.smt_corun.factor = {}: a slowdown between 1 (none) and 100",
                    s.factor
                ));
            }
        }
        Ok(())
    }

    pub fn place(&self, cpu: CpuId) -> CpuPlace {
        let cores = self.nr_cores() as u32;
        let smt = self.threads_per_core;
        let (core, thread) = match self.smt_numbering {
            SmtNumbering::SiblingLast => (cpu % cores, cpu / cores),
            SmtNumbering::SiblingAdjacent => (cpu / smt, cpu % smt),
        };
        let llc = core / self.cores_per_llc;
        let node = llc / self.llcs_per_node;
        let socket = node / self.numa_nodes_per_socket;
        CpuPlace {
            socket,
            node,
            llc,
            core,
            thread,
        }
    }

    pub fn distance(&self, a: CpuId, b: CpuId) -> Distance {
        if a == b {
            return Distance::Local;
        }
        let (pa, pb) = (self.place(a), self.place(b));
        if pa.core == pb.core {
            Distance::SmtSibling
        } else if pa.llc == pb.llc {
            Distance::SameLlc
        } else if pa.node == pb.node {
            Distance::SameNode
        } else if pa.socket == pb.socket {
            Distance::SameSocket
        } else {
            Distance::CrossSocket
        }
    }

    /// The SMT siblings of `cpu`'s core, `cpu` included, in thread order.
    pub fn core_siblings(&self, cpu: CpuId) -> Vec<CpuId> {
        let cores = self.nr_cores() as u32;
        let smt = self.threads_per_core;
        let place = self.place(cpu);
        (0..smt)
            .map(|t| match self.smt_numbering {
                SmtNumbering::SiblingLast => place.core + t * cores,
                SmtNumbering::SiblingAdjacent => place.core * smt + t,
            })
            .collect()
    }
}

/// A CPU list such as `"0-3,8,10-11"`.
pub fn parse_cpu_list(t: &str) -> Result<Vec<CpuId>, String> {
    let mut out = Vec::new();
    for piece in t.split(',') {
        let num = |s: &str| s.trim().parse::<u32>().ok();
        let (lo, hi) = match piece.split_once('-') {
            Some((a, b)) => (num(a), num(b)),
            None => (num(piece), num(piece)),
        };
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Err(format!(
                "expected a CPU number or range such as `4-7`, found `{}`",
                piece.trim()
            ));
        };
        if lo > hi {
            return Err(format!("CPU range `{}` is backwards", piece.trim()));
        }
        if hi - lo >= 1 << 21 {
            return Err("CPU range is too large".into());
        }
        out.extend(lo..=hi);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_names_each_level_and_the_cpu_count() {
        let mut t = Topology::flat(8);
        t.threads_per_core = 2;
        assert_eq!(
            t.shape(),
            "1 sockets x 1 nodes x 1 LLCs x 8 cores x 2 threads = 16 CPUs"
        );
    }

    fn turin_like() -> Topology {
        Topology {
            sockets: 2,
            numa_nodes_per_socket: 1,
            llcs_per_node: 12,
            cores_per_llc: 8,
            threads_per_core: 2,
            smt_numbering: SmtNumbering::SiblingLast,
            node_distance: None,
            core_types: Vec::new(),
            smt_corun: None,
        }
    }

    #[test]
    fn x86_numbering_puts_siblings_half_the_machine_apart() {
        let t = turin_like();
        assert_eq!(t.nr_cpus(), 384);
        assert_eq!(t.distance(0, 192), Distance::SmtSibling);
        assert_eq!(t.distance(0, 7), Distance::SameLlc);
        assert_eq!(t.distance(0, 8), Distance::SameNode);
        assert_eq!(t.distance(0, 96), Distance::CrossSocket);
        assert_eq!(t.core_siblings(193), vec![1, 193]);
    }

    #[test]
    fn power_numbering_keeps_threads_adjacent() {
        let t = Topology {
            sockets: 2,
            numa_nodes_per_socket: 1,
            llcs_per_node: 25,
            cores_per_llc: 1,
            threads_per_core: 8,
            smt_numbering: SmtNumbering::SiblingAdjacent,
            node_distance: None,
            core_types: Vec::new(),
            smt_corun: None,
        };
        assert_eq!(t.nr_cpus(), 400);
        assert_eq!(t.distance(0, 7), Distance::SmtSibling);
        assert_eq!(t.distance(0, 8), Distance::SameNode);
        assert_eq!(t.core_siblings(9), (8..16).collect::<Vec<_>>());
        assert_eq!(t.place(399).socket, 1);
    }
}
