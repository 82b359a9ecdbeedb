//! Machine descriptions: the topology of a host and what cross-CPU
//! operations cost on it.
//!
//! A machine is read from TOML (a built-in preset from `presets/`, or a
//! profile written by `smpsim calibrate`). Every cost is a [`Cost`]: a number
//! of nanoseconds plus the source it came from, so reports can say where each
//! figure in a result originates.
//!
//! CPU numbering follows Linux on x86: the first hardware thread of every
//! core is numbered first, socket by socket, then the second thread of every
//! core (`smt_numbering = "sibling-last"`). POWER numbers the threads of a
//! core adjacently (`"sibling-adjacent"`).

mod preset;
mod standing;
mod topology;

pub use preset::{preset, preset_names, preset_source, PresetError};
pub use standing::{contention_table, Checked, Contended, ContentionTable, Standing};
pub use topology::{
    parse_cpu_list, CoreType, CpuId, CpuPlace, Distance, SmtCorun, Topology, SCHED_CAPACITY_SCALE,
};

use serde::Deserialize;

/// A cost in nanoseconds and where the number comes from.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub ns: f64,
    /// The plausible range of an assumed cost, `[lo, hi]` ns around `ns`,
    /// where a source supports one; without it an assumed cost ranges
    /// over the default ([`DEFAULT_RANGE`]). Bands vary the cost over it.
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    pub source: String,
}

/// The range of an assumed value that states none: from half to twice
/// the value (x0.5 - x2).
pub const DEFAULT_RANGE: (f64, f64) = (0.5, 2.0);

impl Cost {
    pub fn assumed(ns: f64, why: &str) -> Self {
        Cost {
            ns,
            range: None,
            source: format!("assumed: {why}"),
        }
    }
    #[inline]
    pub fn nanos(&self) -> u64 {
        self.ns.round() as u64
    }
    /// Whether the source says the figure is assumed.
    pub fn is_assumed(&self) -> bool {
        self.source.trim_start().starts_with("assumed")
    }
    /// The range a band varies this cost over: the stated one, else for an
    /// assumed cost the default x0.5 - x2; `None` for a measured cost that
    /// states no range (it is not varied).
    pub fn band_range(&self) -> Option<(f64, f64)> {
        match self.range {
            Some([lo, hi]) => Some((lo, hi)),
            None if self.is_assumed() => {
                Some((self.ns * DEFAULT_RANGE.0, self.ns * DEFAULT_RANGE.1))
            }
            None => None,
        }
    }
    /// The range as `smpsim machine` shows it: `[lo - hi]` stated,
    /// `[lo - hi] default` for an assumed cost without one, `-` for a
    /// measured cost (not varied).
    pub fn range_text(&self) -> String {
        match (self.range, self.band_range()) {
            (Some(_), Some((lo, hi))) => format!("[{lo} - {hi}]"),
            (None, Some((lo, hi))) => format!("[{lo} - {hi}] default"),
            _ => "-".into(),
        }
    }
}

/// What `smpsim machine` says of the ranges it shows.
pub const RANGE_NOTE: &str = "range: what a band varies an assumed cost over, as its source states it; an assumed cost that states none ranges x0.5 - x2 (default); a measured cost without a range is not varied";

/// Checks a stated range: finite, not negative, `lo <= ns <= hi`.
fn check_range(name: &str, ns: f64, range: Option<[f64; 2]>) -> Result<(), String> {
    let Some([lo, hi]) = range else {
        return Ok(());
    };
    if !(lo.is_finite() && hi.is_finite() && lo >= 0.0 && hi <= 1e15) {
        return Err(format!(
            "costs.{name}.range = [{lo}, {hi}]: a range is two numbers of nanoseconds between 0 and 1e15"
        ));
    }
    if !(lo <= ns && ns <= hi) {
        return Err(format!(
            "costs.{name}.range = [{lo}, {hi}]: the range must hold the cost ({ns} ns): [lo, hi] with lo <= ns <= hi"
        ));
    }
    Ok(())
}

/// Cache-line transfer cost by topology distance: the latency of a
/// read-for-ownership that finds the line in another CPU's cache.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LineTransfer {
    /// Line already held by this CPU.
    pub local: Cost,
    pub smt_sibling: Cost,
    /// Same last-level cache (core complex).
    pub same_llc: Cost,
    /// Same NUMA node, different LLC.
    pub same_node: Cost,
    /// Same socket, different NUMA node.
    pub same_socket: Cost,
    /// Between sockets; with a `topology.node_distance` table, only the
    /// default for distances that `by_node_distance` does not list.
    pub cross_socket: Cost,
    /// Between CPUs of different NUMA nodes, by the nodes' SLIT distance
    /// (machines with several hop counts between sockets).
    #[serde(default)]
    pub by_node_distance: Vec<DistanceCost>,
}

