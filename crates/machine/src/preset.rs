//! Built-in machine presets, embedded from `presets/*.toml`.

use crate::Machine;

const PRESETS: &[(&str, &str)] = &[
    (
        "amd-turin-384",
        include_str!("../presets/amd-turin-384.toml"),
    ),
    ("generic-x86", include_str!("../presets/generic-x86.toml")),
    (
        "intel-spr-224",
        include_str!("../presets/intel-spr-224.toml"),
    ),
    ("x86-16", include_str!("../presets/x86-16.toml")),
    ("power8-192", include_str!("../presets/power8-192.toml")),
    (
        "ppc64-400-smt8",
        include_str!("../presets/ppc64-400-smt8.toml"),
    ),
];

/// A preset failed to parse: a bug in smpsim, reported with the location.
#[derive(Debug)]
pub struct PresetError {
    pub name: String,
    pub message: String,
}

pub fn preset_names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|(n, _)| *n)
}

/// The TOML text of a preset, for callers that merge overrides into it.
pub fn preset_source(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

pub fn preset(name: &str) -> Option<Result<Machine, PresetError>> {
    let text = preset_source(name)?;
    Some(toml::from_str::<Machine>(text).map_err(|e| PresetError {
        name: name.to_string(),
        message: e.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_every_cost_has_a_source() {
        for name in preset_names() {
            let m = preset(name)
                .unwrap()
                .unwrap_or_else(|e| panic!("{}", e.message));
            m.topology.validate().unwrap();
            for (cost, c) in m.cost_list() {
                assert!(!c.source.trim().is_empty(), "{name}: {cost} has no source");
                assert!(c.ns >= 0.0, "{name}: {cost} negative");
            }
        }
    }
}
