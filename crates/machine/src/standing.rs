//! What a machine's figures rest on: which of its costs are measured and
//! which assumed, and how far its contended lines can be trusted, from the
//! global contention rules' leave-one-machine-out table
//! (`contention.toml`, written by the kernel crate's `contention` test).

use std::fmt;

use serde::Deserialize;

use crate::Machine;

/// `contention.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentionTable {
    pub rules: GlobalRules,
    pub left_out: LeftOut,
    #[serde(default, rename = "machine")]
    pub machines: Vec<Checked>,
}

/// The global contention rules (`Coherence`'s defaults).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalRules {
    pub occupancy_ns: f64,
    pub occupancy_per_transfer: f64,
    pub forward_fraction: f64,
    /// 0 when absent: the line leaves its owner at the next request.
    #[serde(default)]
    pub snoop_fraction: f64,
    pub source: String,
}

/// The rules' error on machines left out of their fit.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeftOut {
    /// Median over every point of every machine, as a factor (x1.3).
    pub median: f64,
    /// The largest per-machine median, and which machine.
    pub worst_machine: f64,
    pub worst_machine_id: String,
}

/// A machine whose own contended curves the rules were checked on.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checked {
    pub preset: String,
    pub data: String,
    pub curves: Vec<String>,
    pub points: u32,
    /// Left out of the fit: the median and worst factor between model and
    /// published over its points.
    pub median: f64,
    pub worst: f64,
}

const TABLE: &str = include_str!("../contention.toml");

/// The embedded table (a bug in smpsim if it does not parse: tested),
/// parsed once.
pub fn contention_table() -> &'static ContentionTable {
    static PARSED: std::sync::OnceLock<ContentionTable> = std::sync::OnceLock::new();
    PARSED.get_or_init(|| toml::from_str(TABLE).expect("contention.toml parses"))
}

/// How far a machine's contended lines can be trusted.
#[derive(Clone, Debug, PartialEq)]
pub enum Contended {
    /// Its own curves were predicted by rules fitted without them.
    Checked {
        curves: Vec<String>,
        points: u32,
        median: f64,
        worst: f64,
    },
    /// No curve of its own: the global rules' error on machines left out.
    Extrapolated { median: f64, worst_machine: f64 },
}

/// A machine's standing.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    /// Costs measured (idle) or documented, by name.
    pub measured: Vec<&'static str>,
    /// Costs assumed, by name.
    pub assumed: Vec<&'static str>,
    pub contended: Contended,
}

impl Machine {
    /// What this machine's figures rest on.
    pub fn standing(&self) -> Standing {
        let (mut measured, mut assumed) = (Vec::new(), Vec::new());
        for (name, cost) in self.cost_list() {
            let src = cost.source.trim_start();
            if src.starts_with("unused") {
                continue;
            }
            if src.starts_with("assumed") || src.starts_with("global") {
                // The global rules are listed apart (contended, below).
                if !name.starts_with("coherence.") {
                    assumed.push(name);
                }
            } else {
                measured.push(name);
            }
        }
        let table = contention_table();
        let contended = match table.machines.iter().find(|c| c.preset == self.name) {
            Some(c) => Contended::Checked {
                curves: c.curves.clone(),
                points: c.points,
                median: c.median,
                worst: c.worst,
            },
            None => Contended::Extrapolated {
                median: table.left_out.median,
                worst_machine: table.left_out.worst_machine,
            },
        };
        Standing {
            measured,
            assumed,
            contended,
        }
    }
}

impl fmt::Display for Contended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contended::Checked {
                curves,
                points,
                median,
                worst,
            } => write!(
                f,
                "checked on {} contended curve{} ({}, {points} points) predicted without them: median x{median:.2}, worst x{worst:.2}",
                curves.len(),
                if curves.len() == 1 { "" } else { "s" },
                curves.join(", ")
            ),
            Contended::Extrapolated {
                median,
                worst_machine,
            } => write!(
                f,
                "no contended curve of its own: extrapolated from the global rules, expected error x{median:.2} (median over machines left out of the fit; x{worst_machine:.2} on the worst)"
            ),
        }
    }
}

impl fmt::Display for Standing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} costs measured or documented, {} assumed",
            self.measured.len(),
            self.assumed.len()
        )?;
        if !self.assumed.is_empty() {
            write!(f, " ({})", self.assumed.join(", "))?;
        }
        write!(f, "; contended lines: {}", self.contended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_names_presets() {
        let t = contention_table();
        for c in &t.machines {
            assert!(
                crate::preset(&c.preset).is_some(),
                "contention.toml names {}",
                c.preset
            );
            assert!(c.median >= 1.0 && c.worst >= c.median, "{c:?}");
        }
    }

    /// How contention behaves is global: a preset documents its home's
    /// kind at most, never a fitted number of its own.
    #[test]
    fn no_preset_carries_a_contention_constant() {
        for name in crate::preset_names() {
            let text = crate::preset_source(name).unwrap();
            for key in ["forward_fraction", "occupancy", "snoop_fraction"] {
                assert!(
                    !text.lines().any(|l| l.trim_start().starts_with(key)
                        || l.contains(&format!("coherence.{key}"))),
                    "{name} sets {key}"
                );
            }
            assert!(!text.contains("fitted"), "{name} has a fitted figure");
        }
    }

    #[test]
    fn every_preset_states_its_standing() {
        for name in crate::preset_names() {
            let m = crate::preset(name).unwrap().unwrap();
            let s = m.standing();
            let text = s.to_string();
            assert!(text.contains("contended lines:"), "{name}: {text}");
            assert!(!s.measured.is_empty(), "{name}: nothing measured");
        }
    }
}