/// The line-transfer cost between nodes at one SLIT distance.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DistanceCost {
    pub distance: u32,
    pub ns: f64,
    /// As [`Cost::range`].
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    pub source: String,
}

/// The cost table of a machine.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    pub line_transfer: LineTransfer,
    /// Sender side of an IPI (APIC ICR write, or doorbell).
    pub ipi_send: Cost,
    /// From the send until the target enters its handler (IRQs on).
    pub ipi_latency: Cost,
    /// Interrupt entry plus exit on the target, excluding the handler body.
    pub irq_entry_exit: Cost,
    /// Syscall entry plus exit (with the host's mitigations).
    pub syscall: Cost,
    /// `__schedule()` switching between two tasks.
    pub context_switch: Cost,
    /// `try_to_wake_up()` work charged to the waker.
    pub wakeup: Cost,
    /// Invalidating one page in the local TLB (`flush_tlb_func`, per page).
    pub tlb_flush_page: Cost,
    /// Full local TLB flush.
    pub tlb_flush_full: Cost,
    /// Extra time for an idle CPU to start running after a wakeup IPI (the
    /// cpuidle exit latency, or a halted vCPU's re-entry). Presets leave it
    /// out (0); `smpsim calibrate` measures it.
    #[serde(default)]
    pub idle_exit: Option<Cost>,
    /// Extra time an atomic read-modify-write (a `lock`ed instruction,
    /// `ldarx/stdcx.`) takes over a plain access once the line is here.
    /// Absent: line transfers already include it (they were measured with
    /// CAS ping-pong).
    #[serde(default)]
    pub atomic: Option<Cost>,
    /// `cpu_relax()`: the spin-wait hint a retry loop runs between attempts
    /// (x86 `PAUSE`, arm64 `YIELD`). Absent: [`default_cpu_relax`].
    #[serde(default)]
    pub cpu_relax: Option<Cost>,
}

/// `cpu_relax()` where the machine states none: the x86 `PAUSE`, which
/// differs by an order of magnitude between generations; the range covers
/// arm64's `YIELD` (a hint of about a cycle) up to Skylake's `PAUSE`.
pub fn default_cpu_relax() -> Cost {
    Cost {
        ns: 40.0,
        range: Some([1.0, 60.0]),
        source: "assumed: x86 PAUSE, about 140 cycles (~40 ns at 3.5 GHz) on Skylake and later, about 10 cycles before (Intel 64 and IA-32 Architectures Optimization Reference Manual, 'Pause Latency in Skylake Microarchitecture'); arm64 cpu_relax() is YIELD, about a cycle".into(),
    }
}

impl Costs {
    /// `cpu_relax()`'s cost: the machine's, else [`default_cpu_relax`].
    pub fn cpu_relax(&self) -> Cost {
        self.cpu_relax.clone().unwrap_or_else(default_cpu_relax)
    }
}

/// How an idle CPU waits for work.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Idle {
    /// The idle task has `TIF_POLLING_NRFLAG` set while it waits
    /// (`MONITOR`/`MWAIT` on the thread flags, or `idle=poll`): a waker
    /// sets `TIF_NEED_RESCHED` with `set_nr_if_polling()` instead of
    /// sending an IPI. False: every wakeup of an idle CPU is an IPI.
    pub polling: bool,
    pub source: String,
}

/// How the machine's atomic read-modify-writes use a cache line.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum AtomicKind {
    /// x86 `lock`-prefixed instructions, arm64 LSE atomics: the RMW is one
    /// read-for-ownership of the line.
    #[default]
    Locked,
    /// Load-linked / store-conditional (powerpc `lwarx`/`stwcx.`, arm64
    /// without LSE `ldxr`/`stxr`): a shared fetch, then an upgrade that
    /// fails if another CPU's store reached the line in between, and the
    /// sequence is retried.
    LlSc,
    /// Armv8.1 LSE atomics on an interconnect that executes them at the
    /// line's home (Arm CMN's HN-F: "far" atomics): an RMW on a line the
    /// CPU does not hold unique is sent to the home and done there, the
    /// line does not move to the core; a no-return atomic (`STADD`, the
    /// kernel's `atomic_inc()`) is posted like a store.
    Far,
}

