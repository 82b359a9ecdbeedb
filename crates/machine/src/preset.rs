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
    (
        "opteron-6172-48",
        include_str!("../presets/opteron-6172-48.toml"),
    ),
    (
        "xeon-e7-8867l-80",
        include_str!("../presets/xeon-e7-8867l-80.toml"),
    ),
    ("amd-milan-96", include_str!("../presets/amd-milan-96.toml")),
    (
        "xeon-e7-8895v3-144",
        include_str!("../presets/xeon-e7-8895v3-144.toml"),
    ),
    (
        "xeon-e5-2680v4-56",
        include_str!("../presets/xeon-e5-2680v4-56.toml"),
    ),
    (
        "xeon-d2191-36",
        include_str!("../presets/xeon-d2191-36.toml"),
    ),
    (
        "xeon-gold6130-64",
        include_str!("../presets/xeon-gold6130-64.toml"),
    ),
    (
        "core-i7-6700hq-4",
        include_str!("../presets/core-i7-6700hq-4.toml"),
    ),
    (
        "core-i5-1035g4-4",
        include_str!("../presets/core-i5-1035g4-4.toml"),
    ),
    ("graviton2-16", include_str!("../presets/graviton2-16.toml")),
    (
        "amd-epyc-zen5-kvm-2",
        include_str!("../presets/amd-epyc-zen5-kvm-2.toml"),
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

    /// A preset file left out of `PRESETS` would be silently ignored: every
    /// `presets/NAME.toml` is registered as NAME, with that file's text.
    #[test]
    fn every_preset_file_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("presets");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".toml") else {
                continue;
            };
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(
                preset_source(stem),
                Some(text.as_str()),
                "presets/{name} is not registered as `{stem}` in PRESETS (crates/machine/src/preset.rs)"
            );
        }
        assert_eq!(files, PRESETS.len(), "PRESETS names a preset twice");
    }

    #[test]
    fn every_preset_parses_and_every_cost_has_a_source() {
        for name in preset_names() {
            let m = preset(name)
                .unwrap()
                .unwrap_or_else(|e| panic!("{}", e.message));
            m.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(m.name, name, "a preset's name is its key");
            for (cost, c) in m.cost_list() {
                assert!(!c.source.trim().is_empty(), "{name}: {cost} has no source");
                assert!(c.ns >= 0.0, "{name}: {cost} negative");
            }
            for c in &m.costs.line_transfer.by_node_distance {
                assert!(
                    !c.source.trim().is_empty(),
                    "{name}: by_node_distance {} has no source",
                    c.distance
                );
                assert!(
                    c.ns >= 0.0,
                    "{name}: by_node_distance {} negative",
                    c.distance
                );
            }
        }
    }

    #[test]
    fn node_distance_tables_are_symmetric() {
        for name in preset_names() {
            let m = preset(name).unwrap().unwrap();
            let Some(t) = &m.topology.node_distance else {
                continue;
            };
            for (a, row) in t.iter().enumerate() {
                for (b, &d) in row.iter().enumerate() {
                    assert_eq!(d, t[b][a], "{name}: node_distance[{a}][{b}]");
                }
            }
        }
    }

    #[test]
    fn sosp13_and_milan_topologies() {
        let cpus = |n: &str| preset(n).unwrap().unwrap().nr_cpus();
        assert_eq!(cpus("opteron-6172-48"), 48);
        assert_eq!(cpus("xeon-e7-8867l-80"), 80);
        assert_eq!(cpus("amd-milan-96"), 96);

        // Opteron: cpus 0-5 die 0, 6-11 die 1 (same package), 12-17 node 2.
        let o = preset("opteron-6172-48").unwrap().unwrap();
        let t = &o.topology;
        assert_eq!(
            (t.place(5).node, t.place(6).node, t.place(12).node),
            (0, 1, 2)
        );
        assert_eq!(t.place(11).socket, 0);
        assert_eq!(t.place(12).socket, 1);
        assert_eq!(t.node_distance(0, 12), Some(16));
        assert_eq!(t.node_distance(0, 18), Some(22));
        let ns = |m: &Machine, a, b| m.line_transfer(a, b);
        assert_eq!(ns(&o, 0, 5), 39);
        assert_eq!(ns(&o, 0, 6), 77);
        assert_eq!(ns(&o, 0, 12), 82);
        assert_eq!(ns(&o, 0, 18), 120);

        // Xeon: socket i is one hop from i+-1 and i+4, two from the rest.
        let x = preset("xeon-e7-8867l-80").unwrap().unwrap();
        for (s, d) in [
            (1, 15),
            (2, 20),
            (3, 20),
            (4, 15),
            (5, 20),
            (6, 20),
            (7, 15),
        ] {
            assert_eq!(x.topology.node_distance(0, s * 10), Some(d), "socket {s}");
        }
        assert_eq!(ns(&x, 0, 9), 51);
        assert_eq!(ns(&x, 0, 10), 136);
        assert_eq!(ns(&x, 0, 20), 188);
        assert!(x.costs.atomic.is_some());

        // Milan: 6 CCXs of 8 per socket, no atomic surcharge (CAS figures).
        let m = preset("amd-milan-96").unwrap().unwrap();
        assert_eq!((ns(&m, 0, 7), ns(&m, 0, 8), ns(&m, 0, 48)), (23, 108, 197));
        assert!(m.costs.atomic.is_none());
    }
}
