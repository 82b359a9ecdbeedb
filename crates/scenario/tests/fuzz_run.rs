//! Mutated scenarios never panic, hang or abort: the shipped examples and
//! checks with their numbers replaced by extremes and lines dropped or
//! repeated are parsed, compiled and, when they compile, run briefly
//! (2 ms simulated, at most 200,000 events).
//!
//! `SMPSIM_FUZZ_CASES=N cargo test -p smpsim-scenario --test fuzz_run`
//! runs more cases (default 48; docs/scenario-format.md records a long run).

use std::path::Path;

use proptest::prelude::*;

const SEEDS: &[(&str, &str)] = &[
    (
        "abba.toml",
        include_str!("../../../scenarios/checks/abba.toml"),
    ),
    (
        "race.toml",
        include_str!("../../../scenarios/checks/race.toml"),
    ),
    (
        "membarrier.toml",
        include_str!("../../../scenarios/checks/membarrier.toml"),
    ),
    (
        "irq-lock.toml",
        include_str!("../../../scenarios/checks/irq-lock.toml"),
    ),
    (
        "mutex-contention.toml",
        include_str!("../../../scenarios/examples/mutex-contention.toml"),
    ),
    (
        "mmap-lock.toml",
        include_str!("../../../scenarios/examples/mmap-lock.toml"),
    ),
];

const EXTREMES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "63",
    "4294967296",
    "9223372036854775807",
    "1000000000000000",
];

/// Applies edits: (kind, position, choice).
fn mutate(text: &str, edits: &[(u8, usize, usize)]) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for &(kind, pos, choice) in edits {
        if lines.is_empty() {
            break;
        }
        let i = pos % lines.len();
        match kind % 4 {
            // Replace the first number on a line with an extreme.
            0 | 1 => {
                let line = &lines[i];
                if let Some(start) = line.find(|c: char| c.is_ascii_digit()) {
                    let end = line[start..]
                        .find(|c: char| !c.is_ascii_digit())
                        .map_or(line.len(), |e| start + e);
                    let new = format!(
                        "{}{}{}",
                        &line[..start],
                        EXTREMES[choice % EXTREMES.len()],
                        &line[end..]
                    );
                    lines[i] = new;
                }
            }
            2 => {
                lines.remove(i);
            }
            _ => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
        }
    }
    lines.join("\n")
}

fn cases() -> u32 {
    std::env::var("SMPSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn mutated_scenarios_compile_and_run_without_panicking(
        seed in 0..SEEDS.len(),
        edits in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..5),
    ) {
        let (name, text) = SEEDS[seed];
        let text = mutate(text, &edits);
        let Ok(scn) = smpsim_scenario::parse(Path::new(name), text) else { return Ok(()) };
        let short = [
            ("scenario.duration".to_string(), "2ms".to_string()),
            ("scenario.warmup".to_string(), "0s".to_string()),
            ("scenario.replicas".to_string(), "1".to_string()),
        ];
        let variants: Vec<Option<String>> = if scn.variants.is_empty() {
            vec![None]
        } else {
            scn.variant_names().map(|v| Some(v.to_string())).collect()
        };
        for v in variants {
            if let Ok(mut spec) = scn.compile(v.as_deref(), &short) {
                spec.max_events = Some(200_000);
                let r = smpsim_kernel::simulate(&spec);
                prop_assert!(r.stats.simulated_ns <= spec.duration);
            }
        }
    }
}