impl AtomicKind {
    /// The name a machine file uses.
    pub fn name(self) -> &'static str {
        match self {
            AtomicKind::Locked => "locked",
            AtomicKind::LlSc => "ll-sc",
            AtomicKind::Far => "far",
        }
    }
}

/// On an LL/SC machine, what the line does between a CPU's load-reserve
/// and its store-conditional.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LoadReserve {
    /// The reserving CPU keeps the line until its store-conditional is
    /// done (a hardware forward-progress assist): other CPUs' requests
    /// wait, no reservation is lost to them.
    #[default]
    Held,
    /// The line keeps serving requests in arrival order: a load-reserve
    /// served before another CPU's store-conditional loses its
    /// reservation to it and the loop retries (livelock-prone bursts).
    Shared,
}

impl LoadReserve {
    pub fn name(self) -> &'static str {
        match self {
            LoadReserve::Held => "held",
            LoadReserve::Shared => "shared",
        }
    }
}

/// The machine's atomics and where that comes from.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Atomics {
    pub kind: AtomicKind,
    pub source: String,
    /// LL/SC machines only.
    #[serde(default)]
    pub load_reserve: LoadReserve,
    #[serde(default)]
    pub load_reserve_source: String,
}

/// How one cache line serves requests that queue at it (see the kernel
/// crate's `coherence` module). Uncontended latencies (`line_transfer`)
/// do not fix these: they are what a line does when several CPUs wait on
/// it at once.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Coherence {
    /// Of a measured one-way line transfer (request to the owner, data
    /// back), the part still to pay when the request was already waiting
    /// at the owner as the line arrived there: a queued request pays only
    /// the data leg.
    pub forward_fraction: f64,
    pub forward_fraction_source: String,
    /// Whether the line's home serves a request only after the previous
    /// one to the line is done (`blocking`), or accepts one per
    /// `occupancy` while earlier ones are still in flight (`pipelined`).
    pub home: Home,
    pub home_source: String,
    /// `pipelined` homes: how long the home (directory, home agent) is busy
    /// accepting one request, so that reads of a line after a write are
    /// served overlapped: `occupancy` plus `occupancy_per_transfer` times
    /// the request's whole transfer.
    pub occupancy: Cost,
    pub occupancy_per_transfer: f64,
    pub occupancy_per_transfer_source: String,
    /// Of a transfer, how long the next request's snoop takes to reach a
    /// line's owner after the home took it: until then the owner's own
    /// writes to the line hit (0: the line leaves at once).
    pub snoop_fraction: f64,
    pub snoop_fraction_source: String,
}

/// How a line's home orders the requests queued at it.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Home {
    /// One request to a line at a time: the next is taken when the
    /// previous requester has its data (a home that waits for the
    /// requester's completion message before the next transaction).
    Blocking,
    /// A request per `occupancy`; each gets its data a leg later.
    #[default]
    Pipelined,
    /// A snooping fabric that answers a request colliding with one in
    /// flight to the same line with a Retry (POWER): requests complete one
    /// at a time, and a retried request pays a whole transfer again, not
    /// a data leg.
    Retry,
}

impl Home {
    pub fn name(self) -> &'static str {
        match self {
            Home::Blocking => "blocking",
            Home::Pipelined => "pipelined",
            Home::Retry => "retry",
        }
    }
}

impl Default for Coherence {
    /// The global contention rules (`contention.toml`): the same for every
    /// machine that does not document a home of another kind.
    fn default() -> Self {
        let rules = &standing::contention_table().rules;
        let global = |what: &str| format!("global: {what}; {}", rules.source);
        Coherence {
            forward_fraction: rules.forward_fraction,
            forward_fraction_source: global(
                "a request queued at the owner pays this part of a transfer",
            ),
            home: Home::Pipelined,
            home_source: global(
                "a home that keeps taking requests to a line while earlier ones are in flight",
            ),
            occupancy: Cost {
                ns: rules.occupancy_ns,
                range: None,
                source: global("ns a home is busy per request"),
            },
            occupancy_per_transfer: rules.occupancy_per_transfer,
            occupancy_per_transfer_source: global("and this part of the request's whole transfer"),
            snoop_fraction: rules.snoop_fraction,
            snoop_fraction_source: global(
                "the owner keeps writing a line until the next request's snoop reaches it, this part of a transfer after the home took it",
            ),
        }
    }
}

