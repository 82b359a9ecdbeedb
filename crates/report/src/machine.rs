//! `smpsim machine NAME`: a machine preset described, its topology and
//! every cost with its source.

use std::fmt::Write;

use smpsim_machine::{AtomicKind, Machine};

/// The preset's description, topology, costs (each with its source) and
/// standing, one per line.
pub fn describe(m: &Machine) -> String {
    let mut s = String::new();
    macro_rules! say {
        ($($arg:tt)*) => {
            let _ = writeln!(s, $($arg)*);
        };
    }
    let t = &m.topology;
    say!("{}: {}", m.name, m.description);
    say!("topology: {}", t.shape());
    if let Some(table) = &t.node_distance {
        say!("node distances (SLIT):");
        for (n, row) in table.iter().enumerate() {
            let row: Vec<String> = row.iter().map(|d| format!("{d:>3}")).collect();
            say!("  node {n:<3} {}", row.join(" "));
        }
    }
    say!("{}", smpsim_machine::RANGE_NOTE);
    for (name, cost) in m.cost_list() {
        let range = cost.range_text();
        say!(
            "  {name:<28} {:>8} ns  {range:<22} {}",
            cost.ns,
            cost.source
        );
    }
    for c in &m.costs.line_transfer.by_node_distance {
        let name = format!("line_transfer.node_distance {}", c.distance);
        let range = c
            .range
            .map_or("-".into(), |[lo, hi]| format!("[{lo} - {hi}]"));
        say!("  {name:<28} {:>8} ns  {range:<22} {}", c.ns, c.source);
    }
    if !m.idle.source.is_empty() {
        say!(
            "  {:<28} {:>11}  {}",
            "idle.polling",
            m.idle.polling,
            m.idle.source
        );
    }
    if !m.atomics.source.is_empty() {
        say!(
            "  {:<28} {:>11}  {}",
            "atomics.kind",
            m.atomics.kind.name(),
            m.atomics.source
        );
    }
    if m.atomics.kind == AtomicKind::LlSc {
        say!(
            "  {:<28} {:>11}  {}",
            "atomics.load_reserve",
            m.atomics.load_reserve.name(),
            m.atomics.load_reserve_source
        );
    }
    let c = &m.coherence;
    say!(
        "  {:<28} {:>11}  {}",
        "coherence.home",
        c.home.name(),
        c.home_source
    );
    say!(
        "  {:<28} {:>11}  {}",
        "coherence.occupancy_per_transfer",
        c.occupancy_per_transfer,
        c.occupancy_per_transfer_source
    );
    say!(
        "  {:<28} {:>11}  {}",
        "coherence.forward_fraction",
        c.forward_fraction,
        c.forward_fraction_source
    );
    say!(
        "  {:<28} {:>11}  {}",
        "coherence.snoop_fraction",
        c.snoop_fraction,
        c.snoop_fraction_source
    );
    say!("standing: {}", m.standing());
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_global_contention_rule_is_printed_with_its_source() {
        let m = smpsim_machine::preset("x86-16").unwrap().unwrap();
        let text = describe(&m);
        let c = &m.coherence;
        for (name, value, source) in [
            (
                "coherence.occupancy_per_transfer",
                c.occupancy_per_transfer,
                &c.occupancy_per_transfer_source,
            ),
            (
                "coherence.forward_fraction",
                c.forward_fraction,
                &c.forward_fraction_source,
            ),
            (
                "coherence.snoop_fraction",
                c.snoop_fraction,
                &c.snoop_fraction_source,
            ),
        ] {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(name))
                .unwrap_or_else(|| panic!("no {name} in {text}"));
            assert!(
                line.contains(&value.to_string()) && line.contains(source.as_str()),
                "{line}"
            );
        }
    }
}
