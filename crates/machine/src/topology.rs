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
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn turin_like() -> Topology {
        Topology {
            sockets: 2,
            numa_nodes_per_socket: 1,
            llcs_per_node: 12,
            cores_per_llc: 8,
            threads_per_core: 2,
            smt_numbering: SmtNumbering::SiblingLast,
            node_distance: None,
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
        };
        assert_eq!(t.nr_cpus(), 400);
        assert_eq!(t.distance(0, 7), Distance::SmtSibling);
        assert_eq!(t.distance(0, 8), Distance::SameNode);
        assert_eq!(t.core_siblings(9), (8..16).collect::<Vec<_>>());
        assert_eq!(t.place(399).socket, 1);
    }
}