/// Broadcast TLB invalidation: an instruction that invalidates a
/// translation in every CPU's TLB without interrupting them (AMD
/// `INVLPGB`, completed by `TLBSYNC`; arm64 `TLBI ...IS` and `DSB ISH`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Tlb {
    /// The machine has it (`X86_FEATURE_INVLPGB`).
    pub broadcast: bool,
    pub source: String,
    /// Issuing one broadcast invalidation (`INVLPGB`): up to `count_max`
    /// pages, or a whole PCID.
    pub invlpgb: Cost,
    /// Waiting until every invalidation this CPU issued is done on every
    /// CPU (`TLBSYNC`).
    pub tlbsync: Cost,
    /// `invlpgb_count_max`: pages one `INVLPGB` can name (CPUID
    /// 0x80000008 EDX\[15:0\] + 1).
    pub count_max: u32,
}

/// A machine: topology plus costs.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub name: String,
    pub description: String,
    pub topology: Topology,
    pub costs: Costs,
    #[serde(default)]
    pub idle: Idle,
    #[serde(default)]
    pub atomics: Atomics,
    #[serde(default)]
    pub coherence: Coherence,
    /// Broadcast TLB invalidation, if the machine has it.
    #[serde(default)]
    pub tlb: Option<Tlb>,
}

impl Machine {
    pub fn nr_cpus(&self) -> usize {
        self.topology.nr_cpus()
    }

    /// Checks the topology, that every cost is a finite number of
    /// nanoseconds, not negative, and that every node distance has a cost.
    pub fn validate(&self) -> Result<(), String> {
        self.topology.validate()?;
        let by_distance = self
            .costs
            .line_transfer
            .by_node_distance
            .iter()
            .map(|c| ("line_transfer.by_node_distance", c.ns));
        for (name, ns) in self
            .cost_list()
            .into_iter()
            .map(|(n, c)| (n, c.ns))
            .chain(by_distance)
        {
            if !ns.is_finite() || !(0.0..=1e15).contains(&ns) {
                return Err(format!(
                    "costs.{name}.ns = {ns}: a cost is a number of nanoseconds between 0 and 1e15"
                ));
            }
        }
        for (name, c) in self.cost_list() {
            check_range(name, c.ns, c.range)?;
        }
        for c in &self.costs.line_transfer.by_node_distance {
            check_range("line_transfer.by_node_distance", c.ns, c.range)?;
        }
        if let Some(tlb) = &self.tlb {
            if tlb.count_max == 0 || tlb.count_max > 65536 {
                return Err(format!(
                    "tlb.count_max = {}: pages one INVLPGB names, between 1 and 65536",
                    tlb.count_max
                ));
            }
        }
        let f = self.coherence.forward_fraction;
        if !(f > 0.0 && f <= 1.0) {
            return Err(format!(
                "coherence.forward_fraction = {f}: a fraction of a transfer, above 0 and at most 1"
            ));
        }
        let lt = &self.costs.line_transfer;
        if let Some(table) = &self.topology.node_distance {
            for d in table.iter().flatten().filter(|&&d| d != 10) {
                if !lt.by_node_distance.iter().any(|c| c.distance == *d) {
                    return Err(format!(
                        "topology.node_distance uses distance {d}, but costs.line_transfer.by_node_distance has no entry for it"
                    ));
                }
            }
        } else if !lt.by_node_distance.is_empty() {
            return Err(
                "costs.line_transfer.by_node_distance needs a topology.node_distance table".into(),
            );
        }
        Ok(())
    }

    /// Cost of moving a cache line last written by `from` to `to`.
    #[inline]
    pub fn line_transfer(&self, from: CpuId, to: CpuId) -> u64 {
        let lt = &self.costs.line_transfer;
        let distance = self.topology.distance(from, to);
        if distance == Distance::CrossSocket {
            if let Some(d) = self.topology.node_distance(from, to) {
                if let Some(c) = lt.by_node_distance.iter().find(|c| c.distance == d) {
                    return c.ns.round() as u64;
                }
            }
        }
        match distance {
            Distance::Local => lt.local.nanos(),
            Distance::SmtSibling => lt.smt_sibling.nanos(),
            Distance::SameLlc => lt.same_llc.nanos(),
            Distance::SameNode => lt.same_node.nanos(),
            Distance::SameSocket => lt.same_socket.nanos(),
            Distance::CrossSocket => lt.cross_socket.nanos(),
        }
    }

