//! membarrier-percpu's published length (the selftest's 20 s) is an
//! option of the case: the `--set` line docs/membarrier-percpu.md gives
//! for it compiles on the shipped scenario, in both variants, to a 20 s
//! run with the case's own warm-up.

use std::path::Path;

use smpsim_scenario::load;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The `--set KEY=VALUE` pairs of the doc's command for the published
/// length (the line under its "published length" heading that runs
/// `reproduce membarrier-percpu`).
fn documented_sets() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(format!("{ROOT}/docs/membarrier-percpu.md")).unwrap();
    let section = doc
        .split("\n## ")
        .find(|s| s.to_lowercase().starts_with("the published length"))
        .expect("docs/membarrier-percpu.md has a `## The published length` section");
    let line = section
        .lines()
        .find(|l| l.contains("reproduce membarrier-percpu") && l.contains("--set"))
        .expect("the section gives the reproduce command with its --set");
    let words: Vec<&str> = line.split_whitespace().collect();
    let sets: Vec<(String, String)> = words
        .windows(2)
        .filter(|w| w[0] == "--set")
        .map(|w| {
            let (k, v) = w[1].split_once('=').expect("--set KEY=VALUE");
            (k.to_string(), v.to_string())
        })
        .collect();
    assert!(!sets.is_empty(), "{line}");
    sets
}

#[test]
fn the_documented_published_length_compiles_to_20_s_in_both_variants() {
    let sets = documented_sets();
    let path = Path::new(ROOT).join("scenarios/membarrier-percpu.toml");
    let scn = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let shipped = scn.compile(Some("percpu-mutex"), &[]).unwrap();
    for variant in ["global-mutex", "percpu-mutex"] {
        let spec = scn
            .compile(Some(variant), &sets)
            .unwrap_or_else(|e| panic!("{variant}: {e}"));
        assert_eq!(spec.duration, 20_000_000_000, "{variant}");
        // Only the length changes: the same warm-up as the shipped run.
        assert_eq!(spec.warmup, shipped.warmup, "{variant}");
    }
    // The shipped run is the shorter one the doc explains.
    assert!(shipped.duration < 20_000_000_000);
    // And 20 s is the selftest's length the scenario cites.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("TEST_DURATION_SEC 20"));
}
