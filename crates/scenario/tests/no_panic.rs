//! Loading never panics, whatever the input.

use std::path::Path;

use proptest::prelude::*;

const SEED: &str = include_str!("data/membarrier.toml");
/// Spinlocks, cross-CPU calls to many CPUs, machine costs, log-normal.
const SEED_SMP: &str = include_str!("data/tlb_shootdown.toml");

/// Characters that tend to produce interesting near-miss documents.
const ALPHABET: &[char] = &[
    '"', '\'', '[', ']', '{', '}', '=', ',', '.', '-', '0', '1', '9', 'a', 's', 'u', '(', ')',
    '\n', ' ', '#', 'é',
];

fn mutate(text: &str, edits: &[(usize, u8, usize)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(pos, kind, c) in edits {
        if chars.is_empty() {
            break;
        }
        let pos = pos % chars.len();
        let c = ALPHABET[c % ALPHABET.len()];
        match kind % 4 {
            0 => {
                chars.remove(pos);
            }
            1 => chars.insert(pos, c),
            2 => chars[pos] = c,
            _ => {
                // Delete a run, like a careless edit.
                let end = (pos + 1 + c as usize % 20).min(chars.len());
                chars.drain(pos..end);
            }
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn load_never_panics(edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..6)) {
        let text = mutate(SEED, &edits);
        if let Ok(scn) = smpsim_scenario::parse(Path::new("m.toml"), text) {
            for v in scn.variant_names() {
                let _ = scn.compile(Some(v), &[]);
            }
        }
    }

    #[test]
    fn sets_never_panic(key in "[a-z_.]{0,30}", value in "\\PC{0,12}") {
        let scn = smpsim_scenario::parse(Path::new("m.toml"), SEED.to_string()).unwrap();
        for k in [key.as_str(), "tasks.hammer.per_cpu", "scenario.duration", "machine.topology.sockets", "objects.SERIALIZE_IPI.to", "tasks.hammer.code"] {
            if let Err(e) = scn.compile(Some("percpu-mutex"), &[(k.to_string(), value.clone())]) {
                let _ = e.to_string();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn load_smp_never_panics(edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..6)) {
        let text = mutate(SEED_SMP, &edits);
        if let Ok(scn) = smpsim_scenario::parse(Path::new("t.toml"), text) {
            for v in scn.variant_names() {
                let _ = scn.compile(Some(v), &[]);
            }
        }
    }
}

#[test]
fn smp_seed_is_valid() {
    let scn = smpsim_scenario::parse(Path::new("t.toml"), SEED_SMP.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scn.variant_names().count(), 2);
}