    /// Where a cost of [`Machine::cost_list`] is written in a machine
    /// description (`costs.ipi_latency`, `tlb.invlpgb`): a scenario sets
    /// it as `machine.` and that, `.ns`.
    pub fn cost_path(name: &str) -> String {
        match name.strip_prefix("tlb.") {
            Some(rest) => format!("tlb.{rest}"),
            None if name.starts_with("coherence.") => name.to_string(),
            None => format!("costs.{name}"),
        }
    }

    /// Every cost with its name, for reports and `machine show`.
    pub fn cost_list(&self) -> Vec<(&'static str, &Cost)> {
        let c = &self.costs;
        let lt = &c.line_transfer;
        [
            ("line_transfer.local", &lt.local),
            ("line_transfer.smt_sibling", &lt.smt_sibling),
            ("line_transfer.same_llc", &lt.same_llc),
            ("line_transfer.same_node", &lt.same_node),
            ("line_transfer.same_socket", &lt.same_socket),
            ("line_transfer.cross_socket", &lt.cross_socket),
            ("ipi_send", &c.ipi_send),
            ("ipi_latency", &c.ipi_latency),
            ("irq_entry_exit", &c.irq_entry_exit),
            ("syscall", &c.syscall),
            ("context_switch", &c.context_switch),
            ("wakeup", &c.wakeup),
            ("tlb_flush_page", &c.tlb_flush_page),
            ("tlb_flush_full", &c.tlb_flush_full),
        ]
        .into_iter()
        .chain(c.idle_exit.as_ref().map(|x| ("idle_exit", x)))
        .chain(c.atomic.as_ref().map(|x| ("atomic", x)))
        .chain(c.cpu_relax.as_ref().map(|x| ("cpu_relax", x)))
        .chain(
            self.tlb
                .iter()
                .flat_map(|t| [("tlb.invlpgb", &t.invlpgb), ("tlb.tlbsync", &t.tlbsync)]),
        )
        .chain(std::iter::once((
            "coherence.occupancy",
            &self.coherence.occupancy,
        )))
        .collect()
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    fn with_ipi_latency(table: &str) -> String {
        let text = preset_source("x86-16").unwrap();
        let start = text.find("[costs.ipi_latency]").unwrap();
        let end = start + text[start..].find("[costs.irq_entry_exit]").unwrap();
        format!(
            "{}[costs.ipi_latency]\n{table}\n{}",
            &text[..start],
            &text[end..]
        )
    }

    #[test]
    fn a_stated_range_is_kept_and_an_assumed_cost_without_one_gets_the_default() {
        let text = with_ipi_latency(
            "ns = 1000\nrange = [500, 3000]\nsource = \"assumed: 1-3 us round trip\"",
        );
        let m: Machine = toml::from_str(&text).unwrap();
        m.validate().unwrap();
        assert_eq!(m.costs.ipi_latency.band_range(), Some((500.0, 3000.0)));
        // wakeup: assumed, no range: x0.5 - x2.
        assert_eq!(m.costs.wakeup.band_range(), Some((150.0, 600.0)));
        // syscall: measured, no range: not varied.
        assert_eq!(m.costs.syscall.band_range(), None);
    }

    #[test]
    fn a_range_that_does_not_hold_the_cost_is_refused_by_name() {
        let text = with_ipi_latency("ns = 1000\nrange = [1500, 3000]\nsource = \"assumed: x\"");
        let m: Machine = toml::from_str(&text).unwrap();
        let e = m.validate().unwrap_err();
        assert!(
            e.starts_with("costs.ipi_latency.range = [1500, 3000]: the range must hold"),
            "{e}"
        );
        let text = with_ipi_latency("ns = 1000\nrange = [-1, 3000]\nsource = \"assumed: x\"");
        let m: Machine = toml::from_str(&text).unwrap();
        assert!(m.validate().unwrap_err().contains("between 0 and 1e15"));
    }

    #[test]
    fn a_malformed_range_is_a_located_parse_error() {
        let text = with_ipi_latency("ns = 1000\nrange = [500]\nsource = \"assumed: x\"");
        let e = toml::from_str::<Machine>(&text).unwrap_err().to_string();
        let line = text.lines().position(|l| l == "range = [500]").unwrap() + 1;
        assert!(e.contains(&format!("line {line}")), "{e}");
    }

    #[test]
    fn cost_paths_name_where_a_cost_is_written() {
        assert_eq!(Machine::cost_path("ipi_latency"), "costs.ipi_latency");
        assert_eq!(
            Machine::cost_path("line_transfer.same_llc"),
            "costs.line_transfer.same_llc"
        );
        assert_eq!(Machine::cost_path("tlb.invlpgb"), "tlb.invlpgb");
    }
}
